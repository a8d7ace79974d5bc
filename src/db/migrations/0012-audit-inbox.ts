import { column, type Migration } from './migration.ts';

/**
 * The audit inbox: where SQLite's commands append their audit rows, moved in bulk into
 * `audit_entries` (src/audit/audit-inbox.ts says when, and why).
 *
 * It has the columns of `audit_entries` and no index at all, not even a primary key: a row
 * appended to it dirties one page, where a row of `audit_entries` dirties one in each of its
 * six B-trees. PostgreSQL has the table too, so that both dialects have one schema, but writes
 * its audit rows straight to `audit_entries`.
 */
export const auditInbox: Migration = {
  async up(db) {
    await db.schema
      .createTable('audit_inbox')
      .addColumn('id', column.id, (c) => c.notNull())
      .addColumn('actor_id', column.id)
      .addColumn('target_id', column.id)
      .addColumn('action', column.text, (c) => c.notNull())
      .addColumn('succeeded', column.flag, (c) => c.notNull())
      .addColumn('failure_reason', column.text)
      .addColumn('recorded_at', column.time, (c) => c.notNull())
      .execute();
  },
};
