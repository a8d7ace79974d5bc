import { defineCommand, type ExecuteContext } from '../../audit/command-runner.ts';
import { isAbsoluteHttpUrl } from '../../config/config.ts';
import { newId } from '../../crypto/secrets.ts';
import { type ScopeRow, toFlag } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { normalizeText } from '../../db/query-helpers.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { isLiveAdministrator } from '../persons/persons.repository.ts';
import { addOwnership } from '../persons/scope-ownership.repository.ts';
import { requireManageableScope } from './scope-access.ts';
import {
  deleteScopeRow,
  findScope,
  insertScope,
  isScopeNameTaken,
  markScopeContentsDeleted,
  type ScopeWithOwners,
  updateScopeRow,
} from './scopes.repository.ts';
import type { CreateScopeBody, EmailLinksBody, UpdateScopeBody } from './scopes.schemas.ts';
import { MAXIMUM_EMAIL_LINK_LENGTH } from './scopes.schemas.ts';

/** Writes that may hit the live-name unique index answer 409, also when two race each other. */
async function withUniqueName<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new Refusal('A scope with this name already exists.');
    throw error;
  }
}

export const createScope = defineCommand({
  name: 'CreateScopeCommand',
  async execute(context, body: CreateScopeBody): Promise<ScopeWithOwners | Refusal> {
    const { tx, now } = context;
    const ownerIds = [...new Set(body.ownerIds)];
    for (const ownerId of ownerIds) {
      if (!(await isLiveAdministrator(tx, ownerId))) {
        return new Refusal('Every owner must be a live Scope Admin or System Admin.');
      }
    }
    if (await isScopeNameTaken(tx, body.name, null))
      return new Refusal('A scope with this name already exists.');
    const id = newId();
    context.setTarget(id);
    const row: ScopeRow = {
      id,
      name: body.name.trim(),
      name_normalized: normalizeText(body.name),
      description: body.description ?? '',
      extidp_signin_enabled: 0,
      self_registration_enabled: 0,
      email_verification_url: null,
      password_reset_url: null,
      deleted_at: null,
      created_at: now,
      updated_at: now,
    };
    await withUniqueName(() => insertScope(tx, row));
    for (const ownerId of ownerIds) await addOwnership(tx, id, ownerId, now);
    // The owners as a read lists them (ownerIdsOf: by when they became owners, then by id), so
    // the answer needs no read after the commit: here all became owners at the same moment.
    return { row, ownerIds: ownerIds.toSorted() };
  },
});

export const updateScope = defineCommand({
  name: 'UpdateScopeCommand',
  async execute(context, input: { id: string; body: UpdateScopeBody }): Promise<ScopeRow | Refusal> {
    const { tx, now } = context;
    context.setTarget(input.id);
    const scope = await findScope(tx, input.id);
    if (scope === undefined) return new Refusal('Scope not found.');
    if (await isScopeNameTaken(tx, input.body.name, scope.id))
      return new Refusal('A scope with this name already exists.');
    const changes = {
      name: input.body.name.trim(),
      name_normalized: normalizeText(input.body.name),
      description: input.body.description ?? '',
      updated_at: now,
    };
    await withUniqueName(() => updateScopeRow(tx, scope.id, changes));
    return { ...scope, ...changes };
  },
});

/**
 * Logical delete. The scope's Users go with it (and, as their modules arrive, its
 * external-provider users and applications), so no token of theirs is honoured afterwards.
 * Repeating it answers alreadyDeleted instead of failing.
 */
export const deleteScope = defineCommand({
  name: 'DeleteScopeCommand',
  async execute(context, id: string): Promise<{ id: string; alreadyDeleted: boolean } | Refusal> {
    const { tx, now } = context;
    context.setTarget(id);
    const scope = await findScope(tx, id, true);
    if (scope === undefined) return new Refusal('Scope not found.');
    if (scope.deleted_at !== null) return { id, alreadyDeleted: true };
    await updateScopeRow(tx, id, { deleted_at: now, updated_at: now });
    await markScopeContentsDeleted(tx, id, now);
    return { id, alreadyDeleted: false };
  },
});

/**
 * Permanent delete in any state: the scope, its ownership rows and its Users go (foreign keys
 * cascade, so nothing is left pointing at it). A repeat finds nothing: 404.
 */
export const hardDeleteScope = defineCommand({
  name: 'HardDeleteScopeCommand',
  async execute(context, id: string): Promise<{ id: string } | Refusal> {
    context.setTarget(id);
    if (!(await deleteScopeRow(context.tx, id))) return new Refusal('Scope not found.');
    return { id };
  },
});

type ScopeSetting = { scopeId: string; caller: Caller };

export const setExtidpSignIn = defineCommand({
  name: 'SetExtidpSignInCommand',
  async execute(context, input: ScopeSetting & { enabled: boolean }): Promise<ScopeRow> {
    return updateSettings(context, input, { extidp_signin_enabled: toFlag(input.enabled) });
  },
});

export const setSelfRegistration = defineCommand({
  name: 'SetSelfRegistrationCommand',
  async execute(context, input: ScopeSetting & { enabled: boolean }): Promise<ScopeRow> {
    return updateSettings(context, input, { self_registration_enabled: toFlag(input.enabled) });
  },
});

/** Per-scope link bases: they replace the global ones in mails to this scope's Users. */
export const setEmailLinks = defineCommand({
  name: 'SetEmailLinksCommand',
  async execute(context, input: ScopeSetting & { body: EmailLinksBody }): Promise<ScopeRow> {
    const verification = checkedLink(input.body.emailVerificationUrl);
    const reset = checkedLink(input.body.passwordResetUrl);
    return updateSettings(context, input, {
      email_verification_url: verification,
      password_reset_url: reset,
    });
  },
});

function checkedLink(value: string | null | undefined): string | null {
  if (value === undefined || value === null || value.trim() === '') return null;
  const trimmed = value.trim();
  if (trimmed.length > MAXIMUM_EMAIL_LINK_LENGTH || !isAbsoluteHttpUrl(trimmed)) {
    throw new Refusal('Email link URLs must be absolute http or https URLs of at most 2048 characters.');
  }
  return trimmed;
}

async function updateSettings(
  context: ExecuteContext,
  input: ScopeSetting,
  changes: Partial<
    Pick<
      ScopeRow,
      'extidp_signin_enabled' | 'self_registration_enabled' | 'email_verification_url' | 'password_reset_url'
    >
  >,
): Promise<ScopeRow> {
  context.setTarget(input.scopeId);
  const scope = await requireManageableScope(context.tx, input.caller, input.scopeId);
  const updated = { ...changes, updated_at: context.now };
  await updateScopeRow(context.tx, scope.id, updated);
  return { ...scope, ...updated };
}
