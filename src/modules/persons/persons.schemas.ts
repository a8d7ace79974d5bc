import { type Static, Type } from 'typebox';
import { MAXIMUM_PASSWORD_LENGTH, MINIMUM_PASSWORD_LENGTH } from '../../crypto/password-rules.ts';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

const Guid = Type.String({ format: 'uuid' });

export const PersonIdParams = Type.Object({ id: Guid });
export type PersonIdParams = Static<typeof PersonIdParams>;
export const ScopeIdParams = Type.Object({ scopeId: Guid });
export type ScopeIdParams = Static<typeof ScopeIdParams>;
export const ScopePersonParams = Type.Object({ scopeId: Guid, personId: Guid });
export type ScopePersonParams = Static<typeof ScopePersonParams>;

/** DECISIONS §5. `role` is 1 (SystemAdmin), 2 (ScopeAdmin) or 3 (User). */
export const Person = Type.Object({
  id: Guid,
  name: Type.String(),
  email: Type.String(),
  role: Type.Integer({ minimum: 1, maximum: 3, description: '1 SystemAdmin, 2 ScopeAdmin, 3 User.' }),
  scopeId: Nullable(Guid),
  emailVerified: Type.Boolean(),
  twoFactorEnabled: Type.Boolean(),
  ownedScopeIds: Type.Array(Guid),
  isDeleted: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type Person = Static<typeof Person>;

export const PersonSummary = Type.Object({ id: Guid, name: Type.String(), email: Type.String() });
export type PersonSummary = Static<typeof PersonSummary>;

export const Name = Type.String({ minLength: 1, maxLength: 200 });
/** Stored trimmed, so surrounding whitespace is allowed here; one @ and no inner whitespace. */
export const Email = Type.String({
  maxLength: 320,
  pattern: '^\\s*[^\\s@]+@[^\\s@]+\\s*$',
  errorMessage: 'Email is not valid.',
});
export const Password = Type.String({
  minLength: MINIMUM_PASSWORD_LENGTH,
  maxLength: MAXIMUM_PASSWORD_LENGTH,
});

/** A pattern matching the word in any case (JSON Schema patterns have no case-insensitive flag). */
const anyCase = (word: string): string =>
  [...word].map((character) => `[${character.toLowerCase()}${character.toUpperCase()}]`).join('');

/** DECISIONS §2: a role is given as its number or its name, in any case. */
const RoleInput = Type.Union(
  [
    Type.Integer({ minimum: 1, maximum: 3 }),
    Type.String({ pattern: `^(?:${['SystemAdmin', 'ScopeAdmin', 'User'].map(anyCase).join('|')})$` }),
  ],
  { errorMessage: 'Role is not valid.', description: '1 or SystemAdmin, 2 or ScopeAdmin, 3 or User.' },
);

export const CreatePersonBody = Type.Object({
  name: Name,
  email: Email,
  password: Password,
  role: RoleInput,
});
export type CreatePersonBody = Static<typeof CreatePersonBody>;

/** A User of a scope, or a new Scope Admin made a co-owner: the role follows from the route. */
export const CreateScopePersonBody = Type.Object({ name: Name, email: Email, password: Password });
export type CreateScopePersonBody = Static<typeof CreateScopePersonBody>;

/** Missing re-authentication fields are refused like wrong ones (401), so they are optional here. */
export const UpdatePersonBody = Type.Object({
  name: Name,
  email: Email,
  role: Type.Optional(Nullable(RoleInput)),
  currentPassword: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
  twoFactorCode: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
});
export type UpdatePersonBody = Static<typeof UpdatePersonBody>;

export const GetPersonQuery = Type.Object({ includeDeleted: Type.Optional(Type.Boolean()) });
export type GetPersonQuery = Static<typeof GetPersonQuery>;

const Filters = {
  Name: Type.Optional(Nullable(Type.String({ description: 'Case-insensitive part of the name.' }))),
  Email: Type.Optional(Nullable(Type.String({ description: 'Case-insensitive part of the email.' }))),
};

export const ListScopePersonsQuery = Type.Object({
  ...Filters,
  IncludeDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export type ListScopePersonsQuery = Static<typeof ListScopePersonsQuery>;

export const ListOwnersQuery = Type.Object({ ...Filters, ...PageQuery });
export type ListOwnersQuery = Static<typeof ListOwnersQuery>;

export const ListScopeAdminsQuery = Type.Object({
  ...Filters,
  ExcludeOwnersOf: Type.Optional(
    Nullable(Type.String({ format: 'uuid', description: 'Leave out the current owners of this scope.' })),
  ),
  ...PageQuery,
});
export type ListScopeAdminsQuery = Static<typeof ListScopeAdminsQuery>;

export const ListSystemAdminsQuery = Type.Object({ ...Filters, ...PageQuery });
export type ListSystemAdminsQuery = Static<typeof ListSystemAdminsQuery>;

export const DeletePersonAnswer = Type.Object({ id: Guid, alreadyDeleted: Type.Boolean() });
export const HardDeletePersonAnswer = Type.Object({ id: Guid });

export const PersonOutput = DataOutput(Person);
export const PersonPageOutput = PaginatedOutput(Person);
export const PersonSummaryPageOutput = PaginatedOutput(PersonSummary);
export const DeletePersonOutput = DataOutput(DeletePersonAnswer);
export const HardDeletePersonOutput = DataOutput(HardDeletePersonAnswer);
