import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { hash, parseOptions, verify } from '@node-rs/argon2';
import { Refusal } from '../http/messages.ts';
import { type Bound, ConcurrencyBound } from './concurrency.ts';

/** @node-rs/argon2's Algorithm.Argon2id (a const enum, which erasable TypeScript cannot import). */
const ARGON2ID = 2;
/** @node-rs/argon2's Version.V0x13, the current Argon2 version. */
const ARGON2_VERSION_13 = 1;
/** The library generates 16-byte salts (DECISIONS §7); a stored hash with a shorter one is upgraded. */
const SALT_BYTES = 16;
const OUTPUT_BYTES = 32;

/** Argon2id parameters (DECISIONS §7): 19 MiB, two passes, one lane, 16-byte salt. */
export const PASSWORD_HASH_PARAMETERS = Object.freeze({
  algorithm: ARGON2ID,
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
});

/** How long a check may wait for a slot before the caller gets 503 (DECISIONS §3, §7). */
export const CREDENTIAL_CHECK_WAIT_MS = 10_000;
export const BUSY_RETRY_AFTER_SECONDS = 5;
/** The audit entry's reason when a check was dropped because its caller had gone (never sent). */
export const CALLER_GONE = 'The caller went away before its credentials were checked.';

export interface PasswordVerdict {
  readonly valid: boolean;
  /** The stored hash used older parameters: store a fresh hash of the (correct) password. */
  readonly needsRehash: boolean;
}

/**
 * Password hashing and checking. Every check runs under one process-wide bound (spec
 * §Authentication 10) so a burst of sign-ins cannot starve the rest of the service. Email-code
 * checks take their slots here too (`runBounded`, from two-factor's `matchEmailCode`).
 */
export class PasswordHasher {
  readonly #bound: Bound;
  #decoyHash: Promise<string> | null = null;

  /** `bound`: by default, one for this hasher; with several HTTP threads, the process's (server.ts). */
  constructor(bound: Bound = new ConcurrencyBound(availableParallelism())) {
    this.#bound = bound;
  }

  /** The decoy hash is made on first use and then kept; its parameters are the current ones. */
  #decoy(): Promise<string> {
    // A random decoy password: no password can be known to match it.
    this.#decoyHash ??= hash(randomBytes(32).toString('base64url'), PASSWORD_HASH_PARAMETERS);
    return this.#decoyHash;
  }

  /** `stillWanted`: see `runBounded` (a new password whose caller has gone is not hashed). */
  hash(password: string, stillWanted?: () => boolean): Promise<string> {
    return this.runBounded(() => hash(password, PASSWORD_HASH_PARAMETERS), stillWanted);
  }

  /** `stillWanted`: see `runBounded`. */
  async verify(storedHash: string, password: string, stillWanted?: () => boolean): Promise<PasswordVerdict> {
    const valid = await this.runBounded(() => verify(storedHash, password).catch(() => false), stillWanted);
    return { valid, needsRehash: valid && hashNeedsUpgrade(storedHash) };
  }

  /**
   * Spends one full verification against a fixed decoy hash. Unknown and locked accounts take
   * this path so that their answer takes as long as a wrong password does.
   */
  async verifyDecoy(password: string, stillWanted?: () => boolean): Promise<void> {
    const decoy = await this.#decoy();
    await this.runBounded(() => verify(decoy, password).catch(() => false), stillWanted);
  }

  /**
   * Makes the decoy hash now (at start-up), so that the first unknown-account sign-in does not
   * take one hash longer than every later one.
   */
  async prepareDecoy(): Promise<void> {
    await this.#decoy();
  }

  /**
   * Runs a credential check under the bound; 503 (with Retry-After) when no slot comes in 10 s.
   * `stillWanted` is asked when the slot comes: a check whose caller has gone meanwhile (a client
   * that gave up waiting) is not run, so a queue of abandoned sign-ins costs no hashes while the
   * callers still waiting behind it get their turn sooner.
   */
  async runBounded<T>(work: () => Promise<T>, stillWanted?: () => boolean): Promise<T> {
    const outcome = await this.#bound.run(work, CREDENTIAL_CHECK_WAIT_MS, stillWanted);
    if ('abandoned' in outcome) throw new Refusal(CALLER_GONE);
    if ('busy' in outcome) {
      throw new Refusal('The service is busy verifying credentials. Try again shortly.', {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
    }
    return outcome.value;
  }
}

function hashNeedsUpgrade(storedHash: string): boolean {
  try {
    const stored = parseOptions(storedHash);
    return (
      stored.algorithm !== PASSWORD_HASH_PARAMETERS.algorithm ||
      stored.version !== ARGON2_VERSION_13 ||
      stored.saltLen < SALT_BYTES ||
      stored.outputLen < OUTPUT_BYTES ||
      stored.memoryCost !== PASSWORD_HASH_PARAMETERS.memoryCost ||
      stored.timeCost !== PASSWORD_HASH_PARAMETERS.timeCost ||
      stored.parallelism !== PASSWORD_HASH_PARAMETERS.parallelism
    );
  } catch {
    return true;
  }
}
