import { randomBytes } from 'node:crypto';
import { PostgresIntrospector } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/open-database.ts';
import { DIALECTS, TEST_DATABASE_URL, TEST_SCHEMA_PREFIX } from '../helpers/dialects.ts';

describe.runIf(DIALECTS.includes('postgres'))('PostgreSQL introspection of our own schema', () => {
  const prefix = `${TEST_SCHEMA_PREFIX}introspect_${randomBytes(4).toString('hex')}_`;
  const ours = `${prefix}ours`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  let handle: DatabaseHandle;

  /** Other schemas of the same database, each with tables that must not be taken for ours. */
  async function createOtherSchemas(label: string, count: number): Promise<string[]> {
    const names = Array.from({ length: count }, (_, index) => `${prefix}${label}_${index}`);
    for (const name of names) {
      await admin.query(
        `create schema ${name}; create table ${name}.kysely_migration (name text primary key)`,
      );
    }
    return names;
  }

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`create schema ${ours}`);
    handle = openDatabase(TEST_DATABASE_URL, { postgresSchema: ours, postgresPoolSize: 2 });
    await migrateToLatest(handle.db);
  });

  afterAll(async () => {
    await handle.close();
    const { rows } = await admin.query<{ name: string }>(
      'select nspname as name from pg_namespace where starts_with(nspname, $1)',
      [prefix],
    );
    for (const { name } of rows) await admin.query(`drop schema ${name} cascade`);
    await admin.end();
  });

  it("describes our schema's tables as Kysely's own introspection does, and no other schema's", async () => {
    await createOtherSchemas('beside', 2);
    const everySchema = await new PostgresIntrospector(handle.db).getTables({
      withInternalKyselyTables: true,
    });
    const ownSchema = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
    expect(ownSchema.length).toBeGreaterThan(2);
    expect(ownSchema).toEqual(everySchema.filter((table) => table.schema === ours));
    const withoutBookkeeping = await handle.db.introspection.getTables();
    expect(withoutBookkeeping.map((table) => table.name)).toEqual(
      ownSchema.map((table) => table.name).filter((name) => !name.startsWith('kysely_migration')),
    );
  });

  it('migrates a new schema beside schemas that hold bookkeeping tables of their own', async () => {
    await createOtherSchemas('ahead', 2);
    const fresh = `${prefix}fresh`;
    await admin.query(`create schema ${fresh}`);
    const freshHandle = openDatabase(TEST_DATABASE_URL, { postgresSchema: fresh, postgresPoolSize: 1 });
    try {
      const applied = await migrateToLatest(freshHandle.db);
      expect(applied.length).toBeGreaterThan(0);
      const tables = await freshHandle.db.introspection.getTables({ withInternalKyselyTables: true });
      expect(tables.map((table) => table.name).sort()).toEqual(
        (await handle.db.introspection.getTables({ withInternalKyselyTables: true }))
          .map((table) => table.name)
          .sort(),
      );
    } finally {
      await freshHandle.close();
    }
  });

  it('keeps working while other schemas of the database are dropped (a migration failed so in CI)', async () => {
    // Another connection makes and drops schemas for as long as this one looks. Kysely's own
    // introspection fails here about one look in six: "schema … does not exist".
    let looking = true;
    const churning = (async () => {
      for (let index = 0; looking; index += 1) {
        const [name] = await createOtherSchemas(`churn_${index}`, 1);
        await admin.query(`drop schema ${name} cascade`);
      }
    })();
    const failures: string[] = [];
    try {
      for (let looks = 0; looks < 60; looks += 1) {
        await handle.db.introspection
          .getTables({ withInternalKyselyTables: true })
          .catch((error: unknown) => {
            failures.push(String(error));
          });
      }
    } finally {
      looking = false;
      await churning;
    }
    expect(failures).toEqual([]);
    expect(await migrateToLatest(handle.db)).toEqual([]);
  });
});
