import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { hashSync } from '@node-rs/argon2';
import { PASSWORD_HASH_PARAMETERS } from '../src/crypto/passwords.ts';
import { openDatabase } from '../src/db/open-database.ts';

const SCOPES = 10_000;
const PERSONS = 100_000;
const AUDIT_ENTRIES = 1_000_000;
const BATCH = 500;

/**
 * Bulk data for the "large database" runs: written straight into the tables in batched
 * transactions (not through the API, which would take hours), shaped like real rows.
 */
export async function seedBulk(databaseUrl: string): Promise<void> {
  const handle = openDatabase(databaseUrl);
  const { db } = handle;
  const now = Date.now();
  const iso = (offsetMs: number) => new Date(now - offsetMs).toISOString();
  const passwordHash = hashSync('bulk seeded password', PASSWORD_HASH_PARAMETERS);
  const scopeIds: string[] = [];
  try {
    for (let start = 0; start < SCOPES; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, SCOPES - start) }, (_, offset) => {
        const id = randomUUID();
        scopeIds.push(id);
        const name = `Bulk scope ${start + offset}`;
        return {
          id,
          name,
          name_normalized: name.toLowerCase(),
          description: '',
          extidp_signin_enabled: 0 as const,
          self_registration_enabled: 0 as const,
          email_verification_url: null,
          password_reset_url: null,
          deleted_at: null,
          created_at: iso(start + offset),
          updated_at: iso(start + offset),
        };
      });
      await db.insertInto('scopes').values(rows).execute();
    }
    for (let start = 0; start < PERSONS; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, PERSONS - start) }, (_, offset) => {
        const index = start + offset;
        const email = `bulk-user-${index}@example.test`;
        return {
          id: randomUUID(),
          name: `Bulk User ${index}`,
          email,
          email_normalized: email,
          role: 3 as const,
          scope_id: scopeIds[index % scopeIds.length]!,
          password_hash: passwordHash,
          security_stamp: randomUUID(),
          email_verified: 1 as const,
          created_at: iso(index),
          updated_at: iso(index),
        };
      });
      await db.insertInto('persons').values(rows).execute();
    }
    const actions = ['CreateScopeCommand', 'LoginCommand', 'UpdateScopeCommand', 'DeleteScopeCommand'];
    for (let start = 0; start < AUDIT_ENTRIES; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, AUDIT_ENTRIES - start) }, (_, offset) => {
        const index = start + offset;
        return {
          id: randomUUID(),
          actor_id: randomUUID(),
          target_id: scopeIds[index % scopeIds.length]!,
          action: actions[index % actions.length]!,
          succeeded: (index % 7 === 0 ? 0 : 1) as 0 | 1,
          failure_reason: index % 7 === 0 ? 'Scope not found.' : null,
          recorded_at: iso(AUDIT_ENTRIES - index),
        };
      });
      await db.insertInto('audit_entries').values(rows).execute();
    }
    // PostgreSQL's autovacuum refreshes the planner's statistics within a minute of a load like
    // this; the benchmark runs at once, so it refreshes them itself rather than measure plans
    // made for nearly empty tables. (SQLite keeps no statistics unless asked, in service too.)
    if (handle.dialect === 'postgres') await sql`analyze`.execute(db);
  } finally {
    await handle.close();
  }
}
