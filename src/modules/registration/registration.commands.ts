import { defineCommand, type ExecuteContext, type StepContext } from '../../audit/command-runner.ts';
import type { Config } from '../../config/config.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import { passwordProblem } from '../../crypto/password-rules.ts';
import { newId, randomToken, sha256 } from '../../crypto/secrets.ts';
import { type DbOrTx, type PersonRow, Role, type ScopeRow } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Mailer } from '../../email/mailer.ts';
import {
  type LinkOrToken,
  linkWithToken,
  registrationAttemptMail,
  registrationConfirmedMail,
  registrationMail,
} from '../../email/templates.ts';
import type { Caller } from '../../http/access.ts';
import { InvalidField, Refusal } from '../../http/messages.ts';
import { linkBase, mayUseAccountLinks } from '../account-email/account-email.links.ts';
import { normalizeEmail } from '../persons/person-rules.ts';
import { findPersonByEmailForSignIn, insertPerson, newPersonRow } from '../persons/persons.repository.ts';
import { lockScopes } from '../persons/scope-ownership.repository.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { findScope } from '../scopes/scopes.repository.ts';
import {
  countLivePendingRegistrations,
  deletePendingRegistration,
  findPendingRegistration,
  findPendingRegistrationByTokenHash,
  findPendingRegistrationInScope,
  insertPendingRegistration,
  NOTICE_WINDOW_LIMIT,
  NOTICE_WINDOW_SECONDS,
  reserveRegistrationNotice,
  spendGuess,
} from './registration.repository.ts';
import type { DiscardAnswer, RegisterBody } from './registration.schemas.ts';

/** DECISIONS §7: a pending registration lives 24 hours. */
export const PENDING_REGISTRATION_LIFETIME_SECONDS = 24 * 60 * 60;
/** Spec §Limits: the 10th wrong password discards a pending registration. */
export const PENDING_REGISTRATION_GUESSES = 10;
/** Spec §Limits: at most three live pending registrations per address per scope. */
export const LIVE_PENDING_REGISTRATIONS_PER_ADDRESS = 3;

const SCOPE_UNAVAILABLE = 'Self-registration is not available for this scope.' as const;
const PASSWORD_REQUIRED = 'The password is required to confirm this registration.' as const;
const WRONG_PASSWORD = 'The password or code is incorrect.' as const;
const EMAIL_TAKEN = 'A person with this email already exists.' as const;

/** What registration needs from the service. */
export interface RegistrationDependencies {
  readonly config: Pick<Config, 'email'>;
  readonly mailer: Mailer;
  readonly passwords: PasswordHasher;
}

/** A registration request that passed the checks answered before the 202. */
export interface AcceptedRegistration {
  readonly scopeId: string;
  readonly name: string;
  readonly email: string;
  readonly password: string;
}

const isOpen = (scope: ScopeRow | undefined): scope is ScopeRow =>
  scope !== undefined && scope.self_registration_enabled === 1;

/**
 * The half of POST /api/auth/register that answers before the 202: the password rules (the same
 * as everywhere, DECISIONS §7) and a live scope with self-registration open (403 otherwise, one
 * answer for missing, deleted and closed). Nothing here depends on the address, so the answer
 * says nothing about whether it is taken.
 */
export async function acceptRegistration(db: DbOrTx, body: RegisterBody): Promise<AcceptedRegistration> {
  const name = body.name.trim();
  if (name === '') throw new InvalidField('Name is required.');
  const problem = passwordProblem(body.password);
  if (problem !== null) throw new Refusal(problem);
  const scope = await findScope(db, body.scopeId);
  if (!isOpen(scope)) throw new Refusal(SCOPE_UNAVAILABLE);
  return { scopeId: scope.id, name, email: body.email.trim(), password: body.password };
}

interface PreparedRegistration extends Omit<AcceptedRegistration, 'password'> {
  readonly passwordHash: string;
}

export type RegistrationOutcome = 'pending' | 'holder-notified' | 'nothing';

/**
 * The half of POST /api/auth/register that runs after the response (a background queue): either
 * a pending registration is written and its link mailed, or the live User holding the address in
 * the scope is told of the attempt (three notices per address per day, across scopes), or, beyond
 * the limits, nothing is stored or sent. The password is hashed first in every case, outside the
 * transaction (Argon2 must not hold SQLite's write lock), and never kept in clear.
 */
