import { randomUUID } from 'node:crypto';
import { createSigner, createVerifier } from 'fast-jwt';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/config.ts';
import type { Role } from '../db/database.ts';

/**
 * Issuing and reading every token the service makes (HS256 only; fast-jwt, synchronous and
 * off the libuv pool that Argon2 uses). fast-jwt checks the signature, algorithm, issuer and
 * audience; lifetimes are checked here against the injected clock, so tests can move time.
 */

export type IdentityKind = 'person' | 'extidpUser';
/** What a bearer token may be: a full person token, a subject-rights-only token, a challenge. */
export type BearerKind = 'full' | 'subjectRights' | 'challenge';

export interface IdentityClaims {
  readonly sub: string;
  readonly role: Role;
  readonly kind: IdentityKind;
  readonly scopeId?: string;
  readonly permissions?: readonly string[];
  /** Security stamp; persons only (external-provider users carry none). */
  readonly sst?: string;
}

export interface ChallengeClaims {
  readonly sub: string;
  /** The challenge row this token redeems. */
  readonly cid: string;
  readonly sst: string;
}

export interface ApplicationClaims {
  readonly sub: string;
  readonly scopeId: string;
  /** The credential the token was exchanged for: the live check needs it. */
  readonly cid: string;
  readonly permissions?: readonly string[];
}

interface RegisteredClaims {
  readonly iss: string;
  readonly aud: string | readonly string[];
  readonly iat: number;
  readonly nbf: number;
  readonly exp: number;
  readonly jti: string;
}

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: Date;
}

export type BearerToken =
  | { readonly kind: 'full' | 'subjectRights'; readonly claims: IdentityClaims & RegisteredClaims }
  | { readonly kind: 'challenge'; readonly claims: ChallengeClaims & RegisteredClaims };

export type Verify = (token: string) => Record<string, unknown>;
type Sign = (payload: Record<string, unknown>) => string;

/** Accepted tokens remembered per reader, bearer or application (a token is a few hundred bytes). */
const ACCEPTED_TOKENS_REMEMBERED = 1000;

export class TokenService {
  readonly #auth: Config['auth'];
  readonly #clock: Clock;
  readonly #sign: Sign;
  readonly #bearerVerify: Verify;
  readonly #applicationVerify: Verify;
  readonly #audienceKinds: ReadonlyMap<string, BearerKind>;

  constructor(auth: Config['auth'], clock: Clock) {
    this.#auth = auth;
    this.#clock = clock;
    // The HMAC key is the secret's ASCII bytes exactly as configured (DECISIONS §7).
    // Tokens are always signed with the current secret; the previous one only validates.
    this.#sign = createSigner({
      key: auth.tokenSecret,
      algorithm: 'HS256',
      iss: auth.issuer,
    });
    const keys = [auth.tokenSecret, ...(auth.previousTokenSecret === null ? [] : [auth.previousTokenSecret])];
    const keyVerifier = (key: string, audiences: string[]): Verify =>
      createVerifier({
        key,
        algorithms: ['HS256'],
        allowedIss: auth.issuer,
        allowedAud: audiences,
        requiredClaims: ['iss', 'aud', 'exp', 'sub'],
        // Lifetimes are checked against the injected clock below.
        ignoreExpiration: true,
        ignoreNotBefore: true,
      }) as Verify;
    const verifier = (audiences: string[]): Verify =>
      rememberingAccepted(keys.map((key) => keyVerifier(key, audiences)));
    this.#bearerVerify = verifier([auth.audience, auth.challengeAudience, auth.subjectRightsAudience]);
    this.#applicationVerify = verifier([auth.applicationAudience]);
    this.#audienceKinds = new Map<string, BearerKind>([
      [auth.audience, 'full'],
      [auth.challengeAudience, 'challenge'],
      [auth.subjectRightsAudience, 'subjectRights'],
    ]);
  }

  issueFullToken(identity: IdentityClaims): IssuedToken {
    // DECISIONS §7: `permissions` is omitted when empty, so consumers see no claim, not [].
    const { permissions, ...rest } = identity;
    const claims = permissions === undefined || permissions.length === 0 ? rest : identity;
    return this.#issue(this.#auth.audience, this.#auth.tokenLifetimeSeconds, claims);
  }

  /** A restricted identity's token: valid only at the four subject-rights endpoints; no scope. */
  issueSubjectRightsToken(identity: IdentityClaims): IssuedToken {
    const { scopeId: _scope, permissions: _permissions, ...unscoped } = identity;
    return this.#issue(this.#auth.subjectRightsAudience, this.#auth.tokenLifetimeSeconds, unscoped);
  }

  issueChallengeToken(challenge: ChallengeClaims, lifetimeSeconds: number): IssuedToken {
    return this.#issue(this.#auth.challengeAudience, lifetimeSeconds, challenge);
  }

  issueApplicationToken(application: ApplicationClaims): IssuedToken {
    return this.#issue(
      this.#auth.applicationAudience,
      this.#auth.applicationTokenLifetimeSeconds,
      application,
    );
  }

  /** Reads a bearer token of the person side; null when it is not one of ours, or not current. */
  readBearer(token: string): BearerToken | null {
    const payload = this.#verify(this.#bearerVerify, token);
    if (payload === null) return null;
    const kind = this.#audienceKinds.get(singleAudience(payload.aud) ?? '');
    if (kind === undefined) return null;
    if (kind === 'challenge') {
      if (!isString(payload.cid) || !isString(payload.sst)) return null;
      return { kind, claims: payload as unknown as ChallengeClaims & RegisteredClaims };
    }
    if (!isRole(payload.role) || (payload.kind !== 'person' && payload.kind !== 'extidpUser')) return null;
    return { kind, claims: payload as unknown as IdentityClaims & RegisteredClaims };
  }

  /** Reads an application token (zero clock skew); null when refused for any reason. */
  readApplicationToken(token: string): (ApplicationClaims & RegisteredClaims) | null {
    const payload = this.#verify(this.#applicationVerify, token);
    if (payload === null || singleAudience(payload.aud) !== this.#auth.applicationAudience) return null;
    if (!isString(payload.scopeId) || !isString(payload.cid)) return null;
    return payload as unknown as ApplicationClaims & RegisteredClaims;
  }

  #issue(audience: string, lifetimeSeconds: number, claims: object): IssuedToken {
    const issuedAt = Math.floor(this.#clock.now().getTime() / 1000);
    const expiresAt = issuedAt + Math.floor(lifetimeSeconds);
    const token = this.#sign({
      ...claims,
      aud: audience,
      iat: issuedAt,
      nbf: issuedAt,
      exp: expiresAt,
      jti: randomUUID(),
    });
    return { token, expiresAt: new Date(expiresAt * 1000) };
  }

  #verify(verify: Verify, token: string): Record<string, unknown> | null {
    let payload: Record<string, unknown>;
    try {
      payload = verify(token);
    } catch {
      return null; // refused by every key
    }
    const now = this.#clock.now().getTime() / 1000;
    const { exp, nbf } = payload;
    // Zero clock skew: a token is valid from nbf up to, not including, exp.
    if (typeof exp !== 'number' || now >= exp) return null;
    if (typeof nbf === 'number' && now < nbf) return null;
    return payload;
  }
}

