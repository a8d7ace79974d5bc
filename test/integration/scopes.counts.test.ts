import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';

/**
 * The unfiltered scope list answers totalRecords from counts the database keeps (migration
 * 0010), not from a scan: they must stay exact through every kind of write, the API's and
 * direct ones alike.
 */
for (const dialect of DIALECTS) {
  describe(`scope list totals (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const listedTotal = async (query = '') => {
      const listed = await test.request({
        method: 'GET',
        url: `/api/scopes?PageSize=1${query}`,
        token: admin.token,
      });
      expect(listed.status).toBe(200);
      return listed.body.totalRecords as number;
    };
    const counted = async () => {
      const scopes = await test.services.db.selectFrom('scopes').select(['deleted_at']).execute();
      return { all: scopes.length, live: scopes.filter((scope) => scope.deleted_at === null).length };
    };
    const expectTotalsExact = async () => {
      const { all, live } = await counted();
      expect(await listedTotal()).toBe(live);
      expect(await listedTotal('&IncludeDeleted=true')).toBe(all);
    };

    it('stay exact through creation, logical and hard deletion, by the API and directly', async () => {
      await expectTotalsExact();
      const viaApi = [];
      for (const name of ['Counted one', 'Counted two', 'Counted three']) {
        const created = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name, ownerIds: [admin.id] },
        });
        expect(created.status).toBe(200);
        viaApi.push(created.body.data.id as string);
      }
      const direct = await createScope(test, [admin.id]);
      await expectTotalsExact();
      expect(await listedTotal()).toBe((await counted()).live);

      const deleted = await test.request({
        method: 'DELETE',
        url: `/api/scopes/${viaApi[0]}`,
        token: admin.token,
      });
      expect(deleted.status).toBe(200);
      await expectTotalsExact();
      // Hard delete of a logically deleted scope and of a live one.
      for (const id of [viaApi[0], direct.id]) {
        const removed = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${id}/hard`,
          token: admin.token,
        });
        expect(removed.status).toBe(200);
      }
      await expectTotalsExact();
      // A refused creation (duplicate name) rolls back and counts nothing.
      const duplicate = await test.request({
        method: 'POST',
        url: '/api/scopes',
        token: admin.token,
        body: { name: 'Counted two', ownerIds: [admin.id] },
      });
      expect(duplicate.status).toBe(409);
      await expectTotalsExact();
      // A filtered list still counts what matches.
      expect(await listedTotal('&Name=counted')).toBe(2);
    });
  });
}