export function registerCommand(dependencies: RegistrationDependencies) {
  return defineCommand<AcceptedRegistration, RegistrationOutcome, PreparedRegistration>({
    name: 'RegisterCommand',
    async prepare(_context: StepContext, request): Promise<PreparedRegistration> {
      const { password, ...rest } = request;
      return { ...rest, passwordHash: await dependencies.passwords.hash(password) };
    },
    async execute(context, request): Promise<RegistrationOutcome> {
      const { tx, now } = context;
      // Registrations of one scope take turns, so two racing requests cannot both pass the
      // per-address limit.
      await lockScopes(tx, [request.scopeId]);
      // Checked again: the scope may have closed or gone since the request was answered.
      const scope = await findScope(tx, request.scopeId);
      if (!isOpen(scope)) return 'nothing';
      const emailNormalized = normalizeEmail(request.email);

      const holder = await findPersonByEmailForSignIn(tx, emailNormalized, scope.id);
      if (holder !== undefined) return notifyHolder(context, dependencies, holder, scope);

      const live = await countLivePendingRegistrations(tx, scope.id, emailNormalized, now);
      if (live >= LIVE_PENDING_REGISTRATIONS_PER_ADDRESS) return 'nothing';

      // 256 random bits; only the SHA-256 is stored (DECISIONS §7), as for email links.
      const token = randomToken();
      const id = newId();
      await insertPendingRegistration(tx, {
        id,
        scope_id: scope.id,
        name: request.name,
        email: request.email,
        email_normalized: emailNormalized,
        password_hash: request.passwordHash,
        token_hash: sha256(token),
        guesses_left: PENDING_REGISTRATION_GUESSES,
        created_at: now,
        expires_at: new Date(Date.parse(now) + PENDING_REGISTRATION_LIFETIME_SECONDS * 1000).toISOString(),
      });
      context.setTarget(id);
      // The registrant becomes a User of the scope: the scope's own verification link base
      // replaces the global one, as for its Users' verification links.
      const base = await linkBase(tx, dependencies.config.email, scope.id, 'verification');
      const target: LinkOrToken = base === null ? { token } : { url: linkWithToken(base, token) };
      const mail = registrationMail(
        { name: request.name, email: request.email },
        scope.name,
        target,
        PENDING_REGISTRATION_LIFETIME_SECONDS / 3600,
      );
      context.afterCommit(() => dependencies.mailer.send(mail));
      return 'pending';
    },
  });
}

async function notifyHolder(
  context: ExecuteContext,
  dependencies: RegistrationDependencies,
  holder: PersonRow,
  scope: ScopeRow,
): Promise<RegistrationOutcome> {
  context.setTarget(holder.id);
  // A restricted person's data is not processed further, and a suspended one is not mailed.
  if (!(await mayUseAccountLinks(context.tx, holder))) return 'nothing';
  const reserved = await reserveRegistrationNotice(context.tx, {
    emailNormalized: holder.email_normalized,
    now: context.now,
    windowBoundary: new Date(Date.parse(context.now) - NOTICE_WINDOW_SECONDS * 1000).toISOString(),
    windowLimit: NOTICE_WINDOW_LIMIT,
  });
  if (!reserved) return 'nothing';
  const notice = registrationAttemptMail({ name: holder.name, email: holder.email }, scope.name);
  context.afterCommit(() => dependencies.mailer.send(notice));
  return 'holder-notified';
}

/** What verify-email settled outside its transaction about a token naming a pending registration. */
export interface PreparedConfirmation {
  readonly registrationId: string;
  /** null: no password was sent (422); otherwise whether it matched. */
  readonly passwordMatches: boolean | null;
}

/**
 * The first half of verify-email for a pending registration, outside the transaction: finds the
 * registration the token names (null: none, so the token is unknown) and checks the password
 * (slow on purpose). A registration that will be refused anyway costs no Argon2 work.
 */