/**
 * One verifier over the keys' verifiers (the current secret's first, then the previous one's) that
 * remembers the tokens it accepted, so that a token presented again skips the signature checks and
 * the parse (the same string, accepted with the same keys and audiences before). Remembered over
 * the keys, not per key: a token signed with the previous secret is not checked again under the
 * current one either. Lifetimes are still checked on every read, by the caller; revocation is the
 * stamp check's; a refused token is not remembered. This is fast-jwt's own cache without its key:
 * that hashes every token presented (SHA-256) to look it up, which cost more than all the rest of a
 * remembered token's check, while a key of fast-jwt's choosing raises a process warning at every
 * start. The token itself is the key here: distinct tokens cannot collide. It keeps accepted bearer
 * tokens in memory until they are forgotten; a heap snapshot that shows them shows the signing
 * secret too.
 */
export function rememberingAccepted(
  keyVerifiers: readonly Verify[],
  capacity = ACCEPTED_TOKENS_REMEMBERED,
): Verify {
  // Least recently presented first: a Map iterates in insertion order, and a token presented
  // again is moved to the end. (mnemonist's LRU cache, fast-jwt's own, is not importable from
  // ES modules but through its root, which loads every structure it has.)
  const accepted = new Map<string, Record<string, unknown>>();
  return (token) => {
    const remembered = accepted.get(token);
    if (remembered !== undefined) {
      accepted.delete(token);
      accepted.set(token, remembered);
      return remembered;
    }
    const payload = firstAccepting(keyVerifiers, token); // throws when refused: nothing to remember
    accepted.set(token, payload);
    if (accepted.size > capacity) accepted.delete(accepted.keys().next().value!);
    return payload;
  };
}

/** The payload of the first verifier that accepts the token; the last refusal when none does. */
function firstAccepting(verifiers: readonly Verify[], token: string): Record<string, unknown> {
  let refusal: unknown;
  for (const verify of verifiers) {
    try {
      return verify(token);
    } catch (error) {
      refusal = error; // bad signature under this key: the previous key may still accept it
    }
  }
  // Made only here: an Error made up front would capture a stack trace at every first reading.
  throw refusal ?? new Error('no key to verify with');
}

/** A token must name exactly one audience; a token valid for two readers is refused by both. */
function singleAudience(aud: unknown): string | null {
  if (typeof aud === 'string') return aud;
  if (Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string') return aud[0];
  return null;
}

const isString = (value: unknown): value is string => typeof value === 'string' && value !== '';
const isRole = (value: unknown): value is Role => value === 1 || value === 2 || value === 3;
