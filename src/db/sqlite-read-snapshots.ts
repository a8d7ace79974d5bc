import type BetterSqlite3 from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** A connection's statements, wrapped so that the reads of one turn share a read transaction. */
export interface ReadSnapshotStatements extends SqliteDatabase {
  /** Whether a read may run on the connection now: no transaction, or only this read snapshot. */
  readsMayRun(): boolean;
}

/**
 * SQLite: the reads that a thread makes in one turn of its event loop share one read transaction.
 *
 * Outside a transaction, every SQLite statement is a transaction of its own. In WAL mode each
 * takes a read mark in the shared-memory index and gives it back, under locks and a mutex that
 * the HTTP threads' connections share; a list of scopes took them four times (the stamp check,
 * the count, the page, the owners), and the threads waited on each other for them
 * (docs/performance-history.md, twenty-sixth and twenty-seventh rounds). A request's reads come one
 * after another in the same turn, so the first read opens a transaction (`begin`: deferred, it
 * takes no write lock) and the end of the turn commits it.
 *
 * - **Nothing stale.** The transaction ends before the thread handles its next event: a
 *   `process.nextTick` queued from a microtask runs once the microtask queue has drained, and
 *   before the next callback. A request that arrives later starts a new snapshot, so it sees
 *   every commit that finished before it arrived, as before. Within a turn, the reads agree with
 *   each other (a list's count and its page).
 * - **Writes come first.** Every statement on the connection is prepared here just before it
 *   runs (Kysely's driver, the direct reads and the group commit's statements alike). One that is
 *   not a plain read (`begin immediate`, a write outside a transaction) ends the snapshot first,
 *   so it runs exactly as it did without one.
 * - Inside a command's transaction nothing changes: its reads are its transaction's.
 */
export function withReadSnapshots(
  database: BetterSqlite3.Database,
  statements: SqliteDatabase,
): ReadSnapshotStatements {
  const begin = database.prepare('begin');
  const commit = database.prepare('commit');
  /** Whether each statement is a plain read: it returns rows and changes nothing (not a pragma). */
  const plainReads = new WeakMap<SqliteStatement, boolean>();
  let open = false;

  const end = () => {
    if (!open) return;
    open = false;
    // A connection closed during the turn has rolled the snapshot back itself.
    if (database.open && database.inTransaction) commit.run();
  };

  const isPlainRead = (sql: string, statement: SqliteStatement): boolean => {
    let plain = plainReads.get(statement);
    if (plain === undefined) {
      const { reader, readonly } = statement as unknown as BetterSqlite3.Statement;
      // `readonly` alone would admit `begin` and `commit`; `reader` alone, `insert … returning`.
      plain = reader && readonly && /^\s*(select|with)\b/i.test(sql);
      plainReads.set(statement, plain);
    }
    return plain;
  };

  return {
    readsMayRun: () => database.open && (!database.inTransaction || open),
    prepare(sql: string): SqliteStatement {
      const statement = statements.prepare(sql);
      if (!isPlainRead(sql, statement)) end();
      else if (!database.inTransaction) {
        begin.run();
        open = true;
        // Queued from a microtask, the tick runs after the whole microtask queue: every read of
        // the turn (each `await` of a read resumes in a microtask) has joined the snapshot.
        queueMicrotask(() => process.nextTick(end));
      }
      return statement;
    },
    close: () => {
      end();
      statements.close();
    },
  };
}
