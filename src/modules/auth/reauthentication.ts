import type { ExecuteContext, StepContext } from '../../audit/command-runner.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import type { DbOrTx, Tx } from '../../db/database.ts';
import { Refusal } from '../../http/messages.ts';
import {
  countReauthenticationFailure,
  findReauthenticationPausedUntil,
  updatePerson,
} from '../persons/persons.repository.ts';

/**
 * The per-account re-authentication budget (spec §Authentication 11, §Limits): checks of a
 * password or code made under a bearer token (own email change, 2fa/enable, 2fa/confirm,
 * 2fa/disable, recovery-codes/regenerate, erasure-request). Five failures within 15 minutes
 * pause these checks for the account for 15 minutes. A stolen token alone must not become an
 * unlimited password-guessing oracle, which is why the budget exists at all. It never touches
 * sign-in's lock-out or the second-factor lock.
 *
 * Use it in two steps, like a command:
 * - in `prepare` (outside the transaction, where slow hashing belongs): `checkCurrentPassword`;
 * - in `execute`: `settleReauthentication`, and return the Refusal it gives, so the charged
 *   failure commits while the request is refused.
 * Modules that check codes instead of (or besides) a password call `isReauthenticationPaused`
 * first and pass their own verdict to `settleReauthentication`.
 */

export const REAUTHENTICATION_FAILURE_LIMIT = 5;
export const REAUTHENTICATION_WINDOW_SECONDS = 15 * 60;
export const REAUTHENTICATION_PAUSE_SECONDS = 15 * 60;

/** Every failure, and a paused budget, answer the same: the caller learns nothing more. */
export const REAUTHENTICATION_FAILED = 'The password or code is incorrect.' as const;

/** The outcome of a credential check: passed, failed (to be charged), or refused unchecked. */
export type ReauthenticationVerdict = 'passed' | 'failed' | 'paused';

const secondsAfter = (iso: string, seconds: number): string =>
  new Date(Date.parse(iso) + seconds * 1000).toISOString();

export async function isReauthenticationPaused(db: DbOrTx, personId: string, now: string): Promise<boolean> {
  const pausedUntil = await findReauthenticationPausedUntil(db, personId);
  return pausedUntil !== null && pausedUntil > now;
}

/**
 * Checks the presented current password (prepare step). A missing password is a failure like a
 * wrong one (DECISIONS §10). While paused, the password is not compared at all, so even the
 * right one is refused; a decoy verification keeps the answer's timing the same. A check still
 * queued for the bound when its caller has gone is dropped (`CALLER_GONE`), as at sign-in.
 */
export async function checkCurrentPassword(
  passwords: PasswordHasher,
  context: Pick<StepContext, 'db' | 'now' | 'callerConnected'>,
  person: { readonly id: string; readonly password_hash: string | null },
  presented: string | null | undefined,
): Promise<ReauthenticationVerdict> {
  const paused = await isReauthenticationPaused(context.db, person.id, context.now);
  if (
    paused ||
    presented === undefined ||
    presented === null ||
    presented === '' ||
    person.password_hash === null
  ) {
    await passwords.verifyDecoy(presented ?? '', context.callerConnected);
    return paused ? 'paused' : 'failed';
  }
  const verdict = await passwords.verify(person.password_hash, presented, context.callerConnected);
  return verdict.valid ? 'passed' : 'failed';
}

/**
 * Settles a verdict inside the command's transaction: null when the check passed and the
 * budget is not paused (the failure count starts over), otherwise the 401 Refusal to return.
 * The pause is read again here, so a check that raced a fifth failure cannot slip through.
 */
export async function settleReauthentication(
  context: Pick<ExecuteContext, 'tx' | 'now'>,
  personId: string,
  verdict: ReauthenticationVerdict,
): Promise<Refusal | null> {
  const { tx, now } = context;
  if (verdict === 'paused' || (await isReauthenticationPaused(tx, personId, now))) {
    return new Refusal(REAUTHENTICATION_FAILED);
  }
  if (verdict === 'failed') {
    await chargeReauthenticationFailure(tx, personId, now);
    return new Refusal(REAUTHENTICATION_FAILED);
  }
  await updatePerson(tx, personId, {
    reauthentication_failures: 0,
    reauthentication_window_started_at: null,
  });
  return null;
}

/**
 * Counts one failure in one conditional write, so parallel wrong guesses cannot slip past the
 * limit: a window older than 15 minutes starts over at this failure. The fifth failure of a
 * window pauses checks for 15 minutes and starts the count afresh.
 */
export async function chargeReauthenticationFailure(tx: Tx, personId: string, now: string): Promise<void> {
  const windowExpiredAt = secondsAfter(now, -REAUTHENTICATION_WINDOW_SECONDS);
  const failures = await countReauthenticationFailure(tx, personId, now, windowExpiredAt);
  if (failures === undefined || failures < REAUTHENTICATION_FAILURE_LIMIT) return;
  await updatePerson(tx, personId, {
    reauthentication_failures: 0,
    reauthentication_window_started_at: null,
    reauthentication_paused_until: secondsAfter(now, REAUTHENTICATION_PAUSE_SECONDS),
  });
}
