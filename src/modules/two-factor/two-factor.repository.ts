import type { ExpressionBuilder } from 'kysely';
import { newId } from '../../crypto/secrets.ts';
import type {
  Database,
  DbOrTx,
  IsoTime,
  TwoFactorChallengeRow,
  TwoFactorConfigRow,
  TwoFactorLockRow,
  Tx,
} from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';

/** SQL of the two-factor module (configurations, recovery codes, challenges, the lock). */

export async function findTwoFactorConfig(
  db: DbOrTx,
  personId: string,
): Promise<TwoFactorConfigRow | undefined> {
  const [row] = await selectTwoFactorConfig(db, personId);
  return row;
}

// Every sign-in with the right password asks this inside its write transaction, whose lock
// the other commands wait for: prepared (see preparedQuery), so it runs straight on the group
// commit's connection.
const selectTwoFactorConfig = preparedQuery(1, (db, personId: string) =>
  db.selectFrom('two_factor_configs').selectAll().where('person_id', '=', personId),
);

/**
 * Whether the outer query's person has two-factor authentication active, as a column
 * (`two_factor_active`, 1 or 0 on both dialects), so that a person's answer is read in one
 * statement with it. On SQLite each statement opens and closes a read transaction on the
 * file's shared memory, whose lock the HTTP threads queue for: on two threads at once, two
 * statements back to back cost more than twice what one that reads both costs
 * (bench/sqlite-threads-probe.ts; docs/performance-history.md, eighteenth round).
 */
export const twoFactorActiveColumn = (eb: ExpressionBuilder<Database, 'persons'>) =>
  eb
    .case()
    .when(
      eb.exists(
        eb
          .selectFrom('two_factor_configs')
          .select('two_factor_configs.person_id')
          .whereRef('two_factor_configs.person_id', '=', 'persons.id')
          .where('two_factor_configs.status', '=', 'active'),
      ),
    )
    .then(eb.lit(1))
    .else(eb.lit(0))
    .end()
    .as('two_factor_active');

/** Person ids among `personIds` whose two-factor authentication is active. */
export async function personsWithActiveTwoFactor(
  db: DbOrTx,
  personIds: readonly string[],
): Promise<Set<string>> {
  if (personIds.length === 0) return new Set();
  const rows = await db
    .selectFrom('two_factor_configs')
    .select('person_id')
    .where('person_id', 'in', [...personIds])
    .where('status', '=', 'active')
    .execute();
  return new Set(rows.map((row) => row.person_id));
}

/** Begins (or restarts) a pending setup: any earlier configuration of the person is replaced. */
export async function replaceWithPendingConfig(
  tx: Tx,
  config: Omit<TwoFactorConfigRow, 'status' | 'activated_at' | 'totp_last_step' | 'updated_at'>,
): Promise<void> {
  await tx.deleteFrom('two_factor_configs').where('person_id', '=', config.person_id).execute();
  await tx
    .insertInto('two_factor_configs')
    .values({
      ...config,
      status: 'pending',
      activated_at: null,
      totp_last_step: null,
      updated_at: config.created_at,
    })
    .execute();
}

