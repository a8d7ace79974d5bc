import type { DbOrTx, ScopeRow, Tx } from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { containsNormalized, normalizeText } from '../../db/query-helpers.ts';
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
  return (await selectLiveScopeId(db, id)).length > 0;
}

// Every User's sign-in asks this: prepared (see preparedQuery), as the sign-in's other reads are.
const selectLiveScopeId = preparedQuery(1, (db, id: string) =>
  db.selectFrom('scopes').select('id').where('id', '=', id).where('deleted_at', 'is', null),
);

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
  for (const row of await ownersOfScopes(scopeIds.length)(db, ...scopeIds))
    owners.get(row.scope_id)?.push(row.person_id);
  return owners;
}

/**
 * The owners query for a given number of scopes, compiled once per count (a page holds at most
 * MAXIMUM_PAGE_SIZE scopes, so there are at most that many): built by Kysely on every call, it
 * cost as much as SQLite's own work on a page of 25 (profiled under the list benchmark).
 */
const ownersQueries = new Map<number, ReturnType<typeof ownersQuery>>();
const ownersQuery = (count: number) =>
  preparedQuery(count, (db, ...scopeIds: string[]) =>
    db
      .selectFrom('scope_owners')
      .select(['scope_id', 'person_id'])
      .where('scope_id', 'in', scopeIds)
      .orderBy('created_at')
      .orderBy('person_id'),
  );
function ownersOfScopes(count: number) {
  let query = ownersQueries.get(count);
  if (query === undefined) ownersQueries.set(count, (query = ownersQuery(count)));
  return query;
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
  const named = filter.name !== null && filter.name.trim() !== '';
  if (!named && filter.ownedBy === null) {
    // The common page (every scope, or every live one) runs prepared, and its count is kept.
    const pageQuery = filter.includeDeleted ? everyScopePage : liveScopePage;
    const [rows, total] = await Promise.all([
      pageQuery(db, page.pageSize, page.offset),
      countedScopes(db, filter.includeDeleted),
    ]);
    return { rows, total };
  }
  const base = db
    .selectFrom('scopes')
    .$if(!filter.includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .$if(named, (query) => query.where(containsNormalized('name_normalized', filter.name ?? '')))
    .$if(filter.ownedBy !== null, (query) =>
      query.where('id', 'in', (eb) =>
        eb
          .selectFrom('scope_owners')
          .select('scope_id')
          .where('person_id', '=', filter.ownedBy ?? ''),
      ),
    );
  const [rows, total] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    base
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .executeTakeFirstOrThrow()
      .then((count) => Number(count.total)),
  ]);
  return { rows, total };
}

const scopePage = (includeDeleted: boolean) =>
  preparedQuery(2, (db, limit: number, offset: number) =>
    db
      .selectFrom('scopes')
      .selectAll()
      .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null))
      .orderBy('name')
      .orderBy('id')
      .limit(limit)
      .offset(offset),
  );
const liveScopePage = scopePage(false);
const everyScopePage = scopePage(true);

const selectRowCount = preparedQuery(1, (db, name: string) =>
  db.selectFrom('row_counts').select('value').where('name', '=', name),
);

/** Every scope, or the live ones: kept by triggers (migration 0010), so no scan per page. */
async function countedScopes(db: DbOrTx, includeDeleted: boolean): Promise<number> {
  const [row] = await selectRowCount(db, includeDeleted ? 'scopes.all' : 'scopes.live');
  return Number(row?.value ?? 0);
}

const selectLiveScopeNamed = preparedQuery(1, (db, nameNormalized: string) =>
  db
    .selectFrom('scopes')
    .select('id')
    .where('name_normalized', '=', nameNormalized)
    .where('deleted_at', 'is', null),
);
const selectOtherLiveScopeNamed = preparedQuery(2, (db, nameNormalized: string, exceptId: string) =>
  db
    .selectFrom('scopes')
    .select('id')
    .where('name_normalized', '=', nameNormalized)
    .where('deleted_at', 'is', null)
    .where('id', '!=', exceptId),
);

/** Whether a live scope (other than `exceptId`) has this name, compared normalized. */
export async function isScopeNameTaken(db: DbOrTx, name: string, exceptId: string | null): Promise<boolean> {
  const rows =
    exceptId === null
      ? await selectLiveScopeNamed(db, normalizeText(name))
      : await selectOtherLiveScopeNamed(db, normalizeText(name), exceptId);
  return rows.length > 0;
}

const insertScopeRow = preparedQuery(
  11,
  (
    db,
    id: string,
    name: string,
    nameNormalized: string,
    description: string,
    extidpSignInEnabled: ScopeRow['extidp_signin_enabled'],
    selfRegistrationEnabled: ScopeRow['self_registration_enabled'],
    emailVerificationUrl: string | null,
    passwordResetUrl: string | null,
    deletedAt: string | null,
    createdAt: string,
    updatedAt: string,
  ) =>
    db.insertInto('scopes').values({
      id,
      name,
      name_normalized: nameNormalized,
      description,
      extidp_signin_enabled: extidpSignInEnabled,
      self_registration_enabled: selfRegistrationEnabled,
      email_verification_url: emailVerificationUrl,
      password_reset_url: passwordResetUrl,
      deleted_at: deletedAt,
      created_at: createdAt,
      updated_at: updatedAt,
    }),
);

/** Compiled once (see preparedQuery): scope creation is the benchmark's audited write. */
export async function insertScope(tx: Tx, row: ScopeRow): Promise<void> {
  await insertScopeRow(
    tx,
    row.id,
    row.name,
    row.name_normalized,
    row.description,
    row.extidp_signin_enabled,
    row.self_registration_enabled,
    row.email_verification_url,
    row.password_reset_url,
    row.deleted_at,
    row.created_at,
    row.updated_at,
  );
}

export async function updateScopeRow(
  tx: Tx,
  id: string,
  changes: Partial<Omit<ScopeRow, 'id' | 'created_at'>>,
): Promise<void> {
  await tx.updateTable('scopes').set(changes).where('id', '=', id).execute();
}

/**
 * What lives in a scope and goes with its logical deletion: its Users, its applications (their
 * secrets stop being exchanged and their tokens fail the live check) and its external-provider
 * users. A module whose rows belong to a scope adds its table here.
 */
const TABLES_IN_A_SCOPE = ['persons', 'applications', 'extidp_users'] as const;

export async function markScopeContentsDeleted(tx: Tx, scopeId: string, now: string): Promise<void> {
  for (const table of TABLES_IN_A_SCOPE) {
    await tx
      .updateTable(table)
      .set({ deleted_at: now, updated_at: now })
      .where('scope_id', '=', scopeId)
      .where('deleted_at', 'is', null)
      .execute();
  }
}

/** Deletes the scope row for good (its ownership rows and Users cascade); false when none was there. */
export async function deleteScopeRow(tx: Tx, id: string): Promise<boolean> {
  const deleted = await tx.deleteFrom('scopes').where('id', '=', id).executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}
