import type { ControlledTransaction } from 'kysely';
import type { Database, Db, Tx } from './database.ts';
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
 * The statements a group commit runs between its commands, straight on the SQLite connection
 * that its transaction holds (open-database.ts): they need neither Kysely's query path nor its
 * connection queue, which cost more than SQLite's own work for a savepoint.
 */
export interface BatchConnection {
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
 * Begins a transaction, then takes up to `maxBatch` commands off the queue: the batch forms once
 * the write lock is held, so the commands that arrived while this thread waited for it (another
 * thread committing) share this commit rather than wait for a lock of their own.
 */
async function commitBatch(
  db: Db,
  connection: BatchConnection,
  queue: Pending[],
  maxBatch: number,
): Promise<void> {
  let trx: ControlledTransaction<Database>;
  try {
    trx = await db.startTransaction().execute();
  } catch (error) {
    for (const pending of queue.splice(0, maxBatch)) pending.reject(error);
    return;
  }
  allowDirectStatements(trx, connection.statements);
  const batch = queue.splice(0, maxBatch);
  // A lone command needs no savepoint: if it throws, the whole transaction rolls back.
  const alone = batch.length === 1;
  const committed: Array<{ pending: Pending; value: unknown }> = [];
  try {
    for (const pending of batch) {
      const isolate = !alone && !pending.singleWrite;
      if (isolate) connection.savepoint();
      let value: unknown;
      try {
        value = await pending.work(trx);
      } catch (error) {
        if (alone) {
          await trx.rollback().execute();
          pending.reject(error);
          return;
        }
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
    await trx.commit().execute();
  } catch (error) {
    // The batch itself broke (a savepoint statement or the commit failed): nothing of it stands.
    // Rejecting a command that already settled does nothing.
    if (!trx.isCommitted && !trx.isRolledBack)
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
    for (const pending of batch) pending.reject(error);
    return;
  }
  for (const { pending, value } of committed) pending.resolve(value);
}
