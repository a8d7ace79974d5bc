import type { DbOrTx, ScopePermissionRow } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { Refusal } from '../../http/messages.ts';
import { pageRequest } from '../../http/pagination.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { findPermission, listPermissions } from './permissions.repository.ts';
import type { ListPermissionsQuery, ScopePermission } from './permissions.schemas.ts';

export function toPermission(row: ScopePermissionRow): ScopePermission {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    includeAsJwtClaim: row.include_as_jwt_claim === 1,
    scopeId: row.scope_id,
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function getPermissionFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  id: string,
  includeDeleted: boolean,
): Promise<ScopePermission> {
  const scope = await requireManageableScope(db, caller, scopeId);
  const row = await findPermission(db, scope.id, id, includeDeleted);
  if (row === undefined) throw new Refusal('Scope permission not found.');
  return toPermission(row);
}

export async function listPermissionsFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListPermissionsQuery,
): Promise<Page<ScopePermission>> {
  const page = pageRequest(query);
  const scope = await requireManageableScope(db, caller, scopeId);
  const { rows, total } = await listPermissions(
    db,
    scope.id,
    {
      name: query.Name ?? null,
      includeAsJwtClaim: query.IncludeAsJwtClaim ?? null,
      includeDeleted: query.IncludeDeleted ?? false,
    },
    page,
  );
  return {
    items: rows.map(toPermission),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}
