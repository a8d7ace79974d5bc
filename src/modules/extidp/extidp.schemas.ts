import { type Static, Type } from 'typebox';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

/** DECISIONS §6: POST /api/auth/extidp. */
export const ExtidpSignInBody = Type.Object({
  idToken: Type.String({
    minLength: 1,
    // Provider ID tokens are a few kilobytes at most; anything longer is not one.
    maxLength: 16_384,
    description: 'The ID token the external provider issued to this client.',
  }),
  scopeId: Type.String({ format: 'uuid' }),
  nonce: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 1024,
        description: 'When present and non-empty, the token’s nonce claim must equal it exactly.',
      }),
    ),
  ),
});
export type ExtidpSignInBody = Static<typeof ExtidpSignInBody>;

/** DECISIONS §5: the external-provider user output. */
export const ExtidpUser = Type.Object({
  id: Type.String({ format: 'uuid' }),
  subject: Type.String({ description: 'The provider’s subject identifier of the external account.' }),
  name: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean(),
  pictureUrl: Nullable(Type.String()),
  scopeId: Type.String({ format: 'uuid' }),
  isDeleted: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type ExtidpUser = Static<typeof ExtidpUser>;

export const ExtidpUsersParams = Type.Object({ scopeId: Type.String({ format: 'uuid' }) });
export type ExtidpUsersParams = Static<typeof ExtidpUsersParams>;

export const ExtidpUserParams = Type.Object({
  scopeId: Type.String({ format: 'uuid' }),
  id: Type.String({ format: 'uuid' }),
});
export type ExtidpUserParams = Static<typeof ExtidpUserParams>;

export const ListExtidpUsersQuery = Type.Object({
  IncludeDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export type ListExtidpUsersQuery = Static<typeof ListExtidpUsersQuery>;

export const GetExtidpUserQuery = Type.Object({
  includeDeleted: Type.Optional(
    Type.Boolean({ description: 'Administrators only: also find a logically deleted user.' }),
  ),
});
export type GetExtidpUserQuery = Static<typeof GetExtidpUserQuery>;

export const ExtidpUserDeleteAnswer = Type.Object({
  id: Type.String({ format: 'uuid' }),
  alreadyDeleted: Type.Boolean(),
});
export type ExtidpUserDeleteAnswer = Static<typeof ExtidpUserDeleteAnswer>;
export const ExtidpUserHardDeleteAnswer = Type.Object({ id: Type.String({ format: 'uuid' }) });
export type ExtidpUserHardDeleteAnswer = Static<typeof ExtidpUserHardDeleteAnswer>;

export const SignOutAnswer = Type.Object({ signedOutAt: Type.String({ format: 'date-time' }) });
export type SignOutAnswer = Static<typeof SignOutAnswer>;

export const ExtidpUserOutput = DataOutput(ExtidpUser);
export const ExtidpUserPageOutput = PaginatedOutput(ExtidpUser);
export const ExtidpUserDeleteOutput = DataOutput(ExtidpUserDeleteAnswer);
export const ExtidpUserHardDeleteOutput = DataOutput(ExtidpUserHardDeleteAnswer);
export const SignOutOutput = DataOutput(SignOutAnswer);
