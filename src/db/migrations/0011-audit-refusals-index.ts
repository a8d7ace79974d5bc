import { sql } from 'kysely';
import type { Migration } from './migration.ts';

/**
 * The audit-log reader's outcome filter, through an index that only refusals enter.
 *
 * Migration 0006 indexed `succeeded` like the other filters, so every command's audit row
 * updated it. Nearly every row is a success, and a success found through that index is one of
 * nearly all rows: the time index, filtered, finds a page of them as fast. Refusals are the
 * few worth an index. Without the outcome index an audited write dirties one index fewer per
 * commit: measured with the benchmark's `--file-io` on SQLite, 12–14 % fewer log writes per
 * secret exchange and 5–8 % fewer per scope creation (docs/performance-history.md, twenty-first
 * round).
 */
export const auditRefusalsIndex: Migration = {
  async up(db) {
    await db.schema.dropIndex('audit_entries_succeeded_recorded').execute();
    await db.schema
      .createIndex('audit_entries_refusals_recorded')
      .on('audit_entries')
      .columns(['recorded_at', 'id'])
      .where(sql.ref('succeeded'), '=', 0)
      .execute();
  },
};
