import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  createScope,
  createSystemAdmin,
  PASSWORD,
  type PersonFixture,
  tokenFor,
} from '../helpers/factories.ts';
import { linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

/** The account mails that person operations trigger (spec §Events), received by a real SMTP server. */
for (const dialect of DIALECTS) {
  describe(`person operations mail the account owner (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let admin: PersonFixture;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        env: {
          SERVICE_SMTP_URL: sink.url,
          SERVICE_EMAIL_VERIFICATION_URL: 'https://app.example.test/verify',
        },
      });
      admin = await createSystemAdmin(test);
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    const personRow = (id: string) =>
      test.services.db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('mails a verification link on creation; an email change retires it and notifies the previous address', async () => {
      const scope = await createScope(test, [admin.id]);
      const email = `new-user-${Date.now()}@example.test`;
      const created = await test.request({
        method: 'POST',
        url: `/api/scopes/${scope.id}/persons`,
        token: admin.token,
        body: { name: 'New User', email, password: 'a long enough passphrase' },
      });
      expect(created.status).toBe(200);
      const personId = created.body.data.id as string;
      const verificationToken = linkTokenOf(await sink.waitForMail(email));

      const newEmail = `changed-${Date.now()}@example.test`;
      const changed = await test.request({
        method: 'PUT',
        url: `/api/persons/${personId}`,
        token: admin.token,
        body: { name: 'New User', email: newEmail },
      });
      expect(changed.status).toBe(200);
      expect(changed.body.data.emailVerified).toBe(false);
      const notice = await sink.waitForMail(email, 2);
      // The notice names neither the new address nor any link.
      expect(notice.text).not.toContain(newEmail);
      expect(notice.text).not.toMatch(/token=/);

      const stale = await test.request({
        method: 'POST',
        url: '/api/auth/verify-email',
        body: { token: verificationToken },
      });
      expect(stale.status).toBe(400);
      expect(stale.body.errors).toEqual(['Token already used.']);
      expect((await personRow(personId)).email_verified).toBe(0);
    });

    it('charges the person’s own email change to the account-email budget', async () => {
      const self = await createSystemAdmin(test);
      const change = (email: string) =>
        test.request({
          method: 'PUT',
          url: `/api/persons/${self.id}`,
          token: tokenFor(test, self.row),
          body: { name: self.row.name, email, currentPassword: PASSWORD },
        });
      const first = await change(`first-${Date.now()}@example.test`);
      expect(first.status).toBe(200);
      // The change replaced the stamp: sign the next request with the current one.
      self.row.security_stamp = (await personRow(self.id)).security_stamp;
      const before = await personRow(self.id);
      const second = await change(`second-${Date.now()}@example.test`);
      expect(second.status).toBe(429);
      expect(second.body.errors).toEqual([
        'An email of this kind was sent to you recently. Try again in a few minutes.',
      ]);
      expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
      // Refused: the address did not change.
      expect((await personRow(self.id)).email).toBe(before.email);
    });
  });
}
