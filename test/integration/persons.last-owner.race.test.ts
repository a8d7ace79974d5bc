import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  ownerIdsOf,
  type PersonFixture,
  personRow,
} from '../helpers/factories.ts';

const LAST_OWNER = 'This change would leave a scope without an owner. Add another owner first.';

/**
 * Threat: two administrators each remove (or delete) one of a scope's two owners at the same
 * moment; if both checks counted the other owner still present, the scope would be left with
 * none. Exactly one of each pair must succeed and the other answer 409.
 */
for (const dialect of DIALECTS) {
  describe(`last owner under concurrent removals (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const expectOneWinner = (statuses: number[], bodies: Array<{ errors: string[] }>) => {
      expect(statuses.sort()).toEqual([200, 409]);
      expect(bodies.flatMap((body) => body.errors)).toEqual([LAST_OWNER]);
    };

    it('two parallel owner removals leave one owner', async () => {
      for (let round = 0; round < 5; round++) {
        const first = await createScopeAdmin(test);
        const second = await createScopeAdmin(test);
        const scope = await createScope(test, [first.id, second.id]);
        const answers = await Promise.all(
          [first, second].map((owner) =>
            test.request({
              method: 'DELETE',
              url: `/api/scopes/${scope.id}/owners/${owner.id}`,
              token: admin.token,
            }),
          ),
        );
        expectOneWinner(
          answers.map((answer) => answer.status),
          answers.map((answer) => answer.body),
        );
        expect(await ownerIdsOf(test, scope.id)).toHaveLength(1);
      }
    });

    it('two parallel person deletions (logical and hard) leave one owner', async () => {
      for (let round = 0; round < 5; round++) {
        const first = await createScopeAdmin(test);
        const second = await createSystemAdmin(test);
        const scope = await createScope(test, [first.id, second.id]);
        const answers = await Promise.all([
          test.request({ method: 'DELETE', url: `/api/persons/${first.id}`, token: admin.token }),
          test.request({ method: 'DELETE', url: `/api/persons/${second.id}/hard`, token: admin.token }),
        ]);
        expectOneWinner(
          answers.map((answer) => answer.status),
          answers.map((answer) => answer.body),
        );
        const owners = await ownerIdsOf(test, scope.id);
        expect(owners).toHaveLength(1);
        const survivor = await personRow(test, owners[0] ?? '');
        expect(survivor?.deleted_at).toBeNull();
      }
    });
  });
}
