import {
  ADMINISTRATORS,
  ANY_AUTHENTICATED,
  callerOf,
  connectionOf,
  SYSTEM_ADMIN,
} from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import type { RateLimitBudget } from '../../http/rate-limits.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { NO_PERSON_EVENTS, type PersonEvents } from './person-events.ts';
import { personCommands } from './persons.commands.ts';
import {
  getPersonFor,
  listScopeAdminsFor,
  listScopeOwnersFor,
  listScopeUsersFor,
  listSystemAdmins,
  presentPerson,
} from './persons.queries.ts';
import {
  CreatePersonBody,
  CreateScopePersonBody,
  DeletePersonOutput,
  GetPersonQuery,
  HardDeletePersonOutput,
  ListOwnersQuery,
  ListScopeAdminsQuery,
  ListScopePersonsQuery,
  ListSystemAdminsQuery,
  PersonIdParams,
  PersonOutput,
  PersonPageOutput,
  PersonSummaryPageOutput,
  ScopeIdParams,
  ScopePersonParams,
  UpdatePersonBody,
} from './persons.schemas.ts';
import { twoFactorSecrets } from '../two-factor/second-factor.ts';

const tags = ['Persons'];
const security = [{ bearer: [] }];

/** Creating a person with a password (spec §Limits): per acting administrator and per address. */
const PERSON_CREATION: readonly RateLimitBudget[] = ['personCreationByActor', 'personCreationByAddress'];

/**
 * The persons operations of spec §Persons, except the two administrator mail endpoints (the
 * email module's). `events` is where the email module hooks in (see person-events.ts).
 */
