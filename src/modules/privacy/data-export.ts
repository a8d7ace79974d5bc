import type { DbOrTx, IsoTime, Tx } from '../../db/database.ts';
import { erasureDueAt } from '../../jobs/retention-pass.ts';
import { findAccountEmailBudget } from '../account-email/account-email.repository.ts';
import { toAuditEntry } from '../audit-log/audit-log.routes.ts';
import { readTwoFactorState } from '../two-factor/two-factor.repository.ts';
import {
  applicationsOwnedBy,
  auditEntriesNaming,
  membershipsOf,
  type SubjectRow,
} from './privacy.repository.ts';
import type { DataExport, ExportSecurity, ExportTwoFactor } from './privacy.schemas.ts';

/**
 * Two-factor state of the subject for the export: flags and counts only, never the shared key,
 * a code or a hash of one. External-provider users never have two-factor.
 */
export async function twoFactorStateOf(db: DbOrTx, subject: SubjectRow): Promise<ExportTwoFactor> {
  if (subject.kind !== 'person') {
    return {
      isActive: false,
      isPending: false,
      appEnabled: false,
      emailEnabled: false,
      remainingRecoveryCodes: 0,
    };
  }
  const state = await readTwoFactorState(db, subject.row.id);
  return {
    isActive: state.status === 'active',
    isPending: state.status === 'pending',
    appEnabled: state.appEnabled,
    emailEnabled: state.emailEnabled,
    remainingRecoveryCodes: state.remainingRecoveryCodes,
  };
}

/** The second-factor lock's three columns (failures, locked until, repeats). */
export async function secondFactorLockOf(
  db: DbOrTx,
  subject: SubjectRow,
): Promise<
  Pick<ExportSecurity, 'secondFactorFailures' | 'secondFactorLockedUntil' | 'secondFactorLockRepeats'>
> {
  if (subject.kind !== 'person') {
    return { secondFactorFailures: null, secondFactorLockedUntil: null, secondFactorLockRepeats: null };
  }
  const state = await readTwoFactorState(db, subject.row.id);
  return {
    secondFactorFailures: state.failedSecondFactors,
    secondFactorLockedUntil: state.secondFactorLockedUntil,
    secondFactorLockRepeats: state.secondFactorLocks,
  };
}

/** Who receives the data, and why (GDPR Art. 15(1)(c)). */
const RECIPIENTS: DataExport['recipients'] = [
  {
    recipient: 'The email delivery provider configured by the operator',
    purpose: 'Delivering verification, reset, code and notice emails',
    categories: ['profile.name', 'profile.email'],
  },
  {
    recipient: 'Applications of your scope that accept your sign-in token',
    purpose: 'Knowing who signs in to them',
    categories: ['profile.id', 'profile.role', 'memberships', 'scope permissions flagged as token claims'],
  },
  {
    recipient: 'Administrators of the service (System Admins) and of your scope (its Scope Admins)',
    purpose: 'Managing accounts, and (System Admins) reading the audit trail',
    categories: ['profile', 'memberships', 'applications', 'processing', 'auditEntries'],
  },
  {
    recipient: 'The external identity provider (external-provider users only)',
    purpose: 'Signing you in; the service receives data from it and sends it none',
    categories: ['profile.externalAccount'],
  },
];

/** How long each category is kept (DECISIONS §7). */
const RETENTION: DataExport['retention'] = [
  {
    category: 'profile, memberships, security, twoFactor',
    retention:
      'While the account exists; anonymised 30 days after deletion, or at the next hourly retention pass after an erasure request (deadline 30 days)',
  },
  {
    category: 'applications',
    retention: 'Until deleted by an administrator; after anonymisation they no longer name you',
  },
  {
    category: 'auditEntries',
    retention: 'Kept; anonymisation clears their actor and target ids where they named you',
  },
  {
    category: 'verification and reset links, email codes, two-factor challenges, pending registrations',
    retention: 'Purged 7 days after they expire',
  },
  { category: 'request logs (client address)', retention: '12 months' },
];

/** Everything held about the subject, read in one transaction so the parts agree. */
export async function buildDataExport(db: Tx, subject: SubjectRow, now: IsoTime): Promise<DataExport> {
  const { row } = subject;
  const person = subject.kind === 'person' ? subject.row : null;
  const user = subject.kind === 'extidpUser' ? subject.row : null;
  const budget = person === null ? undefined : await findAccountEmailBudget(db, person.id);
  const applications = person === null ? [] : await applicationsOwnedBy(db, person.id);
  return {
    exportedAt: now,
    profile: {
      id: row.id,
      kind: subject.kind,
      name: row.name,
      email: row.email,
      emailVerified: row.email_verified === 1,
      role: person?.role ?? 3,
      scopeId: row.scope_id,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      externalAccount:
        user === null
          ? null
          : {
              issuer: user.issuer,
              subject: user.subject,
              pictureUrl: user.picture_url,
              lastSignedInAt: user.last_signed_in_at,
              lastSignedOutAt: user.last_signed_out_at,
            },
    },
    memberships: (await membershipsOf(db, subject)).map((membership) => ({
      scopeId: membership.scope_id,
      scopeName: membership.scope_name,
      relation: membership.relation,
      since: membership.since,
    })),
    applications: applications.map((application) => ({
      id: application.id,
      name: application.name,
      scopeId: application.scope_id,
      isDeleted: application.deleted_at !== null,
      createdAt: application.created_at,
    })),
    twoFactor: await twoFactorStateOf(db, subject),
    processing: {
      restricted: row.restricted_at !== null,
      restrictedAt: row.restricted_at,
      restrictionGround: row.restriction_ground,
      erasureRequestedAt: row.erasure_requested_at,
      erasureDueAt: row.erasure_requested_at === null ? null : erasureDueAt(row.erasure_requested_at),
    },
    auditEntries: (await auditEntriesNaming(db, row.id)).map(toAuditEntry),
    security: {
      failedLoginAttempts: person?.failed_login_attempts ?? null,
      lockedOutUntil: person?.locked_out_until ?? null,
      reauthenticationFailures: person?.reauthentication_failures ?? null,
      reauthenticationWindowStartedAt: person?.reauthentication_window_started_at ?? null,
      reauthenticationPausedUntil: person?.reauthentication_paused_until ?? null,
      ...(await secondFactorLockOf(db, subject)),
      accountEmailLastSentAt: budget?.last_sent_at ?? null,
      accountEmailWindowStartedAt: budget?.window_started_at ?? null,
      accountEmailWindowCount: person === null ? null : (budget?.window_count ?? 0),
    },
    recipients: RECIPIENTS,
    retention: RETENTION,
  };
}
