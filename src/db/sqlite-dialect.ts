import { setTimeout as sleep } from 'node:timers/promises';
import {
  type Driver,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
  SqliteQueryCompiler,
} from 'kysely';
import type { ThreadWriteLock } from './thread-write-lock.ts';

/** How long a connection waits for a lock before SQLite answers SQLITE_BUSY. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

const BEGIN_IMMEDIATE = 'begin immediate';
const FAIL_AT_ONCE_WHEN_BUSY = 'pragma busy_timeout = 0';
const WAIT_WHEN_BUSY = `pragma busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`;
/** Waits between attempts to take the write lock: short first, as most transactions are. */
const RETRY_DELAYS_MS = [1, 1, 2, 2, 5, 5, 10];

/**
 * SQLite re-prepares a statement on every run when a bare `?` in a join's WHERE clause might
 * change its plan (the parameter is marked as plan-relevant; the query planner stability
 * guarantee that would stop this is not reachable through better-sqlite3). Re-preparing a
 * three-table join costs more than running it: profiled under the live-check benchmark, half of
 * the request's CPU went to SQLite's parser and planner. A unary plus makes each parameter an
 * expression with the same value, type, affinity and collation (none), so the statement stays
 * prepared (measured: a two-table point join 4.5 µs → 0.6 µs).
 */
class PreparedOnceSqliteQueryCompiler extends SqliteQueryCompiler {
  protected override getCurrentParameterPlaceholder(): string {
    return '+?';
  }
}

/**
 * Begins, commits and rolls back a connection's write transactions. They take SQLite's write
 * lock when they begin (`begin immediate`), and wait for it without blocking the event loop.
 *
 * Several HTTP threads each hold a connection to one file. A plain `begin` defers the lock to
 * the first write; if another connection committed in between, the upgrade fails at once with
 * SQLITE_BUSY_SNAPSHOT, which no wait can cure. Taking the lock up front avoids that. Waiting
 * for it through SQLite's busy handler would put the thread to sleep, requests and all, while
 * another thread commits; so the attempt fails at once when busy, and is retried on a timer
 * until SQLITE_BUSY_TIMEOUT_MS have passed.
 *
 * Between the process's own threads, the ThreadWriteLock comes first (thread-write-lock.ts):
 * the thread it lets in finds SQLite's lock free, so the retries are left for other processes
 * on the same file. Like a command queued behind its own thread's batch, a thread waits for it
 * as long as it takes: commands do no slow work inside their transaction.
 *
 * The group commit calls it directly (write-transactions.ts); the driver below, for any other
 * transaction of Kysely's on the connection.
 */
export class SqliteTransactionControl {
  readonly #threads: ThreadWriteLock | null;
  readonly #run: RunOnConnection;

  /** `threads`: the lock this connection's transactions share with the process's other threads. */
  constructor(statements: SqliteDatabase, threads: ThreadWriteLock | null) {
    this.#threads = threads;
    this.#run = runOnConnection(statements);
  }

  async begin(): Promise<void> {
    await this.#threads?.acquire();
    try {
      await beginImmediate(this.#run);
    } catch (error) {
      this.#threads?.release();
      throw error;
    }
  }

  commit(): void {
    // A failed commit leaves the transaction open: its rollback releases the lock.
    this.#run('commit');
    this.#threads?.release();
  }

  /** Throws when SQLite has already rolled the transaction back itself; the lock is freed all the same. */
  rollback(): void {
    try {
      this.#run('rollback');
    } finally {
      this.#threads?.release();
    }
  }
}

/** Kysely's own transactions on the connection, begun and ended by the same control. */
class WriteLockingSqliteDriver extends SqliteDriver {
  readonly #transactions: SqliteTransactionControl;

  constructor(config: SqliteDialectConfig, transactions: SqliteTransactionControl) {
    super(config);
    this.#transactions = transactions;
  }

  override beginTransaction(): Promise<void> {
    return this.#transactions.begin();
  }

  override async commitTransaction(): Promise<void> {
    this.#transactions.commit();
  }

  override async rollbackTransaction(): Promise<void> {
    this.#transactions.rollback();
  }
}

/** Runs one of a transaction's own statements (`begin immediate`, `commit`…) on the connection. */
type RunOnConnection = (sql: string) => void;

/**
 * A transaction's own statements run straight on the connection, synchronously, as SQLite runs
 * them. Kysely's driver would take each through its async query path, and a transaction runs
 * five (three to begin, see `beginImmediate`); a sign-in's transaction comes after an idle gap,
 * when that path's code has gone cold. Measured in alternation after a 13 ms sleep, an empty
 * group-commit transaction took 281–356 µs that way and 237–281 µs this way
 * (docs/performance-history.md, thirty-fourth round). `run`, not `all`, for the pragmas too:
 * their row is not needed, and building it is dear: better-sqlite3 compiles a row shape
 * (`Function()`) whenever a statement has been re-prepared, which a pragma evidently is at every
 * run (profiled, and 6 µs a warm run through `all` against 2.5 through `run`). Every statement is
 * still prepared through the connection's wrapper (open-database.ts), which ends a read snapshot
 * first.
 */
function runOnConnection(statements: SqliteDatabase): RunOnConnection {
  return (sql) => {
    statements.prepare(sql).run(NO_PARAMETERS);
  };
}

const NO_PARAMETERS: readonly unknown[] = [];

async function beginImmediate(run: RunOnConnection): Promise<void> {
  const deadline = Date.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (let attempt = 0; ; attempt += 1) {
    run(FAIL_AT_ONCE_WHEN_BUSY);
    try {
      run(BEGIN_IMMEDIATE);
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
    } finally {
      // Reads on this connection keep SQLite's own wait.
      run(WAIT_WHEN_BUSY);
    }
    await sleep(RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]);
  }
}

function isBusy(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_BUSY';
}

export class PortcullisSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #transactions: SqliteTransactionControl;

  constructor(config: SqliteDialectConfig, transactions: SqliteTransactionControl) {
    super(config);
    this.#config = config;
    this.#transactions = transactions;
  }

  override createDriver(): Driver {
    return new WriteLockingSqliteDriver(this.#config, this.#transactions);
  }

  override createQueryCompiler(): SqliteQueryCompiler {
    return new PreparedOnceSqliteQueryCompiler();
  }
}
