import { defineCommand } from '../../audit/command-runner.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import type { TokenService } from '../../crypto/tokens.ts';
import { type PersonRow, Role, type Tx } from '../../db/database.ts';
import { Refusal } from '../../http/messages.ts';
import { normalizeEmail } from '../persons/person-rules.ts';
import {
  countFailedPasswordSignIn,
  findPersonAllowedPasswordSignIn,
  findPersonByEmailForSignIn,
  recordPasswordSignIn,
  updatePerson,
} from '../persons/persons.repository.ts';
import { claimedPermissionNames } from '../permissions/permissions.repository.ts';
import { isLiveScope } from '../scopes/scopes.repository.ts';
import type { TwoFactorDependencies } from '../two-factor/second-factor.ts';
import { challengeInsteadOfToken } from '../two-factor/two-factor.sign-in.ts';
import type { LoginBody, SignInResult } from './auth.schemas.ts';

/** DECISIONS §7: the 10th consecutive wrong password locks password sign-in for 15 minutes. */
export const LOCKOUT_THRESHOLD = 10;
export const LOCKOUT_SECONDS = 15 * 60;

const INVALID_CREDENTIALS = 'Invalid credentials.' as const;

interface Verified {
  readonly person: PersonRow | null;
  readonly passwordValid: boolean;
  readonly locked: boolean;
  readonly rehash: string | null;
}

/**
 * Email + password sign-in. Every rejection (unknown email, wrong password, deleted person,
 * scope gone, locked) is the same 401 with the same body, and costs one Argon2 verification:
 * unknown and locked accounts are checked against a decoy hash, so time reveals nothing.
 */
export function loginCommand(
  passwords: PasswordHasher,
  tokens: TokenService,
  twoFactor: Pick<TwoFactorDependencies, 'tokens' | 'mailer'>,
) {
  return defineCommand<LoginBody, SignInResult, Verified>({
    name: 'LoginCommand',
    async prepare(context, body: LoginBody): Promise<Verified> {
      const scopeId = body.scopeId ?? null;
      let person =
        (await findPersonByEmailForSignIn(context.db, normalizeEmail(body.email), scopeId)) ?? null;
      if (person !== null && !(await signInAllowed(context.db, person))) person = null;
      if (person !== null) context.setTarget(person.id);
      const locked = person !== null && isLocked(person, context.now);
      if (person === null || locked || person.password_hash === null) {
        // Unknown, refused and locked accounts cost one Argon2 verification like a wrong
        // password does, so the answer's timing does not tell them apart.
        await passwords.verifyDecoy(body.password, context.callerConnected);
        return { person, passwordValid: false, locked, rehash: null };
      }
      const verdict = await passwords.verify(person.password_hash, body.password, context.callerConnected);
      const rehash = verdict.needsRehash ? await passwords.hash(body.password) : null;
      return { person, passwordValid: verdict.valid, locked: false, rehash };
    },
    async execute(context, verified): Promise<SignInResult | Refusal> {
      const { person } = verified;
      if (person === null || verified.locked) return new Refusal(INVALID_CREDENTIALS);
      if (!verified.passwordValid) {
        await countFailedPassword(context.tx, person.id, context.now);
        return new Refusal(INVALID_CREDENTIALS);
      }
      // The password was checked outside the transaction. The sign-in completes only if the
      // person is still live and not locked now: a lock set by parallel wrong guesses, or a
      // deletion, in the meantime wins over this sign-in.
      const current = await findPersonAllowedPasswordSignIn(context.tx, person.id, context.now);
      if (current === undefined) return new Refusal(INVALID_CREDENTIALS);
      // Most sign-ins change nothing in the person's row; those write only their audit entry
      // (on PostgreSQL no new row version per sign-in, on SQLite one page fewer per commit).
      const signedIn = signInChangesRow(current, verified.rehash)
        ? await recordPasswordSignIn(context.tx, current.id, verified.rehash)
        : current;
      // Two-factor active: the password alone earns a challenge, not a token (spec §States).
      const challenge = await challengeInsteadOfToken(context, twoFactor, signedIn);
      if (challenge !== null) return challenge;
      return completeSignIn(context.tx, tokens, signedIn);
    },
  });
}

/** Whether a successful sign-in has something to clear (failed attempts, an expired lock) or store. */
function signInChangesRow(person: PersonRow, rehash: string | null): boolean {
  return person.failed_login_attempts !== 0 || person.locked_out_until !== null || rehash !== null;
}

function isLocked(person: PersonRow, now: string): boolean {
  return person.locked_out_until !== null && person.locked_out_until > now;
}

/**
 * One more consecutive wrong password; the 10th locks password sign-in for 15 minutes and
 * starts a fresh count. Counted atomically in the database, so parallel guesses cannot slip
 * past the threshold.
 */
async function countFailedPassword(tx: Tx, personId: string, now: string): Promise<void> {
  const failures = await countFailedPasswordSignIn(tx, personId);
  if (failures === undefined || failures < LOCKOUT_THRESHOLD) return;
  const lockedUntil = new Date(Date.parse(now) + LOCKOUT_SECONDS * 1000).toISOString();
  await updatePerson(tx, personId, { failed_login_attempts: 0, locked_out_until: lockedUntil });
}

/** A person may sign in while live, not suspended for erasure, and (Users) in a live scope. */
export async function signInAllowed(
  db: Parameters<typeof isLiveScope>[0],
  person: PersonRow,
): Promise<boolean> {
  if (person.deleted_at !== null || person.erasure_requested_at !== null) return false;
  if (person.role !== Role.User) return true;
  return person.scope_id !== null && (await isLiveScope(db, person.scope_id));
}

/** The token of a person whose sign-in is complete (password, and second factor if active). */
export async function completeSignIn(tx: Tx, tokens: TokenService, person: PersonRow): Promise<SignInResult> {
  // A User's token names the flagged permissions of their scope; administrators' carry none.
  const permissions =
    person.role === Role.User && person.scope_id !== null
      ? await claimedPermissionNames(tx, person.scope_id)
      : [];
  return signInAnswer(tokens, person, permissions);
}

/** The token answer of a completed sign-in (login, or 2fa/verify after the challenge). */
function signInAnswer(tokens: TokenService, person: PersonRow, permissions: readonly string[]): SignInResult {
  const identity = {
    sub: person.id,
    role: person.role,
    kind: 'person' as const,
    sst: person.security_stamp,
    ...(person.role === Role.User && person.scope_id !== null ? { scopeId: person.scope_id } : {}),
    ...(permissions.length > 0 ? { permissions } : {}),
  };
  const restricted = person.restricted_at !== null;
  // A restricted person still signs in, but only to exercise their rights (spec §States).
  const issued = restricted ? tokens.issueSubjectRightsToken(identity) : tokens.issueFullToken(identity);
  return {
    token: issued.token,
    expiresAt: issued.expiresAt.toISOString(),
    emailVerified: person.email_verified === 1,
    requiresTwoFactor: false,
    challengeToken: null,
    challengeExpiresAt: null,
    availableMethods: null,
    processingRestricted: restricted,
  };
}