export async function prepareConfirmation(
  context: StepContext,
  passwords: PasswordHasher,
  token: string,
  password: string | null | undefined,
): Promise<PreparedConfirmation | null> {
  const registration = await findPendingRegistrationByTokenHash(context.db, sha256(token));
  if (registration === undefined) return null;
  if (password === undefined || password === null || password === '') {
    return { registrationId: registration.id, passwordMatches: null };
  }
  const usable =
    registration.expires_at > context.now &&
    registration.guesses_left > 0 &&
    isOpen(await findScope(context.db, registration.scope_id));
  const verdict = usable
    ? await passwords.verify(registration.password_hash, password, context.callerConnected)
    : { valid: false };
  return { registrationId: registration.id, passwordMatches: verdict.valid };
}

/**
 * The second half, in verify-email's transaction (spec §States "Pending self-registration"):
 * - gone (confirmed, discarded, exhausted) → 400 `Invalid token.` (DECISIONS §10); expired →
 *   400 `Token expired.`; the scope deleted or closed since → 400 `Invalid token.`;
 * - no password → 422, nothing changes;
 * - a wrong password → 401, one guess spent (committed); the tenth discards the registration;
 * - the right one → the User is created with the address verified and the registration
 *   removed, together; a confirmation mail follows.
 */
export async function confirmPendingRegistration(
  context: ExecuteContext,
  dependencies: RegistrationDependencies,
  prepared: PreparedConfirmation,
): Promise<{ personId: string } | Refusal> {
  const { tx, now } = context;
  const registration = await findPendingRegistration(tx, prepared.registrationId);
  if (registration === undefined) return new Refusal('Invalid token.');
  context.setTarget(registration.id);
  if (registration.expires_at <= now) return new Refusal('Token expired.');
  // Serialises with registrations and other confirmations of the scope (address uniqueness).
  await lockScopes(tx, [registration.scope_id]);
  const scope = await findScope(tx, registration.scope_id);
  if (!isOpen(scope)) return new Refusal('Invalid token.');
  if (prepared.passwordMatches === null) return new Refusal(PASSWORD_REQUIRED);

  if (!prepared.passwordMatches) {
    const left = await spendGuess(tx, registration.id);
    if (left === null) return new Refusal('Invalid token.');
    if (left === 0) await deletePendingRegistration(tx, registration.id);
    return new Refusal(WRONG_PASSWORD);
  }

  // The registration is removed first: of two confirmations racing, only one finds it.
  if (!(await deletePendingRegistration(tx, registration.id))) return new Refusal('Invalid token.');
  // The address may have been taken since (an administrator created the User, or another
  // registration of it was confirmed): the registration can never succeed, so it stays removed.
  if ((await findPersonByEmailForSignIn(tx, registration.email_normalized, scope.id)) !== undefined) {
    return new Refusal(EMAIL_TAKEN);
  }
  const person = newPersonRow({
    name: registration.name,
    email: registration.email,
    emailNormalized: registration.email_normalized,
    role: Role.User,
    scopeId: scope.id,
    passwordHash: registration.password_hash,
    // Following the mailed link proves the address.
    emailVerified: true,
    now,
  });
  try {
    await insertPerson(tx, person);
  } catch (error) {
    // A User of the address created concurrently outside the scope lock: nothing is kept.
    if (isUniqueViolation(error)) throw new Refusal(EMAIL_TAKEN);
    throw error;
  }
  context.setTarget(person.id);
  const mail = registrationConfirmedMail({ name: person.name, email: person.email }, scope.name);
  context.afterCommit(() => dependencies.mailer.send(mail));
  return { personId: person.id };
}

/**
 * DELETE /api/scopes/{id}/pending-registrations/{registrationId}: a System Admin, or a Scope
 * Admin owning the scope. The link then answers `Invalid token.` and the registrant may sign up
 * again (the registration no longer counts against the per-address limit).
 */
export const discardPendingRegistration = defineCommand({
  name: 'DiscardPendingRegistrationCommand',
  async execute(
    context,
    input: { caller: Caller; scopeId: string; registrationId: string },
  ): Promise<DiscardAnswer | Refusal> {
    const { tx } = context;
    context.setTarget(input.registrationId);
    await requireManageableScope(tx, input.caller, input.scopeId);
    const registration = await findPendingRegistrationInScope(tx, input.scopeId, input.registrationId);
    if (registration === undefined || !(await deletePendingRegistration(tx, registration.id))) {
      return new Refusal('Pending registration not found.');
    }
    return { id: registration.id };
  },
});
