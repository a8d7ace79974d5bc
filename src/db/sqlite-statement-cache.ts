import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Kysely's SQLite driver prepares every statement on every query; preparing costs more than
 * running a point select. This wrapper keeps a bounded, least-recently-used cache of prepared
 * statements keyed by SQL text (measured on this machine kind: 18–24k → 62k point selects/s).
 * The bound keeps memory flat even if some code builds SQL with varying shapes (IN lists).
 */
export function withStatementCache(database: BetterSqlite3.Database, capacity = 500): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => {
      statements.clear();
      database.close();
    },
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached !== undefined) {
        // Re-insert to mark as most recently used (Map keeps insertion order).
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql) as unknown as SqliteStatement;
      statements.set(sql, statement);
      if (statements.size > capacity) {
        const oldest = statements.keys().next().value;
        if (oldest !== undefined) statements.delete(oldest);
      }
      return statement;
    },
  };
}