/** pending → active, only if still pending (a parallel confirm cannot activate twice). */
export async function activateConfig(tx: Tx, personId: string, now: IsoTime): Promise<boolean> {
  const result = await tx
    .updateTable('two_factor_configs')
    .set({
      status: 'active',
      activated_at: now,
      updated_at: now,
      setup_email_code_hash: null,
      setup_email_code_expires_at: null,
    })
    .where('person_id', '=', personId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Records an accepted TOTP step, only if it is later than every step accepted before: the same
 * code (or an earlier one) can never be used twice, also by two requests at once.
 */
export async function acceptTotpStep(tx: Tx, personId: string, step: number): Promise<boolean> {
  const result = await tx
    .updateTable('two_factor_configs')
    .set({ totp_last_step: step })
    .where('person_id', '=', personId)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', step)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Everything two-factor about a person, in one call (disable; erasure and anonymisation). */
export async function removeTwoFactorData(tx: Tx, personId: string): Promise<void> {
  await tx.deleteFrom('two_factor_challenges').where('person_id', '=', personId).execute();
  await tx.deleteFrom('two_factor_recovery_codes').where('person_id', '=', personId).execute();
  await tx.deleteFrom('two_factor_configs').where('person_id', '=', personId).execute();
  await tx.deleteFrom('two_factor_locks').where('person_id', '=', personId).execute();
}

/** Turning two-factor off: the configuration, codes and challenges go; the lock stays. */
export async function removeTwoFactorConfiguration(tx: Tx, personId: string): Promise<void> {
  await tx.deleteFrom('two_factor_challenges').where('person_id', '=', personId).execute();
  await tx.deleteFrom('two_factor_recovery_codes').where('person_id', '=', personId).execute();
  await tx.deleteFrom('two_factor_configs').where('person_id', '=', personId).execute();
}

// Recovery codes

export async function replaceRecoveryCodes(
  tx: Tx,
  personId: string,
  hashes: readonly string[],
  now: IsoTime,
): Promise<void> {
  await tx.deleteFrom('two_factor_recovery_codes').where('person_id', '=', personId).execute();
  await tx
    .insertInto('two_factor_recovery_codes')
    .values(
      hashes.map((hash) => ({
        id: newId(),
        person_id: personId,
        code_hash: hash,
        created_at: now,
        used_at: null,
      })),
    )
    .execute();
}

/** Spends an unused recovery code of the person; false when there is none with that hash. */
export async function spendRecoveryCode(
  tx: Tx,
  personId: string,
  hash: string,
  now: IsoTime,
): Promise<boolean> {
  const unused = await tx
    .selectFrom('two_factor_recovery_codes')
    .select('id')
    .where('person_id', '=', personId)
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  if (unused === undefined) return false;
  // Conditional on still being unused: of two requests spending one code, one wins.
  const result = await tx
    .updateTable('two_factor_recovery_codes')
    .set({ used_at: now })
    .where('id', '=', unused.id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function countRemainingRecoveryCodes(db: DbOrTx, personId: string): Promise<number> {
  const row = await db
    .selectFrom('two_factor_recovery_codes')
    .select((eb) => eb.fn.countAll().as('remaining'))
    .where('person_id', '=', personId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.remaining);
}

// Challenges

/** A new outstanding challenge; every earlier outstanding one of the person is replaced. */
export async function startChallenge(
  tx: Tx,
  challenge: Pick<
    TwoFactorChallengeRow,
    'id' | 'person_id' | 'created_at' | 'expires_at' | 'email_code_hash' | 'email_code_expires_at'
  >,
): Promise<void> {
  await tx
    .updateTable('two_factor_challenges')
    .set({ retired_at: challenge.created_at })
    .where('person_id', '=', challenge.person_id)
    .where('redeemed_at', 'is', null)
    .where('retired_at', 'is', null)
    .execute();
  await tx
    .insertInto('two_factor_challenges')
    .values({ ...challenge, redeemed_at: null, retired_at: null })
    .execute();
}

/** The challenge, if it is still outstanding at `now` (not redeemed, retired or expired). */
export async function findOutstandingChallenge(
  db: DbOrTx,
  id: string,
  personId: string,
  now: IsoTime,
): Promise<TwoFactorChallengeRow | undefined> {
  return db
    .selectFrom('two_factor_challenges')
    .selectAll()
    .where('id', '=', id)
    .where('person_id', '=', personId)
    .where('redeemed_at', 'is', null)
    .where('retired_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Redeems an outstanding challenge once: of two parallel redemptions, one wins. */
export async function redeemChallenge(tx: Tx, id: string, now: IsoTime): Promise<boolean> {
  const result = await tx
    .updateTable('two_factor_challenges')
    .set({ redeemed_at: now })
    .where('id', '=', id)
    .where('redeemed_at', 'is', null)
    .where('retired_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** One more wrong app or recovery code against a challenge; the limit-th retires it. */
export async function countWrongGuess(tx: Tx, id: string, limit: number, now: IsoTime): Promise<void> {
  const counted = await tx
    .updateTable('two_factor_challenges')
    .set((eb) => ({ wrong_guesses: eb('wrong_guesses', '+', 1) }))
    .where('id', '=', id)
    .returning('wrong_guesses')
    .executeTakeFirst();
  if (counted !== undefined && counted.wrong_guesses >= limit) {
    await tx.updateTable('two_factor_challenges').set({ retired_at: now }).where('id', '=', id).execute();
  }
}

/** Replaces the challenge's email code, only while fewer than `maxReissues` were made. */
export async function reissueChallengeEmailCode(
  tx: Tx,
  id: string,
  codeHash: string,
  expiresAt: IsoTime,
  maxReissues: number,
): Promise<boolean> {
  const result = await tx
    .updateTable('two_factor_challenges')
    .set((eb) => ({
      email_code_hash: codeHash,
      email_code_expires_at: expiresAt,
      email_code_reissues: eb('email_code_reissues', '+', 1),
    }))
    .where('id', '=', id)
    .where('email_code_reissues', '<', maxReissues)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Spends an email code mailed for a challenge, so it proves one thing once. */
export async function spendChallengeEmailCode(tx: Tx, id: string, codeHash: string): Promise<boolean> {
  const result = await tx
    .updateTable('two_factor_challenges')
    .set({ email_code_hash: null, email_code_expires_at: null })
    .where('id', '=', id)
    .where('email_code_hash', '=', codeHash)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * The person's latest challenge whose email code is unspent and unexpired at `now`: an email code
 * is also accepted as the second factor of a check under a bearer token (own email change,
 * disable, regenerate), since the email method has no other way to deliver one.
 */
export async function findLiveChallengeEmailCode(
  db: DbOrTx,
  personId: string,
  now: IsoTime,
): Promise<Pick<TwoFactorChallengeRow, 'id' | 'email_code_hash' | 'email_code_expires_at'> | undefined> {
  return db
    .selectFrom('two_factor_challenges')
    .select(['id', 'email_code_hash', 'email_code_expires_at'])
    .where('person_id', '=', personId)
    .where('email_code_hash', 'is not', null)
    .where('email_code_expires_at', '>', now)
    .orderBy('created_at', 'desc')
    .limit(1)
    .executeTakeFirst();
}

// The second-factor lock

export async function findSecondFactorLock(
  db: DbOrTx,
  personId: string,
): Promise<TwoFactorLockRow | undefined> {
  return db.selectFrom('two_factor_locks').selectAll().where('person_id', '=', personId).executeTakeFirst();
}

/** Counts one failed second factor atomically (parallel failures cannot slip past the threshold). */
export async function countSecondFactorFailure(
  tx: Tx,
  personId: string,
  now: IsoTime,
): Promise<Pick<TwoFactorLockRow, 'failures' | 'lock_count'>> {
  return tx
    .insertInto('two_factor_locks')
    .values({ person_id: personId, failures: 1, lock_count: 0, locked_until: null, updated_at: now })
    .onConflict((conflict) =>
      conflict.column('person_id').doUpdateSet((eb) => ({
        failures: eb('two_factor_locks.failures', '+', 1),
        updated_at: now,
      })),
    )
    .returning(['failures', 'lock_count'])
    .executeTakeFirstOrThrow();
}

export async function lockSecondFactor(
  tx: Tx,
  personId: string,
  lockedUntil: IsoTime,
  now: IsoTime,
): Promise<void> {
  await tx
    .updateTable('two_factor_locks')
    .set((eb) => ({
      failures: 0,
      lock_count: eb('lock_count', '+', 1),
      locked_until: lockedUntil,
      updated_at: now,
    }))
    .where('person_id', '=', personId)
    .execute();
}

export async function resetSecondFactorLock(tx: Tx, personId: string): Promise<void> {
  await tx.deleteFrom('two_factor_locks').where('person_id', '=', personId).execute();
}

// For the data export, the status endpoint and the retention pass

/** A person's two-factor state without any secret or hash (status endpoint, data export). */
export interface TwoFactorState {
  readonly status: 'off' | 'pending' | 'active';
  readonly appEnabled: boolean;
  readonly emailEnabled: boolean;
  readonly remainingRecoveryCodes: number;
  readonly setUpAt: IsoTime | null;
  readonly activatedAt: IsoTime | null;
  readonly failedSecondFactors: number;
  readonly secondFactorLocks: number;
  readonly secondFactorLockedUntil: IsoTime | null;
}

export async function readTwoFactorState(db: DbOrTx, personId: string): Promise<TwoFactorState> {
  const config = await findTwoFactorConfig(db, personId);
  const lock = await findSecondFactorLock(db, personId);
  return {
    status: config?.status ?? 'off',
    appEnabled: config?.app_enabled === 1,
    emailEnabled: config?.email_enabled === 1,
    remainingRecoveryCodes: config?.status === 'active' ? await countRemainingRecoveryCodes(db, personId) : 0,
    setUpAt: config?.created_at ?? null,
    activatedAt: config?.activated_at ?? null,
    failedSecondFactors: lock?.failures ?? 0,
    secondFactorLocks: lock?.lock_count ?? 0,
    secondFactorLockedUntil: lock?.locked_until ?? null,
  };
}

/** DECISIONS §7: expired codes and challenges are purged seven days after they expired. */
export const EXPIRED_TWO_FACTOR_RETENTION_SECONDS = 7 * 24 * 60 * 60;

/**
 * The retention pass's share: deletes up to `limit` challenges that expired more than seven
 * days ago, and clears as many setup email codes expired as long. Returns how many rows changed.
 */
export async function purgeExpiredTwoFactorArtifacts(
  db: DbOrTx,
  now: IsoTime,
  limit = 1000,
): Promise<number> {
  if (limit <= 0) return 0;
  const boundary = new Date(Date.parse(now) - EXPIRED_TWO_FACTOR_RETENTION_SECONDS * 1000).toISOString();
  const challenges = await db
    .deleteFrom('two_factor_challenges')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('two_factor_challenges')
        .select('id')
        .where('expires_at', '<', boundary)
        .orderBy('expires_at')
        .limit(limit),
    )
    .executeTakeFirst();
  const setupCodes = await db
    .updateTable('two_factor_configs')
    .set({ setup_email_code_hash: null, setup_email_code_expires_at: null })
    .where('person_id', 'in', (eb) =>
      eb
        .selectFrom('two_factor_configs')
        .select('person_id')
        .where('setup_email_code_expires_at', '<', boundary)
        .orderBy('setup_email_code_expires_at')
        .limit(limit),
    )
    .executeTakeFirst();
  return Number(challenges.numDeletedRows) + Number(setupCodes.numUpdatedRows);
}
