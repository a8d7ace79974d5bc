import type { DbOrTx, ExtidpUserRow } from '../../db/database.ts';
import { Role } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { Refusal } from '../../http/messages.ts';
import { pageRequest } from '../../http/pagination.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { isScopeOwner } from '../scopes/scopes.repository.ts';
import { findExtidpUserInScope, listExtidpUsers } from './extidp.repository.ts';
import type { ExtidpUser, ListExtidpUsersQuery } from './extidp.schemas.ts';

export function toExtidpUser(row: ExtidpUserRow): ExtidpUser {
  return {
    id: row.id,
    subject: row.subject,
    name: row.name,
    email: row.email,
    emailVerified: row.email_verified === 1,
    pictureUrl: row.picture_url,
    scopeId: row.scope_id,
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The scope's external-provider users, for a System Admin or an owner of the scope. */
export async function listExtidpUsersFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListExtidpUsersQuery,
): Promise<Page<ExtidpUser>> {
  const page = pageRequest(query);
  await requireManageableScope(db, caller, scopeId);
  const { rows, total } = await listExtidpUsers(
    db,
    { scopeId, includeDeleted: query.IncludeDeleted ?? false },
    page,
  );
  return {
    items: rows.map(toExtidpUser),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}

/**
 * One user (DECISIONS §9): the user themselves, a System Admin, or a Scope Admin owning the
 * scope; anyone else 403 before anything about the user's existence is revealed. Their own
 * token carries the User role, so the user is recognised by token kind and id, not by role.
 */
export async function getExtidpUserFor(
  db: DbOrTx,
  caller: Caller,
  address: { scopeId: string; id: string },
  includeDeleted: boolean,
): Promise<ExtidpUser> {
  const isSelf = caller.kind === 'extidpUser' && caller.id === address.id;
  const isAdministrator =
    isSystemAdmin(caller) ||
    (caller.role === Role.ScopeAdmin &&
      caller.kind === 'person' &&
      (await isScopeOwner(db, address.scopeId, caller.id)));
  if (!isSelf && !isAdministrator)
    throw new Refusal('You are not allowed to view this external-provider user.');
  const row = await findExtidpUserInScope(db, address.scopeId, address.id, includeDeleted && isAdministrator);
  if (row === undefined) throw new Refusal('External-provider user not found.');
  return toExtidpUser(row);
}
