import { ANONYMOUS, connectionOf } from '../../http/access.ts';
import { ok } from '../../http/envelope.ts';
import { responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { LoginBody, SignInOutput } from './auth.schemas.ts';
import { loginCommand } from './login.command.ts';

export function authRoutes(app: App, services: Services): void {
  const login = loginCommand(services.passwords, services.tokens, services);

  app.post(
    '/api/auth/login',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: ['Authentication'],
        operationId: 'Auth_Login',
        summary: 'Sign in with email and password (a User also names the scope)',
        body: LoginBody,
        response: responses(SignInOutput, [400, 401, 429, 503]),
      },
    },
    async (request) =>
      ok(
        await services.commands.run(login, request.body, null, connectionOf(request)),
        'Signed in successfully.',
      ),
  );
}
