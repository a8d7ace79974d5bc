import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createSystemAdmin,
  createUser,
  PASSWORD,
  personRow,
} from '../helpers/factories.ts';
import { postAs } from '../helpers/subject-rights.ts';

/** Concurrent requests of the same subject: the conditional writes let exactly one through. */
for (const dialect of DIALECTS) {
  describe(`data-subject rights under concurrent requests (${dialect})`, () => {
    let test: TestApp;
    let scopeId: string;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      const admin = await createSystemAdmin(test);
      scopeId = (await createScope(test, [admin.id])).id;
    });
    afterAll(() => test.close());

    it('restricts once of five simultaneous restrictions; the others are 409', async () => {
      const user = await createUser(test, scopeId);
      const responses = await Promise.all(
        Array.from({ length: 5 }, (_, index) =>
          postAs(test, '/api/auth/processing-restriction', user.token, { ground: `ground ${index}` }),
        ),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 409, 409, 409, 409]);
      const winner = responses.find((response) => response.status === 200)!;
      expect(await personRow(test, user.id)).toMatchObject({ restriction_ground: winner.body.data.ground });
    });

    it('records one erasure request of three simultaneous ones; the others are 409', async () => {
      const user = await createUser(test, scopeId);
      const responses = await Promise.all(
        Array.from({ length: 3 }, () =>
          postAs(test, '/api/auth/erasure-request', user.token, { currentPassword: PASSWORD }),
        ),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 409, 409]);
      const entries = (await auditEntries(test, 'RequestErasureCommand')).filter(
        (entry) => entry.target_id === user.id,
      );
      expect(entries.map((entry) => entry.succeeded).sort()).toEqual([0, 0, 1]);
      expect((await personRow(test, user.id))!.erasure_requested_at).not.toBeNull();
    });
  });
}
