import { ADMINISTRATORS, ANY_AUTHENTICATED, callerOf, SYSTEM_ADMIN } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import {
  createScope,
  deleteScope,
  hardDeleteScope,
  setEmailLinks,
  setExtidpSignIn,
  setSelfRegistration,
  updateScope,
} from './scopes.commands.ts';
import { getScopeFor, listScopesFor, presentScope, toScope } from './scopes.queries.ts';
import {
  CreateScopeBody,
  DeleteOutput,
  EmailLinksBody,
  GetScopeQuery,
  HardDeleteOutput,
  ListScopesQuery,
  ScopeIdParams,
  ScopeOutput,
  ScopePageOutput,
  ToggleBody,
  UpdateScopeBody,
} from './scopes.schemas.ts';

const tags = ['Scopes'];
const security = [{ bearer: [] }];

export function scopeRoutes(app: App, { commands, db }: Services): void {
  app.post(
    '/api/scopes',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Scope_Create',
        summary: 'Create a scope with one or more owners',
        body: CreateScopeBody,
        response: responses(ScopeOutput, [...AUTHENTICATED_ERRORS, 409]),
      },
    },
    async (request) => {
      const { row, ownerIds } = await commands.run(createScope, request.body, callerOf(request));
      return ok(toScope(row, ownerIds), 'Scope created successfully.');
    },
  );

  app.get(
    '/api/scopes',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Scope_List',
        summary: 'List scopes (a Scope Admin sees only the scopes they own)',
        querystring: ListScopesQuery,
        response: responses(ScopePageOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) =>
      okPage(await listScopesFor(db, callerOf(request), request.query), 'Scopes retrieved successfully.'),
  );

  app.get(
    '/api/scopes/:id',
    {
      config: { access: ANY_AUTHENTICATED },
      schema: {
        tags,
        security,
        operationId: 'Scope_Get',
        summary: 'Read one scope',
        params: ScopeIdParams,
        querystring: GetScopeQuery,
        response: responses(ScopeOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const scope = await getScopeFor(
        db,
        callerOf(request),
        request.params.id,
        request.query.includeDeleted ?? false,
      );
      return ok(scope, 'Scope retrieved successfully.');
    },
  );

  app.put(
    '/api/scopes/:id',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Scope_Update',
        summary: 'Update the name and description',
        params: ScopeIdParams,
        body: UpdateScopeBody,
        response: responses(ScopeOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const row = await commands.run(
        updateScope,
        { id: request.params.id, body: request.body },
        callerOf(request),
      );
      return ok(await presentScope(db, row), 'Scope updated successfully.');
    },
  );

  app.delete(
    '/api/scopes/:id',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Scope_Delete',
        summary: 'Logical delete (takes the scope’s Users with it)',
        params: ScopeIdParams,
        response: responses(DeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      ok(
        await commands.run(deleteScope, request.params.id, callerOf(request)),
        'Scope deleted successfully.',
      ),
  );

  app.delete(
    '/api/scopes/:id/hard',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Scope_HardDelete',
        summary: 'Permanent delete, in any deletion state',
        params: ScopeIdParams,
        response: responses(HardDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      ok(
        await commands.run(hardDeleteScope, request.params.id, callerOf(request)),
        'Scope permanently deleted.',
      ),
  );

  const toggles = [
    ['extidp-signin', 'Scope_SetExtidpSignIn', 'Turn external-provider sign-in on or off', setExtidpSignIn],
    [
      'self-registration',
      'Scope_SetSelfRegistration',
      'Open or close self-registration',
      setSelfRegistration,
    ],
  ] as const;
  for (const [path, operationId, summary, command] of toggles) {
    app.put(
      `/api/scopes/:id/${path}`,
      {
        config: { access: ADMINISTRATORS },
        schema: {
          tags,
          security,
          operationId,
          summary,
          params: ScopeIdParams,
          body: ToggleBody,
          response: responses(ScopeOutput, [...AUTHENTICATED_ERRORS, 404]),
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const input = { scopeId: request.params.id, caller, enabled: request.body.enabled };
        const row = await commands.run(command, input, caller);
        return ok(await presentScope(db, row), 'Scope updated successfully.');
      },
    );
  }

  app.put(
    '/api/scopes/:id/email-links',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Scope_SetEmailLinks',
        summary: 'Set the scope’s verification and password-reset link bases (null clears)',
        params: ScopeIdParams,
        body: EmailLinksBody,
        response: responses(ScopeOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await commands.run(
        setEmailLinks,
        { scopeId: request.params.id, caller, body: request.body },
        caller,
      );
      return ok(await presentScope(db, row), 'Scope updated successfully.');
    },
  );
}
