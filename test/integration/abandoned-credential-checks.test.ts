import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { CALLER_GONE } from '../../src/crypto/passwords.ts';
import { post } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
  personRow,
} from '../helpers/factories.ts';
import {
  type AbandonedRequest,
  abandonWhileQueued,
  CountingPasswordHasher,
} from '../helpers/password-checks.ts';
import { linkTokenOf, SmtpSink } from '../helpers/smtp.ts';
import { activateTwoFactor } from '../helpers/two-factor.ts';

/**
 * Every password check queued for the process-wide bound (spec §Authentication 10) is dropped
 * when its client has gone by the time a slot comes: the re-authentications under a bearer token
 * and the confirmation of a self-registration, as the sign-in (login.test.ts). Nothing is
 * hashed, no failure is charged, and the command's audit entry says why it failed. So is the
 * hash of a new password whose client has gone (a person created, a password reset): nothing is
 * written, and the request can be made again.
 */
for (const dialect of DIALECTS) {
  describe(`a client that gives up while its password check waits for the bound (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let hasher: CountingPasswordHasher;
    let scopeId: string;
    let owner: PersonFixture;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      hasher = new CountingPasswordHasher(new ConcurrencyBound(2));
      test = await buildTestApp(dialect, {
        passwords: hasher,
        env: {
          SERVICE_SMTP_URL: sink.url,
          SERVICE_EMAIL_FROM: 'Portcullis <no-reply@portcullis.test>',
          SERVICE_EMAIL_VERIFICATION_URL: 'https://app.example.test/verify',
          SERVICE_PASSWORD_RESET_URL: 'https://app.example.test/reset',
        },
      });
      await test.app.listen({ port: 0, host: '127.0.0.1' });
      owner = await createScopeAdmin(test);
      scopeId = (await createScope(test, [owner.id], { self_registration_enabled: 1 })).id;
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    /** Abandons `request`, then expects its command's one entry for `targetId` to be the dropped check. */
    async function expectDropped(action: string, targetId: string | null, request: AbandonedRequest) {
      const entriesFor = async () =>
        (await auditEntries(test, action)).filter((entry) => entry.target_id === targetId);
      expect(await entriesFor()).toHaveLength(0);
      const checksBefore = hasher.checksRun;
      await abandonWhileQueued(test, hasher, request);
      await vi.waitFor(async () => expect(await entriesFor()).toHaveLength(1));
      const [entry] = await entriesFor();
      expect(entry).toMatchObject({ succeeded: 0, failure_reason: CALLER_GONE });
      expect(hasher.checksRun).toBe(checksBefore);
    }

    const reauthenticationFailures = async (person: PersonFixture) =>
      (await personRow(test, person.id))!.reauthentication_failures;

    const reauthentications: ReadonlyArray<{
      readonly name: string;
      readonly action: string;
      readonly twoFactor: boolean;
      readonly request: (person: PersonFixture, token: string) => AbandonedRequest;
    }> = [
      {
        name: 'own email change',
        action: 'UpdatePersonCommand',
        twoFactor: false,
        request: (person, token) => ({
          method: 'PUT',
          url: `/api/persons/${person.id}`,
          body: { name: 'Renamed', email: `new-${person.email}`, currentPassword: 'not the password' },
          token,
        }),
      },
      {
        name: '2fa/enable',
        action: 'EnableTwoFactorCommand',
        twoFactor: false,
        request: (_person, token) => ({
          method: 'POST',
          url: '/api/auth/2fa/enable',
          body: { currentPassword: 'not the password', appEnabled: true, emailEnabled: false },
          token,
        }),
      },
      {
        name: '2fa/disable',
        action: 'DisableTwoFactorCommand',
        twoFactor: true,
        request: (_person, token) => ({
          method: 'POST',
          url: '/api/auth/2fa/disable',
          body: { currentPassword: 'not the password', code: '000000' },
          token,
        }),
      },
      {
        name: '2fa/recovery-codes/regenerate',
        action: 'RegenerateRecoveryCodesCommand',
        twoFactor: true,
        request: (_person, token) => ({
          method: 'POST',
          url: '/api/auth/2fa/recovery-codes/regenerate',
          body: { currentPassword: 'not the password', code: '000000' },
          token,
        }),
      },
      {
        name: 'erasure-request',
        action: 'RequestErasureCommand',
        twoFactor: false,
        request: (_person, token) => ({
          method: 'POST',
          url: '/api/auth/erasure-request',
          body: { currentPassword: 'not the password' },
          token,
        }),
      },
    ];

    it.each(reauthentications)(
      '$name: no hash spent, no failure charged to the re-authentication budget',
      async ({ action, twoFactor, request }) => {
        const person = await createUser(test, scopeId);
        const token = twoFactor ? (await activateTwoFactor(test, person, { app: true })).token : person.token;

        await expectDropped(action, person.id, request(person, token));
        expect(await reauthenticationFailures(person)).toBe(0);
      },
    );

    it('a User created by a Scope Admin: no hash spent, nobody created, the same request works again', async () => {
      const email = `created-${dialect}-${Date.now()}@example.test`;
      const request: AbandonedRequest = {
        method: 'POST',
        url: `/api/scopes/${scopeId}/persons`,
        body: { name: 'Ada Created', email, password: PASSWORD },
        token: owner.token,
      };
      const personsWithEmail = () =>
        test.services.db.selectFrom('persons').select('id').where('email_normalized', '=', email).execute();

      await expectDropped('CreateScopeUserCommand', null, request);
      expect(await personsWithEmail()).toHaveLength(0);

      const again = await post(test, request.url, request.body, request.token);
      expect(again.status).toBe(200);
      expect(await personsWithEmail()).toHaveLength(1);
    });

    it('a password reset with a link: no hash spent, the password unchanged, the link still works', async () => {
      const person = await createUser(test, scopeId);
      expect((await post(test, '/api/auth/password-recovery', { email: person.email, scopeId })).status).toBe(
        200,
      );
      const token = linkTokenOf(await sink.waitForMail(person.email, 1));
      const storedHash = async () => (await personRow(test, person.id))!.password_hash;
      const hashBefore = await storedHash();
      const body = { token, newPassword: 'a brand new passphrase' };

      await expectDropped('ResetPasswordCommand', person.id, {
        method: 'POST',
        url: '/api/auth/password-reset',
        body,
      });
      expect(await storedHash()).toBe(hashBefore);

      expect((await post(test, '/api/auth/password-reset', body)).status).toBe(200);
      expect(await storedHash()).not.toBe(hashBefore);
    });

    it('verify-email of a pending registration: no hash spent, no guess spent', async () => {
      const email = `registrant-${dialect}-${Date.now()}@example.test`;
      const registered = await post(test, '/api/auth/register', {
        name: 'Ada Registrant',
        email,
        password: PASSWORD,
        scopeId,
      });
      expect(registered.status).toBe(202);
      const token = linkTokenOf(await sink.waitForMail(email, 1));
      const guessesLeft = async () =>
        (
          await test.services.db
            .selectFrom('pending_registrations')
            .select('guesses_left')
            .where('email_normalized', '=', email)
            .executeTakeFirstOrThrow()
        ).guesses_left;
      const guessesBefore = await guessesLeft();

      await expectDropped('VerifyEmailCommand', null, {
        method: 'POST',
        url: '/api/auth/verify-email',
        body: { token, password: 'not the password' },
      });
      expect(await guessesLeft()).toBe(guessesBefore);
    });
  });
}
