import { ANONYMOUS, ANY_AUTHENTICATED, callerOf, connectionOf } from '../../http/access.ts';
import { ok } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import { SignInOutput } from '../auth/auth.schemas.ts';
import { twoFactorDependencies } from './second-factor.ts';
import { twoFactorCommands } from './two-factor.commands.ts';
import { twoFactorStatusOf } from './two-factor.queries.ts';
import {
  ConfirmTwoFactorBody,
  EmptyOutput,
  EnableTwoFactorBody,
  EnableTwoFactorOutput,
  ReauthenticateBody,
  RecoveryCodesOutput,
  ResendChallengeBody,
  TwoFactorStatusOutput,
  VerifyTwoFactorBody,
} from './two-factor.schemas.ts';

const tags = ['Authentication'];
const security = [{ bearer: [] }];

export const CHALLENGE_RESEND_MESSAGE = 'If the challenge is still valid, a new code has been sent.';

/**
 * The two-factor operations (spec §Endpoints, /api/auth/2fa/*). They never name a person: the
 * subject is the caller of the bearer token, or the person of the challenge. Every one that
 * checks a credential is charged to the credential rate limit (`authentication`).
 */
export function twoFactorRoutes(app: App, services: Services): void {
  const commands = twoFactorCommands(twoFactorDependencies(services));
  const run = services.commands;

  app.post(
    '/api/auth/2fa/enable',
    {
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Auth_EnableTwoFactor',
        summary: 'Begin two-factor setup (pending until confirmed)',
        body: EnableTwoFactorBody,
        response: responses(EnableTwoFactorOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await run.run(
        commands.enable,
        { caller, body: request.body },
        caller,
        connectionOf(request),
      );
      return ok(answer, 'Two-factor setup started. Confirm it with a code.');
    },
  );

  app.post(
    '/api/auth/2fa/confirm',
    {
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Auth_ConfirmTwoFactor',
        summary: 'Prove every chosen method; turns two-factor on and returns ten recovery codes once',
        body: ConfirmTwoFactorBody,
        response: responses(RecoveryCodesOutput, [...AUTHENTICATED_ERRORS, 404, 429]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await run.run(commands.confirm, { caller, body: request.body }, caller);
      return ok(answer, 'Two-factor authentication is on. Keep the recovery codes safe.');
    },
  );

  app.post(
    '/api/auth/2fa/verify',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags,
        operationId: 'Auth_VerifyTwoFactor',
        summary: 'Complete a sign-in challenge with an app code, email code or recovery code',
        body: VerifyTwoFactorBody,
        response: responses(SignInOutput, [400, 401, 429]),
      },
    },
    async (request) => ok(await run.run(commands.verify, request.body, null), 'Signed in successfully.'),
  );

  app.post(
    '/api/auth/2fa/challenge/resend',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags,
        operationId: 'Auth_ResendTwoFactorCode',
        summary: 'Mail a new code for an outstanding challenge (always the same answer)',
        body: ResendChallengeBody,
        response: responses(EmptyOutput, [400, 429]),
      },
    },
    async (request) => {
      await run.run(commands.resend, request.body, null);
      return ok(null, CHALLENGE_RESEND_MESSAGE);
    },
  );

  app.post(
    '/api/auth/2fa/disable',
    {
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Auth_DisableTwoFactor',
        summary: 'Turn two-factor off (password and a second factor)',
        body: ReauthenticateBody,
        response: responses(EmptyOutput, [...AUTHENTICATED_ERRORS, 404, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      await run.run(commands.disable, { caller, body: request.body }, caller, connectionOf(request));
      return ok(null, 'Two-factor authentication is off.');
    },
  );

  app.post(
    '/api/auth/2fa/recovery-codes/regenerate',
    {
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags,
        security,
        operationId: 'Auth_RegenerateRecoveryCodes',
        summary: 'Issue ten fresh recovery codes; the old set stops working',
        body: ReauthenticateBody,
        response: responses(RecoveryCodesOutput, [...AUTHENTICATED_ERRORS, 404, 429, 503]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      const answer = await run.run(
        commands.regenerate,
        { caller, body: request.body },
        caller,
        connectionOf(request),
      );
      return ok(answer, 'New recovery codes issued. The old ones no longer work.');
    },
  );

  app.get(
    '/api/auth/2fa',
    {
      config: { access: ANY_AUTHENTICATED },
      schema: {
        tags,
        security,
        operationId: 'Auth_TwoFactorStatus',
        summary: 'The caller’s own two-factor status',
        response: responses(TwoFactorStatusOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) =>
      ok(
        await twoFactorStatusOf(services.db, callerOf(request)),
        'Two-factor status retrieved successfully.',
      ),
  );
}
