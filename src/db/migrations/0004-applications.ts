import { sql } from 'kysely';
import { column, type Migration } from './migration.ts';

/**
 * Applications, their credentials, and scope permissions. Every row points at its scope (and a
 * credential at its application) with ON DELETE CASCADE, so a scope's hard delete purges them
 * and an application's hard delete takes its credentials; a person's hard delete takes the
 * applications they own (spec §States).
 */
export const applications: Migration = {
  async up(db) {
    await db.schema
      .createTable('applications')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('scope_id', column.id, (c) => c.notNull().references('scopes.id').onDelete('cascade'))
      .addColumn('owner_id', column.id, (c) => c.notNull().references('persons.id').onDelete('cascade'))
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('name_normalized', column.text, (c) => c.notNull())
      .addColumn('deleted_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('applications_scope_name')
      .on('applications')
      .columns(['scope_id', 'name', 'id'])
      .execute();
    await db.schema.createIndex('applications_owner').on('applications').column('owner_id').execute();

    await db.schema
      .createTable('application_credentials')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('application_id', column.id, (c) =>
        c.notNull().references('applications.id').onDelete('cascade'),
      )
      // SHA-256 (hex) of the secret; the secret itself is never stored.
      .addColumn('secret_hash', column.text, (c) => c.notNull().unique())
      .addColumn('expires_at', column.time)
      .addColumn('revoked_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('application_credentials_application')
      .on('application_credentials')
      .columns(['application_id', 'created_at', 'id'])
      .execute();

    await db.schema
      .createTable('scope_permissions')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('scope_id', column.id, (c) => c.notNull().references('scopes.id').onDelete('cascade'))
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('name_normalized', column.text, (c) => c.notNull())
      .addColumn('description', column.text, (c) => c.notNull().defaultTo(''))
      .addColumn('include_as_jwt_claim', column.flag, (c) => c.notNull().defaultTo(0))
      .addColumn('deleted_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
    // Permission names travel in tokens, so two live permissions of a scope may not share one.
    await db.schema
      .createIndex('scope_permissions_live_name_unique')
      .on('scope_permissions')
      .columns(['scope_id', 'name_normalized'])
      .unique()
      .where(sql.ref('deleted_at'), 'is', null)
      .execute();
    await db.schema
      .createIndex('scope_permissions_scope_name')
      .on('scope_permissions')
      .columns(['scope_id', 'name', 'id'])
      .execute();
  },
};
