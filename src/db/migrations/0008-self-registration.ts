import { column, type Migration } from './migration.ts';

/**
 * Self-registration (spec §States "Pending self-registration"): registrations awaiting the
 * mailed link, and the per-address budget of attempt notices sent to the holders of taken
 * addresses. Like email links, a pending registration keeps only the SHA-256 of its token.
 */
export const selfRegistration: Migration = {
  async up(db) {
    await db.schema
      .createTable('pending_registrations')
      .addColumn('id', column.id, (c) => c.primaryKey())
      // Hard-deleting the scope removes its pending registrations with it.
      .addColumn('scope_id', column.id, (c) => c.notNull().references('scopes.id').onDelete('cascade'))
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('email', column.text, (c) => c.notNull())
      .addColumn('email_normalized', column.text, (c) => c.notNull())
      // Argon2id PHC string (it carries the salt): the registrant's password, hashed at registration.
      .addColumn('password_hash', column.text, (c) => c.notNull())
      .addColumn('token_hash', column.text, (c) => c.notNull().unique())
      .addColumn('guesses_left', column.integer, (c) => c.notNull())
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('expires_at', column.time, (c) => c.notNull())
      .execute();
    // The per-address limit counts a scope's live registrations of one address.
    await db.schema
      .createIndex('pending_registrations_scope_email')
      .on('pending_registrations')
      .columns(['scope_id', 'email_normalized', 'expires_at'])
      .execute();
    // The administrators' list: newest first within a scope.
    await db.schema
      .createIndex('pending_registrations_scope_created')
      .on('pending_registrations')
      .columns(['scope_id', 'created_at', 'id'])
      .execute();
    // The retention pass purges by expiry.
    await db.schema
      .createIndex('pending_registrations_expires')
      .on('pending_registrations')
      .column('expires_at')
      .execute();

    // At most three attempt notices per address per day-long window, across scopes: one row per
    // address, reserved by one conditional upsert so concurrent registrations cannot exceed it.
    await db.schema
      .createTable('registration_notice_budgets')
      .addColumn('email_normalized', column.text, (c) => c.primaryKey())
      .addColumn('window_started_at', column.time, (c) => c.notNull())
      .addColumn('window_count', column.integer, (c) => c.notNull())
      .execute();
  },
};
