import { type Static, Type } from 'typebox';
import { DataOutput, Nullable } from '../../http/envelope.ts';

/**
 * A link token as received. No length limit beyond the body's: a token of any other length is
 * simply not one we issued, and answers the same `Invalid token.` as an unknown one.
 */
const LinkToken = Type.String({ minLength: 1, description: 'The token from the link.' });

export const VerifyEmailBody = Type.Object({
  token: LinkToken,
  password: Type.Optional(
    Nullable(Type.String({ description: 'Read only for a pending self-registration; ignored otherwise.' })),
  ),
});
export type VerifyEmailBody = Static<typeof VerifyEmailBody>;

export const PasswordResetBody = Type.Object({
  token: LinkToken,
  newPassword: Type.String({ description: '8 to 256 characters.' }),
});
export type PasswordResetBody = Static<typeof PasswordResetBody>;

export const PasswordRecoveryBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  scopeId: Type.Optional(
    Nullable(
      Type.String({
        format: 'uuid',
        // A value that is not a GUID is a wrong-typed value: malformed (spec §Errors).
        errorMessage: 'The request is malformed.',
        description: 'Required for a User; administrators omit it.',
      }),
    ),
  ),
});
export type PasswordRecoveryBody = Static<typeof PasswordRecoveryBody>;

export const PersonIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });

export const VerifyEmailResult = Type.Object({ alreadyVerified: Type.Boolean() });
export const VerifyEmailOutput = DataOutput(VerifyEmailResult);
export const EmptyOutput = DataOutput(Type.Null());
