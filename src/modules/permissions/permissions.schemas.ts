import { type Static, Type } from 'typebox';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

export const ScopeIdParams = Type.Object({ scopeId: Type.String({ format: 'uuid' }) });
export type ScopeIdParams = Static<typeof ScopeIdParams>;

export const PermissionParams = Type.Object({
  scopeId: Type.String({ format: 'uuid' }),
  id: Type.String({ format: 'uuid' }),
});
export type PermissionParams = Static<typeof PermissionParams>;

export const ScopePermission = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  description: Type.String(),
  includeAsJwtClaim: Type.Boolean(),
  scopeId: Type.String({ format: 'uuid' }),
  isDeleted: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});
export type ScopePermission = Static<typeof ScopePermission>;

/** One body for create and update (DECISIONS §6): name, description?, includeAsJwtClaim (default false). */
export const PermissionBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
  includeAsJwtClaim: Type.Optional(Type.Boolean({ default: false })),
});
export type PermissionBody = Static<typeof PermissionBody>;

export const ListPermissionsQuery = Type.Object({
  Name: Type.Optional(Nullable(Type.String({ description: 'Case-insensitive part of the name.' }))),
  IncludeAsJwtClaim: Type.Optional(Nullable(Type.Boolean())),
  IncludeDeleted: Type.Optional(Type.Boolean()),
  ...PageQuery,
});
export type ListPermissionsQuery = Static<typeof ListPermissionsQuery>;

export const GetPermissionQuery = Type.Object({ includeDeleted: Type.Optional(Type.Boolean()) });
export type GetPermissionQuery = Static<typeof GetPermissionQuery>;

export const PermissionDeleteAnswer = Type.Object({
  id: Type.String({ format: 'uuid' }),
  alreadyDeleted: Type.Boolean(),
});
export const PermissionHardDeleteAnswer = Type.Object({ id: Type.String({ format: 'uuid' }) });

export const PermissionOutput = DataOutput(ScopePermission);
export const PermissionPageOutput = PaginatedOutput(ScopePermission);
export const PermissionDeleteOutput = DataOutput(PermissionDeleteAnswer);
export const PermissionHardDeleteOutput = DataOutput(PermissionHardDeleteAnswer);
