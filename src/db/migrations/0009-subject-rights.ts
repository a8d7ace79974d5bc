import { sql } from 'kysely';
import type { Migration } from './migration.ts';

/**
 * Indexes for the data-subject rights and the retention pass. The restriction, erasure and
 * anonymisation columns already exist (0001, 0005). Each index is partial, so it holds only the
 * few rows the pass and the erasure-requests list look for, not every identity:
 * - outstanding erasure requests, in deadline order;
 * - logically deleted identities not yet anonymised, in deletion order;
 * - links by expiry, for the purge of expired ones.
 */
export const subjectRights: Migration = {
  async up(db) {
    for (const table of ['persons', 'extidp_users'] as const) {
      await db.schema
        .createIndex(`${table}_erasure_pending`)
        .on(table)
        .columns(['erasure_requested_at', 'id'])
        .where(sql<boolean>`erasure_requested_at is not null and anonymised_at is null`)
        .execute();
      await db.schema
        .createIndex(`${table}_deleted_not_anonymised`)
        .on(table)
        .columns(['deleted_at', 'id'])
        .where(sql<boolean>`deleted_at is not null and anonymised_at is null`)
        .execute();
    }
    await db.schema.createIndex('email_links_expires').on('email_links').column('expires_at').execute();
  },
};
