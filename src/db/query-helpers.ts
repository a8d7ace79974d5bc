import { type Expression, PostgresAdapter, type SqlBool, sql } from 'kysely';
import type { DbOrTx, Tx } from './database.ts';

/**
 * Whether `db` talks to PostgreSQL. There, a transaction that must hold a row against concurrent
 * writers reads it `FOR UPDATE`; SQLite has no such clause and needs none: it runs one write
 * transaction at a time.
 */
export const isPostgres = (db: DbOrTx): boolean => db.getExecutor().adapter instanceof PostgresAdapter;

/** Tables whose rows each have an `id` and belong to one scope through `scope_id`. */
export type ScopedTable = 'applications' | 'scope_permissions' | 'extidp_users';

/** Permanently deletes the scope's row with this id: false when the scope has none. */
export async function deleteRowOfScope(
  tx: Tx,
  table: ScopedTable,
  scopeId: string,
  id: string,
): Promise<boolean> {
  const deleted = await tx
    .deleteFrom(table)
    .where('id', '=', id)
    .where('scope_id', '=', scopeId)
    .executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}

/** The form stored in *_normalized columns: trimmed and lower-cased (case-insensitive names). */
export const normalizeText = (text: string): string => text.trim().toLowerCase();

/**
 * A case-insensitive substring match against a column that already holds lower-cased text
 * (the *_normalized columns): `%`, `_` and `\` in the filter match themselves.
 */
export function containsNormalized(column: string, filter: string): Expression<SqlBool> {
  const escaped = filter
    .trim()
    .toLowerCase()
    .replace(/[\\%_]/g, (character) => `\\${character}`);
  return sql<SqlBool>`${sql.ref(column)} like ${`%${escaped}%`} escape '\\'`;
}
