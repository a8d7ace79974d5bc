import { column, type Migration } from './migration.ts';

/**
 * Two-factor authentication (spec §Two-factor configuration, §States). Every table names its
 * person with ON DELETE CASCADE: a hard delete removes all two-factor data with the person.
 * No table holds a usable secret in the clear: the TOTP key is sealed (AES-256-GCM), codes and
 * recovery codes are kept as SHA-256 hashes.
 */
export const twoFactor: Migration = {
  async up(db) {
    // One configuration per person: pending until confirmed, then active.
    await db.schema
      .createTable('two_factor_configs')
      .addColumn('person_id', column.id, (c) => c.primaryKey().references('persons.id').onDelete('cascade'))
      .addColumn('status', column.text, (c) => c.notNull())
      .addColumn('app_enabled', column.flag, (c) => c.notNull())
      .addColumn('email_enabled', column.flag, (c) => c.notNull())
      .addColumn('totp_secret_sealed', column.text)
      // The last accepted TOTP time step: a step is accepted once (DECISIONS §7).
      .addColumn('totp_last_step', column.integer)
      // The code mailed by 2fa/enable with Email, proven at confirm.
      .addColumn('setup_email_code_hash', column.text)
      .addColumn('setup_email_code_expires_at', column.time)
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('activated_at', column.time)
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('two_factor_recovery_codes')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('person_id', column.id, (c) => c.notNull().references('persons.id').onDelete('cascade'))
      // SHA-256 (hex) of the normalised code (16 characters; 8 for the older shape).
      .addColumn('code_hash', column.text, (c) => c.notNull())
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('used_at', column.time)
      .execute();
    await db.schema
      .createIndex('two_factor_recovery_codes_person')
      .on('two_factor_recovery_codes')
      .columns(['person_id', 'code_hash'])
      .execute();

    // Sign-in challenges: outstanding for ten minutes, redeemed once, replaced by a newer login.
    await db.schema
      .createTable('two_factor_challenges')
      .addColumn('id', column.id, (c) => c.primaryKey())
      .addColumn('person_id', column.id, (c) => c.notNull().references('persons.id').onDelete('cascade'))
      .addColumn('created_at', column.time, (c) => c.notNull())
      .addColumn('expires_at', column.time, (c) => c.notNull())
      .addColumn('wrong_guesses', column.integer, (c) => c.notNull().defaultTo(0))
      .addColumn('redeemed_at', column.time)
      .addColumn('retired_at', column.time)
      .addColumn('email_code_hash', column.text)
      .addColumn('email_code_expires_at', column.time)
      .addColumn('email_code_reissues', column.integer, (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .createIndex('two_factor_challenges_person')
      .on('two_factor_challenges')
      .columns(['person_id', 'created_at'])
      .execute();
    await db.schema
      .createIndex('two_factor_challenges_expires')
      .on('two_factor_challenges')
      .column('expires_at')
      .execute();

    // The second-factor lock, per account across challenges (spec §States). Its own table, so
    // turning two-factor off and on again does not wipe a count or a lock.
    await db.schema
      .createTable('two_factor_locks')
      .addColumn('person_id', column.id, (c) => c.primaryKey().references('persons.id').onDelete('cascade'))
      .addColumn('failures', column.integer, (c) => c.notNull())
      .addColumn('lock_count', column.integer, (c) => c.notNull())
      .addColumn('locked_until', column.time)
      .addColumn('updated_at', column.time, (c) => c.notNull())
      .execute();
  },
};
