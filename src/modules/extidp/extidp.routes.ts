import { ADMINISTRATORS, ANONYMOUS, ANY_AUTHENTICATED, callerOf, SYSTEM_ADMIN } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { SignInOutput } from '../auth/auth.schemas.ts';
import {
  deleteExtidpUser,
  extidpSignInCommand,
  hardDeleteExtidpUser,
  signOutExtidpUser,
} from './extidp.commands.ts';
import { getExtidpUserFor, listExtidpUsersFor } from './extidp.queries.ts';
import {
  ExtidpSignInBody,
  ExtidpUserDeleteOutput,
  ExtidpUserHardDeleteOutput,
  ExtidpUserOutput,
  ExtidpUserPageOutput,
  ExtidpUserParams,
  ExtidpUsersParams,
  GetExtidpUserQuery,
  ListExtidpUsersQuery,
  SignOutOutput,
} from './extidp.schemas.ts';

const security = [{ bearer: [] }];
const usersTags = ['External-provider users'];
const USERS_PATH = '/api/scopes/:scopeId/extidp-users';

/** Sign-in through the external OpenID Connect provider, and the users it creates. */
export function extidpRoutes(app: App, services: Services): void {
  const { commands, db } = services;
  const signIn = extidpSignInCommand(services.extidpTokens, services.tokens);

  app.post(
    '/api/auth/extidp',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: ['Authentication'],
        operationId: 'Auth_ExtidpSignIn',
        summary: 'Sign in to a scope with an ID token of the external provider (first call creates the user)',
        body: ExtidpSignInBody,
        response: responses(SignInOutput, [400, 401, 403, 409, 429]),
      },
    },
    async (request) => ok(await commands.run(signIn, request.body, null), 'Signed in successfully.'),
  );

  app.post(
    '/api/auth/extidp/sign-out',
    {
      config: { access: ANY_AUTHENTICATED },
      schema: {
        tags: ['Authentication'],
        security,
        operationId: 'Auth_ExtidpSignOut',
        summary: 'Record the sign-out of an external-provider user (tokens stay valid until they expire)',
        response: responses(SignOutOutput, [401, 403]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(await commands.run(signOutExtidpUser, caller, caller), 'Signed out successfully.');
    },
  );

  app.get(
    USERS_PATH,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: usersTags,
        security,
        operationId: 'ExtidpUser_List',
        summary: 'List the scope’s external-provider users',
        params: ExtidpUsersParams,
        querystring: ListExtidpUsersQuery,
        response: responses(ExtidpUserPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listExtidpUsersFor(db, callerOf(request), request.params.scopeId, request.query),
        'External-provider users retrieved successfully.',
      ),
  );

  app.get(
    `${USERS_PATH}/:id`,
    {
      config: { access: ANY_AUTHENTICATED },
      schema: {
        tags: usersTags,
        security,
        operationId: 'ExtidpUser_Get',
        summary: 'Read one external-provider user (the user themselves, or an administrator of the scope)',
        params: ExtidpUserParams,
        querystring: GetExtidpUserQuery,
        response: responses(ExtidpUserOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      ok(
        await getExtidpUserFor(db, callerOf(request), request.params, request.query.includeDeleted ?? false),
        'External-provider user retrieved successfully.',
      ),
  );

  app.delete(
    `${USERS_PATH}/:id`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: usersTags,
        security,
        operationId: 'ExtidpUser_Delete',
        summary: 'Logical delete (repeating answers alreadyDeleted true)',
        params: ExtidpUserParams,
        response: responses(ExtidpUserDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(
        await commands.run(deleteExtidpUser, { ...request.params, caller }, caller),
        'External-provider user deleted successfully.',
      );
    },
  );

  app.delete(
    `${USERS_PATH}/:id/hard`,
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags: usersTags,
        security,
        operationId: 'ExtidpUser_HardDelete',
        summary: 'Permanent delete, in any deletion state (a repeat is 404)',
        params: ExtidpUserParams,
        response: responses(ExtidpUserHardDeleteOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      return ok(
        await commands.run(hardDeleteExtidpUser, { ...request.params, caller }, caller),
        'External-provider user permanently deleted.',
      );
    },
  );
}
