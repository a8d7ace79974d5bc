import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, personCount } from '../helpers/factories.ts';

const TOO_MANY = { data: null, messages: [], errors: ['Too many requests.'], success: false };

/**
 * Threat: a compromised administrator token (or one address) mass-creating accounts, each costing
 * an Argon2 hash. Person creation is limited to 30 a minute per acting administrator and 30 per
 * address (spec §Limits). Refused requests still count, so the budgets are spent here cheaply
 * with bodies that fail binding.
 */
for (const dialect of DIALECTS) {
  describe(`person creation rate limits (${dialect})`, () => {
    let test: TestApp;

    beforeAll(async () => {
      test = await buildTestApp(dialect, { redis: true });
    });
    afterAll(() => test.close());

    const create = (token: string, url: string, remoteAddress: string, body: unknown = {}) =>
      test.request({ method: 'POST', url, token, remoteAddress, body });
    const validBody = (tag: string) => ({
      name: 'Limited',
      email: `limited-${tag}@example.test`,
      password: 'a perfectly fine passphrase',
      role: 'ScopeAdmin',
    });

    it('refuses the 31st creation in a minute by one administrator, from any address', async () => {
      const admin = await createSystemAdmin(test);
      for (let index = 0; index < 30; index++) {
        expect((await create(admin.token, '/api/persons', `10.60.0.${index + 1}`)).status).toBe(400);
      }
      const before = await personCount(test);
      const refused = await create(admin.token, '/api/persons', '10.60.1.1', validBody('actor'));
      expect([refused.status, refused.body]).toEqual([429, TOO_MANY]);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await personCount(test)).toBe(before);
    });

    it('refuses the 31st creation in a minute from one address, across administrators and routes', async () => {
      const first = await createSystemAdmin(test);
      const second = await createSystemAdmin(test);
      const scope = await createScope(test, [first.id, second.id]);
      for (let index = 0; index < 10; index++) {
        expect((await create(first.token, '/api/persons', '10.61.0.1')).status).toBe(400);
        expect((await create(second.token, `/api/scopes/${scope.id}/persons`, '10.61.0.1')).status).toBe(400);
        expect((await create(second.token, `/api/scopes/${scope.id}/owners`, '10.61.0.1')).status).toBe(400);
      }
      const before = await personCount(test);
      const refused = await create(
        first.token,
        `/api/scopes/${scope.id}/owners`,
        '10.61.0.1',
        validBody('address'),
      );
      expect([refused.status, refused.body]).toEqual([429, TOO_MANY]);
      expect(await personCount(test)).toBe(before);
      // Another address and a fresh administrator are not affected.
      const third = await createSystemAdmin(test);
      expect((await create(third.token, '/api/persons', '10.61.0.2', validBody('elsewhere'))).status).toBe(
        200,
      );
    });

    it('puts PUT /api/persons/{id} under the credential rate limit', async () => {
      const admin = await createSystemAdmin(test);
      const body = { name: 'Renamed', email: admin.email };
      for (let index = 0; index < 10; index++) {
        const answer = await test.request({
          method: 'PUT',
          url: `/api/persons/${admin.id}`,
          token: admin.token,
          remoteAddress: '10.62.0.1',
          body,
        });
        expect(answer.status).toBe(200);
      }
      const refused = await test.request({
        method: 'PUT',
        url: `/api/persons/${admin.id}`,
        token: admin.token,
        remoteAddress: '10.62.0.1',
        body: { name: 'Eleventh', email: admin.email },
      });
      expect([refused.status, refused.body]).toEqual([429, TOO_MANY]);
    });
  });
}
