import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from './database.ts';
import { MIGRATIONS } from './migrations/index.ts';

/** Applies every pending migration; throws with the failing migration's name on error. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    // Kysely looks for its bookkeeping tables in every schema unless told which one. With a
    // schema per test run (or per tenant) in one PostgreSQL database, another schema's tables
    // would be taken for ours; name the schema this connection actually uses.
    ...(db.getExecutor().adapter instanceof PostgresAdapter
      ? { migrationTableSchema: await currentPostgresSchema(db) }
      : {}),
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === 'Error');
  if (error !== undefined) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause}`, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

async function currentPostgresSchema(db: Kysely<Database>): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]!.schema;
}
