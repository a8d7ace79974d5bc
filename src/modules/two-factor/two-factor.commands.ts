import { defineCommand, type ExecuteContext, type StepContext } from '../../audit/command-runner.ts';
import { newSecurityStamp } from '../../crypto/secrets.ts';
import { matchingTotpStep, newTotpSecret, totpUri } from '../../crypto/totp.ts';
import type { DbOrTx, PersonRow, TwoFactorConfigRow, Tx } from '../../db/database.ts';
import { twoFactorCodeMail } from '../../email/templates.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { accountEmailBudgetRefusal, chargeAccountEmail } from '../account-email/account-email.budget.ts';
import type { SignInResult } from '../auth/auth.schemas.ts';
import { completeSignIn, signInAllowed } from '../auth/login.command.ts';
import {
  checkCurrentPassword,
  isReauthenticationPaused,
  type ReauthenticationVerdict,
  settleReauthentication,
} from '../auth/reauthentication.ts';
import { findPerson, updatePerson } from '../persons/persons.repository.ts';
import {
  challengeCodePurpose,
  checkSecondFactor,
  type LiveEmailCodeMatch,
  matchEmailCode,
  matchReauthenticationEmailCode,
  reauthenticateSecondFactor,
  storedChallengeEmailCode,
  type TwoFactorDependencies,
} from './second-factor.ts';
import {
  EMAIL_CODE_LIFETIME_SECONDS,
  emailCodeHash,
  newEmailCode,
  newRecoveryCode,
  RECOVERY_CODE_COUNT,
  sixDigitCode,
} from './two-factor.codes.ts';
import {
  activateConfig,
  acceptTotpStep,
  countSecondFactorFailure,
  countWrongGuess,
  findOutstandingChallenge,
  findSecondFactorLock,
  findTwoFactorConfig,
  lockSecondFactor,
  redeemChallenge,
  reissueChallengeEmailCode,
  removeTwoFactorConfiguration,
  replaceRecoveryCodes,
  replaceWithPendingConfig,
  resetSecondFactorLock,
} from './two-factor.repository.ts';
import type {
  ConfirmTwoFactorBody,
  EnableTwoFactorBody,
  ReauthenticateBody,
  ResendChallengeBody,
  VerifyTwoFactorBody,
} from './two-factor.schemas.ts';

const NOT_FOR_EXTIDP_USERS =
  'Two-factor authentication is not available to external-provider users.' as const;
const NO_SETUP = 'No two-factor setup was found.' as const;
const ALREADY_ACTIVE = 'Two-factor authentication is already active. Turn it off first.' as const;
const INVALID_CHALLENGE = 'The two-factor challenge is invalid or has expired. Log in again.' as const;
const CODE_INCORRECT = 'The code or recovery code is missing, incorrect, or already used.' as const;

/** Spec §Authentication 12: a challenge allows five wrong app or recovery codes, then retires. */
export const CHALLENGE_GUESS_LIMIT = 5;
/** Spec §States: the 10th failed second factor locks verification, 15 minutes doubling to 24 hours. */
export const SECOND_FACTOR_LOCK_THRESHOLD = 10;
export const SECOND_FACTOR_LOCK_SECONDS = 15 * 60;
export const SECOND_FACTOR_LOCK_MAX_SECONDS = 24 * 60 * 60;
/** DECISIONS §7: at most three email-code reissues per challenge. */
export const MAX_EMAIL_CODE_REISSUES = 3;

const secondsAfter = (iso: string, seconds: number): string =>
  new Date(Date.parse(iso) + seconds * 1000).toISOString();

const setupCodePurpose = (personId: string): string => `setup:${personId}`;

/** The issuer an authenticator app shows beside the account: the host of the token issuer. */
function authenticatorIssuer(issuer: string): string {
  try {
    return new URL(issuer).host || issuer;
  } catch {
    return issuer;
  }
}

interface CallerInput<Body> {
  readonly caller: Caller;
  readonly body: Body;
}

/**
 * The person behind a bearer token that may use two-factor. External-provider users may not;
 * they are refused with the message the operation names for them (403 or 404).
 */
async function requireTwoFactorPerson(db: DbOrTx, caller: Caller, refusalForOthers: Refusal) {
  if (caller.kind !== 'person') throw refusalForOthers;
  const person = await findPerson(db, caller.id);
  if (person === undefined) throw new Refusal('Person not found.');
  return person;
}

