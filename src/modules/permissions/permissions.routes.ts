import { ADMINISTRATORS, callerOf } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import {
  createPermission,
  deletePermission,
  hardDeletePermission,
  updatePermission,
} from './permissions.commands.ts';
import { getPermissionFor, listPermissionsFor, toPermission } from './permissions.queries.ts';
import {
  GetPermissionQuery,
  ListPermissionsQuery,
  PermissionBody,
  PermissionDeleteOutput,
  PermissionHardDeleteOutput,
  PermissionOutput,
  PermissionPageOutput,
  PermissionParams,
  ScopeIdParams,
} from './permissions.schemas.ts';

const tags = ['Scope permissions'];
const security = [{ bearer: [] }];
const BASE = '/api/scopes/:scopeId/permissions';

/** Every route: SysAdmin, or a Scope Admin who owns the scope (confirmed by the command or query). */
export function permissionRoutes(app: App, { commands, db }: Services): void {
  app.post(
    BASE,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_Create',
        summary: 'Create a permission of the scope',
        params: ScopeIdParams,
        body: PermissionBody,
        response: responses(PermissionOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, scopeId: request.params.scopeId, body: request.body };
      const row = await commands.run(createPermission, input, caller);
      return ok(toPermission(row), 'Scope permission created successfully.');
    },
  );

  app.get(
    BASE,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_List',
        summary: 'List the scope’s permissions',
        params: ScopeIdParams,
        querystring: ListPermissionsQuery,
        response: responses(PermissionPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listPermissionsFor(db, callerOf(request), request.params.scopeId, request.query),
        'Scope permissions retrieved successfully.',
      ),
  );

  app.get(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_Get',
        summary: 'Read one permission',
        params: PermissionParams,
        querystring: GetPermissionQuery,
        response: responses(PermissionOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const { scopeId, id } = request.params;
      const permission = await getPermissionFor(
        db,
        callerOf(request),
        scopeId,
        id,
        request.query.includeDeleted ?? false,
      );
      return ok(permission, 'Scope permission retrieved successfully.');
    },
  );

  app.put(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_Update',
        summary: 'Update the name, description and IncludeAsJwtClaim',
        params: PermissionParams,
        body: PermissionBody,
        response: responses(PermissionOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, ...request.params, body: request.body };
      const row = await commands.run(updatePermission, input, caller);
      return ok(toPermission(row), 'Scope permission updated successfully.');
    },
  );

  app.delete(
    `${BASE}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_Delete',
        summary: 'Logical delete (repeating it answers alreadyDeleted)',
        params: PermissionParams,
        response: responses(PermissionDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await commands.run(deletePermission, { caller, ...request.params }, caller);
      return ok(answer, 'Scope permission deleted successfully.');
    },
  );

  app.delete(
    `${BASE}/:id/hard`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ScopePermission_HardDelete',
        summary: 'Permanent delete, in any deletion state',
        params: PermissionParams,
        response: responses(PermissionHardDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await commands.run(hardDeletePermission, { caller, ...request.params }, caller);
      return ok(answer, 'Scope permission permanently deleted.');
    },
  );
}
