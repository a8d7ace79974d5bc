import { column, type Migration } from './migration.ts';

/**
 * The per-account re-authentication budget (spec §Authentication 11): failures counted in a
 * window that starts at the first failure, and the time until which checks are paused.
 */
export const persons: Migration = {
  async up(db) {
    // SQLite adds one column per statement, so each is its own alter.
    await db.schema
      .alterTable('persons')
      .addColumn('reauthentication_failures', column.integer, (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('persons')
      .addColumn('reauthentication_window_started_at', column.time)
      .execute();
    await db.schema.alterTable('persons').addColumn('reauthentication_paused_until', column.time).execute();
  },
};