/** Every write that changes what proves the account replaces the stamp: all tokens revoked. */
async function replaceSecurityStamp(tx: Tx, personId: string, now: string): Promise<void> {
  await updatePerson(tx, personId, { security_stamp: newSecurityStamp(), updated_at: now });
}

async function issueRecoveryCodes(tx: Tx, personId: string, now: string): Promise<string[]> {
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await replaceRecoveryCodes(
    tx,
    personId,
    codes.map((code) => code.hash),
    now,
  );
  return codes.map((code) => code.display);
}

export function twoFactorCommands(dependencies: TwoFactorDependencies) {
  const { passwords, tokens, secrets, mailer, config } = dependencies;

  type PreparedEnable = CallerInput<EnableTwoFactorBody> & {
    readonly person: PersonRow;
    readonly verdict: ReauthenticationVerdict;
  };

  /**
   * POST /api/auth/2fa/enable: begins a pending setup (spec §States). With Email, the spent
   * account-email budget answers 429 before the password is looked at, and the mail is charged
   * only after the password passed.
   */
  const enable = defineCommand({
    name: 'EnableTwoFactorCommand',
    async prepare(context: StepContext, input: CallerInput<EnableTwoFactorBody>): Promise<PreparedEnable> {
      context.setTarget(input.caller.id);
      const person = await requireTwoFactorPerson(
        context.db,
        input.caller,
        new Refusal(NOT_FOR_EXTIDP_USERS),
      );
      if (input.body.appEnabled !== true && input.body.emailEnabled !== true) {
        throw new Refusal('Choose at least one two-factor method.');
      }
      if ((await findTwoFactorConfig(context.db, person.id))?.status === 'active')
        throw new Refusal(ALREADY_ACTIVE);
      if (input.body.emailEnabled === true) {
        const spent = await accountEmailBudgetRefusal(context, person.id, config.accountEmailCooldownSeconds);
        if (spent !== null) throw spent;
      }
      const verdict = await checkCurrentPassword(passwords, context, person, input.body.currentPassword);
      return { ...input, person, verdict };
    },
    async execute(context: ExecuteContext, input: PreparedEnable) {
      const { tx, now } = context;
      const { person } = input;
      const refusal = await settleReauthentication(context, person.id, input.verdict);
      if (refusal !== null) return refusal;
      if ((await findTwoFactorConfig(tx, person.id))?.status === 'active') throw new Refusal(ALREADY_ACTIVE);
      const app = input.body.appEnabled === true;
      const email = input.body.emailEnabled === true;
      // A refused charge throws 429 and rolls the whole setup back.
      if (email) await chargeAccountEmail(context, person.id, config.accountEmailCooldownSeconds);
      const sharedKey = app ? newTotpSecret() : null;
      const emailCode = email ? newEmailCode() : null;
      await replaceWithPendingConfig(tx, {
        person_id: person.id,
        app_enabled: app ? 1 : 0,
        email_enabled: email ? 1 : 0,
        totp_secret_sealed: sharedKey === null ? null : secrets.seal(sharedKey),
        setup_email_code_hash:
          emailCode === null ? null : emailCodeHash(setupCodePurpose(person.id), emailCode),
        setup_email_code_expires_at:
          emailCode === null ? null : secondsAfter(now, EMAIL_CODE_LIFETIME_SECONDS),
        created_at: now,
      });
      if (emailCode !== null) {
        context.afterCommit(() =>
          mailer.send(twoFactorCodeMail(person, emailCode, EMAIL_CODE_LIFETIME_SECONDS / 60)),
        );
      }
      return {
        otpAuthUri:
          sharedKey === null
            ? null
            : totpUri(sharedKey, person.email, authenticatorIssuer(config.auth.issuer)),
        sharedKey,
        emailCodeSent: email,
      };
    },
  });

  type PreparedConfirm = CallerInput<ConfirmTwoFactorBody> & { readonly emailCodeMatch: string | null };

  /**
   * Whether every method chosen at enable is proven by the presented codes (nothing spent). The
   * email code was matched in `prepare` (`emailCodeMatch`), under the bound on credential checks;
   * it counts only if the setup read here still holds that code.
   */
  function setupProof(
    setup: TwoFactorConfigRow,
    body: ConfirmTwoFactorBody,
    emailCodeMatch: string | null,
    now: Date,
  ): { readonly proven: boolean; readonly step: number | null } {
    let step: number | null = null;
    if (setup.app_enabled === 1) {
      step =
        setup.totp_secret_sealed === null
          ? null
          : matchingTotpStep(secrets.open(setup.totp_secret_sealed), body.appCode ?? '', now);
      if (step === null) return { proven: false, step };
    }
    if (setup.email_enabled === 1) {
      const valid =
        emailCodeMatch !== null &&
        setup.setup_email_code_hash === emailCodeMatch &&
        setup.setup_email_code_expires_at !== null &&
        setup.setup_email_code_expires_at > now.toISOString();
      if (!valid) return { proven: false, step };
    }
    return { proven: true, step };
  }

  /**
   * POST /api/auth/2fa/confirm: pending → active once every chosen method is proven; ten
   * recovery codes are returned once, and a new stamp signs the person out everywhere.
   */
  const confirm = defineCommand({
    name: 'ConfirmTwoFactorCommand',
    async prepare(context: StepContext, input: CallerInput<ConfirmTwoFactorBody>): Promise<PreparedConfirm> {
      // No six digits, nothing to match: no reads, no slot.
      if (input.caller.kind !== 'person' || sixDigitCode(input.body.emailCode) === null)
        return { ...input, emailCodeMatch: null };
      const setup = await findTwoFactorConfig(context.db, input.caller.id);
      if (setup?.status !== 'pending' || setup.email_enabled !== 1) return { ...input, emailCodeMatch: null };
      const stored = {
        purpose: setupCodePurpose(setup.person_id),
        hash: setup.setup_email_code_hash,
        expiresAt: setup.setup_email_code_expires_at,
      };
      return {
        ...input,
        emailCodeMatch: await matchEmailCode(passwords, context, stored, input.body.emailCode),
      };
    },
    async execute(context: ExecuteContext, input: PreparedConfirm) {
      const { tx, now } = context;
      context.setTarget(input.caller.id);
      if (input.caller.kind !== 'person') throw new Refusal(NO_SETUP);
      const setup = await findTwoFactorConfig(tx, input.caller.id);
      if (setup?.status !== 'pending') throw new Refusal(NO_SETUP);
      const paused = await isReauthenticationPaused(tx, setup.person_id, now);
      const proof = paused
        ? { proven: false, step: null }
        : setupProof(setup, input.body, input.emailCodeMatch, context.clock.now());
      const refusal = await settleReauthentication(
        context,
        setup.person_id,
        paused ? 'paused' : proof.proven ? 'passed' : 'failed',
      );
      if (refusal !== null) return refusal;
      // The confirming code's step is recorded, so it cannot sign in a second time.
      if (proof.step !== null) await acceptTotpStep(tx, setup.person_id, proof.step);
      if (!(await activateConfig(tx, setup.person_id, now))) throw new Refusal(NO_SETUP);
      const recoveryCodes = await issueRecoveryCodes(tx, setup.person_id, now);
      await replaceSecurityStamp(tx, setup.person_id, now);
      return { recoveryCodes };
    },
  });

  type PreparedReauthentication = CallerInput<ReauthenticateBody> & {
    readonly person: PersonRow;
    readonly passwordVerdict: ReauthenticationVerdict;
    readonly emailCodeMatch: LiveEmailCodeMatch | null;
  };

  /**
   * The credential of disable and regenerate: the password (checked outside the transaction,
   * where slow hashing belongs) and, while two-factor is active, a second factor (an email code
   * is matched here too, under the same bound; the rest is checked in the transaction).
   */
  async function preparePasswordCheck(
    context: StepContext,
    input: CallerInput<ReauthenticateBody>,
    accepts: (setup: TwoFactorConfigRow | undefined) => boolean,
  ): Promise<PreparedReauthentication> {
    context.setTarget(input.caller.id);
    const person = await requireTwoFactorPerson(context.db, input.caller, new Refusal(NO_SETUP));
    if (!accepts(await findTwoFactorConfig(context.db, person.id))) throw new Refusal(NO_SETUP);
    const passwordVerdict = await checkCurrentPassword(
      passwords,
      context,
      person,
      input.body.currentPassword,
    );
    const emailCodeMatch = await matchReauthenticationEmailCode(
      passwords,
      context,
      person.id,
      passwordVerdict,
      input.body,
    );
    return { ...input, person, passwordVerdict, emailCodeMatch };
  }

  async function settleCredential(
    context: ExecuteContext,
    input: PreparedReauthentication,
  ): Promise<Refusal | null> {
    const verdict = await reauthenticateSecondFactor(
      context.tx,
      secrets,
      input.person.id,
      input.passwordVerdict,
      input.body,
      input.emailCodeMatch,
      context.clock.now(),
    );
    return settleReauthentication(context, input.person.id, verdict);
  }

  const hasSetup = (setup: TwoFactorConfigRow | undefined): boolean => setup !== undefined;
  const isActive = (setup: TwoFactorConfigRow | undefined): boolean => setup?.status === 'active';

  /**
   * POST /api/auth/2fa/disable: off. Also cancels a pending setup (then only the password is
   * asked, since no second factor is proven yet). A new stamp signs the person out everywhere.
   */
  const disable = defineCommand({
    name: 'DisableTwoFactorCommand',
    prepare: (context: StepContext, input: CallerInput<ReauthenticateBody>) =>
      preparePasswordCheck(context, input, hasSetup),
    async execute(context: ExecuteContext, input: PreparedReauthentication) {
      const { tx, now } = context;
      if (!hasSetup(await findTwoFactorConfig(tx, input.person.id))) throw new Refusal(NO_SETUP);
      const refusal = await settleCredential(context, input);
      if (refusal !== null) return refusal;
      await removeTwoFactorConfiguration(tx, input.person.id);
      await replaceSecurityStamp(tx, input.person.id, now);
      return null;
    },
  });

  /** POST /api/auth/2fa/recovery-codes/regenerate: a fresh ten; the old set stops working. */
  const regenerate = defineCommand({
    name: 'RegenerateRecoveryCodesCommand',
    prepare: (context: StepContext, input: CallerInput<ReauthenticateBody>) =>
      preparePasswordCheck(context, input, isActive),
    async execute(context: ExecuteContext, input: PreparedReauthentication) {
      const { tx, now } = context;
      if (!isActive(await findTwoFactorConfig(tx, input.person.id))) throw new Refusal(NO_SETUP);
      const refusal = await settleCredential(context, input);
      if (refusal !== null) return refusal;
      const recoveryCodes = await issueRecoveryCodes(tx, input.person.id, now);
      await replaceSecurityStamp(tx, input.person.id, now);
      return { recoveryCodes };
    },
  });

  /** The challenge a token names, if the token is one and the challenge still outstanding. */
  async function outstandingChallengeOf(db: DbOrTx, challengeToken: string, now: string) {
    const bearer = challengeToken === '' ? null : tokens.readBearer(challengeToken);
    if (bearer === null || bearer.kind !== 'challenge') return null;
    const { sub, cid, sst } = bearer.claims;
    const person = await findPerson(db, sub);
    // A stamp replaced since the login (password reset, email change, two-factor change)
    // invalidates the challenge (spec §States).
    if (person === undefined || person.security_stamp !== sst || !(await signInAllowed(db, person)))
      return null;
    const challenge = await findOutstandingChallenge(db, cid, sub, now);
    const setup = await findTwoFactorConfig(db, sub);
    if (challenge === undefined || setup?.status !== 'active') return null;
    return { person, challenge, setup };
  }

  interface PreparedVerify {
    readonly body: VerifyTwoFactorBody;
    /** The challenge's stored email-code digest the presented code matched, or null. */
    readonly emailCodeMatch: string | null;
  }

  /**
   * POST /api/auth/2fa/verify: redeems the challenge with an app code, email code or recovery
   * code. Failures are returned (not thrown) so the guess and lock counters commit.
   */
  const verify = defineCommand({
    name: 'VerifyTwoFactorCommand',
    /** An email code is matched here, under the bound on credential checks; the rest in execute. */
    async prepare(context: StepContext, body: VerifyTwoFactorBody): Promise<PreparedVerify> {
      // No six digits (a recovery code, or no code): nothing to match, so none of these reads.
      if (sixDigitCode(body.code) === null) return { body, emailCodeMatch: null };
      const outstanding = await outstandingChallengeOf(context.db, body.challengeToken, context.now);
      if (outstanding === null || outstanding.setup.email_enabled !== 1)
        return { body, emailCodeMatch: null };
      const { person, challenge } = outstanding;
      // While locked every code is refused unchecked (execute refuses it).
      if (await isSecondFactorLocked(context.db, person.id, context.now))
        return { body, emailCodeMatch: null };
      const stored = storedChallengeEmailCode(challenge);
      return { body, emailCodeMatch: await matchEmailCode(passwords, context, stored, body.code) };
    },
    async execute(context: ExecuteContext, prepared: PreparedVerify): Promise<SignInResult | Refusal> {
      const { tx, now } = context;
      const { body } = prepared;
      const outstanding = await outstandingChallengeOf(tx, body.challengeToken, now);
      if (outstanding === null) throw new Refusal(INVALID_CHALLENGE);
      const { person, challenge, setup } = outstanding;
      context.setTarget(person.id);
      // While locked every code is refused unchecked, the right one included (spec §States).
      if (await isSecondFactorLocked(tx, person.id, now)) throw new Refusal(INVALID_CHALLENGE);

      const check = await checkSecondFactor(
        tx,
        secrets,
        setup,
        body,
        {
          challengeId: challenge.id,
          expiresAt: challenge.email_code_expires_at,
          // The same challenge as in prepare: both read the one the token names.
          matchedHash: prepared.emailCodeMatch,
        },
        context.clock.now(),
      );
      if (check.presented === 'none') throw new Refusal(CODE_INCORRECT);
      if (!check.proven) {
        if (check.presented === 'app' || check.presented === 'recovery') {
          await countWrongGuess(tx, challenge.id, CHALLENGE_GUESS_LIMIT, now);
        }
        await countFailedSecondFactor(tx, person.id, now);
        return new Refusal(CODE_INCORRECT);
      }
      // Single use: of two redemptions racing, the second finds it redeemed and rolls back.
      if (!(await redeemChallenge(tx, challenge.id, now))) throw new Refusal(INVALID_CHALLENGE);
      // A success resets the count and the repeat count of the lock (spec §States).
      await resetSecondFactorLock(tx, person.id);
      return completeSignIn(tx, tokens, person);
    },
  });

  /**
   * POST /api/auth/2fa/challenge/resend: a new email code for an outstanding challenge with the
   * email method, at most three times, charged to the account-email budget. Every path answers
   * the same, so the caller learns nothing; what happened is in the audit entry's target only.
   */
  const resend = defineCommand({
    name: 'ResendChallengeCodeCommand',
    async execute(context, body: ResendChallengeBody): Promise<null> {
      const { tx, now } = context;
      const outstanding = await outstandingChallengeOf(tx, body.challengeToken ?? '', now);
      if (outstanding === null) return null;
      const { person, challenge, setup } = outstanding;
      context.setTarget(person.id);
      if (setup.email_enabled !== 1 || challenge.email_code_reissues >= MAX_EMAIL_CODE_REISSUES) return null;
      try {
        await chargeAccountEmail(context, person.id, config.accountEmailCooldownSeconds);
      } catch (error) {
        // A spent budget sends nothing, and still answers the same 200.
        if (error instanceof Refusal) return null;
        throw error;
      }
      const code = newEmailCode();
      // The new code never outlives the challenge it belongs to.
      const expiresAt = [secondsAfter(now, EMAIL_CODE_LIFETIME_SECONDS), challenge.expires_at].sort()[0]!;
      const hash = emailCodeHash(challengeCodePurpose(challenge.id), code);
      if (!(await reissueChallengeEmailCode(tx, challenge.id, hash, expiresAt, MAX_EMAIL_CODE_REISSUES)))
        return null;
      const minutes = Math.max(1, Math.round((Date.parse(expiresAt) - Date.parse(now)) / 60_000));
      context.afterCommit(() => mailer.send(twoFactorCodeMail(person, code, minutes)));
      return null;
    },
  });

  return { enable, confirm, disable, regenerate, verify, resend };
}

/** Whether verification is locked for the person now (spec §States: the second-factor lock). */
async function isSecondFactorLocked(db: DbOrTx, personId: string, now: string): Promise<boolean> {
  const lock = await findSecondFactorLock(db, personId);
  return lock?.locked_until != null && lock.locked_until > now;
}

/**
 * One failed second factor at verify; the 10th since the last success or lock locks
 * verification for 15 minutes, doubling with each lock since the last success, up to 24 hours.
 */
async function countFailedSecondFactor(tx: Tx, personId: string, now: string): Promise<void> {
  const counted = await countSecondFactorFailure(tx, personId, now);
  if (counted.failures < SECOND_FACTOR_LOCK_THRESHOLD) return;
  const seconds = Math.min(
    SECOND_FACTOR_LOCK_SECONDS * 2 ** counted.lock_count,
    SECOND_FACTOR_LOCK_MAX_SECONDS,
  );
  await lockSecondFactor(tx, personId, secondsAfter(now, seconds), now);
}

export type TwoFactorCommands = ReturnType<typeof twoFactorCommands>;
