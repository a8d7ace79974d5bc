import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { type DatabaseHandle, type Dialect, openDatabase } from '../../src/db/open-database.ts';
import { TEST_DATABASE_URL, TEST_SCHEMA_PREFIX } from './dialects.ts';

export interface TestDatabase {
  readonly handle: DatabaseHandle;
  readonly url: string;
  readonly schema: string | null;
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
      drop: () => handle.close(),
    };
  }
  const schema = `${TEST_SCHEMA_PREFIX}${randomBytes(6).toString('hex')}`;
  const handle = openDatabase(TEST_DATABASE_URL, { postgresSchema: schema, postgresPoolSize: 5 });
  await withAdminClient((client) => client.query(`create schema ${schema}`));
  await migrateToLatest(handle.db);
  return {
    handle,
    url: TEST_DATABASE_URL,
    schema,
    drop: async () => {
      await handle.close();
      await withAdminClient((client) => client.query(`drop schema if exists ${schema} cascade`));
    },
  };
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
