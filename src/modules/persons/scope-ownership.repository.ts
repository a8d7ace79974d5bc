import type { DbOrTx, Tx } from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';

/**
 * Who owns which scope (the scope_owners join rows), as the persons module reads and changes it.
 * Only live scopes count: a logically deleted scope keeps its rows but has nobody to protect.
 */

/** Live scopes each person owns, in one query. */
export async function ownedScopeIdsOf(
  db: DbOrTx,
  personIds: readonly string[],
): Promise<Map<string, string[]>> {
  const owned = new Map<string, string[]>(personIds.map((id) => [id, []]));
  if (personIds.length === 0) return owned;
  const rows = await db
    .selectFrom('scope_owners')
    .innerJoin('scopes', 'scopes.id', 'scope_owners.scope_id')
    .select(['scope_owners.person_id', 'scope_owners.scope_id'])
    .where('scope_owners.person_id', 'in', personIds)
    .where('scopes.deleted_at', 'is', null)
    .orderBy('scope_owners.scope_id')
    .execute();
  for (const row of rows) owned.get(row.person_id)?.push(row.scope_id);
  return owned;
}

/** True when `ownerId` owns a live scope that `personId` also owns or is a User of. */
export async function sharesOwnedScope(db: DbOrTx, ownerId: string, personId: string): Promise<boolean> {
  const row = await db
    .selectFrom('scope_owners as mine')
    .innerJoin('scopes', 'scopes.id', 'mine.scope_id')
    .select('mine.scope_id')
    .where('mine.person_id', '=', ownerId)
    .where('scopes.deleted_at', 'is', null)
    .where((eb) =>
      eb.or([
        eb.exists(
          eb
            .selectFrom('scope_owners as theirs')
            .select('theirs.scope_id')
            .whereRef('theirs.scope_id', '=', 'mine.scope_id')
            .where('theirs.person_id', '=', personId),
        ),
        eb.exists(
          eb
            .selectFrom('persons')
            .select('persons.id')
            .whereRef('persons.scope_id', '=', 'mine.scope_id')
            .where('persons.id', '=', personId),
        ),
      ]),
    )
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

const insertOwnership = preparedQuery(3, (db, scopeId: string, personId: string, now: string) =>
  db.insertInto('scope_owners').values({ scope_id: scopeId, person_id: personId, created_at: now }),
);

/** Compiled once (see preparedQuery): every new scope runs it for each of its owners. */
export async function addOwnership(tx: Tx, scopeId: string, personId: string, now: string): Promise<void> {
  await insertOwnership(tx, scopeId, personId, now);
}

export async function removeOwnership(tx: Tx, scopeId: string, personId: string): Promise<boolean> {
  const removed = await tx
    .deleteFrom('scope_owners')
    .where('scope_id', '=', scopeId)
    .where('person_id', '=', personId)
    .executeTakeFirst();
  return removed.numDeletedRows > 0n;
}

export async function removeAllOwnerships(tx: Tx, personId: string): Promise<void> {
  await tx.deleteFrom('scope_owners').where('person_id', '=', personId).execute();
}

/**
 * Locks the scopes' rows until the transaction ends, one at a time in id order (so two
 * transactions locking overlapping sets cannot deadlock). Last-owner checks run after this: on
 * PostgreSQL two removals of a scope's two owners would otherwise each count the other still
 * present and both commit. An UPDATE is used rather than SELECT … FOR UPDATE because SQLite has
 * no such clause; there, transactions already run one at a time on the single connection.
 */
export async function lockScopes(tx: Tx, scopeIds: readonly string[]): Promise<void> {
  for (const scopeId of [...new Set(scopeIds)].sort()) {
    await tx
      .updateTable('scopes')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', scopeId)
      .execute();
  }
}

/**
 * Of the given live scopes, those whose only live owner is `personId`: removing that person
 * would leave them without an owner (spec What the service does 4). Call after lockScopes.
 */
export async function scopesOnlyOwnedBy(
  tx: Tx,
  personId: string,
  scopeIds: readonly string[],
): Promise<string[]> {
  if (scopeIds.length === 0) return [];
  const rows = await tx
    .selectFrom('scopes')
    .select('scopes.id')
    .where('scopes.id', 'in', scopeIds)
    .where('scopes.deleted_at', 'is', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('scope_owners')
            .innerJoin('persons', 'persons.id', 'scope_owners.person_id')
            .select('scope_owners.person_id')
            .whereRef('scope_owners.scope_id', '=', 'scopes.id')
            .where('scope_owners.person_id', '!=', personId)
            .where('persons.deleted_at', 'is', null)
            .where('persons.erasure_requested_at', 'is', null),
        ),
      ),
    )
    .execute();
  return rows.map((row) => row.id);
}
