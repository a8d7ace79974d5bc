import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import type { Database } from './database.ts';
import { MIGRATIONS } from './migrations/index.ts';

/** Applies every pending migration; throws with the failing migration's name on error. */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
    // Kysely decides whether its bookkeeping tables exist by looking through every schema of
    // the database. On PostgreSQL, another schema holding them (a second service, or a parallel
    // test) would make it skip creating ours and then fail; so name our schema explicitly.
    ...(await postgresSchemaOf(db)),
  });
  const { error, results = [] } = await migrator.migrateToLatest();
  const failed = results.find((result) => result.status === 'Error');
  if (error !== undefined) {
    const cause = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? '(unknown)'} failed: ${cause}`, { cause: error });
  }
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName);
}

/** The schema the connection writes to (first of its search_path), PostgreSQL only. */
async function postgresSchemaOf(db: Kysely<Database>): Promise<{ migrationTableSchema?: string }> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return {};
  const { rows } = await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema ?? null;
  return schema === null ? {} : { migrationTableSchema: schema };
}