export function personRoutes(app: App, services: Services, events: PersonEvents = NO_PERSON_EVENTS): void {
  const { db } = services;
  const commands = personCommands({
    passwords: services.passwords,
    events,
    secrets: twoFactorSecrets(services.config),
  });
  const run = services.commands.run.bind(services.commands);

  app.post(
    '/api/persons',
    {
      config: { access: SYSTEM_ADMIN, rateLimits: PERSON_CREATION },
      schema: {
        tags,
        security,
        operationId: 'Person_Create',
        summary: 'Create a Scope Admin or System Admin (no scope)',
        body: CreatePersonBody,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await run(
        commands.createPerson,
        { caller, body: request.body },
        caller,
        connectionOf(request),
      );
      return ok(await presentPerson(db, row, caller), 'Person created successfully.');
    },
  );

  app.post(
    '/api/scopes/:scopeId/persons',
    {
      config: { access: ADMINISTRATORS, rateLimits: PERSON_CREATION },
      schema: {
        tags,
        security,
        operationId: 'Person_CreateScopeUser',
        summary: 'Create a User in the scope',
        params: ScopeIdParams,
        body: CreateScopePersonBody,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, scopeId: request.params.scopeId, body: request.body };
      const row = await run(commands.createScopeUser, input, caller, connectionOf(request));
      return ok(await presentPerson(db, row, caller), 'Person created successfully.');
    },
  );

  app.post(
    '/api/scopes/:scopeId/owners',
    {
      config: { access: ADMINISTRATORS, rateLimits: PERSON_CREATION },
      schema: {
        tags,
        security,
        operationId: 'Person_CreateScopeOwner',
        summary: 'Create a new Scope Admin as a co-owner of the scope',
        params: ScopeIdParams,
        body: CreateScopePersonBody,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, scopeId: request.params.scopeId, body: request.body };
      const row = await run(commands.createScopeOwner, input, caller, connectionOf(request));
      return ok(await presentPerson(db, row, caller), 'Owner created successfully.');
    },
  );

  app.post(
    '/api/scopes/:scopeId/owners/:personId',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_AddScopeOwner',
        summary: 'Make an existing Scope Admin or System Admin an owner of the scope',
        params: ScopePersonParams,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await run(commands.addScopeOwner, { caller, ...request.params }, caller);
      return ok(await presentPerson(db, row, caller), 'Owner added successfully.');
    },
  );

  app.post(
    '/api/scopes/:scopeId/users/:personId/promote',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_PromoteScopeUser',
        summary: 'Promote the scope’s User to a Scope Admin owning the scope (they leave its Users)',
        params: ScopePersonParams,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await run(commands.promoteScopeUser, { caller, ...request.params }, caller);
      return ok(await presentPerson(db, row, caller), 'User promoted to owner successfully.');
    },
  );

  app.delete(
    '/api/scopes/:scopeId/owners/:personId',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_RemoveScopeOwner',
        summary: 'Remove an owner of the scope (never the last one)',
        params: ScopePersonParams,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await run(commands.removeScopeOwner, { caller, ...request.params }, caller);
      return ok(await presentPerson(db, row, caller), 'Owner removed successfully.');
    },
  );

  app.get(
    '/api/scopes/:scopeId/persons',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_ListScopeUsers',
        summary: 'List the scope’s Users (restricted Users withheld)',
        params: ScopeIdParams,
        querystring: ListScopePersonsQuery,
        response: responses(PersonPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listScopeUsersFor(db, callerOf(request), request.params.scopeId, request.query),
        'Persons retrieved successfully.',
      ),
  );

  app.get(
    '/api/scopes/:scopeId/owners',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_ListScopeOwners',
        summary: 'List the scope’s owners (restricted owners withheld)',
        params: ScopeIdParams,
        querystring: ListOwnersQuery,
        response: responses(PersonPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listScopeOwnersFor(db, callerOf(request), request.params.scopeId, request.query),
        'Owners retrieved successfully.',
      ),
  );

  app.get(
    '/api/persons/scope-admins',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_ListScopeAdmins',
        summary: 'Who may own a scope (System Admins too when a System Admin asks)',
        querystring: ListScopeAdminsQuery,
        response: responses(PersonSummaryPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listScopeAdminsFor(db, callerOf(request), request.query),
        'Scope Admins retrieved successfully.',
      ),
  );

  app.get(
    '/api/persons/system-admins',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Person_ListSystemAdmins',
        summary: 'List the System Admins by name',
        querystring: ListSystemAdminsQuery,
        response: responses(PersonSummaryPageOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) =>
      okPage(await listSystemAdmins(db, request.query), 'System Admins retrieved successfully.'),
  );

  app.get(
    '/api/persons/:id',
    {
      config: { access: ANY_AUTHENTICATED },
      schema: {
        tags,
        security,
        operationId: 'Person_Get',
        summary: 'Read one person (themselves, or as an administrator)',
        params: PersonIdParams,
        querystring: GetPersonQuery,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      ok(
        await getPersonFor(db, callerOf(request), request.params.id, request.query.includeDeleted ?? false),
        'Person retrieved successfully.',
      ),
  );

  app.put(
    '/api/persons/:id',
    {
      // Under the credential rate limit whether or not it checks a password (spec §Persons).
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Person_Update',
        summary: 'Update name and email (role: System Admin only); own email change re-authenticates',
        params: PersonIdParams,
        body: UpdatePersonBody,
        response: responses(PersonOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, id: request.params.id, body: request.body };
      const row = await run(commands.updatePerson, input, caller, connectionOf(request));
      return ok(await presentPerson(db, row, caller), 'Person updated successfully.');
    },
  );

  app.delete(
    '/api/persons/:id',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'Person_Delete',
        summary: 'Logical delete (never oneself, never a scope’s last owner)',
        params: PersonIdParams,
        response: responses(DeletePersonOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await run(commands.deletePerson, { caller, id: request.params.id }, caller);
      return ok(answer, 'Person deleted successfully.');
    },
  );

  app.delete(
    '/api/persons/:id/hard',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags,
        security,
        operationId: 'Person_HardDelete',
        summary: 'Permanent delete, in any state (never oneself, never a scope’s last owner)',
        params: PersonIdParams,
        response: responses(HardDeletePersonOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await run(commands.hardDeletePerson, { caller, id: request.params.id }, caller);
      return ok(answer, 'Person permanently deleted.');
    },
  );
}
