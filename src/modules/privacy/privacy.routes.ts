import { callerOf, connectionOf, SUBJECT_RIGHTS, SYSTEM_ADMIN } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { pageRequest } from '../../http/pagination.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import { erasureDueAt, retentionPassCommand } from '../../jobs/retention-pass.ts';
import type { App, Services } from '../../services.ts';
import { privacyCommands } from './privacy.commands.ts';
import { listErasureRequests } from './privacy.repository.ts';
import {
  DataExportOutput,
  ErasureRequestBody,
  ErasureRequestOutput,
  ErasureRequestPageOutput,
  ErasureRequestsQuery,
  LiftOutput,
  LiftRestrictionBody,
  ReconciliationOutput,
  RestrictionOutput,
  RestrictProcessingBody,
} from './privacy.schemas.ts';

const security = [{ bearer: [] }];
const tags = ['Data-subject rights'];

/**
 * The data-subject rights (spec What the service does 10): four self-service operations that
 * also admit the subject-rights-only token, and two for System Admins.
 */
export function privacyRoutes(app: App, services: Services): void {
  const { commands, db } = services;
  const rights = privacyCommands(services);
  // An administrator's request waits for a scheduled run on another instance instead of
  // skipping, so its answer always counts a finished run.
  const reconcile = retentionPassCommand('ErasureReconciliationCommand', {
    dialect: services.database.dialect,
    batchSize: services.config.retentionPurgeBatchSize,
    waitForLock: true,
  });

  app.post(
    '/api/auth/data-export',
    {
      config: { access: SUBJECT_RIGHTS },
      schema: {
        tags,
        security,
        operationId: 'Auth_DataExport',
        summary: 'A copy of everything held about the caller, with its recipients and retention',
        response: responses(DataExportOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(await commands.run(rights.exportPersonalData, caller, caller), 'Data exported successfully.');
    },
  );

  app.post(
    '/api/auth/erasure-request',
    {
      config: { access: SUBJECT_RIGHTS, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Auth_ErasureRequest',
        summary: 'Ask for erasure (password or fresh ID token); the identity is suspended until anonymised',
        body: ErasureRequestBody,
        response: responses(ErasureRequestOutput, [...AUTHENTICATED_ERRORS, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(
        await commands.run(
          rights.requestErasure,
          { caller, body: request.body },
          caller,
          connectionOf(request),
        ),
        'Erasure requested successfully.',
      );
    },
  );

  app.post(
    '/api/auth/processing-restriction',
    {
      config: { access: SUBJECT_RIGHTS },
      schema: {
        tags,
        security,
        operationId: 'Auth_RestrictProcessing',
        summary: 'Restrict the processing of the caller’s data on a stated ground',
        body: RestrictProcessingBody,
        response: responses(RestrictionOutput, [...AUTHENTICATED_ERRORS, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(
        await commands.run(rights.restrictProcessing, { caller, body: request.body }, caller),
        'Processing restricted successfully.',
      );
    },
  );

  app.post(
    '/api/auth/processing-restriction/lift',
    {
      config: { access: SUBJECT_RIGHTS },
      schema: {
        tags,
        security,
        operationId: 'Auth_LiftProcessingRestriction',
        summary: 'Lift a restriction: the caller’s own, or (System Admins) another’s, who is mailed a notice',
        body: LiftRestrictionBody,
        response: responses(LiftOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(
        await commands.run(rights.liftRestriction, { caller, body: request.body }, caller),
        'Restriction lifted successfully.',
      );
    },
  );

  app.get(
    '/api/auth/erasure-requests',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Auth_ErasureRequests',
        summary: 'Outstanding erasure requests, soonest deadline first',
        querystring: ErasureRequestsQuery,
        response: responses(ErasureRequestPageOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) => {
      const page = pageRequest(request.query);
      const { rows, total } = await listErasureRequests(db, page);
      return okPage(
        {
          items: rows.map((row) => ({
            subjectId: row.subject_id,
            subjectKind: row.subject_kind,
            requestedAt: row.requested_at,
            dueAt: erasureDueAt(row.requested_at),
          })),
          pageNumber: page.pageNumber,
          pageSize: page.pageSize,
          totalRecords: total,
        },
        'Erasure requests retrieved successfully.',
      );
    },
  );

  app.post(
    '/api/auth/erasure-reconciliation',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Auth_ErasureReconciliation',
        summary: 'Run the retention pass now; answers how many were anonymised and how many remain',
        response: responses(ReconciliationOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const { anonymised, remaining } = await commands.run(reconcile, null, caller);
      return ok({ anonymised, remaining }, 'Retention pass completed.');
    },
  );
}
