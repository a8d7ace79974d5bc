import type { FastifyRequest } from 'fastify';
import { ADMINISTRATORS, callerOf } from '../../http/access.ts';
import { ok, okPage } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { toCredential } from './applications.queries.ts';
import { listCredentialsFor } from './applications.queries.ts';
import {
  ApplicationParams,
  CredentialOutput,
  CredentialPageOutput,
  CredentialParams,
  IssueCredentialBody,
  IssuedCredentialOutput,
  ListCredentialsQuery,
} from './applications.schemas.ts';
import { issueCredential, revokeCredential } from './credentials.commands.ts';

const tags = ['Application credentials'];
const security = [{ bearer: [] }];
const BASE = '/api/scopes/:scopeId/applications/:id/credentials';
const JSON_MEDIA_TYPES = ['application/json', 'text/json', /^application\/[\w.+-]+\+json$/] as const;

export function credentialRoutes(app: App, services: Services): void {
  const { commands, db, clock } = services;

  // The issue route is the only one that accepts an empty body (spec §Application credentials):
  // its own encapsulated context reads an empty JSON body as {}; everywhere else an empty JSON
  // body stays malformed.
  void app.register(async (context) => {
    const scoped = context as unknown as App;
    const parseJson = scoped.getDefaultJsonParser('error', 'error');
    scoped.removeAllContentTypeParsers();
    for (const mediaType of JSON_MEDIA_TYPES) {
      scoped.addContentTypeParser(mediaType, { parseAs: 'string' }, (request, body, done) => {
        const text = body.toString();
        if (text.trim() === '') {
          done(null, {});
          return;
        }
        parseJson(request, text, done);
      });
    }

    scoped.post(
      BASE,
      {
        config: { access: ADMINISTRATORS },
        // No body at all (no content type) reads as {} too: no expiry.
        preValidation: async (request: FastifyRequest) => {
          request.body ??= {};
        },
        schema: {
          tags,
          security,
          operationId: 'ApplicationCredential_Issue',
          summary:
            'Issue a credential (optional expiresAt; empty body = no expiry); the secret is shown once',
          params: ApplicationParams,
          body: IssueCredentialBody,
          response: responses(IssuedCredentialOutput, [...AUTHENTICATED_ERRORS, 404, 409]),
        },
      },
      async (request) => {
        const caller = callerOf(request);
        const { row, secret } = await commands.run(
          issueCredential,
          {
            caller,
            scopeId: request.params.scopeId,
            applicationId: request.params.id,
            expiresAt: request.body.expiresAt ?? null,
          },
          caller,
        );
        const now = clock.now().toISOString();
        return ok({ ...toCredential(row, now), secret }, 'Credential issued successfully.');
      },
    );
  });

  app.get(
    BASE,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ApplicationCredential_List',
        summary: 'List the application’s credentials, newest first (never a secret or hash)',
        params: ApplicationParams,
        querystring: ListCredentialsQuery,
        response: responses(CredentialPageOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const { scopeId, id } = request.params;
      const now = clock.now().toISOString();
      const page = await listCredentialsFor(db, callerOf(request), scopeId, id, request.query, now);
      return okPage(page, 'Credentials retrieved successfully.');
    },
  );

  app.delete(
    `${BASE}/:credentialId`,
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags,
        security,
        operationId: 'ApplicationCredential_Revoke',
        summary: 'Revoke a credential: its secret and its tokens stop working',
        params: CredentialParams,
        response: responses(CredentialOutput, [...AUTHENTICATED_ERRORS, 404]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const { scopeId, id, credentialId } = request.params;
      const row = await commands.run(
        revokeCredential,
        { caller, scopeId, applicationId: id, credentialId },
        caller,
      );
      return ok(toCredential(row, clock.now().toISOString()), 'Credential revoked successfully.');
    },
  );
}
