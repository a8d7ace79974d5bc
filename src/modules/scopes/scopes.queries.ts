import type { DbOrTx, ScopeRow } from '../../db/database.ts';
import { Role } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { Refusal } from '../../http/messages.ts';
import { pageRequest } from '../../http/pagination.ts';
import { findScope, isScopeOwner, listScopes, ownerIdsOf } from './scopes.repository.ts';
import type { ListScopesQuery, Scope } from './scopes.schemas.ts';

export function toScope(row: ScopeRow, ownerIds: readonly string[]): Scope {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    ownerIds: [...ownerIds],
    extidpSignInEnabled: row.extidp_signin_enabled === 1,
    selfRegistrationEnabled: row.self_registration_enabled === 1,
    emailVerificationUrl: row.email_verification_url,
    passwordResetUrl: row.password_reset_url,
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function presentScope(db: DbOrTx, row: ScopeRow): Promise<Scope> {
  return toScope(row, (await ownerIdsOf(db, [row.id])).get(row.id) ?? []);
}

/** A System Admin's list holds every scope; a Scope Admin's page and total only their own. */
export async function listScopesFor(
  db: DbOrTx,
  caller: Caller,
  query: ListScopesQuery,
): Promise<Page<Scope>> {
  const page = pageRequest(query);
  const { rows, total } = await listScopes(
    db,
    {
      name: query.Name ?? null,
      includeDeleted: query.IncludeDeleted ?? false,
      ownedBy: isSystemAdmin(caller) ? null : caller.id,
    },
    page,
  );
  const owners = await ownerIdsOf(
    db,
    rows.map((row) => row.id),
  );
  return {
    items: rows.map((row) => toScope(row, owners.get(row.id) ?? [])),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}

/**
 * One scope (DECISIONS §9): a System Admin any (deleted ones with includeDeleted); a Scope Admin
 * one they own; a User or external-provider user their own scope. Others 403.
 */
export async function getScopeFor(
  db: DbOrTx,
  caller: Caller,
  id: string,
  includeDeleted: boolean,
): Promise<Scope> {
  const allowed =
    isSystemAdmin(caller) ||
    (caller.role === Role.ScopeAdmin && (await isScopeOwner(db, id, caller.id))) ||
    (caller.role === Role.User && caller.scopeId === id);
  if (!allowed) throw new Refusal('You are not allowed to view this scope.');
  const row = await findScope(db, id, includeDeleted && isSystemAdmin(caller));
  if (row === undefined) throw new Refusal('Scope not found.');
  return presentScope(db, row);
}
