import { type Static, Type } from 'typebox';
import { DataOutput, Nullable, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';
import { AuditEntry } from '../audit-log/audit-log.schemas.ts';

const Time = Type.String({ format: 'date-time' });
const Id = Type.String({ format: 'uuid' });
const SubjectKind = Type.Union([Type.Literal('person'), Type.Literal('extidpUser')]);

// ── Requests ──────────────────────────────────────────────────────────────────────────────

export const RestrictProcessingBody = Type.Object({
  ground: Type.String({ maxLength: 500, description: 'Why processing is to be restricted.' }),
});
export type RestrictProcessingBody = Static<typeof RestrictProcessingBody>;

export const LiftRestrictionBody = Type.Object({
  personId: Type.Optional(
    Nullable(
      Type.String({
        format: 'uuid',
        description:
          'Omitted = the caller. Another person or external-provider user: System Admins only; the subject is mailed a notice.',
      }),
    ),
  ),
});
export type LiftRestrictionBody = Static<typeof LiftRestrictionBody>;

/**
 * Both fields are optional to the validator: a person who sends no password is answered 401
 * and charged like a wrong password (spec), not 400.
 */
export const ErasureRequestBody = Type.Object({
  currentPassword: Type.Optional(
    Nullable(Type.String({ maxLength: 1024, description: 'A person’s password.' })),
  ),
  idToken: Type.Optional(
    Nullable(
      Type.String({
        maxLength: 16_384,
        description: 'An external-provider user’s fresh ID token (issued within the last 10 minutes).',
      }),
    ),
  ),
});
export type ErasureRequestBody = Static<typeof ErasureRequestBody>;

export const ErasureRequestsQuery = Type.Object({ ...PageQuery });
export type ErasureRequestsQuery = Static<typeof ErasureRequestsQuery>;

// ── Answers ───────────────────────────────────────────────────────────────────────────────

export const RestrictionAnswer = Type.Object({
  subjectId: Id,
  restrictedAt: Time,
  ground: Type.String(),
});
export type RestrictionAnswer = Static<typeof RestrictionAnswer>;

export const LiftAnswer = Type.Object({
  subjectId: Id,
  liftedAt: Time,
  /** True when a System Admin lifted someone else's restriction and a notice was queued. */
  subjectNotified: Type.Boolean(),
});
export type LiftAnswer = Static<typeof LiftAnswer>;

export const ErasureRequestAnswer = Type.Object({
  subjectId: Id,
  restrictionLifted: Type.Boolean(),
  requestedAt: Time,
  dueAt: Time,
});
export type ErasureRequestAnswer = Static<typeof ErasureRequestAnswer>;

export const ErasureRequest = Type.Object({
  subjectId: Id,
  subjectKind: SubjectKind,
  requestedAt: Time,
  dueAt: Time,
});
export type ErasureRequest = Static<typeof ErasureRequest>;

export const ReconciliationAnswer = Type.Object({
  anonymised: Type.Integer({ description: 'Identities anonymised by this run.' }),
  remaining: Type.Integer({ description: 'Identities still due after this run (the next batches).' }),
});
export type ReconciliationAnswer = Static<typeof ReconciliationAnswer>;

// ── The data export (its JSON Schema is published in docs/data-subject-rights.md) ─────────

const ExportProfile = Type.Object({
  id: Id,
  kind: SubjectKind,
  name: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean(),
  role: Type.Integer({ description: '1 SystemAdmin, 2 ScopeAdmin, 3 User.' }),
  scopeId: Nullable(Id),
  createdAt: Time,
  updatedAt: Time,
  externalAccount: Nullable(
    Type.Object({
      issuer: Type.String(),
      subject: Type.String(),
      pictureUrl: Nullable(Type.String()),
      lastSignedInAt: Nullable(Time),
      lastSignedOutAt: Nullable(Time),
    }),
  ),
});

const ExportMembership = Type.Object({
  scopeId: Id,
  scopeName: Type.String(),
  relation: Type.Union([Type.Literal('member'), Type.Literal('owner')]),
  since: Time,
});

const ExportApplication = Type.Object({
  id: Id,
  name: Type.String(),
  scopeId: Id,
  isDeleted: Type.Boolean(),
  createdAt: Time,
});

/** Two-factor state: never a shared key, a code, or a hash of one. */
export const ExportTwoFactor = Type.Object({
  isActive: Type.Boolean(),
  isPending: Type.Boolean(),
  appEnabled: Type.Boolean(),
  emailEnabled: Type.Boolean(),
  remainingRecoveryCodes: Type.Integer(),
});
export type ExportTwoFactor = Static<typeof ExportTwoFactor>;

const ExportProcessing = Type.Object({
  restricted: Type.Boolean(),
  restrictedAt: Nullable(Time),
  restrictionGround: Nullable(Type.String()),
  erasureRequestedAt: Nullable(Time),
  erasureDueAt: Nullable(Time),
});

/**
 * Spec §Person: failedLoginAttempts, lockedOutUntil, six re-authentication budget columns (the
 * bearer-token re-authentication budget and the second-factor lock) and the three account-email
 * budget columns. Null where the identity has no such column (external-provider users).
 */
export const ExportSecurity = Type.Object({
  failedLoginAttempts: Nullable(Type.Integer()),
  lockedOutUntil: Nullable(Time),
  reauthenticationFailures: Nullable(Type.Integer()),
  reauthenticationWindowStartedAt: Nullable(Time),
  reauthenticationPausedUntil: Nullable(Time),
  secondFactorFailures: Nullable(Type.Integer()),
  secondFactorLockedUntil: Nullable(Time),
  secondFactorLockRepeats: Nullable(Type.Integer()),
  accountEmailLastSentAt: Nullable(Time),
  accountEmailWindowStartedAt: Nullable(Time),
  accountEmailWindowCount: Nullable(Type.Integer()),
});
export type ExportSecurity = Static<typeof ExportSecurity>;

const ExportRecipient = Type.Object({
  recipient: Type.String(),
  purpose: Type.String(),
  categories: Type.Array(Type.String()),
});

const ExportRetention = Type.Object({
  category: Type.String(),
  retention: Type.String(),
});

export const DataExport = Type.Object(
  {
    exportedAt: Time,
    profile: ExportProfile,
    memberships: Type.Array(ExportMembership),
    applications: Type.Array(ExportApplication),
    twoFactor: ExportTwoFactor,
    processing: ExportProcessing,
    auditEntries: Type.Array(AuditEntry, { description: 'Entries naming the caller as actor or target.' }),
    security: ExportSecurity,
    recipients: Type.Array(ExportRecipient),
    retention: Type.Array(ExportRetention),
  },
  { title: 'Portcullis data export' },
);
export type DataExport = Static<typeof DataExport>;

export const DataExportOutput = DataOutput(DataExport);
export const RestrictionOutput = DataOutput(RestrictionAnswer);
export const LiftOutput = DataOutput(LiftAnswer);
export const ErasureRequestOutput = DataOutput(ErasureRequestAnswer);
export const ErasureRequestPageOutput = PaginatedOutput(ErasureRequest);
export const ReconciliationOutput = DataOutput(ReconciliationAnswer);
