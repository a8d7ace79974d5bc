import { type Kysely, PostgresAdapter } from 'kysely';

/**
 * Migrations are frozen in time: they must not follow later changes of the table types, so
 * they see the database untyped. This is the one place that says so.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations are deliberately untyped (see above).
export type MigrationDb = Kysely<any>;

export interface Migration {
  up(db: MigrationDb): Promise<void>;
}

/** Column types shared by both dialects (see db/database.ts for why text and integer). */
export const column = {
  id: 'text',
  time: 'text',
  flag: 'integer',
  text: 'text',
  integer: 'integer',
} as const;

/**
 * The one place a migration asks which database it runs on: only what SQL cannot say alike
 * (triggers, so far) differs by dialect.
 */
export const isPostgres = (db: MigrationDb): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
