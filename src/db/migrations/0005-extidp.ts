import { column, type Migration } from './migration.ts';

/** External-provider users: people who sign in to one scope through the configured OpenID provider. */
export const extidp: Migration = {
  async up(db) {
    await db.schema
      .createTable('extidp_users')
      .addColumn('id', column.id, (c) => c.primaryKey())
      // Hard-deleting the scope removes its external-provider users with it.
      .addColumn('scope_id', column.id, (c) => c.notNull().references('scopes.id').onDelete('cascade'))
      .addColumn('issuer', column.text, (c) => c.notNull())
      .addColumn('subject', column.text, (c) => c.notNull())
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('email', column.text, (c) => c.notNull())
      .addColumn('email_normalized', column.text, (c) => c.notNull())
      .addColumn('email_verified', column.flag, (c) => c.notNull().defaultTo(0))
      .addColumn('picture_url', column.text)
      .addColumn('last_signed_in_at', column.time)
      .addColumn('last_signed_out_at', column.time)
      .addColumn('restricted_at', column.time)
      .addColumn('restriction_ground', column.text)
      .addColumn('erasure_requested_at', column.time)
      .addColumn('deleted_at', column.time)
      .addColumn('anonymised_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
    // One row per external account and scope, deleted rows included: a deleted account keeps
    // its external account bound to it, so signing in again is refused instead of re-creating it.
    await db.schema
      .createIndex('extidp_users_account_unique')
      .on('extidp_users')
      .columns(['scope_id', 'issuer', 'subject'])
      .unique()
      .execute();
    await db.schema
      .createIndex('extidp_users_scope_name')
      .on('extidp_users')
      .columns(['scope_id', 'name', 'id'])
      .execute();
  },
};
