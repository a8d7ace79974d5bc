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
        const row = personRow(
          scopeAdmin ? `bulk-admin-${index}@example.test` : `bulk-user-${index}@example.test`,
          scopeAdmin ? `Bulk Scope Admin ${index}` : `Bulk User ${index}`,
          scopeAdmin ? null : scopeIds[index % scopeIds.length]!,
          passwordHash,
          iso(index),
        );
        if (scopeAdmin) scopeAdminIds.push(row.id);
        return row;
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

/**
 * A person row as the API writes one, verified and unlocked: a Scope Admin without a scope, or a
 * User of `scopeId`.
 */
function personRow(
  email: string,
  name: string,
  scopeId: string | null,
  passwordHash: string,
  createdAt: string,
) {
  return {
    id: randomUUID(),
    name,
    email,
    email_normalized: email,
    role: scopeId === null ? Role.ScopeAdmin : Role.User,
    scope_id: scopeId,
    password_hash: passwordHash,
    security_stamp: randomUUID(),
    email_verified: 1 as const,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

const REFUSAL_ACCOUNT_PREFIX = 'bench-refusal-';

/** The email of the refusal account `index` (seedRefusalAccounts). */
export const refusalAccountEmail = (index: number) => `${REFUSAL_ACCOUNT_PREFIX}${index}@example.test`;

/**
 * `count` Users of `scopeId` for the wrong-password refusals to spread over: the 10th
 * consecutive wrong password locks an account (DECISIONS §7), and a locked account is checked
 * against the decoy hash, as an unknown email is, so wrong passwords sent to one account would
 * time the decoy twice. Written straight into the table: the API creates at most 30 persons a
 * minute per administrator.
 */
export async function seedRefusalAccounts(
  databaseUrl: string,
  scopeId: string,
  count: number,
): Promise<void> {
  const handle = openDatabase(databaseUrl);
  const passwordHash = hashSync('refusal account password', PASSWORD_HASH_PARAMETERS);
  const createdAt = new Date().toISOString();
  try {
    for (let start = 0; start < count; start += BATCH) {
      const rows = Array.from({ length: Math.min(BATCH, count - start) }, (_, offset) =>
        personRow(
          refusalAccountEmail(start + offset),
          `Bench refusal account ${start + offset}`,
          scopeId,
          passwordHash,
          createdAt,
        ),
      );
      await handle.db.insertInto('persons').values(rows).execute();
    }
  } finally {
    await handle.close();
  }
}

/** How many of the refusal accounts are locked now: a wrong password sent to one timed the decoy. */
export async function countLockedRefusalAccounts(databaseUrl: string): Promise<number> {
  const handle = openDatabase(databaseUrl);
  try {
    const { locked } = await handle.db
      .selectFrom('persons')
      .select((eb) => eb.fn.countAll<number>().as('locked'))
      .where('email_normalized', 'like', `${REFUSAL_ACCOUNT_PREFIX}%`)
      .where('locked_out_until', 'is not', null)
      .executeTakeFirstOrThrow();
    return Number(locked);
  } finally {
    await handle.close();
  }
}
