import { sql } from 'kysely';
import { moveAuditInbox } from '../../audit/audit.repository.ts';
import { newSecurityStamp } from '../../crypto/secrets.ts';
import type { IsoTime, Tx } from '../../db/database.ts';
import type { SubjectKind } from './privacy.repository.ts';

/** SQL of the retention pass: which identities are due, how each is anonymised, what is purged. */

/**
 * The pass's advisory lock: a fixed number used for nothing else, paired with the schema's name,
 * so instances sharing one schema exclude each other while separate schemas of one database
 * (several deployments, or parallel test files) do not.
 */
export const RETENTION_LOCK_CLASS = 731_144_091;

export interface DueIdentity {
  readonly id: string;
  readonly kind: SubjectKind;
  /** The address before anonymisation: an erasure takes the rows kept under it elsewhere too. */
  readonly email: string;
  /** Erasure requested by the subject, or logically deleted past the retention period. */
  readonly reason: 'erasure' | 'deletion';
}

/**
 * Due: erasure requested (at the next pass), or logically deleted at or before `deletedBefore`
 * (the retention period has run out); not yet anonymised. Erasure requests come first, oldest
 * first, then deletions, oldest first, so the batch always serves the oldest claims. Two
 * queries, each an index range scan (migration 0009), rather than one OR that scans the table.
 */
export async function findDueIdentities(
  tx: Tx,
  kind: SubjectKind,
  deletedBefore: IsoTime,
  limit: number,
): Promise<DueIdentity[]> {
  if (limit <= 0) return [];
  const table = kind === 'person' ? 'persons' : 'extidp_users';
  const erasures = await tx
    .selectFrom(table)
    .select(['id', 'email'])
    .where('erasure_requested_at', 'is not', null)
    .where('anonymised_at', 'is', null)
    .orderBy('erasure_requested_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  const deletions =
    erasures.length >= limit
      ? []
      : await tx
          .selectFrom(table)
          .select(['id', 'email'])
          .where('deleted_at', 'is not', null)
          .where('deleted_at', '<=', deletedBefore)
          .where('anonymised_at', 'is', null)
          // Deleted and also erasure-pending: already taken above.
          .where('erasure_requested_at', 'is', null)
          .orderBy('deleted_at')
          .orderBy('id')
          .limit(limit - erasures.length)
          .execute();
  return [
    ...erasures.map((row) => ({ id: row.id, kind, email: row.email, reason: 'erasure' as const })),
    ...deletions.map((row) => ({ id: row.id, kind, email: row.email, reason: 'deletion' as const })),
  ];
}

export async function countDueIdentities(tx: Tx, deletedBefore: IsoTime): Promise<number> {
  let total = 0;
  for (const table of ['persons', 'extidp_users'] as const) {
    const erasures = await tx
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('due'))
      .where('erasure_requested_at', 'is not', null)
      .where('anonymised_at', 'is', null)
      .executeTakeFirstOrThrow();
    const deletions = await tx
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('due'))
      .where('deleted_at', 'is not', null)
      .where('deleted_at', '<=', deletedBefore)
      .where('anonymised_at', 'is', null)
      .where('erasure_requested_at', 'is', null)
      .executeTakeFirstOrThrow();
    total += Number(erasures.due) + Number(deletions.due);
  }
  return total;
}

/** Replacement values: the row stays (ids other rows point at) but names nobody. */
const anonymousEmail = (id: string): string => `anonymised-${id}@anonymised.invalid`;
const ANONYMOUS_NAME = 'Anonymised';

/**
 * Replaces every personal field of a person and clears the re-authentication budget and the
 * lock-out; the password goes and a new stamp revokes every token. The row is marked deleted
 * too, so it is listed nowhere and never signs in.
 */
export async function anonymisePerson(tx: Tx, id: string, now: IsoTime): Promise<void> {
  await tx
    .updateTable('persons')
    .set((eb) => ({
      name: ANONYMOUS_NAME,
      email: anonymousEmail(id),
      email_normalized: anonymousEmail(id),
      email_verified: 0,
      password_hash: null,
      security_stamp: newSecurityStamp(),
      failed_login_attempts: 0,
      locked_out_until: null,
      restricted_at: null,
      restriction_ground: null,
      reauthentication_failures: 0,
      reauthentication_window_started_at: null,
      reauthentication_paused_until: null,
      deleted_at: eb.fn.coalesce('deleted_at', eb.val(now)),
      anonymised_at: now,
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
  // The account-email budget and the person's links (their hashes name addresses) go entirely;
  // so do ownerships (an anonymised person owns nothing).
  await tx.deleteFrom('account_email_budgets').where('person_id', '=', id).execute();
  await tx.deleteFrom('email_links').where('person_id', '=', id).execute();
  await tx.deleteFrom('scope_owners').where('person_id', '=', id).execute();
}

/**
 * Replaces every personal field of an external-provider user, the provider's subject
 * identifier included (it names the person at the provider).
 */
export async function anonymiseExtidpUser(tx: Tx, id: string, now: IsoTime): Promise<void> {
  await tx
    .updateTable('extidp_users')
    .set((eb) => ({
      subject: `anonymised-${id}`,
      name: ANONYMOUS_NAME,
      email: anonymousEmail(id),
      email_normalized: anonymousEmail(id),
      email_verified: 0,
      picture_url: null,
      last_signed_in_at: null,
      last_signed_out_at: null,
      restricted_at: null,
      restriction_ground: null,
      deleted_at: eb.fn.coalesce('deleted_at', eb.val(now)),
      anonymised_at: now,
      updated_at: now,
    }))
    .where('id', '=', id)
    .execute();
}

/**
 * Audit entries are kept (DECISIONS §7), but no longer name the anonymised identity: those in
 * the audit inbox too, which is moved first.
 */
export async function clearAuditReferences(tx: Tx, id: string): Promise<void> {
  await moveAuditInbox(tx);
  await tx.updateTable('audit_entries').set({ actor_id: null }).where('actor_id', '=', id).execute();
  await tx.updateTable('audit_entries').set({ target_id: null }).where('target_id', '=', id).execute();
}

/** Deletes up to `limit` verification and reset links that expired at or before `expiredBefore`. */
export async function purgeExpiredEmailLinks(tx: Tx, expiredBefore: IsoTime, limit: number): Promise<number> {
  if (limit <= 0) return 0;
  const result = await tx
    .deleteFrom('email_links')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('email_links')
        .select('id')
        .where('expires_at', '<=', expiredBefore)
        .orderBy('expires_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Takes the retention pass's lock for the rest of the transaction (PostgreSQL: a
 * transaction-scoped advisory lock, released by commit or rollback, so a crashed instance can
 * never leave it held). `wait` blocks until the lock is free; otherwise false when another
 * instance holds it. SQLite needs none: one process owns the file and its transactions run one
 * at a time.
 */
export async function takeRetentionLock(
  tx: Tx,
  dialect: 'sqlite' | 'postgres',
  wait: boolean,
): Promise<boolean> {
  if (dialect === 'sqlite') return true;
  if (wait) {
    await sql`select pg_advisory_xact_lock(${RETENTION_LOCK_CLASS}::integer, hashtext(current_schema()))`.execute(
      tx,
    );
    return true;
  }
  const { rows } = await sql<{
    locked: boolean;
  }>`select pg_try_advisory_xact_lock(${RETENTION_LOCK_CLASS}::integer, hashtext(current_schema())) as locked`.execute(
    tx,
  );
  return rows[0]?.locked === true;
}
