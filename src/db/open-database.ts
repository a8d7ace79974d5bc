import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, type SqliteDatabase, Transaction } from 'kysely';
import type * as Pg from 'pg';
import { sqliteFilePath } from '../config/config.ts';
import type { Database } from './database.ts';
import {
  DEFAULT_AUTOCHECKPOINT_PAGES,
  MAIN_CONNECTION_AUTOCHECKPOINT_PAGES,
  startCheckpointer,
} from './sqlite-checkpointer.ts';
import { OwnSchemaPostgresDialect } from './postgres-introspector.ts';
import { allowDirectReads } from './prepared-query.ts';
import {
  PortcullisSqliteDialect,
  SQLITE_BUSY_TIMEOUT_MS,
  SqliteTransactionControl,
} from './sqlite-dialect.ts';
import { withReadSnapshots } from './sqlite-read-snapshots.ts';
import { withStatementCache } from './sqlite-statement-cache.ts';
import { ThreadWriteLock } from './thread-write-lock.ts';
import {
  type BatchConnection,
  groupCommit,
  transactionPerWrite,
  type WriteTransactions,
} from './write-transactions.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  /** Where commands run their writes (SQLite: group commit; PostgreSQL: a transaction each). */
  readonly writes: WriteTransactions;
  /**
   * SQLite file only: the lock its write transactions take, for the process's other HTTP threads
   * to share (thread-write-lock.ts); null otherwise.
   */
  readonly sqliteWriteLock: SharedArrayBuffer | null;
  /** Cheap round trip for the detailed health check. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** PostgreSQL only: the schema to use (tests give each file its own). */
  readonly postgresSchema?: string;
  readonly postgresPoolSize?: number;
  /**
   * SQLite file only: start the checkpointing thread (default true). One per process is enough:
   * the HTTP threads other than the main one open the file without it.
   */
  readonly sqliteCheckpointer?: boolean;
  /** SQLite only: at most this many commands share one commit (default MAX_GROUP_COMMIT_BATCH). */
  readonly sqliteGroupCommitBatch?: number;
  /**
   * SQLite file only: the write lock of the process's other connections to the file (their
   * handle's `sqliteWriteLock`); unset or null, this handle makes a new one.
   */
  readonly sqliteWriteLock?: SharedArrayBuffer | null;
}

type PgDriver = typeof Pg;
let pgDriver: PgDriver | null = null;

/**
 * The PostgreSQL driver, loaded the first time a PostgreSQL database is opened: on SQLite no
 * thread carries it (about 1.2 MB of heap each), as nodemailer and ioredis load only when
 * configured. It is CommonJS, so `require` loads it without making opening asynchronous.
 */
function postgresDriver(): PgDriver {
  if (pgDriver !== null) return pgDriver;
  const pg = createRequire(import.meta.url)('pg') as PgDriver;
  // COUNT(*) and other int8 results arrive as strings by default; our counts fit in a double.
  pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
  pgDriver = pg;
  return pg;
}

export function openDatabase(url: string, options: OpenDatabaseOptions = {}): DatabaseHandle {
  if (url.startsWith('sqlite:')) return openSqlite(url, options);
  return openPostgres(url, options);
}

function openSqlite(url: string, options: OpenDatabaseOptions): DatabaseHandle {
  const file = sqliteFilePath(url);
  if (file !== null) mkdirSync(dirname(file), { recursive: true });
  const database = new BetterSqlite3(file ?? ':memory:');
  // WAL lets readers proceed during a write; NORMAL is durable across process crashes in WAL.
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  database.pragma('foreign_keys = ON');
  database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // Savepoints (one per command in a group commit) keep their undo pages in memory, not in a
  // temporary file per batch.
  database.pragma('temp_store = MEMORY');
  // A file database checkpoints from a worker thread, off the event loop (sqlite-checkpointer.ts);
  // every connection keeps a higher autocheckpoint threshold as the safety net.
  const checkpointer =
    file === null || options.sqliteCheckpointer === false
      ? null
      : startCheckpointer(file, () =>
          database.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`),
        );
  if (file !== null) database.pragma(`wal_autocheckpoint = ${MAIN_CONNECTION_AUTOCHECKPOINT_PAGES}`);
  const statements = withReadSnapshots(database, withStatementCache(database));
  const writeLock = file === null ? null : new ThreadWriteLock(options.sqliteWriteLock ?? undefined);
  const transactions = new SqliteTransactionControl(statements, writeLock);
  const dialect = new PortcullisSqliteDialect({ database: statements }, transactions);
  const db = new Kysely<Database>({ dialect });
  allowDirectReads(db, {
    idle: () => statements.readsMayRun(),
    all: (sql, parameters) => statements.prepare(sql).all(parameters),
  });
  return {
    db,
    dialect: 'sqlite',
    writes: groupCommit(
      db,
      batchConnection(database, statements, transactions, db, dialect),
      options.sqliteGroupCommitBatch,
    ),
    sqliteWriteLock: writeLock?.shared ?? null,
    ping: async () => {
      database.prepare('select 1').get();
    },
    close: async () => {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** What a group commit runs on the connection (write-transactions.ts). */
function batchConnection(
  database: BetterSqlite3.Database,
  statements: SqliteDatabase,
  transactions: SqliteTransactionControl,
  db: Kysely<Database>,
  dialect: PortcullisSqliteDialect,
): BatchConnection {
  const savepoint = database.prepare('savepoint command');
  const release = database.prepare('release command');
  const rollbackTo = database.prepare('rollback to command');
  // A `Transaction` never calls its driver: it refuses every method that would (`transaction`,
  // `connection`, `destroy`), so the batch's transactions are given one that is never initialised.
  const driver = dialect.createDriver();
  const config = { dialect };
  const executor = db.getExecutor();
  return {
    begin: () => transactions.begin(),
    commit: () => transactions.commit(),
    rollback: () => transactions.rollback(),
    // Built as Kysely builds its own: the database's executor, bound to the batch's connection.
    transaction: (provider) =>
      new Transaction<Database>({
        config,
        dialect,
        driver,
        executor: executor.withConnectionProvider(provider),
      }),
    savepoint: () => savepoint.run(),
    release: () => release.run(),
    rollbackToSavepoint: () => {
      rollbackTo.run();
      release.run();
    },
    inTransaction: () => database.inTransaction,
    statements: (sql, parameters) => {
      const statement = statements.prepare(sql);
      if (statement.reader) return statement.all(parameters);
      statement.run(parameters);
      return [];
    },
  };
}

function openPostgres(url: string, options: OpenDatabaseOptions): DatabaseHandle {
  const pool = new (postgresDriver().Pool)({
    connectionString: url,
    max: options.postgresPoolSize ?? 10,
    ...(options.postgresSchema === undefined ? {} : { options: `-c search_path=${options.postgresSchema}` }),
  });
  const db = new Kysely<Database>({ dialect: new OwnSchemaPostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    writes: transactionPerWrite(db),
    sqliteWriteLock: null,
    ping: async () => {
      await pool.query('select 1');
    },
    close: () => db.destroy(),
  };
}
