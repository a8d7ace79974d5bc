import { ADMINISTRATORS, ANONYMOUS, callerOf } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { createRegistrationQueue } from './registration-queue.ts';
import { acceptRegistration, discardPendingRegistration } from './registration.commands.ts';
import { listPendingRegistrationsFor } from './registration.queries.ts';
import {
  DiscardOutput,
  ListPendingRegistrationsQuery,
  PendingRegistrationPageOutput,
  PendingRegistrationParams,
  PendingRegistrationsParams,
  RegisterBody,
  RegisterOutput,
} from './registration.schemas.ts';

const security = [{ bearer: [] }];
const PENDING_PATH = '/api/scopes/:id/pending-registrations';

/** The one answer of register, whether the address was free or taken (spec §Endpoints). */
export const REGISTRATION_ACCEPTED_MESSAGE = 'Registration received. Check your email to continue.';

/** Self-registration (spec What the service does 9) and the administrators' view of it. */
export function registrationRoutes(app: App, services: Services): void {
  const { commands, db, clock } = services;
  const queue = createRegistrationQueue(services);
  app.addHook('onClose', async () => {
    await queue.stop();
  });

  app.post(
    '/api/auth/register',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: ['Authentication'],
        operationId: 'Auth_Register',
        summary:
          'Register in a scope open to self-registration (the same 202 whether or not the address is taken)',
        body: RegisterBody,
        response: responses(RegisterOutput, [400, 403, 429], 202),
      },
    },
    async (request, reply) => {
      const accepted = await acceptRegistration(db, request.body);
      if (!queue.enqueue(accepted)) {
        // Same answer either way; the drop is logged (without the address) for the operator.
        request.log.warn('registration request dropped: the queue is full');
      }
      return reply.code(202).send(ok(null, REGISTRATION_ACCEPTED_MESSAGE));
    },
  );

  app.get(
    PENDING_PATH,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: ['Scopes'],
        security,
        operationId: 'PendingRegistration_List',
        summary: 'List the scope’s self-registrations awaiting confirmation, newest first',
        params: PendingRegistrationsParams,
        querystring: ListPendingRegistrationsQuery,
        response: responses(PendingRegistrationPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) =>
      okPage(
        await listPendingRegistrationsFor(
          db,
          callerOf(request),
          request.params.id,
          request.query,
          clock.now().toISOString(),
        ),
        'Pending registrations retrieved successfully.',
      ),
  );

  app.delete(
    `${PENDING_PATH}/:registrationId`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: ['Scopes'],
        security,
        operationId: 'PendingRegistration_Discard',
        summary: 'Discard a pending registration (its link stops working; the registrant may sign up again)',
        params: PendingRegistrationParams,
        response: responses(DiscardOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const input = { caller, scopeId: request.params.id, registrationId: request.params.registrationId };
      return ok(
        await commands.run(discardPendingRegistration, input, caller),
        'Pending registration discarded.',
      );
    },
  );
}
