import type { StepContext } from '../../audit/command-runner.ts';
import type { Config } from '../../config/config.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import { constantTimeEquals, SecretBox } from '../../crypto/secrets.ts';
import type { TokenService } from '../../crypto/tokens.ts';
import { matchingTotpStep } from '../../crypto/totp.ts';
import type { IsoTime, TwoFactorChallengeRow, TwoFactorConfigRow, Tx } from '../../db/database.ts';
import type { Mailer } from '../../email/mailer.ts';
import type { Services } from '../../services.ts';
import { isReauthenticationPaused, type ReauthenticationVerdict } from '../auth/reauthentication.ts';
import { emailCodeHash, recoveryCodeHash, sixDigitCode } from './two-factor.codes.ts';
import {
  acceptTotpStep,
  findLiveChallengeEmailCode,
  findTwoFactorConfig,
  spendChallengeEmailCode,
  spendRecoveryCode,
} from './two-factor.repository.ts';

/** What the two-factor module needs from the service. */
export interface TwoFactorDependencies {
  readonly config: Pick<Config, 'auth' | 'email' | 'accountEmailCooldownSeconds'>;
  readonly passwords: PasswordHasher;
  readonly tokens: TokenService;
  readonly mailer: Mailer;
  /** Seals TOTP shared keys at rest. */
  readonly secrets: SecretBox;
}

/** The key that seals TOTP shared keys (DECISIONS §7). */
export const twoFactorSecrets = (config: Pick<Config, 'dataEncryptionKey' | 'auth'>): SecretBox =>
  new SecretBox(config.dataEncryptionKey, config.auth.tokenSecret);

export const twoFactorDependencies = (services: Services): TwoFactorDependencies => ({
  config: services.config,
  passwords: services.passwords,
  tokens: services.tokens,
  mailer: services.mailer,
  secrets: twoFactorSecrets(services.config),
});

/** The purpose an email code mailed for a challenge is bound to (two-factor.codes.ts). */
export const challengeCodePurpose = (challengeId: string): string => `challenge:${challengeId}`;

export interface PresentedSecondFactor {
  /** An authenticator-app code or an email code (six digits). */
  readonly code?: string | null | undefined;
  readonly recoveryCode?: string | null | undefined;
}

/** Which kind of factor was presented (for the challenge's guess count), and whether it proved. */
export interface SecondFactorCheck {
  readonly proven: boolean;
  readonly presented: 'app' | 'email' | 'recovery' | 'none';
}

/**
 * An email code as stored: what it was issued for (`emailCodeHash`), its digest, and its expiry
 * (the digest and expiry are null once it is spent).
 */
export interface StoredEmailCode {
  readonly purpose: string;
  readonly hash: string | null;
  readonly expiresAt: IsoTime | null;
}

/** A challenge's email code as stored, with the purpose it was issued for. */
export function storedChallengeEmailCode(
  challenge: Pick<TwoFactorChallengeRow, 'id' | 'email_code_hash' | 'email_code_expires_at'>,
): StoredEmailCode {
  return {
    purpose: challengeCodePurpose(challenge.id),
    hash: challenge.email_code_hash,
    expiresAt: challenge.email_code_expires_at,
  };
}

/**
 * Checks a presented email code against a stored one, in a slot of the process-wide bound on
 * credential checks, as a password is checked (spec §Authentication 10, DECISIONS §7), and so in
 * a command's `prepare`: a check waiting for a slot must not hold the write transaction, which
 * on SQLite would stop every other write meanwhile. Gives the stored digest the code matched, or
 * null (not six digits, nothing stored, expired, or wrong); nothing is compared, and no slot is
 * taken, when there is nothing to compare. The transaction spends the code only if its stored
 * digest is still the one matched: a code spent or reissued in between proves nothing.
 */
export async function matchEmailCode(
  passwords: PasswordHasher,
  context: Pick<StepContext, 'now' | 'callerConnected'>,
  stored: StoredEmailCode,
  presented: string | null | undefined,
): Promise<string | null> {
  const digits = sixDigitCode(presented);
  const { purpose, hash: storedHash, expiresAt } = stored;
  if (digits === null || storedHash === null || expiresAt === null || expiresAt <= context.now) return null;
  const matches = await passwords.runBounded(
    // Constant-time: the comparison must not tell how much of a guess was right.
    async () => constantTimeEquals(emailCodeHash(purpose, digits), storedHash),
    context.callerConnected,
  );
  return matches ? storedHash : null;
}

/** A challenge's email code as read in the transaction, with what `prepare` matched against it. */
export interface ChallengeEmailCode {
  readonly challengeId: string;
  readonly expiresAt: IsoTime | null;
  /** The stored digest the presented code matched in `prepare` (`matchEmailCode`), or null. */
  readonly matchedHash: string | null;
}

