import type { ConnectionProvider, DatabaseConnection } from 'kysely';
import type { Db, Tx } from './database.ts';
import { allowDirectStatements, type DirectStatements } from './prepared-query.ts';

/**
 * How a command's writes reach the database: `run` executes `work` inside a transaction and
 * settles only once those writes have committed (or been rolled back, when `work` throws).
 */
export interface WriteTransactions {
  run<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * `run`, for work that makes exactly one write statement (an audit entry alone). A statement
   * applies whole or not at all, so in a group commit it needs no savepoint of its own.
   */
  runSingleWrite<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}

/** PostgreSQL: one transaction per command; the pool runs several at once. */
export function transactionPerWrite(db: Db): WriteTransactions {
  const run = <T>(work: (tx: Tx) => Promise<T>) => db.transaction().execute(work);
  return { run, runSingleWrite: run };
}

/**
 * What a group commit runs on the SQLite connection, straight rather than through Kysely's query
 * path and its transactions, which cost more than SQLite's own work for a savepoint, and on a
 * thread woken from idle (a sign-in's, after its hash) more than SQLite's own `begin` and
 * `commit` (docs/performance.md, thirty-sixth round). open-database.ts makes it.
 */
export interface BatchConnection {
  /** Begins a write transaction, once the write lock is held (sqlite-dialect.ts). */
  begin(): Promise<void>;
  /** Commits it and frees the lock; a failed commit leaves the transaction open for `rollback`. */
  commit(): void;
  /** Rolls it back and frees the lock (throws when SQLite has rolled it back already). */
  rollback(): void;
  /** A Kysely `Transaction` of the database whose queries go through `provider`. */
  transaction(provider: ConnectionProvider): Tx;
  /** `savepoint command` */
  savepoint(): void;
  /** `release command` */
  release(): void;
  /** `rollback to command`, then `release command`. */
  rollbackToSavepoint(): void;
  /** False once SQLite has rolled the whole transaction back by itself (after an I/O error). */
  inTransaction(): boolean;
  /** Runs the commands' prepared statements straight on the connection (prepared-query.ts). */
  readonly statements: DirectStatements;
}

/** At most this many commands share one commit, so reads waiting behind a batch wait briefly. */
export const MAX_GROUP_COMMIT_BATCH = 64;

interface Pending {
  readonly work: (tx: Tx) => Promise<unknown>;
  /** One write statement: no savepoint (see `runSingleWrite`). */
  readonly singleWrite: boolean;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * SQLite group commit. SQLite has one writer, and most of a small write's cost is its commit:
 * appending every page it dirtied (the row, and each index it touches) to the log. Commands
 * that arrive together therefore share one transaction, each inside its own savepoint, and one
 * commit (measured on this machine kind: a scope with its audit entry costs 131 µs alone and
 * 36 µs in a batch of 32).
 *
 * - Requests that arrive in the same turn of the event loop are queued, and the batch starts
 *   on `setImmediate`, after the loop has read every request that was ready. It takes its
 *   commands off the queue once its transaction holds the write lock, so those that arrived
 *   while another thread held it join the batch.
 * - A command that throws is rolled back to its savepoint and rejected at once; the others go
 *   on. A command that returns (a Refusal too) keeps its writes. Work of a single write
 *   statement has no savepoint: a statement that fails leaves nothing behind.
 * - Nobody is answered before the commit, so an answer never reports a write that a process
 *   crash could still lose. Should the commit fail, every command of the batch fails with it.
 */
export function groupCommit(
  db: Db,
  connection: BatchConnection,
  maxBatch: number = MAX_GROUP_COMMIT_BATCH,
): WriteTransactions {
  const queue: Pending[] = [];
  let flushing = false;

  const flush = async (): Promise<void> => {
    while (queue.length > 0) await commitBatch(db, connection, queue, maxBatch);
    flushing = false;
  };

  const enqueue = <T>(work: (tx: Tx) => Promise<T>, singleWrite: boolean) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, singleWrite, resolve: resolve as (value: unknown) => void, reject });
      if (flushing) return;
      flushing = true;
      setImmediate(() => void flush());
    });

  return {
    run: (work) => enqueue(work, false),
    runSingleWrite: (work) => enqueue(work, true),
  };
}

/**
 * The connection a batch's `Transaction` runs its queries on while the batch is open; once it
 * has ended, a query made through that `Transaction` (a command that kept it) is refused rather
 * than run outside the batch. Kysely's own transactions refuse such a query alike.
 */
class BatchConnectionProvider implements ConnectionProvider {
  readonly #connection: DatabaseConnection;
  #ended: 'committed' | 'rolled back' | null = null;

  constructor(connection: DatabaseConnection) {
    this.#connection = connection;
  }

  get open(): boolean {
    return this.#ended === null;
  }

  end(how: 'committed' | 'rolled back'): void {
    this.#ended = how;
  }

  provideConnection<T>(consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    if (this.#ended !== null) return Promise.reject(new Error(`Transaction is already ${this.#ended}`));
    return consumer(this.#connection);
  }
}

/**
 * Holds the connection, then begins a transaction and takes up to `maxBatch` commands off the
 * queue: the batch forms once the write lock is held, so the commands that arrived while this
 * thread waited for it (another thread committing) share this commit rather than wait for a
 * lock of their own.
 */
async function commitBatch(
  db: Db,
  connection: BatchConnection,
  queue: Pending[],
  maxBatch: number,
): Promise<void> {
  let batch: Pending[] | null = null;
  try {
    // Held as Kysely holds it for its own transactions: a query made outside the batch (a read
    // through Kysely) waits until the batch has ended, rather than run inside it.
    await db.getExecutor().provideConnection(async (held) => {
      await connection.begin();
      batch = queue.splice(0, maxBatch);
      await runBatch(connection, new BatchConnectionProvider(held), batch);
    });
  } catch (error) {
    // The connection or the write lock could not be had: the batch never began.
    for (const pending of batch ?? queue.splice(0, maxBatch)) pending.reject(error);
  }
}

/** Runs the batch's commands in the transaction just begun, and ends it. Never throws. */
async function runBatch(
  connection: BatchConnection,
  provider: BatchConnectionProvider,
  batch: readonly Pending[],
): Promise<void> {
  // A lone command needs no savepoint: if it throws, the whole transaction rolls back.
  const alone = batch.length === 1;
  const committed: Array<{ pending: Pending; value: unknown }> = [];
  try {
    const trx = connection.transaction(provider);
    allowDirectStatements(trx, { open: () => provider.open, statements: connection.statements });
    for (const pending of batch) {
      const isolate = !alone && !pending.singleWrite;
      if (isolate) connection.savepoint();
      let value: unknown;
      try {
        value = await pending.work(trx);
      } catch (error) {
        if (alone) throw error;
        // SQLite may have rolled the whole transaction back (an I/O error, say): then nothing
        // of the batch stands, and the catch below says so to every command.
        if (!connection.inTransaction()) throw error;
        if (isolate) connection.rollbackToSavepoint();
        pending.reject(error);
        continue;
      }
      if (isolate) connection.release();
      committed.push({ pending, value });
    }
    connection.commit();
    provider.end('committed');
  } catch (error) {
    // The lone command threw, or the batch itself broke (a savepoint statement or the commit
    // failed, or SQLite rolled back): nothing of it stands. Rejecting a command that already
    // settled does nothing.
    provider.end('rolled back');
    try {
      connection.rollback();
    } catch {
      // SQLite had rolled the transaction back already; the write lock is free all the same.
    }
    for (const pending of batch) pending.reject(error);
    return;
  }
  for (const { pending, value } of committed) pending.resolve(value);
}
