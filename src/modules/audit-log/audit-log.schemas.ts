import { type Static, Type } from 'typebox';
import { Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';

export const AuditEntry = Type.Object({
  id: Type.String({ format: 'uuid' }),
  actorId: Nullable(Type.String({ format: 'uuid' })),
  targetId: Nullable(Type.String({ format: 'uuid' })),
  action: Type.String({ description: 'The command type name, e.g. CreateScopeCommand.' }),
  succeeded: Type.Boolean(),
  failureReason: Nullable(Type.String()),
  recordedAt: Type.String({ format: 'date-time' }),
});
export type AuditEntry = Static<typeof AuditEntry>;

const Time = Type.String({ format: 'date-time', description: 'UTC, inclusive, on the time recorded.' });

export const AuditLogQuery = Type.Object({
  From: Type.Optional(Nullable(Time)),
  To: Type.Optional(Nullable(Time)),
  ActorId: Type.Optional(Nullable(Type.String({ format: 'uuid' }))),
  Action: Type.Optional(Nullable(Type.String({ description: 'Exact command type name.' }))),
  TargetId: Type.Optional(Nullable(Type.String({ format: 'uuid' }))),
  Succeeded: Type.Optional(Nullable(Type.Boolean({ description: 'false lists only refusals.' }))),
  ...PageQuery,
});
export type AuditLogQuery = Static<typeof AuditLogQuery>;

export const AuditLogPageOutput = PaginatedOutput(AuditEntry);
