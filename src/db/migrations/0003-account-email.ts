import { column, type Migration } from './migration.ts';

/**
 * Verification and reset links, and the per-person account-email budget (spec §Limits).
 * Links keep only the SHA-256 of their token (DECISIONS §7), so a copy of the database cannot
 * be used to verify an address or take over an account.
 */
export const accountEmail: Migration = {
  async up(db) {
    await db.schema
      .createTable('email_links')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('person_id', column.id, (c) => c.notNull().references('persons.id').onDelete('cascade'))
      .addColumn('kind', column.text, (c) => c.notNull())
      .addColumn('token_hash', column.text, (c) => c.notNull().unique())
      // The address the link was mailed to: a link never verifies an address it was not sent to.
      .addColumn('email_normalized', column.text, (c) => c.notNull())
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('expires_at', column.time, (c) => c.notNull())
      .addColumn('spent_at', column.time)
      .addColumn('retired_at', column.time)
      .execute();
    await db.schema
      .createIndex('email_links_person_kind')
      .on('email_links')
      .columns(['person_id', 'kind', 'created_at'])
      .execute();

    // The shared account-email budget: one row per person, reserved by one conditional upsert.
    await db.schema
      .createTable('account_email_budgets')
      .addColumn('person_id', column.id, (c) => c.primaryKey().references('persons.id').onDelete('cascade'))
      .addColumn('last_sent_at', column.time, (c) => c.notNull())
      .addColumn('window_started_at', column.time, (c) => c.notNull())
      .addColumn('window_count', column.integer, (c) => c.notNull())
      .execute();
  },
};
