import type { Config } from '../../config/config.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import { constantTimeEquals, SecretBox } from '../../crypto/secrets.ts';
import type { TokenService } from '../../crypto/tokens.ts';
import { matchingTotpStep } from '../../crypto/totp.ts';
import type { IsoTime, TwoFactorConfigRow, Tx } from '../../db/database.ts';
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

export interface LiveEmailCode {
  readonly challengeId: string;
  readonly hash: string | null;
  readonly expiresAt: IsoTime | null;
}

/**
 * Checks one presented second factor of an active configuration, inside the transaction that
 * acts on it, and spends what proved it: the TOTP step (never accepted twice), the email code,
 * or the recovery code. `emailCode` is the email code the check may accept, if any.
 */
export async function checkSecondFactor(
  tx: Tx,
  secrets: SecretBox,
  config: TwoFactorConfigRow,
  presented: PresentedSecondFactor,
  emailCode: LiveEmailCode | undefined,
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
      emailCode?.hash != null &&
      emailCode.expiresAt !== null &&
      emailCode.expiresAt > now.toISOString()
    ) {
      const presentedHash = emailCodeHash(challengeCodePurpose(emailCode.challengeId), digits);
      // Constant-time: the comparison must not tell how much of a guess was right.
      if (
        constantTimeEquals(presentedHash, emailCode.hash) &&
        (await spendChallengeEmailCode(tx, emailCode.challengeId, emailCode.hash))
      ) {
        return { proven: true, presented: 'email' };
      }
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

/**
 * The second factor of a re-authentication under a bearer token (own email change, 2fa/disable,
 * recovery-codes/regenerate), settled after the password: a failed or paused password check
 * spends nothing; without active two-factor there is nothing more to prove. An email code is
 * accepted when it is the person's latest one mailed for a challenge and still unspent and
 * unexpired; nothing else mails a code to a signed-in person.
 */
export async function reauthenticateSecondFactor(
  tx: Tx,
  secrets: SecretBox,
  personId: string,
  passwordVerdict: ReauthenticationVerdict,
  presented: PresentedSecondFactor,
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
      : { challengeId: live.id, hash: live.email_code_hash, expiresAt: live.email_code_expires_at };
  const check = await checkSecondFactor(tx, secrets, config, presented, emailCode, now);
  return check.proven ? 'passed' : 'failed';
}

/** One field that may hold an app or email code, or a recovery code (own email change). */
export function splitTwoFactorCode(value: string | null | undefined): PresentedSecondFactor {
  const trimmed = value?.trim() ?? '';
  return sixDigitCode(trimmed) !== null ? { code: trimmed } : { recoveryCode: trimmed };
}
