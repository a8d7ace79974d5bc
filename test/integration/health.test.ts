import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS, TEST_REDIS_URL } from '../helpers/dialects.ts';
import { createScopeAdmin, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';

/** Liveness and the detailed report (spec §Health; DECISIONS §5 "Health"). */

const DETAILED_PATHS = ['/api/healthcheck/detailed', '/healthcheck/detailed'] as const;

for (const dialect of DIALECTS) {
  describe(`health (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    for (const url of ['/api/healthcheck', '/healthcheck']) {
      it(`answers liveness at ${url} anonymously with its own report`, async () => {
        const response = await test.request({ method: 'GET', url });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({ status: 'Healthy' });
      });
    }

    for (const url of DETAILED_PATHS) {
      it(`refuses ${url} without a token with 401`, async () => {
        const response = await test.request({ method: 'GET', url });
        expect(response.status).toBe(401);
        expect(response.body).toEqual({
          data: null,
          messages: [],
          errors: ['Invalid token'],
          success: false,
        });
      });

      it(`refuses ${url} to a Scope Admin with 403`, async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const response = await test.request({ method: 'GET', url, token: scopeAdmin.token });
        expect(response.status).toBe(403);
        expect(response.body).toEqual({
          data: null,
          messages: [],
          errors: ['You do not have permission to access this resource.'],
          success: false,
        });
      });

      it(`reports every dependency at ${url} to a System Admin`, async () => {
        const response = await test.request({ method: 'GET', url, token: admin.token });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          status: 'Healthy',
          checks: [{ name: 'database', status: 'Healthy', durationMs: expect.any(Number) }],
        });
      });
    }
  });

  describe.skipIf(TEST_REDIS_URL === null)(`health with a shared rate-limit store (${dialect})`, () => {
    it('reports the rate-limit store alongside the database', async () => {
      const test = await buildTestApp(dialect, { redis: true });
      try {
        const admin = await createSystemAdmin(test);
        const response = await test.request({
          method: 'GET',
          url: '/api/healthcheck/detailed',
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          status: 'Healthy',
          checks: [
            { name: 'database', status: 'Healthy', durationMs: expect.any(Number) },
            { name: 'rateLimitStore', status: 'Healthy', durationMs: expect.any(Number) },
          ],
        });
      } finally {
        await test.close();
      }
    });
  });

  describe(`health when the database is down (${dialect})`, () => {
    it('answers 503 Unhealthy to a System Admin, and liveness stays Healthy', async () => {
      const test = await buildTestApp(dialect);
      try {
        const admin = await createSystemAdmin(test);
        await test.services.database.close();
        const live = await test.request({ method: 'GET', url: '/api/healthcheck' });
        expect(live.status).toBe(200);
        expect(live.body).toEqual({ status: 'Healthy' });
        const response = await test.request({
          method: 'GET',
          url: '/api/healthcheck/detailed',
          token: admin.token,
        });
        expect(response.status).toBe(503);
        expect(response.body).toEqual({
          status: 'Unhealthy',
          checks: [{ name: 'database', status: 'Unhealthy', durationMs: expect.any(Number) }],
        });
      } finally {
        await test.close();
      }
    });

    it('still refuses other callers while the database is down, and admits nobody elsewhere on a signed role', async () => {
      const test = await buildTestApp(dialect);
      try {
        const admin = await createSystemAdmin(test);
        const scopeAdmin = await createScopeAdmin(test);
        await test.services.database.close();
        const url = '/api/healthcheck/detailed';
        const anonymous = await test.request({ method: 'GET', url });
        expect(anonymous.status).toBe(401);
        expect(anonymous.body.errors).toEqual(['Invalid token']);
        const forged = await test.request({ method: 'GET', url, token: `${admin.token.slice(0, -4)}AAAA` });
        expect(forged.status).toBe(401);
        expect(forged.body.errors).toEqual(['Invalid token']);
        const notAnAdmin = await test.request({ method: 'GET', url, token: scopeAdmin.token });
        expect(notAnAdmin.status).toBe(403);
        expect(notAnAdmin.body.errors).toEqual(['You do not have permission to access this resource.']);
        // Any other route cannot check the identity, so it fails rather than trusting the token.
        const elsewhere = await test.request({ method: 'GET', url: '/api/scopes', token: admin.token });
        expect(elsewhere.status).toBe(500);
        expect(elsewhere.body.errors).toEqual(['Internal server error, please try again later']);
      } finally {
        await test.close();
      }
    });
  });
}
