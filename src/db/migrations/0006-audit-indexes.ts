import type { Migration } from './migration.ts';

/**
 * Indexes for the audit-log reader's filters. Every list is newest first, so each index ends in
 * (recorded_at, id): a filtered page is an index range scan, not a sort of millions of rows.
 */
export const auditIndexes: Migration = {
  async up(db) {
    for (const column of ['actor_id', 'target_id', 'action', 'succeeded'] as const) {
      await db.schema
        .createIndex(`audit_entries_${column}_recorded`)
        .on('audit_entries')
        .columns([column, 'recorded_at', 'id'])
        .execute();
    }
  },
};
