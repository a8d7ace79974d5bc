import { type Static, Type } from 'typebox';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

const Guid = () => Type.String({ format: 'uuid' });
const DateTime = () => Type.String({ format: 'date-time' });

export const ScopeIdParams = Type.Object({ scopeId: Guid() });
export type ScopeIdParams = Static<typeof ScopeIdParams>;

export const ApplicationParams = Type.Object({ scopeId: Guid(), id: Guid() });
export type ApplicationParams = Static<typeof ApplicationParams>;

export const CredentialParams = Type.Object({ scopeId: Guid(), id: Guid(), credentialId: Guid() });
export type CredentialParams = Static<typeof CredentialParams>;

// ---------------------------------------------------------------------------------------------
// Applications

export const Application = Type.Object({
  id: Guid(),
  name: Type.String(),
  scopeId: Guid(),
  ownerId: Guid(),
  isDeleted: Type.Boolean(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
});
export type Application = Static<typeof Application>;

/** CreateApplicationCommand and UpdateApplicationCommand (DECISIONS §6): name, ownerId. */
export const ApplicationBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  ownerId: Guid(),
});
export type ApplicationBody = Static<typeof ApplicationBody>;

export const ListApplicationsQuery = Type.Object({
  Name: Type.Optional(Nullable(Type.String({ description: 'Case-insensitive part of the name.' }))),
  OwnerId: Type.Optional(Nullable(Guid())),
  IncludeDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export type ListApplicationsQuery = Static<typeof ListApplicationsQuery>;

export const GetApplicationQuery = Type.Object({ includeDeleted: Type.Optional(Type.Boolean()) });
export type GetApplicationQuery = Static<typeof GetApplicationQuery>;

export const ApplicationDeleteAnswer = Type.Object({ id: Guid(), alreadyDeleted: Type.Boolean() });
export const ApplicationHardDeleteAnswer = Type.Object({ id: Guid() });

export const ApplicationOutput = DataOutput(Application);
export const ApplicationPageOutput = PaginatedOutput(Application);
export const ApplicationDeleteOutput = DataOutput(ApplicationDeleteAnswer);
export const ApplicationHardDeleteOutput = DataOutput(ApplicationHardDeleteAnswer);

// ---------------------------------------------------------------------------------------------
// Credentials

const credentialFields = {
  id: Guid(),
  createdAt: DateTime(),
  expiresAt: Nullable(DateTime()),
  revokedAt: Nullable(DateTime()),
  isLive: Type.Boolean(),
};

/** A credential as listed: never the secret or its hash. */
export const Credential = Type.Object(credentialFields);
export type Credential = Static<typeof Credential>;

/** The issue answer: the only place the secret ever appears. */
export const IssuedCredential = Type.Object({ ...credentialFields, secret: Type.String() });
export type IssuedCredential = Static<typeof IssuedCredential>;

/** Optional body of the issue route; an empty body (or none) means no expiry. */
export const IssueCredentialBody = Type.Object({
  expiresAt: Type.Optional(
    Nullable(
      Type.String({
        format: 'date-time',
        errorMessage: 'The request is malformed.',
        description: 'When the credential stops working; omitted or null: never.',
      }),
    ),
  ),
});
export type IssueCredentialBody = Static<typeof IssueCredentialBody>;

export const ListCredentialsQuery = Type.Object({ ...PageQuery });
export type ListCredentialsQuery = Static<typeof ListCredentialsQuery>;

export const CredentialOutput = DataOutput(Credential);
export const IssuedCredentialOutput = DataOutput(IssuedCredential);
export const CredentialPageOutput = PaginatedOutput(Credential);

// ---------------------------------------------------------------------------------------------
// Application tokens

/** IssueApplicationTokenCommand: the secret authenticates. */
export const IssueApplicationTokenBody = Type.Object({
  secret: Type.String({ minLength: 1, maxLength: 512 }),
});
export type IssueApplicationTokenBody = Static<typeof IssueApplicationTokenBody>;

export const ApplicationToken = Type.Object({ token: Type.String(), expiresAt: DateTime() });
export type ApplicationToken = Static<typeof ApplicationToken>;

export const ApplicationSelf = Type.Object({
  application: Type.Object({ id: Guid(), name: Type.String(), scopeId: Guid(), ownerId: Guid() }),
  scope: Type.Object({ id: Guid(), name: Type.String() }),
  credential: Type.Object({ id: Guid(), expiresAt: Nullable(DateTime()) }),
});
export type ApplicationSelf = Static<typeof ApplicationSelf>;

export const ApplicationTokenOutput = DataOutput(ApplicationToken);
export const ApplicationSelfOutput = DataOutput(ApplicationSelf);
