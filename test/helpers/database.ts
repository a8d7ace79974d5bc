import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { type DatabaseHandle, type Dialect, openDatabase } from '../../src/db/open-database.ts';
import { TEST_DATABASE_URL, TEST_SCHEMA_PREFIX } from './dialects.ts';

export interface TestDatabase {
  readonly handle: DatabaseHandle;
  readonly url: string;
  readonly schema: string | null;
  /**
   * Runs a schema change a test makes on purpose (dropping a table to provoke a failure) under
   * the lock below, so it cannot pull a table from under another file's migration.
   */
  changeSchema(change: () => Promise<unknown>): Promise<void>;
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database: SQLite in memory, or a PostgreSQL schema of its own (so test
 * files running in parallel never see each other's rows, and nothing depends on earlier runs).
 */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const handle = openDatabase('sqlite::memory:');
    await migrateToLatest(handle.db);
    return {
      handle,
      url: 'sqlite::memory:',
      schema: null,
      changeSchema: async (change) => {
        await change();
      },
      drop: () => handle.close(),
    };
  }
  const schema = `${TEST_SCHEMA_PREFIX}${randomBytes(6).toString('hex')}`;
  const handle = openDatabase(TEST_DATABASE_URL, { postgresSchema: schema, postgresPoolSize: 5 });
  await withSchemaLock(async (client) => {
    await client.query(`create schema ${schema}`);
    await migrateToLatest(handle.db);
  });
  return {
    handle,
    url: TEST_DATABASE_URL,
    schema,
    changeSchema: async (change) => {
      await withSchemaLock(change);
    },
    drop: async () => {
      await handle.close();
      await withSchemaLock((client) => client.query(`drop schema if exists ${schema} cascade`));
    },
  };
}

/** Any fixed number: the key of the advisory lock below, taken by test processes only. */
const SCHEMA_LOCK_KEY = 4_242_001;

/**
 * Kysely's migrator introspects every table of the database, across schemas, to find its own.
 * A schema that another test file drops at that moment makes the introspection fail; so test
 * files create-and-migrate and drop their schemas one at a time (a test-only concern:
 * production never drops schemas under a running migration).
 */
async function withSchemaLock<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withAdminClient(async (client) => {
    await client.query('select pg_advisory_lock($1)', [SCHEMA_LOCK_KEY]);
    try {
      return await work(client);
    } finally {
      await client.query('select pg_advisory_unlock($1)', [SCHEMA_LOCK_KEY]);
    }
  });
}

async function withAdminClient<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
