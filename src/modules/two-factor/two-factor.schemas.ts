import { type Static, Type } from 'typebox';
import { DataOutput, Nullable } from '../../http/envelope.ts';

/**
 * Credentials are optional in the schemas on purpose: a missing password or code answers the
 * same 401 as a wrong one and is charged to the re-authentication budget (DECISIONS §10), not
 * a validation 400.
 */
const Credential = (description: string) =>
  Type.Optional(Nullable(Type.String({ maxLength: 1024, description })));

export const EnableTwoFactorBody = Type.Object({
  currentPassword: Credential('The caller’s current password.'),
  appEnabled: Type.Optional(
    Type.Boolean({ default: false, description: 'Use an authenticator app (TOTP).' }),
  ),
  emailEnabled: Type.Optional(
    Type.Boolean({ default: false, description: 'Receive sign-in codes by email.' }),
  ),
});
export type EnableTwoFactorBody = Static<typeof EnableTwoFactorBody>;

export const EnableTwoFactorResult = Type.Object({
  otpAuthUri: Nullable(
    Type.String({ description: 'otpauth:// URI for the authenticator app; null without App.' }),
  ),
  sharedKey: Nullable(Type.String({ description: 'The same shared key, base32; null without App.' })),
  emailCodeSent: Type.Boolean(),
});
export const EnableTwoFactorOutput = DataOutput(EnableTwoFactorResult);

export const ConfirmTwoFactorBody = Type.Object({
  appCode: Credential('A current code of the authenticator app (if App was chosen).'),
  emailCode: Credential('The code mailed by enable (if Email was chosen).'),
});
export type ConfirmTwoFactorBody = Static<typeof ConfirmTwoFactorBody>;

export const RecoveryCodesResult = Type.Object({
  recoveryCodes: Type.Array(Type.String({ description: 'XXXX-XXXX-XXXX-XXXX' }), {
    minItems: 10,
    maxItems: 10,
  }),
});
export const RecoveryCodesOutput = DataOutput(RecoveryCodesResult);

/** disable and recovery-codes/regenerate: the password and, while active, a second factor. */
export const ReauthenticateBody = Type.Object({
  currentPassword: Credential('The caller’s current password.'),
  code: Credential('An authenticator-app code, or an unspent email code.'),
  recoveryCode: Credential('A recovery code instead of a code (it is spent).'),
});
export type ReauthenticateBody = Static<typeof ReauthenticateBody>;

const ChallengeToken = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: 'The challengeToken of the login answer (never an Authorization header).',
});

export const VerifyTwoFactorBody = Type.Object({
  challengeToken: ChallengeToken,
  code: Credential('An authenticator-app code or an email code.'),
  recoveryCode: Credential('A recovery code instead (with or without hyphens, any case).'),
});
export type VerifyTwoFactorBody = Static<typeof VerifyTwoFactorBody>;

/**
 * Resend answers the same 200 on every path (spec §Endpoints), so a missing, empty or overlong
 * token is just another unknown challenge here; only a value of the wrong type is malformed.
 */
export const ResendChallengeBody = Type.Object({
  challengeToken: Type.Optional(
    Nullable(
      Type.String({ description: 'The challengeToken of the login answer (never an Authorization header).' }),
    ),
  ),
});
export type ResendChallengeBody = Static<typeof ResendChallengeBody>;

export const TwoFactorStatusResult = Type.Object({
  isActive: Type.Boolean(),
  isPending: Type.Boolean(),
  appEnabled: Type.Boolean(),
  emailEnabled: Type.Boolean(),
  remainingRecoveryCodes: Type.Integer(),
});
export type TwoFactorStatusResult = Static<typeof TwoFactorStatusResult>;
export const TwoFactorStatusOutput = DataOutput(TwoFactorStatusResult);

export const EmptyOutput = DataOutput(Type.Null());
