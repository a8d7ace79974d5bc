import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';
import { createApplication } from './applications.fixtures.ts';

/**
 * Threat: a client (or two administrators at once) fires issue requests in parallel, hoping each
 * sees fewer than two live credentials and a third slips in. The limit must hold under races.
 */
for (const dialect of DIALECTS) {
  describe(`credential limit under parallel issue requests (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    it('never lets parallel requests create a third live credential', async () => {
      for (let round = 0; round < 5; round += 1) {
        const scope = await createScope(test, [admin.id]);
        const application = await createApplication(test, scope.id, admin.id);
        const url = `/api/scopes/${scope.id}/applications/${application.id}/credentials`;
        const answers = await Promise.all(
          Array.from({ length: 12 }, () => test.request({ method: 'POST', url, token: admin.token })),
        );
        const statuses = answers.map((answer) => answer.status).sort();
        expect(statuses.filter((status) => status === 200)).toHaveLength(2);
        expect(statuses.filter((status) => status === 409)).toHaveLength(10);
        const stored = await test.services.db
          .selectFrom('application_credentials')
          .select('id')
          .where('application_id', '=', application.id)
          .execute();
        expect(stored).toHaveLength(2);
      }
    });
  });
}
