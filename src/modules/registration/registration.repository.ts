import type { DbOrTx, IsoTime, PendingRegistrationRow, Tx } from '../../db/database.ts';
import type { PageRequest } from '../../http/pagination.ts';
import { normalizeEmail } from '../persons/person-rules.ts';

/** SQL of the registration module: pending registrations and the attempt-notice budget. */

/** DECISIONS §7: expired links, codes, challenges and pending registrations are kept 7 days. */
export const EXPIRED_PENDING_REGISTRATION_KEPT_SECONDS = 7 * 24 * 60 * 60;
/** Spec §Limits: at most three attempt notices per address per day, across scopes. */
export const NOTICE_WINDOW_LIMIT = 3;
export const NOTICE_WINDOW_SECONDS = 24 * 60 * 60;

export async function insertPendingRegistration(tx: Tx, row: PendingRegistrationRow): Promise<void> {
  await tx.insertInto('pending_registrations').values(row).execute();
}

export async function findPendingRegistrationByTokenHash(
  db: DbOrTx,
  tokenHash: string,
): Promise<PendingRegistrationRow | undefined> {
  return db
    .selectFrom('pending_registrations')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst();
}

export async function findPendingRegistration(
  db: DbOrTx,
  id: string,
): Promise<PendingRegistrationRow | undefined> {
  return db.selectFrom('pending_registrations').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Registrations of one address in one scope that have not expired yet. */
export async function countLivePendingRegistrations(
  db: DbOrTx,
  scopeId: string,
  emailNormalized: string,
  now: IsoTime,
): Promise<number> {
  const row = await db
    .selectFrom('pending_registrations')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('scope_id', '=', scopeId)
    .where('email_normalized', '=', emailNormalized)
    .where('expires_at', '>', now)
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

/**
 * Spends one guess, by one conditional write so that concurrent wrong guesses each spend one and
 * the count never goes below zero. Returns the guesses left afterwards, or null when the row is
 * gone or had none left.
 */
export async function spendGuess(tx: Tx, id: string): Promise<number | null> {
  const row = await tx
    .updateTable('pending_registrations')
    .set((eb) => ({ guesses_left: eb('guesses_left', '-', 1) }))
    .where('id', '=', id)
    .where('guesses_left', '>', 0)
    .returning('guesses_left')
    .executeTakeFirst();
  return row === undefined ? null : Number(row.guesses_left);
}

/** Removes a registration (confirmed, discarded or exhausted): false when it was already gone. */
export async function deletePendingRegistration(tx: Tx, id: string): Promise<boolean> {
  const result = await tx.deleteFrom('pending_registrations').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** One registration reached through its scope: one of another scope is not found. */
export async function findPendingRegistrationInScope(
  db: DbOrTx,
  scopeId: string,
  id: string,
): Promise<PendingRegistrationRow | undefined> {
  return db
    .selectFrom('pending_registrations')
    .selectAll()
    .where('id', '=', id)
    .where('scope_id', '=', scopeId)
    .executeTakeFirst();
}

/** The scope's registrations awaiting confirmation (not expired), newest first. */
export async function listLivePendingRegistrations(
  db: DbOrTx,
  scopeId: string,
  now: IsoTime,
  page: PageRequest,
): Promise<{ rows: PendingRegistrationRow[]; total: number }> {
  const base = db
    .selectFrom('pending_registrations')
    .where('scope_id', '=', scopeId)
    .where('expires_at', '>', now);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

/**
 * Reserves one attempt notice for an address: true when it fits in the address's day-long window
 * (which starts at its first notice), by one conditional upsert, so concurrent registrations
 * cannot exceed the limit.
 */
export async function reserveRegistrationNotice(
  tx: Tx,
  reservation: { emailNormalized: string; now: IsoTime; windowBoundary: IsoTime; windowLimit: number },
): Promise<boolean> {
  const { emailNormalized, now, windowBoundary, windowLimit } = reservation;
  const row = await tx
    .insertInto('registration_notice_budgets')
    .values({ email_normalized: emailNormalized, window_started_at: now, window_count: 1 })
    .onConflict((conflict) =>
      conflict
        .column('email_normalized')
        .doUpdateSet((eb) => {
          const windowEnded = eb('registration_notice_budgets.window_started_at', '<=', windowBoundary);
          return {
            window_started_at: eb
              .case()
              .when(windowEnded)
              .then(now)
              .else(eb.ref('registration_notice_budgets.window_started_at'))
              .end(),
            window_count: eb
              .case()
              .when(windowEnded)
              .then(1)
              .else(eb('registration_notice_budgets.window_count', '+', 1))
              .end(),
          };
        })
        .where((eb) =>
          eb.or([
            eb('registration_notice_budgets.window_started_at', '<=', windowBoundary),
            eb('registration_notice_budgets.window_count', '<', windowLimit),
          ]),
        ),
    )
    .returning('email_normalized')
    .executeTakeFirst();
  return row !== undefined;
}

const secondsBefore = (now: IsoTime, seconds: number): IsoTime =>
  new Date(Date.parse(now) - seconds * 1000).toISOString();

/**
 * For the retention pass: removes pending registrations that expired more than seven days ago
 * (DECISIONS §7), at most `limit` of them when given (the pass's batch size), and notice
 * budgets whose window ended as long ago. Returns how many pending registrations were removed.
 */
export async function purgeExpiredPendingRegistrations(
  db: DbOrTx,
  now: IsoTime,
  limit?: number,
): Promise<number> {
  const boundary = secondsBefore(now, EXPIRED_PENDING_REGISTRATION_KEPT_SECONDS);
  const result = await db
    .deleteFrom('pending_registrations')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('pending_registrations')
        .select('id')
        .where('expires_at', '<=', boundary)
        .orderBy('expires_at')
        .$if(limit !== undefined, (query) => query.limit(limit ?? 0)),
    )
    .executeTakeFirst();
  // A notice window lasts a day; one that started over eight days ago ended seven days ago.
  await db
    .deleteFrom('registration_notice_budgets')
    .where('window_started_at', '<=', secondsBefore(boundary, NOTICE_WINDOW_SECONDS))
    .execute();
  return Number(result.numDeletedRows);
}

/**
 * Erasure of an identity (the retention pass): pending self-registrations and attempt-notice
 * counts kept under its address go with it.
 */
export async function removeRegistrationsOfAddress(tx: Tx, email: string): Promise<void> {
  const emailNormalized = normalizeEmail(email);
  await tx.deleteFrom('pending_registrations').where('email_normalized', '=', emailNormalized).execute();
  await tx
    .deleteFrom('registration_notice_budgets')
    .where('email_normalized', '=', emailNormalized)
    .execute();
}
