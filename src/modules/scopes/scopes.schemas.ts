import { type Static, Type } from 'typebox';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

export const MAXIMUM_EMAIL_LINK_LENGTH = 2048;

export const ScopeIdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
export type ScopeIdParams = Static<typeof ScopeIdParams>;

export const Scope = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  description: Type.String(),
  ownerIds: Type.Array(Type.String({ format: 'uuid' })),
  extidpSignInEnabled: Type.Boolean(),
  selfRegistrationEnabled: Type.Boolean(),
  emailVerificationUrl: Nullable(Type.String()),
  passwordResetUrl: Nullable(Type.String()),
  isDeleted: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Scope = Static<typeof Scope>;

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 2000 });

export const CreateScopeBody = Type.Object({
  name: Name,
  description: Type.Optional(Nullable(Description)),
  ownerIds: Type.Array(Type.String({ format: 'uuid' }), { minItems: 1, maxItems: 100 }),
});
export type CreateScopeBody = Static<typeof CreateScopeBody>;

export const UpdateScopeBody = Type.Object({ name: Name, description: Type.Optional(Nullable(Description)) });
export type UpdateScopeBody = Static<typeof UpdateScopeBody>;

export const ToggleBody = Type.Object({ enabled: Type.Boolean() });
export type ToggleBody = Static<typeof ToggleBody>;

const EmailLink = Nullable(
  Type.String({
    maxLength: MAXIMUM_EMAIL_LINK_LENGTH,
    errorMessage: 'Email link URLs must be absolute http or https URLs of at most 2048 characters.',
  }),
);
export const EmailLinksBody = Type.Object({
  emailVerificationUrl: Type.Optional(EmailLink),
  passwordResetUrl: Type.Optional(EmailLink),
});
export type EmailLinksBody = Static<typeof EmailLinksBody>;

export const ListScopesQuery = Type.Object({
  Name: Type.Optional(Nullable(Type.String({ description: 'Case-insensitive part of the name.' }))),
  IncludeDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export type ListScopesQuery = Static<typeof ListScopesQuery>;

export const GetScopeQuery = Type.Object({ includeDeleted: Type.Optional(Type.Boolean()) });
export type GetScopeQuery = Static<typeof GetScopeQuery>;

export const DeleteAnswer = Type.Object({
  id: Type.String({ format: 'uuid' }),
  alreadyDeleted: Type.Boolean(),
});
export const HardDeleteAnswer = Type.Object({ id: Type.String({ format: 'uuid' }) });

export const ScopeOutput = DataOutput(Scope);
export const ScopePageOutput = PaginatedOutput(Scope);
export const DeleteOutput = DataOutput(DeleteAnswer);
export const HardDeleteOutput = DataOutput(HardDeleteAnswer);
