import { defineCommand, type ExecuteContext } from '../../audit/command-runner.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import { newSecurityStamp } from '../../crypto/secrets.ts';
import { type PersonRow, Role } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import { isSystemAdmin } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { normalizeEmail } from '../persons/person-rules.ts';
import { findPersonByEmailForSignIn } from '../persons/persons.repository.ts';
import { isScopeOwner } from '../scopes/scopes.repository.ts';
import { chargeAccountEmail } from './account-email.budget.ts';
import {
  type AccountEmailDependencies,
  issuePasswordResetLink,
  issueVerificationLink,
  mayUseAccountLinks,
  readLink,
} from './account-email.links.ts';
import {
  latestLinkIssuedAt,
  markEmailVerified,
  retireOutstandingLinks,
  setPasswordAndStamp,
  spendLink,
} from './account-email.repository.ts';
import type { PasswordRecoveryBody, PasswordResetBody, VerifyEmailBody } from './account-email.schemas.ts';
import { passwordProblem } from '../../crypto/password-rules.ts';
import { findPerson } from '../persons/persons.repository.ts';
import {
  confirmPendingRegistration,
  type PreparedConfirmation,
  prepareConfirmation,
  type RegistrationDependencies,
} from '../registration/registration.commands.ts';

/** The password rules of DECISIONS §7 (length, and not among the most common passwords). */
function checkNewPassword(password: string): void {
  const problem = passwordProblem(password);
  if (problem !== null) throw new Refusal(problem);
}

export type VerifyEmailOutcome = {
  readonly alreadyVerified: boolean;
  /** The token was a pending self-registration's, and the account now exists. */
  readonly accountCreated: boolean;
};

interface PreparedVerification {
  readonly token: string;
  /** Set when the token names no person's link but a pending self-registration. */
  readonly registration: PreparedConfirmation | null;
}

/**
 * POST /api/auth/verify-email. A person's link: spends it and marks the address verified; an
 * address already verified answers 200 (DECISIONS §10). A token that names no person's link is
 * looked up among pending self-registrations (the registration module), whose password is
 * checked in prepare, outside the transaction, because Argon2 is slow on purpose.
 */
export function verifyEmailCommand(dependencies: RegistrationDependencies) {
  return defineCommand<VerifyEmailBody, VerifyEmailOutcome, PreparedVerification>({
    name: 'VerifyEmailCommand',
    async prepare(context, body): Promise<PreparedVerification> {
      if ((await readLink(context.db, body.token, 'verification', context.now)) !== null) {
        return { token: body.token, registration: null };
      }
      const registration = await prepareConfirmation(
        context,
        dependencies.passwords,
        body.token,
        body.password,
      );
      return { token: body.token, registration };
    },
    async execute(context, prepared): Promise<VerifyEmailOutcome | Refusal> {
      const { tx, now } = context;
      const followed = await readLink(tx, prepared.token, 'verification', now);
      if (followed === null) {
        if (prepared.registration === null) return new Refusal('Invalid token.');
        const confirmed = await confirmPendingRegistration(context, dependencies, prepared.registration);
        if (confirmed instanceof Refusal) return confirmed;
        return { alreadyVerified: false, accountCreated: true };
      }
      context.setTarget(followed.person.id);
      if (!(await spendLink(tx, followed.link.id, now))) return new Refusal('Token already used.');
      const alreadyVerified = followed.person.email_verified === 1;
      if (!alreadyVerified) await markEmailVerified(tx, followed.person.id, now);
      return { alreadyVerified, accountCreated: false };
    },
  });
}

interface PreparedReset {
  readonly token: string;
  readonly passwordHash: string;
}

/**
 * POST /api/auth/password-reset. The token is checked before the (slow) hash is computed, so
 * garbage tokens cost no Argon2 work; it is checked again, and spent by one conditional write,
 * inside the transaction, so a link works once even when two requests race.
 * The new hash and a fresh security stamp are written together: every token of the person,
 * including any held by whoever knew the old password, stops working at once.
 */
export function resetPasswordCommand(passwords: PasswordHasher) {
  return defineCommand<PasswordResetBody, { personId: string }, PreparedReset>({
    name: 'ResetPasswordCommand',
    async prepare(context, body) {
      checkNewPassword(body.newPassword);
      const followed = await readLink(context.db, body.token, 'password-reset', context.now);
      if (followed === null) throw new Refusal('Invalid token.');
      context.setTarget(followed.person.id);
      return {
        token: body.token,
        passwordHash: await passwords.hash(body.newPassword, context.callerConnected),
      };
    },
    async execute(context, prepared) {
      const { tx, now } = context;
      const followed = await readLink(tx, prepared.token, 'password-reset', now);
      if (followed === null) return new Refusal('Invalid token.');
      if (!(await spendLink(tx, followed.link.id, now))) return new Refusal('Token already used.');
      await setPasswordAndStamp(tx, followed.person.id, {
        passwordHash: prepared.passwordHash,
        securityStamp: newSecurityStamp(),
        now,
      });
      // Any other reset link still outstanding would let a second person reset it again.
      await retireOutstandingLinks(tx, followed.person.id, ['password-reset'], now);
      return { personId: followed.person.id };
    },
  });
}

