import { ADMINISTRATORS, callerOf, SYSTEM_ADMIN } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import {
  createApplication,
  deleteApplication,
  hardDeleteApplication,
  updateApplication,
} from './applications.commands.ts';
import { getApplicationFor, listApplicationsFor, toApplication } from './applications.queries.ts';
import {
  ApplicationBody,
  ApplicationDeleteOutput,
  ApplicationHardDeleteOutput,
  ApplicationOutput,
  ApplicationPageOutput,
  ApplicationParams,
  GetApplicationQuery,
  ListApplicationsQuery,
  ScopeIdParams,
} from './applications.schemas.ts';

const tags = ['Applications'];
const security = [{ bearer: [] }];
const BASE = '/api/scopes/:scopeId/applications';

/**
 * SysAdmin+ScopeAdmin: the role gate admits both; the commands and queries then confirm that a
 * Scope Admin owns the scope and the application (application-access.ts).
 */
export function applicationRoutes(app: App, { commands, db }: Services): void {
  app.post(
    BASE,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Application_Create',
        summary: 'Register an application in the scope (a Scope Admin names only themselves as owner)',
        params: ScopeIdParams,
        body: ApplicationBody,
        response: responses(ApplicationOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, scopeId: request.params.scopeId, body: request.body };
      const row = await commands.run(createApplication, input, caller);
      return ok(toApplication(row), 'Application created successfully.');
    },
  );

  app.get(
    BASE,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Application_List',
        summary: 'List the scope’s applications (a Scope Admin sees only their own)',
        params: ScopeIdParams,
        querystring: ListApplicationsQuery,
        response: responses(ApplicationPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listApplicationsFor(db, callerOf(request), request.params.scopeId, request.query),
        'Applications retrieved successfully.',
      ),
  );

  app.get(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Application_Get',
        summary: 'Read one application',
        params: ApplicationParams,
        querystring: GetApplicationQuery,
        response: responses(ApplicationOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const { scopeId, id } = request.params;
      const includeDeleted = request.query.includeDeleted ?? false;
      const application = await getApplicationFor(db, callerOf(request), scopeId, id, includeDeleted);
      return ok(application, 'Application retrieved successfully.');
    },
  );

  app.put(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Application_Update',
        summary: 'Update the name and owner',
        params: ApplicationParams,
        body: ApplicationBody,
        response: responses(ApplicationOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, ...request.params, body: request.body };
      const row = await commands.run(updateApplication, input, caller);
      return ok(toApplication(row), 'Application updated successfully.');
    },
  );

  app.delete(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Application_Delete',
        summary: 'Logical delete (repeating it answers alreadyDeleted)',
        params: ApplicationParams,
        response: responses(ApplicationDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await commands.run(deleteApplication, { caller, ...request.params }, caller);
      return ok(answer, 'Application deleted successfully.');
    },
  );

  app.delete(
    `${BASE}/:id/hard`,
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Application_HardDelete',
        summary: 'Permanent delete in any state; its credentials go with it',
        params: ApplicationParams,
        response: responses(ApplicationHardDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await commands.run(hardDeleteApplication, { caller, ...request.params }, caller);
      return ok(answer, 'Application permanently deleted.');
    },
  );
}
