import { defineCommand, type StepContext } from '../../audit/command-runner.ts';
import type { PasswordHasher } from '../../crypto/passwords.ts';
import type { DbOrTx } from '../../db/database.ts';
import type { Mailer } from '../../email/mailer.ts';
import { restrictionLiftedMail } from '../../email/templates.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import { InvalidField, Refusal } from '../../http/messages.ts';
import { erasureDueAt } from '../../jobs/retention-pass.ts';
import {
  checkCurrentPassword,
  type ReauthenticationVerdict,
  settleReauthentication,
} from '../auth/reauthentication.ts';
import type { ExtidpTokenVerifier } from '../extidp/extidp-token-verifier.ts';
import {
  lockScopes,
  ownedScopeIdsOf,
  removeAllOwnerships,
  scopesOnlyOwnedBy,
} from '../persons/scope-ownership.repository.ts';
import { buildDataExport } from './data-export.ts';
import {
  findLiveSubject,
  findLiveSubjectById,
  markErasureRequested,
  markRestricted,
  markRestrictionLifted,
  type SubjectRow,
} from './privacy.repository.ts';
import type {
  DataExport,
  ErasureRequestAnswer,
  ErasureRequestBody,
  LiftAnswer,
  LiftRestrictionBody,
  RestrictionAnswer,
  RestrictProcessingBody,
} from './privacy.schemas.ts';

const NO_LONGER_VALID = 'This token is no longer valid. Sign in again.' as const;
const ALREADY_RESTRICTED = 'Processing is already restricted.' as const;
const NOT_RESTRICTED = 'Processing is not restricted.' as const;
const ERASURE_PENDING = 'Erasure has already been requested.' as const;
const CREDENTIAL_REFUSED = 'The credential presented was not accepted.' as const;
const LAST_OWNER = 'This change would leave a scope without an owner. Add another owner first.' as const;
const FORBIDDEN = 'You do not have permission to access this resource.' as const;

/** How recent an external-provider user's ID token must be to prove presence at erasure (DECISIONS). */
export const FRESH_ID_TOKEN_SECONDS = 10 * 60;

type CallerInput<Body> = { readonly caller: Caller; readonly body: Body };

/** The caller's own live row; authentication admitted them, so only a race can miss it. */
async function callerSubject(db: DbOrTx, caller: Caller): Promise<SubjectRow> {
  const subject = await findLiveSubject(db, caller.kind, caller.id);
  if (subject === undefined) throw new Refusal(NO_LONGER_VALID);
  return subject;
}

export interface PrivacyCommandDependencies {
  readonly passwords: PasswordHasher;
  readonly extidpTokens: ExtidpTokenVerifier;
  readonly mailer: Mailer;
}

