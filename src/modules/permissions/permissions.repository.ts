import type { SelectQueryBuilder } from 'kysely';
import type { Database, DbOrTx, ScopePermissionRow, Tx } from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { containsNormalized, deleteRowOfScope } from '../../db/query-helpers.ts';
import type { PageRequest } from '../../http/pagination.ts';

/** A permission of the scope; another scope's permission is not found. */
export async function findPermission(
  db: DbOrTx,
  scopeId: string,
  id: string,
  includeDeleted = false,
): Promise<ScopePermissionRow | undefined> {
  return db
    .selectFrom('scope_permissions')
    .selectAll()
    .where('id', '=', id)
    .where('scope_id', '=', scopeId)
    .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .executeTakeFirst();
}

export async function livePermissionNameTaken(
  db: DbOrTx,
  scopeId: string,
  nameNormalized: string,
  exceptId: string | null,
): Promise<boolean> {
  const row = await db
    .selectFrom('scope_permissions')
    .select('id')
    .where('scope_id', '=', scopeId)
    .where('name_normalized', '=', nameNormalized)
    .where('deleted_at', 'is', null)
    .$if(exceptId !== null, (query) => query.where('id', '!=', exceptId ?? ''))
    .executeTakeFirst();
  return row !== undefined;
}

export async function insertPermission(tx: Tx, row: ScopePermissionRow): Promise<void> {
  await tx.insertInto('scope_permissions').values(row).execute();
}

export async function updatePermissionRow(
  tx: Tx,
  id: string,
  changes: Partial<Omit<ScopePermissionRow, 'id' | 'scope_id' | 'created_at'>>,
): Promise<void> {
  await tx.updateTable('scope_permissions').set(changes).where('id', '=', id).execute();
}

/** Deletes the scope's permission for good; false when none was there. */
export async function deletePermissionRow(tx: Tx, scopeId: string, id: string): Promise<boolean> {
  return deleteRowOfScope(tx, 'scope_permissions', scopeId, id);
}

export interface PermissionFilter {
  readonly name: string | null;
  readonly includeAsJwtClaim: boolean | null;
  readonly includeDeleted: boolean;
}

export async function listPermissions(
  db: DbOrTx,
  scopeId: string,
  filter: PermissionFilter,
  page: PageRequest,
): Promise<{ rows: ScopePermissionRow[]; total: number }> {
  const base = db
    .selectFrom('scope_permissions')
    .where('scope_id', '=', scopeId)
    .$if(!filter.includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .$if(filter.includeAsJwtClaim !== null, (query) =>
      query.where('include_as_jwt_claim', '=', filter.includeAsJwtClaim === true ? 1 : 0),
    )
    .$if(filter.name !== null && filter.name.trim() !== '', (query) =>
      query.where(containsNormalized('name_normalized', filter.name ?? '')),
    );
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * The permissions placed in the `permissions` claim of tokens of identities acting in a scope:
 * its live permissions flagged IncludeAsJwtClaim, in name order (spec §What the service does 7),
 * joined to a query that reads `scopes`. The query then yields one row per claimed permission
 * (`claimedPermission`), or one row whose `claimedPermission` is null when the scope has none,
 * so a read that needs its scope's claims (the secret exchange) is still one statement.
 */
export function joinClaimedPermissions<O>(query: SelectQueryBuilder<Database, 'scopes', O>) {
  return query
    .leftJoin('scope_permissions', (join) =>
      join
        .onRef('scope_permissions.scope_id', '=', 'scopes.id')
        .on('scope_permissions.include_as_jwt_claim', '=', 1)
        .on('scope_permissions.deleted_at', 'is', null),
    )
    .select('scope_permissions.name as claimedPermission')
    .orderBy('scope_permissions.name')
    .orderBy('scope_permissions.id');
}

/** The claimed permissions' names, out of the rows of a query joined by `joinClaimedPermissions`. */
export const claimedPermissionsOf = (rows: ReadonlyArray<{ claimedPermission: string | null }>): string[] =>
  rows.flatMap((row) => (row.claimedPermission === null ? [] : [row.claimedPermission]));

const selectClaimedPermissionNames = preparedQuery(1, (db, scopeId: string) =>
  joinClaimedPermissions(db.selectFrom('scopes').where('scopes.id', '=', scopeId)),
);

/** Read at every sign-in, so its SQL is compiled once (see preparedQuery). */
export async function claimedPermissionNames(db: DbOrTx, scopeId: string): Promise<string[]> {
  return claimedPermissionsOf(await selectClaimedPermissionNames(db, scopeId));
}
