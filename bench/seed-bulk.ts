import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { hashSync } from '@node-rs/argon2';
import { PASSWORD_HASH_PARAMETERS } from '../src/crypto/passwords.ts';
import { Role } from '../src/db/database.ts';
import { openDatabase } from '../src/db/open-database.ts';

const SCOPES = 10_000;
const PERSONS = 100_000;
const AUDIT_ENTRIES = 1_000_000;
/** Of the persons, this many are Scope Admins, each owning SCOPES / SCOPE_ADMINS scopes. */
const SCOPE_ADMINS = 1_000;
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
    // Every scope has an owner, as one made through the API has: a page of scopes reads its
    // owners, and a page of ownerless scopes would measure a cheaper list than real ones.
    const scopeAdminIds: string[] = [];
    for (let start = 0; start < PERSONS; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, PERSONS - start) }, (_, offset) => {
        const index = start + offset;
        const scopeAdmin = index < SCOPE_ADMINS;
        const email = scopeAdmin ? `bulk-admin-${index}@example.test` : `bulk-user-${index}@example.test`;
        const id = randomUUID();
        if (scopeAdmin) scopeAdminIds.push(id);
        return {
          id,
          name: scopeAdmin ? `Bulk Scope Admin ${index}` : `Bulk User ${index}`,
          email,
          email_normalized: email,
          role: scopeAdmin ? Role.ScopeAdmin : Role.User,
          scope_id: scopeAdmin ? null : scopeIds[index % scopeIds.length]!,
          password_hash: passwordHash,
          security_stamp: randomUUID(),
          email_verified: 1 as const,
          created_at: iso(index),
          updated_at: iso(index),
        };
      });
      await db.insertInto('persons').values(rows).execute();
    }
    for (let start = 0; start < SCOPES; start += BATCH) {
      const rows = scopeIds.slice(start, start + BATCH).map((scopeId, offset) => ({
        scope_id: scopeId,
        person_id: scopeAdminIds[(start + offset) % scopeAdminIds.length]!,
        created_at: iso(start + offset),
      }));
      await db.insertInto('scope_owners').values(rows).execute();
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
