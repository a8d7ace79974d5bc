import type { ExecuteContext } from '../../audit/command-runner.ts';
import { newId } from '../../crypto/secrets.ts';
import type { PersonRow } from '../../db/database.ts';
import { twoFactorCodeMail } from '../../email/templates.ts';
import type { SignInResult } from '../auth/auth.schemas.ts';
import { challengeCodePurpose, type TwoFactorDependencies } from './second-factor.ts';
import { EMAIL_CODE_LIFETIME_SECONDS, emailCodeHash, newEmailCode } from './two-factor.codes.ts';
import { findTwoFactorConfig, startChallenge } from './two-factor.repository.ts';

/** Spec §Limits: a challenge is valid ten minutes. */
export const CHALLENGE_LIFETIME_SECONDS = 10 * 60;

const secondsAfter = (iso: string, seconds: number): string =>
  new Date(Date.parse(iso) + seconds * 1000).toISOString();

/**
 * The login step of a person whose two-factor authentication is active: instead of a token, a
 * challenge (spec §States). A newer login replaces an outstanding challenge. With the email
 * method the code is mailed now, also to a restricted person (spec §Endpoints login). Returns
 * null when two-factor is not active, so the caller issues the token.
 */
export async function challengeInsteadOfToken(
  context: ExecuteContext,
  dependencies: Pick<TwoFactorDependencies, 'tokens' | 'mailer'>,
  person: PersonRow,
): Promise<SignInResult | null> {
  const config = await findTwoFactorConfig(context.tx, person.id);
  if (config?.status !== 'active') return null;
  const id = newId();
  const expiresAt = secondsAfter(context.now, CHALLENGE_LIFETIME_SECONDS);
  const emailCode = config.email_enabled === 1 ? newEmailCode() : null;
  await startChallenge(context.tx, {
    id,
    person_id: person.id,
    created_at: context.now,
    expires_at: expiresAt,
    email_code_hash: emailCode === null ? null : emailCodeHash(challengeCodePurpose(id), emailCode),
    email_code_expires_at: emailCode === null ? null : secondsAfter(context.now, EMAIL_CODE_LIFETIME_SECONDS),
  });
  if (emailCode !== null) {
    context.afterCommit(() =>
      dependencies.mailer.send(twoFactorCodeMail(person, emailCode, EMAIL_CODE_LIFETIME_SECONDS / 60)),
    );
  }
  // The token's lifetime is the challenge's; the row is what makes it single use and replaceable.
  const challenge = dependencies.tokens.issueChallengeToken(
    { sub: person.id, cid: id, sst: person.security_stamp },
    CHALLENGE_LIFETIME_SECONDS,
  );
  return {
    token: null,
    expiresAt: null,
    emailVerified: null,
    requiresTwoFactor: true,
    challengeToken: challenge.token,
    challengeExpiresAt: challenge.expiresAt.toISOString(),
    availableMethods: [
      ...(config.app_enabled === 1 ? (['App'] as const) : []),
      ...(config.email_enabled === 1 ? (['Email'] as const) : []),
    ],
    processingRestricted: person.restricted_at !== null,
  };
}
