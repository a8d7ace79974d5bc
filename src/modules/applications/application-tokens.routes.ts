import { ANONYMOUS } from '../../http/access.ts';
import { ok } from '../../http/envelope.ts';
import { responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { checkApplicationToken, exchangeSecret } from './application-tokens.ts';
import {
  ApplicationSelfOutput,
  ApplicationTokenOutput,
  IssueApplicationTokenBody,
} from './applications.schemas.ts';

const tags = ['Application tokens'];

export function applicationTokenRoutes(app: App, { commands, db, tokens, clock }: Services): void {
  app.post(
    '/api/applications/token',
    {
      // Anonymous: the secret authenticates. Charged to the authentication budget per address,
      // so secrets cannot be guessed at speed.
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags,
        operationId: 'ApplicationToken_Issue',
        summary: 'Exchange an application secret for a short-lived application token',
        body: IssueApplicationTokenBody,
        response: responses(ApplicationTokenOutput, [400, 401, 429]),
      },
    },
    async (request) => ok(await exchangeSecret(commands, tokens, request.body), 'Application token issued.'),
  );

  app.get(
    '/api/applications/self',
    {
      // Anonymous to the authentication hook, which reads person tokens only: the handler
      // validates the application token itself.
      config: { access: ANONYMOUS },
      schema: {
        tags,
        security: [{ applicationBearer: [] }],
        operationId: 'ApplicationToken_Self',
        summary: 'Check an application token live: its application, scope and credential',
        response: responses(ApplicationSelfOutput, [401]),
      },
    },
    async (request) => {
      const now = clock.now().toISOString();
      const self = await checkApplicationToken(db, tokens, request.headers.authorization, now);
      return ok(self, 'Application token accepted.');
    },
  );
}
