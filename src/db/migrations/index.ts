import { foundation } from './0001-foundation.ts';
import { persons } from './0002-persons.ts';
import { accountEmail } from './0003-account-email.ts';
import { applications } from './0004-applications.ts';
import { extidp } from './0005-extidp.ts';
import { auditIndexes } from './0006-audit-indexes.ts';
import { twoFactor } from './0007-two-factor.ts';
import { selfRegistration } from './0008-self-registration.ts';
import { subjectRights } from './0009-subject-rights.ts';
import { scopeCounts } from './0010-scope-counts.ts';
import { auditRefusalsIndex } from './0011-audit-refusals-index.ts';
import { auditInbox } from './0012-audit-inbox.ts';
import type { Migration } from './migration.ts';

/** Every migration, in order. Names never change once released. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-foundation': foundation,
  '0002-persons': persons,
  '0003-account-email': accountEmail,
  '0004-applications': applications,
  '0005-extidp': extidp,
  '0006-audit-indexes': auditIndexes,
  '0007-two-factor': twoFactor,
  '0008-self-registration': selfRegistration,
  '0009-subject-rights': subjectRights,
  '0010-scope-counts': scopeCounts,
  '0011-audit-refusals-index': auditRefusalsIndex,
  '0012-audit-inbox': auditInbox,
};
