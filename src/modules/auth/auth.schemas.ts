import { type Static, Type } from 'typebox';
import { DataOutput, Nullable } from '../../http/envelope.ts';

export const LoginBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 320 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  scopeId: Type.Optional(
    Nullable(Type.String({ format: 'uuid', description: 'Required for a User; administrators omit it.' })),
  ),
});
export type LoginBody = Static<typeof LoginBody>;

/** The answer of every sign-in step (login, 2fa/verify, extidp); fields that do not apply are null. */
export const SignInResult = Type.Object({
  token: Nullable(Type.String()),
  expiresAt: Nullable(Type.String({ format: 'date-time' })),
  emailVerified: Nullable(Type.Boolean()),
  requiresTwoFactor: Type.Boolean(),
  challengeToken: Nullable(Type.String()),
  challengeExpiresAt: Nullable(Type.String({ format: 'date-time' })),
  availableMethods: Nullable(Type.Array(Type.Union([Type.Literal('App'), Type.Literal('Email')]))),
  processingRestricted: Type.Boolean(),
});
export type SignInResult = Static<typeof SignInResult>;
export const SignInOutput = DataOutput(SignInResult);
