import { defineCommand } from '../../audit/command-runner.ts';
import { newId } from '../../crypto/secrets.ts';
import { type ScopePermissionRow, toFlag } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { normalizeText } from '../../db/query-helpers.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import {
  deletePermissionRow,
  findPermission,
  insertPermission,
  livePermissionNameTaken,
  updatePermissionRow,
} from './permissions.repository.ts';
import type { PermissionBody } from './permissions.schemas.ts';

/**
 * Scope permissions have no owner of their own: owning the scope is the whole authorization
 * (spec §What the service does 7), so every command starts with requireManageableScope.
 */

const NAME_TAKEN = 'A permission with this name already exists in this scope.' as const;

/** Two writers racing for one name both pass the read check; the unique index decides (409). */
async function withUniqueName<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) throw new Refusal(NAME_TAKEN);
    throw error;
  }
}

interface ScopedInput {
  readonly caller: Caller;
  readonly scopeId: string;
}

export const createPermission = defineCommand({
  name: 'CreateScopePermissionCommand',
  async execute(
    context,
    input: ScopedInput & { body: PermissionBody },
  ): Promise<ScopePermissionRow | Refusal> {
    const { tx, now } = context;
    const scope = await requireManageableScope(tx, input.caller, input.scopeId);
    const nameNormalized = normalizeText(input.body.name);
    if (await livePermissionNameTaken(tx, scope.id, nameNormalized, null)) return new Refusal(NAME_TAKEN);
    const row: ScopePermissionRow = {
      id: newId(),
      scope_id: scope.id,
      name: input.body.name.trim(),
      name_normalized: nameNormalized,
      description: input.body.description ?? '',
      include_as_jwt_claim: toFlag(input.body.includeAsJwtClaim ?? false),
      deleted_at: null,
      created_at: now,
      updated_at: now,
    };
    context.setTarget(row.id);
    await withUniqueName(() => insertPermission(tx, row));
    return row;
  },
});

export const updatePermission = defineCommand({
  name: 'UpdateScopePermissionCommand',
  async execute(
    context,
    input: ScopedInput & { id: string; body: PermissionBody },
  ): Promise<ScopePermissionRow | Refusal> {
    const { tx, now } = context;
    context.setTarget(input.id);
    const scope = await requireManageableScope(tx, input.caller, input.scopeId);
    const permission = await findPermission(tx, scope.id, input.id);
    if (permission === undefined) return new Refusal('Scope permission not found.');
    const nameNormalized = normalizeText(input.body.name);
    if (await livePermissionNameTaken(tx, scope.id, nameNormalized, permission.id)) {
      return new Refusal(NAME_TAKEN);
    }
    const changes = {
      name: input.body.name.trim(),
      name_normalized: nameNormalized,
      description: input.body.description ?? '',
      include_as_jwt_claim: toFlag(input.body.includeAsJwtClaim ?? false),
      updated_at: now,
    };
    await withUniqueName(() => updatePermissionRow(tx, permission.id, changes));
    return { ...permission, ...changes };
  },
});

/** Logical delete; repeating it answers alreadyDeleted instead of failing. */
export const deletePermission = defineCommand({
  name: 'DeleteScopePermissionCommand',
  async execute(
    context,
    input: ScopedInput & { id: string },
  ): Promise<{ id: string; alreadyDeleted: boolean } | Refusal> {
    const { tx, now } = context;
    context.setTarget(input.id);
    const scope = await requireManageableScope(tx, input.caller, input.scopeId);
    const permission = await findPermission(tx, scope.id, input.id, true);
    if (permission === undefined) return new Refusal('Scope permission not found.');
    if (permission.deleted_at !== null) return { id: permission.id, alreadyDeleted: true };
    await updatePermissionRow(tx, permission.id, { deleted_at: now, updated_at: now });
    return { id: permission.id, alreadyDeleted: false };
  },
});

/** Permanent delete in any state; a repeat finds nothing (404). */
export const hardDeletePermission = defineCommand({
  name: 'HardDeleteScopePermissionCommand',
  async execute(context, input: ScopedInput & { id: string }): Promise<{ id: string } | Refusal> {
    const { tx } = context;
    context.setTarget(input.id);
    const scope = await requireManageableScope(tx, input.caller, input.scopeId);
    if (!(await deletePermissionRow(tx, scope.id, input.id)))
      return new Refusal('Scope permission not found.');
    return { id: input.id };
  },
});
