import type { DbOrTx, ExtidpUserRow, ExtidpUsersTable, IsoTime, Tx } from '../../db/database.ts';
import { Role } from '../../db/database.ts';
import type { Insertable, Updateable } from 'kysely';
import type { PageRequest } from '../../http/pagination.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { deleteRowOfScope } from '../../db/query-helpers.ts';

/** What authentication needs of an external-provider user on every request: one primary-key read. */
export interface ExtidpUserAuthState {
  readonly id: string;
  readonly role: Role;
  readonly scopeId: string;
  /** External-provider users carry no security stamp (spec §Authentication 4). */
  readonly securityStamp: null;
  /** Logically deleted or anonymised. */
  readonly gone: boolean;
  /** Suspended by an erasure request, awaiting the retention pass. */
  readonly erasurePending: boolean;
  readonly restricted: boolean;
}

const selectExtidpUserAuthState = preparedQuery(1, (db, id: string) =>
  db
    .selectFrom('extidp_users')
    .select(['id', 'scope_id', 'deleted_at', 'erasure_requested_at', 'anonymised_at', 'restricted_at'])
    .where('id', '=', id),
);

export async function findExtidpUserAuthState(db: DbOrTx, id: string): Promise<ExtidpUserAuthState | null> {
  const [row] = await selectExtidpUserAuthState(db, id);
  if (row === undefined) return null;
  return {
    id: row.id,
    role: Role.User,
    scopeId: row.scope_id,
    securityStamp: null,
    gone: row.deleted_at !== null || row.anonymised_at !== null,
    erasurePending: row.erasure_requested_at !== null,
    restricted: row.restricted_at !== null,
  };
}

/** Deleted, anonymised or suspended for erasure: such an account neither signs in nor is honoured. */
export const isGone = (row: Pick<ExtidpUserRow, 'deleted_at' | 'erasure_requested_at' | 'anonymised_at'>) =>
  row.deleted_at !== null || row.erasure_requested_at !== null || row.anonymised_at !== null;

/** The user bound to an external account in a scope, deleted or not. */
export async function findExtidpUserByAccount(
  db: DbOrTx,
  account: { scopeId: string; issuer: string; subject: string },
): Promise<ExtidpUserRow | undefined> {
  return db
    .selectFrom('extidp_users')
    .selectAll()
    .where('scope_id', '=', account.scopeId)
    .where('issuer', '=', account.issuer)
    .where('subject', '=', account.subject)
    .executeTakeFirst();
}

/** One user reached through its scope: a user of another scope is not found. */
export async function findExtidpUserInScope(
  db: DbOrTx,
  scopeId: string,
  id: string,
  includeDeleted: boolean,
): Promise<ExtidpUserRow | undefined> {
  return db
    .selectFrom('extidp_users')
    .selectAll()
    .where('id', '=', id)
    .where('scope_id', '=', scopeId)
    .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .executeTakeFirst();
}

/**
 * Inserts a new user unless its external account already has one in the scope (two first
 * sign-ins racing each other): true when this call created it.
 */
export async function insertExtidpUserIfAbsent(tx: Tx, row: Insertable<ExtidpUsersTable>): Promise<boolean> {
  const result = await tx
    .insertInto('extidp_users')
    .values(row)
    .onConflict((conflict) => conflict.columns(['scope_id', 'issuer', 'subject']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function updateExtidpUser(
  tx: Tx,
  id: string,
  changes: Updateable<ExtidpUsersTable>,
): Promise<void> {
  await tx.updateTable('extidp_users').set(changes).where('id', '=', id).execute();
}

/** Records a sign-out of a live user; false when the user is no longer live. */
export async function recordSignOut(tx: Tx, id: string, now: IsoTime): Promise<boolean> {
  const result = await tx
    .updateTable('extidp_users')
    .set({ last_signed_out_at: now })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('erasure_requested_at', 'is', null)
    .where('anonymised_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function markExtidpUserDeleted(tx: Tx, id: string, now: IsoTime): Promise<void> {
  await tx
    .updateTable('extidp_users')
    .set({ deleted_at: now, updated_at: now })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .execute();
}

/** Permanently removes a user of the scope: false when there was none. */
export async function removeExtidpUser(tx: Tx, scopeId: string, id: string): Promise<boolean> {
  return deleteRowOfScope(tx, 'extidp_users', scopeId, id);
}

export async function listExtidpUsers(
  db: DbOrTx,
  filter: { scopeId: string; includeDeleted: boolean },
  page: PageRequest,
): Promise<{ rows: ExtidpUserRow[]; total: number }> {
  const base = db
    .selectFrom('extidp_users')
    .where('scope_id', '=', filter.scopeId)
    .$if(!filter.includeDeleted, (query) => query.where('deleted_at', 'is', null));
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}
