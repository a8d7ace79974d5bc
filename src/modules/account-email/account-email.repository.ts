import type { DbOrTx, EmailLinkKind, EmailLinkRow, Tx } from '../../db/database.ts';

/** SQL of the account-email module: links and the account-email budget. Kysely only. */

export async function insertEmailLink(tx: Tx, link: EmailLinkRow): Promise<void> {
  await tx.insertInto('email_links').values(link).execute();
}

export async function findEmailLinkByTokenHash(
  db: DbOrTx,
  tokenHash: string,
): Promise<EmailLinkRow | undefined> {
  return db.selectFrom('email_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Retires every outstanding (neither spent nor retired) link of the kinds given. */
export async function retireOutstandingLinks(
  tx: Tx,
  personId: string,
  kinds: readonly EmailLinkKind[],
  now: string,
): Promise<void> {
  await tx
    .updateTable('email_links')
    .set({ retired_at: now })
    .where('person_id', '=', personId)
    .where('kind', 'in', kinds)
    .where('spent_at', 'is', null)
    .where('retired_at', 'is', null)
    .execute();
}

/**
 * Spends a link if it is still outstanding. One conditional write: of two requests racing with
 * the same token, exactly one spends it.
 */
export async function spendLink(tx: Tx, id: string, now: string): Promise<boolean> {
  const result = await tx
    .updateTable('email_links')
    .set({ spent_at: now })
    .where('id', '=', id)
    .where('spent_at', 'is', null)
    .where('retired_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** When the person was last sent a link of this kind, by anyone (the per-kind cooldown). */
export async function latestLinkIssuedAt(
  db: DbOrTx,
  personId: string,
  kind: EmailLinkKind,
): Promise<string | null> {
  const row = await db
    .selectFrom('email_links')
    .select('created_at')
    .where('person_id', '=', personId)
    .where('kind', '=', kind)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row?.created_at ?? null;
}

/** The scope's own link bases (they replace the global ones for its Users), or null when gone. */
export async function findScopeLinkSettings(
  db: DbOrTx,
  scopeId: string,
): Promise<{ live: boolean; verificationUrl: string | null; passwordResetUrl: string | null } | null> {
  const row = await db
    .selectFrom('scopes')
    .select(['deleted_at', 'email_verification_url', 'password_reset_url'])
    .where('id', '=', scopeId)
    .executeTakeFirst();
  if (row === undefined) return null;
  return {
    live: row.deleted_at === null,
    verificationUrl: row.email_verification_url,
    passwordResetUrl: row.password_reset_url,
  };
}

export async function setPasswordAndStamp(
  tx: Tx,
  personId: string,
  change: { passwordHash: string; securityStamp: string; now: string },
): Promise<void> {
  await tx
    .updateTable('persons')
    .set({
      password_hash: change.passwordHash,
      security_stamp: change.securityStamp,
      failed_login_attempts: 0,
      locked_out_until: null,
      updated_at: change.now,
    })
    .where('id', '=', personId)
    .execute();
}

export async function markEmailVerified(tx: Tx, personId: string, now: string): Promise<void> {
  await tx
    .updateTable('persons')
    .set({ email_verified: 1, updated_at: now })
    .where('id', '=', personId)
    .where('email_verified', '=', 0)
    .execute();
}

export interface BudgetReservation {
  readonly personId: string;
  readonly now: string;
  /** A send is refused while the last one is later than this (null: the cooldown is off). */
  readonly cooldownBoundary: string | null;
  /** A window that started at or before this has ended: the next send opens a new one. */
  readonly windowBoundary: string;
  readonly windowLimit: number;
}

/**
 * Reserves one send from the person's account-email budget in ONE conditional upsert: the row
 * is created on the first send, and afterwards updated only while the cooldown has passed and
 * the window has room (or has ended, which opens a new one). The database evaluates the
 * condition against the row it locks, so concurrent requests can never exceed the window.
 */
export async function reserveAccountEmail(tx: Tx, reservation: BudgetReservation): Promise<boolean> {
  const { personId, now, cooldownBoundary, windowBoundary, windowLimit } = reservation;
  const row = await tx
    .insertInto('account_email_budgets')
    .values({ person_id: personId, last_sent_at: now, window_started_at: now, window_count: 1 })
    .onConflict((conflict) =>
      conflict
        .column('person_id')
        .doUpdateSet((eb) => {
          const windowEnded = eb('account_email_budgets.window_started_at', '<=', windowBoundary);
          return {
            last_sent_at: now,
            window_started_at: eb
              .case()
              .when(windowEnded)
              .then(now)
              .else(eb.ref('account_email_budgets.window_started_at'))
              .end(),
            window_count: eb
              .case()
              .when(windowEnded)
              .then(1)
              .else(eb('account_email_budgets.window_count', '+', 1))
              .end(),
          };
        })
        .where((eb) =>
          eb.and([
            ...(cooldownBoundary === null
              ? []
              : [eb('account_email_budgets.last_sent_at', '<=', cooldownBoundary)]),
            eb.or([
              eb('account_email_budgets.window_started_at', '<=', windowBoundary),
              eb('account_email_budgets.window_count', '<', windowLimit),
            ]),
          ]),
        ),
    )
    .returning('person_id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function findAccountEmailBudget(db: DbOrTx, personId: string) {
  return db
    .selectFrom('account_email_budgets')
    .selectAll()
    .where('person_id', '=', personId)
    .executeTakeFirst();
}