/**
 * Checks one presented second factor of an active configuration, inside the transaction that
 * acts on it, and spends what proved it: the TOTP step (never accepted twice), the email code
 * (matched in `prepare`, under the bound on credential checks), or the recovery code.
 * `emailCode` is the email code the check may accept, if any.
 */
export async function checkSecondFactor(
  tx: Tx,
  secrets: SecretBox,
  config: TwoFactorConfigRow,
  presented: PresentedSecondFactor,
  emailCode: ChallengeEmailCode | undefined,
  now: Date,
): Promise<SecondFactorCheck> {
  const code = presented.code?.trim() ?? '';
  if (code !== '') {
    const digits = sixDigitCode(code);
    if (digits !== null && config.app_enabled === 1 && config.totp_secret_sealed !== null) {
      const step = matchingTotpStep(secrets.open(config.totp_secret_sealed), digits, now);
      if (step !== null && (await acceptTotpStep(tx, config.person_id, step))) {
        return { proven: true, presented: 'app' };
      }
    }
    if (
      digits !== null &&
      config.email_enabled === 1 &&
      emailCode?.matchedHash != null &&
      emailCode.expiresAt !== null &&
      emailCode.expiresAt > now.toISOString() &&
      (await spendChallengeEmailCode(tx, emailCode.challengeId, emailCode.matchedHash))
    ) {
      return { proven: true, presented: 'email' };
    }
    return { proven: false, presented: config.app_enabled === 1 ? 'app' : 'email' };
  }
  const recovery = presented.recoveryCode?.trim() ?? '';
  if (recovery !== '') {
    const hash = recoveryCodeHash(recovery);
    const spent = hash !== null && (await spendRecoveryCode(tx, config.person_id, hash, now.toISOString()));
    return { proven: spent, presented: 'recovery' };
  }
  return { proven: false, presented: 'none' };
}

/** The person's live challenge email code, and whether the presented code matched it (`prepare`). */
export interface LiveEmailCodeMatch {
  readonly challengeId: string;
  readonly matchedHash: string | null;
}

/**
 * The `prepare` half of `reauthenticateSecondFactor`: the presented code checked against the
 * person's latest unspent challenge email code, under the bound on credential checks. Null when
 * no email code can count: the password did not pass (a failed check spends nothing), two-factor
 * is not active with the email method, no code is live, or none was presented.
 */
export async function matchReauthenticationEmailCode(
  passwords: PasswordHasher,
  context: Pick<StepContext, 'db' | 'now' | 'callerConnected'>,
  personId: string,
  passwordVerdict: ReauthenticationVerdict,
  presented: PresentedSecondFactor,
): Promise<LiveEmailCodeMatch | null> {
  if (passwordVerdict !== 'passed' || sixDigitCode(presented.code) === null) return null;
  const config = await findTwoFactorConfig(context.db, personId);
  if (config?.status !== 'active' || config.email_enabled !== 1) return null;
  const live = await findLiveChallengeEmailCode(context.db, personId, context.now);
  if (live === undefined) return null;
  return {
    challengeId: live.id,
    matchedHash: await matchEmailCode(passwords, context, storedChallengeEmailCode(live), presented.code),
  };
}

/**
 * The second factor of a re-authentication under a bearer token (own email change, 2fa/disable,
 * recovery-codes/regenerate), settled after the password: a failed or paused password check
 * spends nothing; without active two-factor there is nothing more to prove. An email code is
 * accepted when it is the person's latest one mailed for a challenge and still unspent and
 * unexpired (matched in `prepare`: `emailCodeMatch`); nothing else mails a code to a signed-in
 * person.
 */
export async function reauthenticateSecondFactor(
  tx: Tx,
  secrets: SecretBox,
  personId: string,
  passwordVerdict: ReauthenticationVerdict,
  presented: PresentedSecondFactor,
  emailCodeMatch: LiveEmailCodeMatch | null,
  now: Date,
): Promise<ReauthenticationVerdict> {
  if (passwordVerdict !== 'passed') return passwordVerdict;
  if (await isReauthenticationPaused(tx, personId, now.toISOString())) return 'paused';
  const config = await findTwoFactorConfig(tx, personId);
  if (config?.status !== 'active') return 'passed';
  const live = await findLiveChallengeEmailCode(tx, personId, now.toISOString());
  const emailCode =
    live === undefined
      ? undefined
      : {
          challengeId: live.id,
          expiresAt: live.email_code_expires_at,
          // A code matched against a challenge that is no longer the latest proves nothing.
          matchedHash: emailCodeMatch?.challengeId === live.id ? emailCodeMatch.matchedHash : null,
        };
  const check = await checkSecondFactor(tx, secrets, config, presented, emailCode, now);
  return check.proven ? 'passed' : 'failed';
}

/** One field that may hold an app or email code, or a recovery code (own email change). */
export function splitTwoFactorCode(value: string | null | undefined): PresentedSecondFactor {
  const trimmed = value?.trim() ?? '';
  return sixDigitCode(trimmed) !== null ? { code: trimmed } : { recoveryCode: trimmed };
}
