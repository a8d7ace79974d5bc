import { sql } from 'kysely';
import { column, type Migration } from './migration.ts';

export const foundation: Migration = {
  async up(db) {
    await db.schema
      .createTable('scopes')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('name_normalized', column.text, (c) => c.notNull())
      .addColumn('description', column.text, (c) => c.notNull().defaultTo(''))
      .addColumn('extidp_signin_enabled', column.flag, (c) => c.notNull().defaultTo(0))
      .addColumn('self_registration_enabled', column.flag, (c) => c.notNull().defaultTo(0))
      .addColumn('email_verification_url', column.text)
      .addColumn('password_reset_url', column.text)
      .addColumn('deleted_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
    // Live scope names are unique case-insensitively; a deleted scope frees its name.
    await db.schema
      .createIndex('scopes_live_name_unique')
      .on('scopes')
      .column('name_normalized')
      .unique()
      .where(sql.ref('deleted_at'), 'is', null)
      .execute();
    await db.schema.createIndex('scopes_name_id').on('scopes').columns(['name', 'id']).execute();

    await db.schema
      .createTable('persons')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('name', column.text, (c) => c.notNull())
      .addColumn('email', column.text, (c) => c.notNull())
      .addColumn('email_normalized', column.text, (c) => c.notNull())
      .addColumn('role', column.integer, (c) => c.notNull())
      .addColumn('scope_id', column.id, (c) => c.references('scopes.id').onDelete('cascade'))
      .addColumn('password_hash', column.text)
      .addColumn('security_stamp', column.text, (c) => c.notNull())
      .addColumn('email_verified', column.flag, (c) => c.notNull().defaultTo(0))
      .addColumn('failed_login_attempts', column.integer, (c) => c.notNull().defaultTo(0))
      .addColumn('locked_out_until', column.time)
      .addColumn('restricted_at', column.time)
      .addColumn('restriction_ground', column.text)
      .addColumn('erasure_requested_at', column.time)
      .addColumn('deleted_at', column.time)
      .addColumn('anonymised_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
    // Uniqueness (DECISIONS §6): Users per scope, administrators among administrators; live only.
    await db.schema
      .createIndex('persons_user_email_unique')
      .on('persons')
      .columns(['scope_id', 'email_normalized'])
      .unique()
      .where(sql<boolean>`deleted_at is null and scope_id is not null`)
      .execute();
    await db.schema
      .createIndex('persons_admin_email_unique')
      .on('persons')
      .column('email_normalized')
      .unique()
      .where(sql<boolean>`deleted_at is null and scope_id is null`)
      .execute();
    await db.schema
      .createIndex('persons_scope_name')
      .on('persons')
      .columns(['scope_id', 'name', 'id'])
      .execute();
    await db.schema.createIndex('persons_role_name').on('persons').columns(['role', 'name', 'id']).execute();

    await db.schema
      .createTable('scope_owners')
      .addColumn('scope_id', column.id, (c) => c.notNull().references('scopes.id').onDelete('cascade'))
      .addColumn('person_id', column.id, (c) => c.notNull().references('persons.id').onDelete('cascade'))
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addPrimaryKeyConstraint('scope_owners_pk', ['scope_id', 'person_id'])
      .execute();
    await db.schema
      .createIndex('scope_owners_person')
      .on('scope_owners')
      .columns(['person_id', 'scope_id'])
      .execute();

    await db.schema
      .createTable('audit_entries')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('actor_id', column.id)
      .addColumn('target_id', column.id)
      .addColumn('action', column.text, (c) => c.notNull())
      .addColumn('succeeded', column.flag, (c) => c.notNull())
      .addColumn('failure_reason', column.text)
      .addColumn('recorded_at', column.time, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('audit_entries_recorded')
      .on('audit_entries')
      .columns(['recorded_at', 'id'])
      .execute();
  },
};
