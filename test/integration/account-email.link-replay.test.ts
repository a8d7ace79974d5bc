import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { linksOf, personRow, post } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createPerson, createSystemAdmin } from '../helpers/factories.ts';
import { linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

/**
 * Threat: whoever holds a reset link (an intercepted mail, a shared inbox) replays it in
 * parallel with its owner, hoping two resets both go through and the last one wins. A link is
 * spent by one conditional write, so exactly one request succeeds.
 */
for (const dialect of DIALECTS) {
  describe(`reset link replayed concurrently (${dialect})`, () => {
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

    it('lets exactly one of several simultaneous resets with the same link through', async () => {
      const admin = await createSystemAdmin(test);
      const person = await createPerson(test, { role: Role.ScopeAdmin });
      expect(
        (await post(test, `/api/persons/${person.id}/password-reset`, undefined, admin.token)).status,
      ).toBe(200);
      const token = linkTokenOf(await sink.waitForMail(person.email));

      const passwords = ['first new passphrase', 'second new passphrase', 'third new passphrase'];
      const responses = await Promise.all(
        passwords.map((newPassword) => post(test, '/api/auth/password-reset', { token, newPassword })),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 400, 400]);
      for (const response of responses.filter((candidate) => candidate.status === 400)) {
        expect(response.body.errors).toEqual(['Token already used.']);
      }
      const winner = passwords[responses.findIndex((response) => response.status === 200)]!;
      const signIn = await post(test, '/api/auth/login', { email: person.email, password: winner });
      expect(signIn.status).toBe(200);
      expect((await linksOf(test, person.id)).map((link) => link.spent_at !== null)).toEqual([true]);
      expect((await personRow(test, person.id)).security_stamp).not.toBe(person.row.security_stamp);
    });
  });
}