/**
 * POST /api/auth/resend-verification: the caller's own fresh link, charged to their shared
 * account-email budget after the request's own checks (already verified is not charged).
 */
export function resendVerificationCommand(dependencies: AccountEmailDependencies) {
  return defineCommand({
    name: 'ResendVerificationCommand',
    async execute(context, caller: Caller): Promise<null | Refusal> {
      context.setTarget(caller.id);
      const person = caller.kind === 'person' ? await findPerson(context.tx, caller.id, true) : undefined;
      if (person === undefined || !(await mayUseAccountLinks(context.tx, person))) {
        return new Refusal('Person not found.');
      }
      if (person.email_verified === 1) return new Refusal('The email address is already verified.');
      await chargeAccountEmail(context, person.id, dependencies.config.accountEmailCooldownSeconds);
      await issueVerificationLink(context, dependencies, person);
      return null;
    },
  });
}

interface AdministratorMailInput {
  readonly caller: Caller;
  readonly personId: string;
}

/**
 * POST /api/persons/{id}/verification-email and /password-reset: SysAdmin any person; a Scope
 * Admin only Users of scopes they own (403 before anything about the person is revealed).
 * Not charged to the person's budget (DECISIONS §10), but at most one per kind per person per
 * cooldown, counting links of that kind sent by anyone.
 */
export function administratorVerificationEmailCommand(dependencies: AccountEmailDependencies) {
  return defineCommand({
    name: 'SendVerificationEmailCommand',
    async execute(context, input: AdministratorMailInput): Promise<null | Refusal> {
      const person = await requireMailablePerson(context, input);
      if (person.email_verified === 1) return new Refusal('The email address is already verified.');
      await refuseWithinAdministratorCooldown(context, dependencies, person.id, 'verification');
      await issueVerificationLink(context, dependencies, person);
      return null;
    },
  });
}

export function administratorPasswordResetCommand(dependencies: AccountEmailDependencies) {
  return defineCommand({
    name: 'SendPasswordResetEmailCommand',
    async execute(context, input: AdministratorMailInput): Promise<null | Refusal> {
      const person = await requireMailablePerson(context, input);
      await refuseWithinAdministratorCooldown(context, dependencies, person.id, 'password-reset');
      await issuePasswordResetLink(context, dependencies, person);
      return null;
    },
  });
}

async function requireMailablePerson(
  context: ExecuteContext,
  input: AdministratorMailInput,
): Promise<PersonRow> {
  const { tx } = context;
  context.setTarget(input.personId);
  const person = await findPerson(tx, input.personId, true);
  if (!isSystemAdmin(input.caller)) {
    // A Scope Admin reaches only the Users of scopes they own; anyone else is refused alike,
    // whether or not the person exists.
    const reachable =
      person !== undefined &&
      person.role === Role.User &&
      person.scope_id !== null &&
      (await isScopeOwner(tx, person.scope_id, input.caller.id));
    if (!reachable) throw new Refusal('You are not an owner of the target scope.');
  }
  if (person === undefined) throw new Refusal('Person not found.');
  if (!(await mayUseAccountLinks(tx, person))) {
    throw new Refusal('The person is deleted, restricted or cannot sign in, so no email was sent.');
  }
  return person;
}

async function refuseWithinAdministratorCooldown(
  context: ExecuteContext,
  dependencies: AccountEmailDependencies,
  personId: string,
  kind: 'verification' | 'password-reset',
): Promise<void> {
  const cooldownSeconds = dependencies.config.accountEmailCooldownSeconds;
  if (cooldownSeconds <= 0) return;
  const last = await latestLinkIssuedAt(context.tx, personId, kind);
  if (last === null) return;
  const cooldownEnds = Date.parse(last) + cooldownSeconds * 1000;
  const now = Date.parse(context.now);
  if (cooldownEnds > now) {
    throw new Refusal('An email of this kind was sent to this person recently. Try again in a few minutes.', {
      'retry-after': String(Math.max(1, Math.ceil((cooldownEnds - now) / 1000))),
    });
  }
}

/**
 * The background half of POST /api/auth/password-recovery: finds the account as sign-in would,
 * and mails a reset link unless one (from recovery or an administrator) went out within the
 * cooldown. Every outcome is silent: the caller was answered long ago with the same message.
 */
export function passwordRecoveryCommand(dependencies: AccountEmailDependencies) {
  return defineCommand({
    name: 'PasswordRecoveryCommand',
    async execute(context, body: PasswordRecoveryBody): Promise<{ sent: boolean }> {
      const { tx, now } = context;
      const person = await findPersonByEmailForSignIn(tx, normalizeEmail(body.email), body.scopeId ?? null);
      if (person === undefined || !(await mayUseAccountLinks(tx, person))) return { sent: false };
      context.setTarget(person.id);
      const cooldownSeconds = dependencies.config.accountEmailCooldownSeconds;
      const last = await latestLinkIssuedAt(tx, person.id, 'password-reset');
      if (
        cooldownSeconds > 0 &&
        last !== null &&
        Date.parse(last) + cooldownSeconds * 1000 > Date.parse(now)
      ) {
        return { sent: false };
      }
      await issuePasswordResetLink(context, dependencies, person);
      return { sent: true };
    },
  });
}
