import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineCommand } from '../../src/audit/command-runner.ts';
import { Role } from '../../src/db/database.ts';
import {
  issueVerificationLink,
  retireLinksAfterEmailChange,
} from '../../src/modules/account-email/account-email.links.ts';
import { resendVerificationCommand } from '../../src/modules/account-email/account-email.commands.ts';
import { PASSWORD_RECOVERY_MESSAGE } from '../../src/modules/account-email/account-email.routes.ts';
import { expectRefusal, linksOf, personRow, post, waitForAuditEntries } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  PASSWORD,
  type PersonFixture,
  tokenFor,
} from '../helpers/factories.ts';
import { linkOf, linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

const VERIFICATION_BASE = 'https://app.example.test/verify';
const RESET_BASE = 'https://app.example.test/reset?source=mail';
const NEW_PASSWORD = 'a brand new passphrase';

for (const dialect of DIALECTS) {
  describe(`account email links (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let admin: PersonFixture;
    let recoveries = 0;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        env: {
          SERVICE_SMTP_URL: sink.url,
          SERVICE_EMAIL_FROM: 'Portcullis <no-reply@portcullis.test>',
          SERVICE_EMAIL_VERIFICATION_URL: VERIFICATION_BASE,
          SERVICE_PASSWORD_RESET_URL: RESET_BASE,
        },
      });
      admin = await createSystemAdmin(test);
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    /** A fresh token: tests move the clock past earlier tokens' lifetime. */
    const adminToken = () => tokenFor(test, admin.row);

    /** Asks for recovery and waits until the background worker has handled the request. */
    async function recover(body: Record<string, unknown>) {
      const response = await post(test, '/api/auth/password-recovery', body);
      recoveries += 1;
      await waitForAuditEntries(test, 'PasswordRecoveryCommand', recoveries);
      await test.services.mailer.idle();
      return response;
    }

    async function resetLinkFor(person: PersonFixture, count = 1): Promise<string> {
      expect((await recover({ email: person.email, scopeId: person.row.scope_id })).status).toBe(200);
      return linkTokenOf(await sink.waitForMail(person.email, count));
    }

    describe('password recovery and reset', () => {
      it('mails a reset link that sets the new password and revokes every earlier token', async () => {
        const person = await createScopeAdmin(test);
        const recovery = await recover({ email: `  ${person.email.toUpperCase()} ` });
        expect(recovery.status).toBe(200);
        expect(recovery.body).toEqual({
          data: null,
          messages: [PASSWORD_RECOVERY_MESSAGE],
          errors: [],
          success: true,
        });

        const mail = await sink.waitForMail(person.email);
        expect(mail.subject).toBe('Reset your password');
        expect(linkOf(mail)).toMatch(/^https:\/\/app\.example\.test\/reset\?source=mail&token=[\w-]{43}$/);
        expect(mail.html).toContain('<a href="https://app.example.test/reset?source=mail&amp;token=');
        const token = linkTokenOf(mail);
        // Only the hash is stored.
        const [link] = await linksOf(test, person.id);
        expect(link?.token_hash).not.toContain(token);
        expect(JSON.stringify(link)).not.toContain(token);

        const reset = await post(test, '/api/auth/password-reset', {
          Token: token,
          NewPassword: NEW_PASSWORD,
        });
        expect(reset.status).toBe(200);
        expect(reset.body.messages).toEqual(['Password reset successfully. Sign in with the new password.']);

        const revoked = await test.request({ method: 'GET', url: `/api/scopes`, token: person.token });
        expectRefusal(revoked, 401, 'This token has been revoked. Sign in again.');
        const oldPassword = await post(test, '/api/auth/login', { email: person.email, password: PASSWORD });
        expectRefusal(oldPassword, 401, 'Invalid credentials.');
        const newPassword = await post(test, '/api/auth/login', {
          email: person.email,
          password: NEW_PASSWORD,
        });
        expect(newPassword.status).toBe(200);
        const [entry] = (await auditEntries(test, 'ResetPasswordCommand')).filter(
          (row) => row.target_id === person.id,
        );
        expect(entry).toMatchObject({ succeeded: 1, actor_id: null });
      });

      it('answers an unknown address exactly like a known one and mails nobody', async () => {
        const unknown = `nobody-${Date.now()}@example.test`;
        const response = await recover({ email: unknown });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          data: null,
          messages: [PASSWORD_RECOVERY_MESSAGE],
          errors: [],
          success: true,
        });
        expect(sink.mailsTo(unknown)).toEqual([]);
      });

      it('finds a User only through their scope, and uses the scope’s own reset link base', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        await test.services.db
          .updateTable('scopes')
          .set({ password_reset_url: 'https://tenant.example.test/reset' })
          .where('id', '=', scope.id)
          .execute();
        const user = await createPerson(test, { role: Role.User, scope_id: scope.id });

        await recover({ email: user.email });
        expect(sink.mailsTo(user.email)).toEqual([]);

        await recover({ email: user.email, scopeId: scope.id.toUpperCase() });
        const mail = await sink.waitForMail(user.email);
        expect(linkOf(mail)).toMatch(/^https:\/\/tenant\.example\.test\/reset\?token=[\w-]{43}$/);
      });

      it('sends at most one reset link per cooldown, counting links sent by an administrator', async () => {
        const person = await createScopeAdmin(test);
        await resetLinkFor(person);
        await recover({ email: person.email });
        expect(sink.mailsTo(person.email)).toHaveLength(1);

        test.clock.advanceSeconds(301);
        await resetLinkFor(person, 2);

        test.clock.advanceSeconds(301);
        const byAdministrator = await post(
          test,
          `/api/persons/${person.id}/password-reset`,
          undefined,
          adminToken(),
        );
        expect(byAdministrator.status).toBe(200);
        await sink.waitForMail(person.email, 3);
        await recover({ email: person.email });
        expect(sink.mailsTo(person.email)).toHaveLength(3);
      });

      it('refuses a missing, unknown, expired, spent or retired token, each with its own message', async () => {
        const person = await createScopeAdmin(test);
        expectRefusal(
          await post(test, '/api/auth/password-reset', { newPassword: NEW_PASSWORD }),
          400,
          'Token is required.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: '', newPassword: NEW_PASSWORD }),
          400,
          'Token is required.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: 'x'.repeat(43), newPassword: NEW_PASSWORD }),
          400,
          'Invalid token.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', {
            token: 'x'.repeat(5000),
            newPassword: NEW_PASSWORD,
          }),
          400,
          'Invalid token.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: 42, newPassword: NEW_PASSWORD }),
          400,
          'The request is malformed.',
        );

        const retired = await resetLinkFor(person);
        test.clock.advanceSeconds(301);
        const current = await resetLinkFor(person, 2);
        const before = await personRow(test, person.id);
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: retired, newPassword: NEW_PASSWORD }),
          400,
          'Token already used.',
        );
        expect(await personRow(test, person.id)).toEqual(before);

        expect(
          (await post(test, '/api/auth/password-reset', { token: current, newPassword: NEW_PASSWORD }))
            .status,
        ).toBe(200);
        const afterReset = await personRow(test, person.id);
        expectRefusal(
          await post(test, '/api/auth/password-reset', {
            token: current,
            newPassword: 'yet another passphrase',
          }),
          400,
          'Token already used.',
        );
        expect(await personRow(test, person.id)).toEqual(afterReset);

        test.clock.advanceSeconds(301);
        const expiring = await resetLinkFor(person, 3);
        test.clock.advanceSeconds(3600);
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: expiring, newPassword: NEW_PASSWORD }),
          400,
          'Token expired.',
        );
        expect(await personRow(test, person.id)).toEqual(afterReset);
      });

      it('checks the new password’s length and commonness without spending the link', async () => {
        const person = await createScopeAdmin(test);
        const token = await resetLinkFor(person);
        const before = await personRow(test, person.id);
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token, newPassword: 'seven77' }),
          400,
          'Password must be at least 8 characters.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token, newPassword: 'p'.repeat(257) }),
          400,
          'Password must be at most 256 characters.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token, newPassword: 'Password' }),
          400,
          'Password is too common.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token }),
          400,
          'NewPassword is required.',
        );
        expect(await personRow(test, person.id)).toEqual(before);
        expect((await linksOf(test, person.id)).every((link) => link.spent_at === null)).toBe(true);
        expect(
          (await post(test, '/api/auth/password-reset', { token, newPassword: 'p'.repeat(256) })).status,
        ).toBe(200);
      });

      it('refuses the link of a person since restricted, deleted or cut off from their scope, changing nothing', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const restricted = await createScopeAdmin(test);
        const deleted = await createScopeAdmin(test);
        const scoped = await createPerson(test, { role: Role.User, scope_id: scope.id });
        const cases: Array<[PersonFixture, () => Promise<unknown>]> = [
          [
            restricted,
            () =>
              test.services.db
                .updateTable('persons')
                .set({ restricted_at: test.clock.now().toISOString() })
                .where('id', '=', restricted.id)
                .execute(),
          ],
          [
            deleted,
            () =>
              test.services.db
                .updateTable('persons')
                .set({ deleted_at: test.clock.now().toISOString() })
                .where('id', '=', deleted.id)
                .execute(),
          ],
          [
            scoped,
            () =>
              test.services.db
                .updateTable('scopes')
                .set({ deleted_at: test.clock.now().toISOString() })
                .where('id', '=', scope.id)
                .execute(),
          ],
        ];
        for (const [person, cutOff] of cases) {
          const token = await resetLinkFor(person);
          await cutOff();
          const before = await personRow(test, person.id);
          expectRefusal(
            await post(test, '/api/auth/password-reset', { token, newPassword: NEW_PASSWORD }),
            400,
            'Invalid token.',
          );
          expect(await personRow(test, person.id)).toEqual(before);
          expect((await linksOf(test, person.id)).map((link) => link.spent_at)).toEqual([null]);
        }
      });

      it('does not accept a verification token as a reset token', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        expect(
          (await post(test, `/api/persons/${person.id}/verification-email`, undefined, adminToken())).status,
        ).toBe(200);
        const token = linkTokenOf(await sink.waitForMail(person.email));
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token, newPassword: NEW_PASSWORD }),
          400,
          'Invalid token.',
        );
      });
    });

    describe('email verification', () => {
      async function verificationTokenFor(person: PersonFixture, count = 1): Promise<string> {
        const sent = await post(
          test,
          `/api/persons/${person.id}/verification-email`,
          undefined,
          adminToken(),
        );
        expect(sent.status).toBe(200);
        return linkTokenOf(await sink.waitForMail(person.email, count));
      }

      it('verifies the address through the mailed link, once', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        const sent = await post(
          test,
          `/api/persons/${person.id}/verification-email`,
          undefined,
          adminToken(),
        );
        expect(sent.body).toEqual({
          data: null,
          messages: ['Verification email sent.'],
          errors: [],
          success: true,
        });
        const mail = await sink.waitForMail(person.email);
        expect(mail.subject).toBe('Verify your email address');
        expect(linkOf(mail)).toMatch(/^https:\/\/app\.example\.test\/verify\?token=[\w-]{43}$/);
        expect(mail.html).toContain('https://app.example.test/verify?token=');

        const verified = await post(test, '/api/auth/verify-email', { token: linkTokenOf(mail) });
        expect(verified.status).toBe(200);
        expect(verified.body).toEqual({
          data: { alreadyVerified: false },
          messages: ['Email address verified.'],
          errors: [],
          success: true,
        });
        expect((await personRow(test, person.id)).email_verified).toBe(1);
        expectRefusal(
          await post(test, '/api/auth/verify-email', { token: linkTokenOf(mail) }),
          400,
          'Token already used.',
        );
      });

      it('answers 200 for an address that is already verified', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        const token = await verificationTokenFor(person);
        await test.services.db
          .updateTable('persons')
          .set({ email_verified: 1 })
          .where('id', '=', person.id)
          .execute();
        const response = await post(test, '/api/auth/verify-email', { token });
        expect(response.status).toBe(200);
        expect(response.body.data).toEqual({ alreadyVerified: true });
        expect(response.body.messages).toEqual(['Email address already verified.']);
      });

      it('refuses missing, unknown, expired and superseded tokens, changing nothing', async () => {
        expectRefusal(await post(test, '/api/auth/verify-email', {}), 400, 'Token is required.');
        expectRefusal(
          await post(test, '/api/auth/verify-email', { token: 'not-a-token' }),
          400,
          'Invalid token.',
        );

        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        const first = await verificationTokenFor(person);
        test.clock.advanceSeconds(301);
        const second = await verificationTokenFor(person, 2);
        expectRefusal(
          await post(test, '/api/auth/verify-email', { token: first }),
          400,
          'Token already used.',
        );
        test.clock.advanceSeconds(24 * 3600);
        expectRefusal(await post(test, '/api/auth/verify-email', { token: second }), 400, 'Token expired.');
        expect((await personRow(test, person.id)).email_verified).toBe(0);
      });

      it('refuses the link of a restricted person with Invalid token and leaves the address unverified', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        const token = await verificationTokenFor(person);
        await test.services.db
          .updateTable('persons')
          .set({ restricted_at: test.clock.now().toISOString() })
          .where('id', '=', person.id)
          .execute();
        expectRefusal(await post(test, '/api/auth/verify-email', { token }), 400, 'Invalid token.');
        expect((await personRow(test, person.id)).email_verified).toBe(0);
        expect((await linksOf(test, person.id))[0]?.spent_at).toBeNull();
      });
    });

    describe('functions the persons commands call', () => {
      const createWithPassword = defineCommand({
        name: 'TestCreatePersonCommand',
        async execute(context, person: PersonFixture) {
          await issueVerificationLink(context, test.services, person.row);
          return null;
        },
      });
      const changeEmail = defineCommand({
        name: 'TestChangeEmailCommand',
        async execute(context, input: { person: PersonFixture; email: string }) {
          await context.tx
            .updateTable('persons')
            .set({ email: input.email, email_normalized: input.email, email_verified: 0 })
            .where('id', '=', input.person.id)
            .execute();
          await retireLinksAfterEmailChange(context, test.services, {
            id: input.person.id,
            name: input.person.row.name,
            previousEmail: input.person.email,
          });
          return null;
        },
      });

      it('issues a verification link on creation, without charging the account-email budget', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        await test.services.commands.run(createWithPassword, person, admin);
        const token = linkTokenOf(await sink.waitForMail(person.email));
        const budget = await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', person.id)
          .execute();
        expect(budget).toEqual([]);
        expect((await post(test, '/api/auth/verify-email', { token })).status).toBe(200);
      });

      it('retires every outstanding link on an email change and tells only the previous address, with no link', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        await test.services.commands.run(createWithPassword, person, admin);
        const verification = linkTokenOf(await sink.waitForMail(person.email));
        const reset = await resetLinkFor(person, 2);

        const newEmail = `changed-${person.id}@example.test`;
        await test.services.commands.run(changeEmail, { person, email: newEmail }, admin);
        const notice = await sink.waitForMail(person.email, 3);
        expect(notice.subject).toBe('Your email address was changed');
        expect(notice.text).not.toContain(newEmail);
        expect(notice.html).not.toContain(newEmail);
        expect(notice.text).not.toMatch(/token|https?:/i);
        expect(sink.mailsTo(newEmail)).toEqual([]);

        expectRefusal(
          await post(test, '/api/auth/verify-email', { token: verification }),
          400,
          'Token already used.',
        );
        expectRefusal(
          await post(test, '/api/auth/password-reset', { token: reset, newPassword: NEW_PASSWORD }),
          400,
          'Token already used.',
        );
        expect((await personRow(test, person.id)).email_verified).toBe(0);
        // The new address is reached by a fresh link only.
        expect(tokenFor(test, await personRow(test, person.id))).toBeTypeOf('string');
      });
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`account email endpoints: binding, rate limit, edge cases (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, { env: { SERVICE_SMTP_URL: sink.url } });
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    it('refuses a malformed recovery request with 400 and the binding messages', async () => {
      expectRefusal(
        await post(test, '/api/auth/password-recovery', { email: 5 }),
        400,
        'The request is malformed.',
      );
      expectRefusal(await post(test, '/api/auth/password-recovery', {}), 400, 'Email is required.');
      expectRefusal(
        await post(test, '/api/auth/password-recovery', { email: 'a@example.test', scopeId: 'nope' }),
        400,
        'The request is malformed.',
      );
      expectRefusal(await post(test, '/api/auth/verify-email', 'not json'), 400, 'The request is malformed.');
    });

    it('charges the anonymous link endpoints and resend-verification to one budget per address', async () => {
      const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 1 });
      const remoteAddress = '192.0.2.77';
      const calls = [
        { url: '/api/auth/password-recovery', body: { email: 'x@example.test' } },
        { url: '/api/auth/password-reset', body: { token: 'x', newPassword: NEW_PASSWORD } },
        { url: '/api/auth/verify-email', body: { token: 'x' } },
        { url: '/api/auth/resend-verification', token: person.token },
      ];
      const statuses: number[] = [];
      for (let index = 0; index < 11; index += 1) {
        const call = calls[index % calls.length]!;
        const response = await test.request({ method: 'POST', remoteAddress, ...call });
        statuses.push(response.status);
        if (index === 10) {
          expectRefusal(response, 429, 'Too many requests.');
          expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
        }
      }
      expect(statuses.slice(0, 10)).not.toContain(429);
    });

    it('mails no reset link to a restricted person who asks for recovery', async () => {
      const person = await createPerson(test, { role: Role.ScopeAdmin });
      await test.services.db
        .updateTable('persons')
        .set({ restricted_at: test.clock.now().toISOString() })
        .where('id', '=', person.id)
        .execute();
      const marker = await createPerson(test, { role: Role.ScopeAdmin });
      await post(test, '/api/auth/password-recovery', { email: person.email });
      await post(test, '/api/auth/password-recovery', { email: marker.email });
      // Requests are worked in order: once the second one's mail is here, the first was handled.
      await sink.waitForMail(marker.email);
      expect(sink.mailsTo(person.email)).toEqual([]);
      expect(await linksOf(test, person.id)).toEqual([]);
    });

    it('escapes the person’s name in the HTML part', async () => {
      const person = await createPerson(test, {
        role: Role.ScopeAdmin,
        name: '<img src=x onerror=alert(1)>',
      });
      await post(test, '/api/auth/password-recovery', { email: person.email });
      const mail = await sink.waitForMail(person.email);
      expect(mail.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(mail.html).not.toContain('<img');
      expect(mail.text).toContain('Hello <img src=x onerror=alert(1)>,');
    });

    it('answers Person not found when the caller of resend-verification no longer exists', async () => {
      const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
      const caller = {
        id: person.id,
        kind: 'person' as const,
        role: Role.ScopeAdmin,
        scopeId: null,
        tokenKind: 'full' as const,
        restricted: false,
        erasurePending: false,
      };
      // Removed between authentication and the command (authentication itself would answer 401).
      await test.services.db.deleteFrom('persons').where('id', '=', person.id).execute();
      const resend = resendVerificationCommand(test.services);
      await expect(test.services.commands.run(resend, caller, caller)).rejects.toMatchObject({
        status: 404,
        message: 'Person not found.',
      });
      expect(await linksOf(test, person.id)).toEqual([]);
    });
  });
}
