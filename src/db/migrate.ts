import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from './database.ts';
import { MIGRATIONS } from './migrations/index.ts';

/** Applies every pending migration; throws with the failing migration's name on error. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrationTableSchema = await postgresSchemaOf(db);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    ...(migrationTableSchema === null ? {} : { migrationTableSchema }),
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === 'Error');
  if (error !== undefined) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause}`, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

/**
 * PostgreSQL: the schema the connection works in. Kysely's migrator otherwise looks for its
 * bookkeeping tables in every schema of the database, so a second schema that already holds
 * them (another instance's, or another test file's) makes it skip creating its own and fail.
 */
async function postgresSchemaOf(db: Kysely<Database>): Promise<string | null> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return null;
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? null;
}
