import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { linksOf, post } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createPerson } from '../helpers/factories.ts';

const WINDOW_MESSAGE = 'You have reached the limit for account emails. Try again later.';

/**
 * Threat: a person (or a stolen token) fires many resend requests at once to get more than
 * five account emails a day out of the service. The window is reserved by one conditional
 * write, so however the requests interleave, at most five go through.
 */
for (const dialect of DIALECTS) {
  describe(`account-email window under concurrent requests (${dialect})`, () => {
    let test: TestApp;

    beforeAll(async () => {
      // Cooldown off, so only the window stands between the requests and the mailbox.
      test = await buildTestApp(dialect, { env: { SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS: '0' } });
    });
    afterAll(() => test.close());

    it('lets exactly five of twenty simultaneous resends through', async () => {
      const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
      const responses = await Promise.all(
        Array.from({ length: 20 }, () =>
          post(test, '/api/auth/resend-verification', undefined, person.token),
        ),
      );
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses.filter((status) => status === 200)).toHaveLength(5);
      expect(statuses.filter((status) => status === 429)).toHaveLength(15);
      for (const response of responses.filter((candidate) => candidate.status === 429)) {
        expect(response.body.errors).toEqual([WINDOW_MESSAGE]);
      }
      expect(await linksOf(test, person.id)).toHaveLength(5);
      const budget = await test.services.db
        .selectFrom('account_email_budgets')
        .selectAll()
        .where('person_id', '=', person.id)
        .executeTakeFirstOrThrow();
      expect(budget.window_count).toBe(5);
    });
  });
}
