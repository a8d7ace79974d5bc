import { defineCommand, type ExecuteContext, type StepContext } from '../../audit/command-runner.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import { passwordProblem } from '../../crypto/password-rules.ts';
import { newSecurityStamp, type SecretBox } from '../../crypto/secrets.ts';
import { type PersonRow, type PersonUpdate, Role, type Tx } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import { InvalidField, Refusal } from '../../http/messages.ts';
import {
  checkCurrentPassword,
  type ReauthenticationVerdict,
  REAUTHENTICATION_FAILED,
  settleReauthentication,
} from '../auth/reauthentication.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { isScopeOwner } from '../scopes/scopes.repository.ts';
import { reauthenticateSecondFactor, splitTwoFactorCode } from '../two-factor/second-factor.ts';
import { findTwoFactorConfig } from '../two-factor/two-factor.repository.ts';
import type { PersonEvents } from './person-events.ts';
import { isAdministratorRole, normalizeEmail, parseRole } from './person-rules.ts';
import {
  deletePersonRow,
  findPerson,
  insertPerson,
  isEmailTaken,
  updatePerson,
  newPersonRow,
} from './persons.repository.ts';
import type { CreatePersonBody, CreateScopePersonBody, UpdatePersonBody } from './persons.schemas.ts';
import {
  addOwnership,
  lockScopes,
  ownedScopeIdsOf,
  removeAllOwnerships,
  removeOwnership,
  scopesOnlyOwnedBy,
} from './scope-ownership.repository.ts';

const EMAIL_TAKEN = 'A person with this email already exists.' as const;
const LAST_OWNER = 'This change would leave a scope without an owner. Add another owner first.' as const;
const NOT_ELIGIBLE = 'The person cannot become an owner of this scope.' as const;
const EMAIL_METHOD_ON = 'Turn off the email sign-in method before changing your email address.' as const;

/**
 * Own email change while the email sign-in method is enabled (pending or active) is refused
 * (spec §Persons): the codes would go to an address the person is leaving.
 */
async function refuseWhileEmailMethodOn(db: StepContext['db'] | Tx, personId: string): Promise<void> {
  if ((await findTwoFactorConfig(db, personId))?.email_enabled === 1) throw new Refusal(EMAIL_METHOD_ON);
}

/** Names are stored trimmed; one of only spaces is as good as none. */
function trimmedName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '') throw new InvalidField('Name is required.');
  return trimmed;
}

/** Writes that may hit a live-email unique index answer 409, also when two creations race. */
async function withUniqueEmail<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new Refusal(EMAIL_TAKEN);
    throw error;
  }
}

/** Restricted persons and those awaiting erasure take on no new duties (or data processing). */
const canTakeOwnership = (person: PersonRow): boolean =>
  person.deleted_at === null && person.restricted_at === null && person.erasure_requested_at === null;

/**
 * Refuses with 409 when removing `personId` from these scopes would leave one without a live
 * owner. The scopes are locked first, so of two concurrent removals of a scope's last two owners
 * the second sees the first's result and is refused.
 */
async function refuseIfLastOwner(tx: Tx, personId: string, scopeIds: readonly string[]): Promise<void> {
  await lockScopes(tx, scopeIds);
  if ((await scopesOnlyOwnedBy(tx, personId, scopeIds)).length > 0) throw new Refusal(LAST_OWNER);
}

interface NewPersonInput {
  readonly caller: Caller;
  readonly name: string;
  readonly email: string;
  readonly password: string;
  readonly role: Role;
  /** The scope of a new User, or the scope a new Scope Admin co-owns; null for POST /api/persons. */
  readonly scopeId: string | null;
}

interface PreparedNewPerson extends Omit<NewPersonInput, 'password'> {
  readonly passwordHash: string;
}

export interface PersonCommandDependencies {
  readonly passwords: PasswordHasher;
  readonly events: PersonEvents;
  /** Opens TOTP shared keys for the second factor of an own email change. */
  readonly secrets: SecretBox;
}

