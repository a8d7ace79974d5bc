import type { DbOrTx, ScopeRow } from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { containsNormalized } from '../../db/query-helpers.ts';
import type { PageRequest } from '../../http/pagination.ts';

export interface ScopeWithOwners {
  readonly row: ScopeRow;
  readonly ownerIds: readonly string[];
}

export async function findScope(
  db: DbOrTx,
  id: string,
  includeDeleted = false,
): Promise<ScopeRow | undefined> {
  return db
    .selectFrom('scopes')
    .selectAll()
    .where('id', '=', id)
    .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .executeTakeFirst();
}

export async function isLiveScope(db: DbOrTx, id: string): Promise<boolean> {
  return (
    (await db
      .selectFrom('scopes')
      .select('id')
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst()) !== undefined
  );
}

export async function isScopeOwner(db: DbOrTx, scopeId: string, personId: string): Promise<boolean> {
  const row = await db
    .selectFrom('scope_owners')
    .select('person_id')
    .where('scope_id', '=', scopeId)
    .where('person_id', '=', personId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Owner ids of each scope, in one query (no query per scope). */
export async function ownerIdsOf(db: DbOrTx, scopeIds: readonly string[]): Promise<Map<string, string[]>> {
  const owners = new Map<string, string[]>(scopeIds.map((id) => [id, []]));
  if (scopeIds.length === 0) return owners;
  const rows = await db
    .selectFrom('scope_owners')
    .select(['scope_id', 'person_id'])
    .where('scope_id', 'in', scopeIds)
    .orderBy('created_at')
    .orderBy('person_id')
    .execute();
  for (const row of rows) owners.get(row.scope_id)?.push(row.person_id);
  return owners;
}

export interface ScopeFilter {
  readonly name: string | null;
  readonly includeDeleted: boolean;
  /** Only scopes this person owns (a Scope Admin's list). */
  readonly ownedBy: string | null;
}

export async function listScopes(
  db: DbOrTx,
  filter: ScopeFilter,
  page: PageRequest,
): Promise<{ rows: ScopeRow[]; total: number }> {
  const base = db
    .selectFrom('scopes')
    .$if(!filter.includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .$if(filter.name !== null && filter.name.trim() !== '', (query) =>
      query.where(containsNormalized('name_normalized', filter.name ?? '')),
    )
    .$if(filter.ownedBy !== null, (query) =>
      query.where('id', 'in', (eb) =>
        eb
          .selectFrom('scope_owners')
          .select('scope_id')
          .where('person_id', '=', filter.ownedBy ?? ''),
      ),
    );
  const unfiltered = (filter.name === null || filter.name.trim() === '') && filter.ownedBy === null;
  const [rows, total] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    unfiltered
      ? countedScopes(db, filter.includeDeleted)
      : base
          .select((eb) => eb.fn.countAll<number>().as('total'))
          .executeTakeFirstOrThrow()
          .then((count) => Number(count.total)),
  ]);
  return { rows, total };
}

const selectRowCount = preparedQuery(1, (db, name: string) =>
  db.selectFrom('row_counts').select('value').where('name', '=', name),
);

/** Every scope, or the live ones: kept by triggers (migration 0010), so no scan per page. */
async function countedScopes(db: DbOrTx, includeDeleted: boolean): Promise<number> {
  const [row] = await selectRowCount(db, includeDeleted ? 'scopes.all' : 'scopes.live');
  return Number(row?.value ?? 0);
}
