import type { ExecuteContext } from '../../audit/command-runner.ts';
import type { Selectable } from 'kysely';
import type { AccountEmailBudgetsTable, DbOrTx } from '../../db/database.ts';
import { Refusal } from '../../http/messages.ts';
import { findAccountEmailBudget, reserveAccountEmail } from './account-email.repository.ts';

/** Spec §Limits: five account emails per day-long window starting at the first send. */
export const ACCOUNT_EMAIL_WINDOW_LIMIT = 5;
export const ACCOUNT_EMAIL_WINDOW_SECONDS = 24 * 60 * 60;

const secondsBefore = (now: string, seconds: number): string =>
  new Date(Date.parse(now) - seconds * 1000).toISOString();
const secondsUntil = (now: string, moment: number): number =>
  Math.max(1, Math.ceil((moment - Date.parse(now)) / 1000));

/**
 * Charges one mail to the person's shared account-email budget (resend-verification, and later
 * 2fa/enable with Email and own email change). Call it inside the command's transaction, after
 * the request's own checks and before anything is written or mailed: a refusal throws 429 with
 * Retry-After and leaves nothing behind (spec §Errors).
 *
 * Mail sent at person creation and administrator-initiated mail are NOT charged here
 * (DECISIONS §10); they have their own per-kind cooldown.
 */
export async function chargeAccountEmail(
  context: Pick<ExecuteContext, 'tx' | 'now'>,
  personId: string,
  cooldownSeconds: number,
): Promise<void> {
  const { tx, now } = context;
  const reserved = await reserveAccountEmail(tx, {
    personId,
    now,
    // 0 turns the cooldown off (spec §Limits); the window still applies.
    cooldownBoundary: cooldownSeconds > 0 ? secondsBefore(now, cooldownSeconds) : null,
    windowBoundary: secondsBefore(now, ACCOUNT_EMAIL_WINDOW_SECONDS),
    windowLimit: ACCOUNT_EMAIL_WINDOW_LIMIT,
  });
  if (reserved) return;
  // Refused: read the row the condition saw to say why and when to come back.
  throw (
    refusalOf(await findAccountEmailBudget(tx, personId), now, cooldownSeconds) ??
    new Refusal('An email of this kind was sent to you recently. Try again in a few minutes.', {
      'retry-after': '1',
    })
  );
}

/**
 * The 429 that charging the budget now would answer, without charging it: for a request that
 * must refuse before it checks a password (2fa/enable with Email, spec §Endpoints), so a spent
 * budget does not turn into a free password-guessing attempt.
 */
export async function accountEmailBudgetRefusal(
  context: Pick<ExecuteContext, 'now'> & { readonly db: DbOrTx },
  personId: string,
  cooldownSeconds: number,
): Promise<Refusal | null> {
  return refusalOf(await findAccountEmailBudget(context.db, personId), context.now, cooldownSeconds);
}

function refusalOf(
  budget: Selectable<AccountEmailBudgetsTable> | undefined,
  now: string,
  cooldownSeconds: number,
): Refusal | null {
  const cooldownEnds = budget === undefined ? 0 : Date.parse(budget.last_sent_at) + cooldownSeconds * 1000;
  const cooling = cooldownSeconds > 0 && cooldownEnds > Date.parse(now);
  const windowEnds =
    budget === undefined ? 0 : Date.parse(budget.window_started_at) + ACCOUNT_EMAIL_WINDOW_SECONDS * 1000;
  const windowFull =
    budget !== undefined && budget.window_count >= ACCOUNT_EMAIL_WINDOW_LIMIT && windowEnds > Date.parse(now);
  if (windowFull) {
    // For the daily limit: the later of the window's end and the cooldown's end (spec §Errors).
    const retryAt = Math.max(windowEnds, cooling ? cooldownEnds : 0);
    return new Refusal('You have reached the limit for account emails. Try again later.', {
      'retry-after': String(secondsUntil(now, retryAt)),
    });
  }
  if (!cooling) return null;
  return new Refusal('An email of this kind was sent to you recently. Try again in a few minutes.', {
    'retry-after': String(secondsUntil(now, cooldownEnds)),
  });
}
