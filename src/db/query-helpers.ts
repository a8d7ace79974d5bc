import { type Expression, type SqlBool, sql } from 'kysely';

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