/** The persons module's writes, each a named (audited) command. */
export function personCommands({ passwords, events, secrets }: PersonCommandDependencies) {
  /**
   * Checks that may refuse come before hashing, and the hash is made here, outside the
   * transaction: Argon2 is slow on purpose and must not hold SQLite's single write lock.
   */
  async function prepareNewPerson(context: StepContext, input: NewPersonInput): Promise<PreparedNewPerson> {
    if (input.scopeId !== null) await requireManageableScope(context.db, input.caller, input.scopeId);
    const name = trimmedName(input.name);
    const problem = passwordProblem(input.password);
    if (problem !== null) throw new Refusal(problem);
    const { password, ...rest } = input;
    return { ...rest, name, passwordHash: await passwords.hash(password, context.callerConnected) };
  }

  async function insertNewPerson(context: ExecuteContext, input: PreparedNewPerson): Promise<PersonRow> {
    const { tx, now } = context;
    // Checked again in the transaction: the scope may have been deleted while the hash was made.
    if (input.scopeId !== null) await requireManageableScope(tx, input.caller, input.scopeId);
    const personScopeId = input.role === Role.User ? input.scopeId : null;
    const email = input.email.trim();
    const emailNormalized = normalizeEmail(email);
    if (await isEmailTaken(tx, emailNormalized, personScopeId, null)) throw new Refusal(EMAIL_TAKEN);
    const row = newPersonRow({
      name: input.name,
      email,
      emailNormalized,
      role: input.role,
      scopeId: personScopeId,
      passwordHash: input.passwordHash,
      emailVerified: false,
      now,
    });
    context.setTarget(row.id);
    await withUniqueEmail(() => insertPerson(tx, row));
    if (input.role !== Role.User && input.scopeId !== null)
      await addOwnership(tx, input.scopeId, row.id, now);
    // The email module's hook point: the verification link for a new person with a password.
    await events.personCreated(context, row);
    return row;
  }

  /** POST /api/persons: a Scope Admin or System Admin with no scope. */
  const createPerson = defineCommand({
    name: 'CreatePersonCommand',
    async prepare(context: StepContext, input: { caller: Caller; body: CreatePersonBody }) {
      const role = parseRole(input.body.role);
      if (!isAdministratorRole(role)) throw new Refusal('Role must be Scope Admin or System Admin.');
      return prepareNewPerson(context, { caller: input.caller, ...input.body, role, scopeId: null });
    },
    execute: insertNewPerson,
  });

  /** POST /api/scopes/{scopeId}/persons: a User of the scope. */
  const createScopeUser = defineCommand({
    name: 'CreateScopeUserCommand',
    prepare: (
      context: StepContext,
      input: { caller: Caller; scopeId: string; body: CreateScopePersonBody },
    ) =>
      prepareNewPerson(context, {
        caller: input.caller,
        ...input.body,
        role: Role.User,
        scopeId: input.scopeId,
      }),
    execute: insertNewPerson,
  });

  /** POST /api/scopes/{scopeId}/owners: a new Scope Admin, at once a co-owner of the scope. */
  const createScopeOwner = defineCommand({
    name: 'CreateScopeOwnerCommand',
    prepare: (
      context: StepContext,
      input: { caller: Caller; scopeId: string; body: CreateScopePersonBody },
    ) =>
      prepareNewPerson(context, {
        caller: input.caller,
        ...input.body,
        role: Role.ScopeAdmin,
        scopeId: input.scopeId,
      }),
    execute: insertNewPerson,
  });

  type ScopePersonInput = { readonly caller: Caller; readonly scopeId: string; readonly personId: string };

  /**
   * POST /api/scopes/{scopeId}/owners/{personId}: an existing live Scope Admin or System Admin
   * becomes an owner. Already an owner: answered as done, nothing written.
   */
  const addScopeOwner = defineCommand({
    name: 'AddScopeOwnerCommand',
    async execute(context, input: ScopePersonInput): Promise<PersonRow> {
      const { tx } = context;
      context.setTarget(input.personId);
      await requireManageableScope(tx, input.caller, input.scopeId);
      const person = await findPerson(tx, input.personId);
      // A User of another scope is not addressable through this one (DECISIONS §10).
      if (person === undefined || (person.role === Role.User && person.scope_id !== input.scopeId)) {
        throw new Refusal('Person not found.');
      }
      if (!isAdministratorRole(person.role) || !canTakeOwnership(person)) throw new Refusal(NOT_ELIGIBLE);
      if (!(await isScopeOwner(tx, input.scopeId, person.id))) {
        await addOwnership(tx, input.scopeId, person.id, context.now);
      }
      return person;
    },
  });

  /**
   * POST /api/scopes/{scopeId}/users/{personId}/promote: the scope's User becomes a Scope Admin
   * and an owner of the scope. An administrator has no scope (spec What the service does 3), so
   * the person leaves the scope's Users: from now on they sign in without a scope id, and their
   * address must be free among administrators (409 otherwise).
   */
  const promoteScopeUser = defineCommand({
    name: 'PromoteScopeUserCommand',
    async execute(context, input: ScopePersonInput): Promise<PersonRow> {
      const { tx, now } = context;
      context.setTarget(input.personId);
      await requireManageableScope(tx, input.caller, input.scopeId);
      const person = await findPerson(tx, input.personId);
      if (person === undefined || person.role !== Role.User || person.scope_id !== input.scopeId) {
        throw new Refusal('Person not found.');
      }
      if (!canTakeOwnership(person)) throw new Refusal(NOT_ELIGIBLE);
      if (await isEmailTaken(tx, person.email_normalized, null, person.id)) throw new Refusal(EMAIL_TAKEN);
      const changes = { role: Role.ScopeAdmin, scope_id: null, updated_at: now } satisfies PersonUpdate;
      await withUniqueEmail(() => updatePerson(tx, person.id, changes));
      await addOwnership(tx, input.scopeId, person.id, now);
      return { ...person, ...changes };
    },
  });

  /** DELETE /api/scopes/{scopeId}/owners/{personId}: refused if it would remove the last owner. */
  const removeScopeOwner = defineCommand({
    name: 'RemoveScopeOwnerCommand',
    async execute(context, input: ScopePersonInput): Promise<PersonRow> {
      const { tx } = context;
      context.setTarget(input.personId);
      await requireManageableScope(tx, input.caller, input.scopeId);
      const person = await findPerson(tx, input.personId, true);
      if (person === undefined || !(await isScopeOwner(tx, input.scopeId, person.id))) {
        throw new Refusal('Person not found.');
      }
      await refuseIfLastOwner(tx, person.id, [input.scopeId]);
      await removeOwnership(tx, input.scopeId, person.id);
      return person;
    },
  });

  type UpdateInput = { readonly caller: Caller; readonly id: string; readonly body: UpdatePersonBody };
  type PreparedUpdate = UpdateInput & { readonly reauthentication: ReauthenticationVerdict | null };

  /**
   * Who may update whom (DECISIONS §9): themselves (name, email); a System Admin anyone (role
   * too); a Scope Admin the Users of scopes they own. Others learn nothing about the person (403).
   */
  async function authorizeUpdate(db: StepContext['db'] | Tx, caller: Caller, person: PersonRow | undefined) {
    if (isSystemAdmin(caller)) {
      if (person === undefined) throw new Refusal('Person not found.');
      return person;
    }
    const allowed =
      person !== undefined &&
      (person.id === caller.id ||
        (caller.role === Role.ScopeAdmin &&
          person.role === Role.User &&
          person.scope_id !== null &&
          (await isScopeOwner(db, person.scope_id, caller.id))));
    if (!allowed || person === undefined) throw new Refusal('You are not allowed to update this person.');
    return person;
  }

  /** The role asked for, when it differs from the current one; checked before any password. */
  function requestedRole(caller: Caller, person: PersonRow, body: UpdatePersonBody): Role | null {
    if (body.role === undefined || body.role === null) return null;
    const role = parseRole(body.role);
    if (role === person.role) return null;
    if (!isSystemAdmin(caller)) throw new Refusal('Only a System Admin may change a role.');
    // A User belongs to a scope and an administrator to none: the body names no scope, so a
    // User is made an administrator by promotion, and no administrator becomes a User.
    if (!isAdministratorRole(role) || !isAdministratorRole(person.role)) {
      throw new Refusal('A role can only change between Scope Admin and System Admin.');
    }
    return role;
  }

  /** Stored trimmed: surrounding whitespace alone is no change; a change of case is one. */
  const emailChanges = (person: PersonRow, body: UpdatePersonBody): boolean =>
    body.email.trim() !== person.email;

  /** PUT /api/persons/{id}. */
  const updatePersonCommand = defineCommand({
    name: 'UpdatePersonCommand',
    async prepare(context: StepContext, input: UpdateInput): Promise<PreparedUpdate> {
      context.setTarget(input.id);
      const person = await authorizeUpdate(context.db, input.caller, await findPerson(context.db, input.id));
      trimmedName(input.body.name);
      requestedRole(input.caller, person, input.body);
      // Own email change re-authenticates (spec §Persons): a stolen token alone must not be able
      // to move the account to an address the thief controls. Wrong, missing and paused all
      // answer the same 401 (spec §Authentication 11).
      // With two-factor active, `twoFactorCode` is checked too (in execute, where a recovery code
      // is spent in the same transaction as the change).
      const ownEmailChange = person.id === input.caller.id && emailChanges(person, input.body);
      if (ownEmailChange) await refuseWhileEmailMethodOn(context.db, person.id);
      const reauthentication = ownEmailChange
        ? await checkCurrentPassword(passwords, context, person, input.body.currentPassword)
        : null;
      return { ...input, reauthentication };
    },
    async execute(context, input: PreparedUpdate): Promise<PersonRow | Refusal> {
      const { tx, now } = context;
      const person = await authorizeUpdate(tx, input.caller, await findPerson(tx, input.id));
      const role = requestedRole(input.caller, person, input.body);
      const emailChanged = emailChanges(person, input.body);
      const byOwner = person.id === input.caller.id;
      if (emailChanged && byOwner) {
        // The address changed between the two steps: nothing was checked, so nothing is charged.
        if (input.reauthentication === null) return new Refusal(REAUTHENTICATION_FAILED);
        await refuseWhileEmailMethodOn(tx, person.id);
        const verdict = await reauthenticateSecondFactor(
          tx,
          secrets,
          person.id,
          input.reauthentication,
          splitTwoFactorCode(input.body.twoFactorCode),
          // No email code to match: the own email change is refused while the email method is on.
          null,
          context.clock.now(),
        );
        const refusal = await settleReauthentication(context, person.id, verdict);
        if (refusal !== null) return refusal;
      }
      const changes: PersonUpdate = { name: trimmedName(input.body.name), updated_at: now };
      if (role !== null) changes.role = role;
      if (emailChanged) {
        const email = input.body.email.trim();
        const emailNormalized = normalizeEmail(email);
        if (await isEmailTaken(tx, emailNormalized, person.scope_id, person.id))
          throw new Refusal(EMAIL_TAKEN);
        changes.email = email;
        changes.email_normalized = emailNormalized;
        changes.email_verified = 0;
        // A new stamp revokes every token of the person, the caller's own included (spec §States).
        changes.security_stamp = newSecurityStamp();
      }
      await withUniqueEmail(() => updatePerson(tx, person.id, changes));
      const updated: PersonRow = { ...person, ...changes } as PersonRow;
      // The email module's hook point: retire links, notice to the previous address, budget.
      if (emailChanged)
        await events.emailChanged(context, { person: updated, previousEmail: person.email, byOwner });
      return updated;
    },
  });

  /**
   * DELETE /api/persons/{id}: logical delete. A System Admin may delete anyone but themselves; a
   * Scope Admin only the Users of scopes they own. The person stops owning scopes (an owner is
   * live by definition), so the last owner of a live scope cannot be deleted. Repeating it
   * answers alreadyDeleted.
   */
  const deletePerson = defineCommand({
    name: 'DeletePersonCommand',
    async execute(context, input: { caller: Caller; id: string }) {
      const { tx, now } = context;
      context.setTarget(input.id);
      if (input.id === input.caller.id) throw new Refusal('You cannot delete your own person record.');
      const person = await findPerson(tx, input.id, true);
      if (!isSystemAdmin(input.caller)) {
        const allowed =
          person !== undefined &&
          person.role === Role.User &&
          person.scope_id !== null &&
          (await isScopeOwner(tx, person.scope_id, input.caller.id));
        if (!allowed) throw new Refusal('You are not allowed to delete this person.');
      }
      if (person === undefined) throw new Refusal('Person not found.');
      if (person.deleted_at !== null) return { id: person.id, alreadyDeleted: true };
      const owned = (await ownedScopeIdsOf(tx, [person.id])).get(person.id) ?? [];
      await refuseIfLastOwner(tx, person.id, owned);
      await updatePerson(tx, person.id, { deleted_at: now, updated_at: now });
      await removeAllOwnerships(tx, person.id);
      return { id: person.id, alreadyDeleted: false };
    },
  });

  /**
   * DELETE /api/persons/{id}/hard: the row goes, in any state; ownerships (and, as their modules
   * arrive, applications, tokens, two-factor data) go with it through foreign-key cascades.
   */
  const hardDeletePerson = defineCommand({
    name: 'HardDeletePersonCommand',
    async execute(context, input: { caller: Caller; id: string }) {
      const { tx } = context;
      context.setTarget(input.id);
      if (input.id === input.caller.id) throw new Refusal('You cannot delete your own person record.');
      const person = await findPerson(tx, input.id, true);
      if (person === undefined) throw new Refusal('Person not found.');
      const owned = (await ownedScopeIdsOf(tx, [person.id])).get(person.id) ?? [];
      await refuseIfLastOwner(tx, person.id, owned);
      if (!(await deletePersonRow(tx, person.id))) throw new Refusal('Person not found.');
      return { id: person.id };
    },
  });

  return {
    createPerson,
    createScopeUser,
    createScopeOwner,
    addScopeOwner,
    promoteScopeUser,
    removeScopeOwner,
    updatePerson: updatePersonCommand,
    deletePerson,
    hardDeletePerson,
  };
}

export type PersonCommands = ReturnType<typeof personCommands>;