/** The data-subject rights (spec What the service does 10), each a named (audited) command. */
export function privacyCommands({ passwords, extidpTokens, mailer }: PrivacyCommandDependencies) {
  /**
   * POST /api/auth/data-export. Writes nothing but is audited: who took a copy of which
   * personal data, and when, is itself worth a record.
   */
  const exportPersonalData = defineCommand({
    name: 'ExportPersonalDataCommand',
    async execute(context, caller: Caller): Promise<DataExport> {
      context.setTarget(caller.id);
      return buildDataExport(context.tx, await callerSubject(context.tx, caller), context.now);
    },
  });

  /** POST /api/auth/processing-restriction: the caller's own, on a stated ground. */
  const restrictProcessing = defineCommand({
    name: 'RestrictProcessingCommand',
    async execute(
      context,
      { caller, body }: CallerInput<RestrictProcessingBody>,
    ): Promise<RestrictionAnswer> {
      context.setTarget(caller.id);
      const ground = body.ground.trim();
      if (ground === '') throw new InvalidField('Ground is required.');
      const subject = await callerSubject(context.tx, caller);
      if (subject.row.erasure_requested_at !== null) throw new Refusal(ERASURE_PENDING);
      if (!(await markRestricted(context.tx, subject.kind, subject.row.id, { ground, now: context.now }))) {
        throw new Refusal(ALREADY_RESTRICTED);
      }
      return { subjectId: subject.row.id, restrictedAt: context.now, ground };
    },
  });

  /**
   * POST /api/auth/processing-restriction/lift: the subject lifts their own (no notice), or a
   * System Admin, with a full token of their own, lifts another's; the audit entry records
   * them as the one who informed the subject, and the subject is mailed a notice.
   */
  const liftRestriction = defineCommand({
    name: 'LiftProcessingRestrictionCommand',
    async execute(context, { caller, body }: CallerInput<LiftRestrictionBody>): Promise<LiftAnswer> {
      const targetId = body.personId ?? caller.id;
      context.setTarget(targetId);
      const own = targetId === caller.id;
      // Lifting someone else's restriction is an administrator's act: a restricted or
      // erasure-pending caller (or a subject-rights token) exercises only their own rights.
      const actsAsAdministrator =
        isSystemAdmin(caller) && caller.tokenKind === 'full' && !caller.restricted && !caller.erasurePending;
      if (!own && !actsAsAdministrator) {
        throw new Refusal(FORBIDDEN);
      }
      const subject = own
        ? await callerSubject(context.tx, caller)
        : await findLiveSubjectById(context.tx, targetId);
      if (subject === undefined) throw new Refusal('Person not found.');
      if (!(await markRestrictionLifted(context.tx, subject.kind, subject.row.id, context.now))) {
        throw new Refusal(NOT_RESTRICTED);
      }
      if (!own) {
        // Queued once the lift has committed: a notice of a lift that did not happen would be false.
        const recipient = { name: subject.row.name, email: subject.row.email };
        const liftedAt = context.now;
        context.afterCommit(() => mailer.send(restrictionLiftedMail(recipient, liftedAt)));
      }
      return { subjectId: subject.row.id, liftedAt: context.now, subjectNotified: !own };
    },
  });

  type PreparedErasure = CallerInput<ErasureRequestBody> & {
    readonly verdict: ReauthenticationVerdict | null;
  };

  /**
   * POST /api/auth/erasure-request. A person proves their password (under the re-authentication
   * budget: a missing one is charged like a wrong one); an external-provider user a fresh ID
   * token of their own external account. The identity is suspended with erasure pending, its
   * restriction lifted and its ownerships given up (the last owner of a scope is refused, as
   * for deletion); the retention pass anonymises it.
   */
  const requestErasure = defineCommand({
    name: 'RequestErasureCommand',
    async prepare(context: StepContext, input: CallerInput<ErasureRequestBody>): Promise<PreparedErasure> {
      const { caller, body } = input;
      context.setTarget(caller.id);
      const subject = await callerSubject(context.db, caller);
      // The caller may learn their own request is pending without spending a guess.
      if (subject.row.erasure_requested_at !== null) throw new Refusal(ERASURE_PENDING);
      if (subject.kind === 'person') {
        const verdict = await checkCurrentPassword(passwords, context, subject.row, body.currentPassword);
        return { ...input, verdict };
      }
      const presented = body.idToken ?? '';
      const token =
        presented === ''
          ? null
          : await extidpTokens.verify(presented, { maxAgeSeconds: FRESH_ID_TOKEN_SECONDS });
      // The token must name this very external account, not merely be a valid token.
      if (token === null || token.issuer !== subject.row.issuer || token.subject !== subject.row.subject) {
        throw new Refusal(CREDENTIAL_REFUSED);
      }
      return { ...input, verdict: null };
    },
    async execute(context, { caller, verdict }: PreparedErasure): Promise<ErasureRequestAnswer | Refusal> {
      const { tx, now } = context;
      if (caller.kind === 'person') {
        // Settled first, so a wrong or missing password is charged (and commits) whatever follows.
        const refusal = await settleReauthentication(context, caller.id, verdict ?? 'failed');
        if (refusal !== null) return refusal;
      }
      const subject = await callerSubject(tx, caller);
      if (subject.kind === 'person') {
        const owned = (await ownedScopeIdsOf(tx, [subject.row.id])).get(subject.row.id) ?? [];
        await lockScopes(tx, owned);
        if ((await scopesOnlyOwnedBy(tx, subject.row.id, owned)).length > 0) throw new Refusal(LAST_OWNER);
      }
      if (!(await markErasureRequested(tx, subject.kind, subject.row.id, now)))
        throw new Refusal(ERASURE_PENDING);
      if (subject.kind === 'person') await removeAllOwnerships(tx, subject.row.id);
      return {
        subjectId: subject.row.id,
        restrictionLifted: subject.row.restricted_at !== null,
        requestedAt: now,
        dueAt: erasureDueAt(now),
      };
    },
  });

  return { exportPersonalData, restrictProcessing, liftRestriction, requestErasure };
}
