import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { expectRefusal, linksOf, personRow, post } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  type PersonFixture,
  tokenFor,
} from '../helpers/factories.ts';
import { linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

const COOLDOWN_MESSAGE = 'An email of this kind was sent to you recently. Try again in a few minutes.';
const WINDOW_MESSAGE = 'You have reached the limit for account emails. Try again later.';
const ADMINISTRATOR_COOLDOWN_MESSAGE =
  'An email of this kind was sent to this person recently. Try again in a few minutes.';
const DAY = 24 * 3600;

for (const dialect of DIALECTS) {
  describe(`account-email budget and administrator mail (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let admin: PersonFixture;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        env: { SERVICE_SMTP_URL: sink.url, SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS: '300' },
      });
      admin = await createSystemAdmin(test);
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    /** Fresh tokens: the tests move the clock by days. */
    const tokenOf = async (person: PersonFixture) => tokenFor(test, await personRow(test, person.id));
    const resend = async (person: PersonFixture) =>
      post(test, '/api/auth/resend-verification', undefined, await tokenOf(person));

    describe('resend-verification', () => {
      it('mails a fresh link and retires the one before it', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        const first = await resend(person);
        expect(first.status).toBe(200);
        expect(first.body).toEqual({
          data: null,
          messages: ['Verification email sent.'],
          errors: [],
          success: true,
        });
        const firstMail = await sink.waitForMail(person.email);
        // No link base is configured in this app: the mail carries the bare token to submit.
        expect(firstMail.text).not.toMatch(/https?:/);
        expect(firstMail.text).toContain('submit this verification token');
        const firstToken = linkTokenOf(firstMail);
        test.clock.advanceSeconds(301);
        expect((await resend(person)).status).toBe(200);
        const secondToken = linkTokenOf(await sink.waitForMail(person.email, 2));

        expectRefusal(
          await post(test, '/api/auth/verify-email', { token: firstToken }),
          400,
          'Token already used.',
        );
        expect((await post(test, '/api/auth/verify-email', { token: secondToken })).status).toBe(200);
        const entries = (await auditEntries(test, 'ResendVerificationCommand')).filter(
          (entry) => entry.target_id === person.id,
        );
        expect(entries.map((entry) => [entry.actor_id, entry.succeeded])).toEqual([
          [person.id, 1],
          [person.id, 1],
        ]);
      });

      it('refuses an already verified address with 400, sending and charging nothing', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 1 });
        expectRefusal(await resend(person), 400, 'The email address is already verified.');
        expect(await linksOf(test, person.id)).toEqual([]);
        const budget = await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', person.id)
          .execute();
        expect(budget).toEqual([]);
      });

      it('refuses within the cooldown with 429 and Retry-After until the cooldown ends', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        expect((await resend(person)).status).toBe(200);
        test.clock.advanceSeconds(100);
        const refused = await resend(person);
        expectRefusal(refused, 429, COOLDOWN_MESSAGE);
        expect(refused.headers['retry-after']).toBe('200');
        expect(await linksOf(test, person.id)).toHaveLength(1);
        test.clock.advanceSeconds(200);
        expect((await resend(person)).status).toBe(200);
      });

      it('allows five per day-long window from the first send, then refuses until the window ends', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        for (let send = 1; send <= 5; send += 1) {
          expect((await resend(person)).status).toBe(200);
          test.clock.advanceSeconds(3600);
        }
        // Five sent over 5 hours; the window opened at the first send and ends 24 hours later.
        const refused = await resend(person);
        expectRefusal(refused, 429, WINDOW_MESSAGE);
        expect(refused.headers['retry-after']).toBe(String(DAY - 5 * 3600));
        expect(await linksOf(test, person.id)).toHaveLength(5);

        test.clock.advanceSeconds(DAY - 5 * 3600);
        expect((await resend(person)).status).toBe(200);
        const budget = await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', person.id)
          .executeTakeFirstOrThrow();
        expect(budget.window_count).toBe(1);
        expect(budget.window_started_at).toBe(test.clock.now().toISOString());
      });

      it('gives the later of the window’s end and the cooldown’s end as Retry-After', async () => {
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        for (let send = 1; send <= 5; send += 1) {
          expect((await resend(person)).status).toBe(200);
          test.clock.advanceSeconds(send < 5 ? DAY / 5 : DAY / 5 - 100);
        }
        // The window ends 100 s from now; the last send's cooldown ends 300 - (DAY/5 - 100) s ago,
        // so here the window decides.
        const refused = await resend(person);
        expectRefusal(refused, 429, WINDOW_MESSAGE);
        expect(refused.headers['retry-after']).toBe('100');
      });
    });

    describe('administrator mail', () => {
      let owner: PersonFixture;
      let scopeId: string;

      beforeAll(async () => {
        owner = await createScopeAdmin(test);
        scopeId = (await createScope(test, [owner.id])).id;
      });

      const send = async (
        kind: 'verification-email' | 'password-reset',
        personId: string,
        by: PersonFixture,
      ) => post(test, `/api/persons/${personId}/${kind}`, undefined, await tokenOf(by));

      it('lets a Scope Admin mail the Users of a scope they own, not charged to the person’s budget', async () => {
        const user = await createPerson(test, { role: Role.User, scope_id: scopeId, email_verified: 0 });
        expect((await send('verification-email', user.id, owner)).status).toBe(200);
        const reset = await send('password-reset', user.id, owner);
        expect(reset.body).toEqual({
          data: null,
          messages: ['Password reset email sent.'],
          errors: [],
          success: true,
        });
        const kinds = (await linksOf(test, user.id)).map((link) => link.kind).sort();
        expect(kinds).toEqual(['password-reset', 'verification']);
        await sink.waitForMail(user.email, 2);
        const budget = await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', user.id)
          .execute();
        expect(budget).toEqual([]);
        // The person's own budget is untouched: their resend still goes through.
        expect((await resend(user)).status).not.toBe(429);
      });

      it('refuses a Scope Admin for a person outside their scopes, whether or not the person exists', async () => {
        const otherScope = await createScope(test, [admin.id]);
        const stranger = await createPerson(test, {
          role: Role.User,
          scope_id: otherScope.id,
          email_verified: 0,
        });
        const coAdministrator = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        for (const personId of [stranger.id, coAdministrator.id, '00000000-0000-4000-8000-000000000000']) {
          for (const kind of ['verification-email', 'password-reset'] as const) {
            expectRefusal(
              await send(kind, personId, owner),
              403,
              'You are not an owner of the target scope.',
            );
          }
        }
        expect(await linksOf(test, stranger.id)).toEqual([]);
        expect(await linksOf(test, coAdministrator.id)).toEqual([]);
      });

      it('refuses a User with 403 and answers a missing person with 404', async () => {
        const user = await createPerson(test, { role: Role.User, scope_id: scopeId });
        expectRefusal(
          await send('password-reset', user.id, user),
          403,
          'You do not have permission to access this resource.',
        );
        expectRefusal(
          await send('password-reset', '00000000-0000-4000-8000-000000000000', admin),
          404,
          'Person not found.',
        );
        expectRefusal(
          await post(test, '/api/persons/not-a-guid/password-reset', undefined, await tokenOf(admin)),
          400,
          'The request is malformed.',
        );
      });

      it('refuses a deleted or restricted person with 409 and mails nothing', async () => {
        const deleted = await createPerson(test, { role: Role.User, scope_id: scopeId, email_verified: 0 });
        const restricted = await createPerson(test, {
          role: Role.User,
          scope_id: scopeId,
          email_verified: 0,
        });
        const now = test.clock.now().toISOString();
        await test.services.db
          .updateTable('persons')
          .set({ deleted_at: now })
          .where('id', '=', deleted.id)
          .execute();
        await test.services.db
          .updateTable('persons')
          .set({ restricted_at: now })
          .where('id', '=', restricted.id)
          .execute();
        for (const person of [deleted, restricted]) {
          for (const kind of ['verification-email', 'password-reset'] as const) {
            expectRefusal(
              await send(kind, person.id, admin),
              409,
              'The person is deleted, restricted or cannot sign in, so no email was sent.',
            );
          }
          expect(await linksOf(test, person.id)).toEqual([]);
        }
      });

      it('refuses a verification email to a verified address with 400', async () => {
        const person = await createPerson(test, { role: Role.User, scope_id: scopeId, email_verified: 1 });
        expectRefusal(
          await send('verification-email', person.id, admin),
          400,
          'The email address is already verified.',
        );
        expect(await linksOf(test, person.id)).toEqual([]);
      });

      it('sends one mail per kind per person per cooldown (429 with Retry-After)', async () => {
        const person = await createPerson(test, { role: Role.User, scope_id: scopeId, email_verified: 0 });
        expect((await send('password-reset', person.id, admin)).status).toBe(200);
        test.clock.advanceSeconds(60);
        const refused = await send('password-reset', person.id, owner);
        expectRefusal(refused, 429, ADMINISTRATOR_COOLDOWN_MESSAGE);
        expect(refused.headers['retry-after']).toBe('240');
        // The other kind has its own cooldown.
        expect((await send('verification-email', person.id, admin)).status).toBe(200);
        expect(await linksOf(test, person.id)).toHaveLength(2);
        test.clock.advanceSeconds(240);
        expect((await send('password-reset', person.id, admin)).status).toBe(200);
        const failures = (await auditEntries(test, 'SendPasswordResetEmailCommand')).filter(
          (entry) => entry.target_id === person.id && entry.succeeded === 0,
        );
        expect(failures.map((entry) => entry.failure_reason)).toEqual([ADMINISTRATOR_COOLDOWN_MESSAGE]);
      });
    });
  });
}
