import { type Compilable, CompiledQuery } from 'kysely';
import type { DbOrTx } from './database.ts';

/** Synchronous reads straight on a SQLite connection, when no transaction holds it. */
export interface DirectReader {
  /** False while a command's transaction is open on the connection: reads then queue behind it. */
  idle(): boolean;
  all(sql: string, parameters: readonly unknown[]): unknown[];
}

const directReaders = new WeakMap<object, DirectReader>();

/** Runs a statement straight on a SQLite connection: its rows, or none for a plain write. */
export type DirectStatements = (sql: string, parameters: readonly unknown[]) => unknown[];

/** The statements that run straight on a group commit's connection, while its batch is open. */
interface DirectTransaction {
  readonly open: () => boolean;
  readonly statements: DirectStatements;
}

const directTransactions = new WeakMap<object, DirectTransaction>();

/**
 * SQLite only: lets the prepared reads below skip Kysely's connection queue when the single
 * connection is idle. better-sqlite3 runs a statement synchronously, so a read made while no
 * command's transaction is open sees exactly the committed state, as if it had waited its turn
 * (a read snapshot of the turn, sqlite-read-snapshots.ts, holds only committed state); while one
 * is open the read takes the ordinary queue, so it never sees uncommitted work.
 */
export function allowDirectReads(db: object, reader: DirectReader): void {
  directReaders.set(db, reader);
}

/**
 * SQLite only: lets the prepared queries below run straight on the connection of a group
 * commit's transaction (write-transactions.ts). The batch holds the connection and its write
 * lock while its commands run one after another, so nothing else can run on it in between;
 * Kysely's query path there (a queue, plugins, promises) cost more than SQLite's own work for
 * an audit row, and it was paid with the write lock held, which the other threads wait for.
 */
export function allowDirectStatements(transaction: object, direct: DirectTransaction): void {
  directTransactions.set(transaction, direct);
}

/**
 * A query on a hot path, built and compiled by Kysely once per dialect and then run
 * with new parameter values. Kysely otherwise rebuilds and recompiles its operation tree on
 * every call, which on a point read costs more than SQLite's own work (profiled under the
 * authenticated-read benchmark: about a sixth of the request's CPU time).
 *
 * The builder receives a placeholder for each argument; the shape of the query must not depend
 * on the values (use two prepared queries for two shapes). Every parameter position holding a
 * placeholder is filled with the matching argument at run time.
 */
export function preparedQuery<Args extends readonly unknown[], Row>(
  arity: Args['length'],
  build: (db: DbOrTx, ...args: Args) => Compilable<Row>,
) {
  const placeholders = Array.from({ length: arity }, (_, index) => `\u0000prepared-parameter-${index}\u0000`);
  // Keyed by the dialect's adapter, which a database handle and all of its transactions share:
  // the SQL is the same for all of them, so a query run inside a command's transaction is
  // compiled once too, not once per transaction.
  const compiled = new WeakMap<
    object,
    { sql: string; slots: readonly number[]; fixed: readonly unknown[]; read: boolean }
  >();

  const compile = (db: DbOrTx) => {
    const query = build(db, ...(placeholders as unknown as Args)).compile();
    const slots = query.parameters.map((value) =>
      typeof value === 'string' ? placeholders.indexOf(value) : -1,
    );
    if (placeholders.some((_, index) => !slots.includes(index))) {
      throw new Error(`preparedQuery: an argument never reaches the SQL of ${query.sql}`);
    }
    const entry = {
      sql: query.sql,
      slots,
      fixed: query.parameters,
      read: query.sql.trimStart().toLowerCase().startsWith('select'),
    };
    compiled.set(db.getExecutor().adapter, entry);
    return entry;
  };

  return async (db: DbOrTx, ...args: Args): Promise<Row[]> => {
    const { sql, slots, fixed, read } = compiled.get(db.getExecutor().adapter) ?? compile(db);
    const parameters = slots.map((slot, index) => (slot === -1 ? fixed[index] : args[slot]));
    // Once the batch has ended, its transaction takes Kysely's path, which refuses it.
    const batch = directTransactions.get(db);
    if (batch?.open() === true) return batch.statements(sql, parameters) as Row[];
    // The database handle is registered for reads, never an ordinary transaction of it.
    const direct = read ? directReaders.get(db) : undefined;
    if (direct?.idle() === true) return direct.all(sql, parameters) as Row[];
    const result = await db.executeQuery<Row>(CompiledQuery.raw(sql, parameters));
    return result.rows;
  };
}
