import { ADMINISTRATORS, ANONYMOUS, ANY_AUTHENTICATED, callerOf, connectionOf } from '../../http/access.ts';
import { ok } from '../../http/envelope.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';
import {
  administratorPasswordResetCommand,
  administratorVerificationEmailCommand,
  resendVerificationCommand,
  resetPasswordCommand,
  verifyEmailCommand,
} from './account-email.commands.ts';
import {
  EmptyOutput,
  PasswordRecoveryBody,
  PasswordResetBody,
  PersonIdParams,
  VerifyEmailBody,
  VerifyEmailOutput,
} from './account-email.schemas.ts';
import { createPasswordRecoveryQueue } from './password-recovery.ts';

const authTags = ['Authentication'];
const personTags = ['Persons'];
const security = [{ bearer: [] }];

export const PASSWORD_RECOVERY_MESSAGE =
  'If the address belongs to an account, a password reset link has been sent to it.';

export function accountEmailRoutes(app: App, services: Services): void {
  const { commands } = services;
  const recoveryQueue = createPasswordRecoveryQueue(services);
  app.addHook('onClose', async () => {
    await recoveryQueue.stop();
  });
  const resetPassword = resetPasswordCommand(services.passwords);
  const verifyEmail = verifyEmailCommand(services);
  const resendVerification = resendVerificationCommand(services);
  const administratorVerificationEmail = administratorVerificationEmailCommand(services);
  const administratorPasswordReset = administratorPasswordResetCommand(services);

  app.post(
    '/api/auth/password-recovery',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: authTags,
        operationId: 'Auth_PasswordRecovery',
        summary: 'Ask for a password-reset link (always the same answer)',
        body: PasswordRecoveryBody,
        response: responses(EmptyOutput, [400, 429]),
      },
    },
    async (request) => {
      if (!recoveryQueue.enqueue(request.body)) {
        // Same answer either way; the drop is logged (without the address) for the operator.
        request.log.warn('password-recovery request dropped: the queue is full');
      }
      return ok(null, PASSWORD_RECOVERY_MESSAGE);
    },
  );

  app.post(
    '/api/auth/password-reset',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: authTags,
        operationId: 'Auth_PasswordReset',
        summary: 'Set a new password with a reset link token (signs the person out everywhere)',
        body: PasswordResetBody,
        response: responses(EmptyOutput, [400, 429, 503]),
      },
    },
    async (request) => {
      await commands.run(resetPassword, request.body, null, connectionOf(request));
      return ok(null, 'Password reset successfully. Sign in with the new password.');
    },
  );

  app.post(
    '/api/auth/verify-email',
    {
      config: { access: ANONYMOUS, rateLimits: ['authentication'] },
      schema: {
        tags: authTags,
        operationId: 'Auth_VerifyEmail',
        summary:
          'Verify an email address with a link token, or confirm a self-registration (with the password chosen at registration)',
        body: VerifyEmailBody,
        response: responses(VerifyEmailOutput, [400, 401, 409, 422, 429, 503]),
      },
    },
    async (request) => {
      const outcome = await commands.run(verifyEmail, request.body, null, connectionOf(request));
      const message = outcome.accountCreated
        ? 'Registration confirmed. Your account has been created.'
        : outcome.alreadyVerified
          ? 'Email address already verified.'
          : 'Email address verified.';
      return ok({ alreadyVerified: outcome.alreadyVerified }, message);
    },
  );

  app.post(
    '/api/auth/resend-verification',
    {
      config: { access: ANY_AUTHENTICATED, rateLimits: ['authentication'] },
      schema: {
        tags: authTags,
        security,
        operationId: 'Auth_ResendVerification',
        summary: 'Mail the caller a fresh verification link (account-email budget)',
        response: responses(EmptyOutput, [...AUTHENTICATED_ERRORS, 404, 429]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      await commands.run(resendVerification, caller, caller);
      return ok(null, 'Verification email sent.');
    },
  );

  app.post(
    '/api/persons/:id/verification-email',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: personTags,
        security,
        operationId: 'Person_SendVerificationEmail',
        summary: 'Mail the person a fresh verification link',
        params: PersonIdParams,
        response: responses(EmptyOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      await commands.run(administratorVerificationEmail, { caller, personId: request.params.id }, caller);
      return ok(null, 'Verification email sent.');
    },
  );

  app.post(
    '/api/persons/:id/password-reset',
    {
      config: { access: ADMINISTRATORS },
      schema: {
        tags: personTags,
        security,
        operationId: 'Person_SendPasswordReset',
        summary: 'Mail the person a password-reset link',
        params: PersonIdParams,
        response: responses(EmptyOutput, [...AUTHENTICATED_ERRORS, 404, 409, 429]),
      },
    },
    async (request) => {
      const caller = callerOf(request);
      await commands.run(administratorPasswordReset, { caller, personId: request.params.id }, caller);
      return ok(null, 'Password reset email sent.');
    },
  );
}
