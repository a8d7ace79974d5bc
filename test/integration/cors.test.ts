import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin } from '../helpers/factories.ts';

/** Cross-origin access (spec §Authentication 15): listed origins only; Retry-After exposed to them. */

const ALLOWED_ORIGIN = 'https://app.example.test';
const OTHER_ALLOWED_ORIGIN = 'http://localhost:5173';
const UNLISTED_ORIGIN = 'https://evil.example.test';

const exposedHeaders = (value: unknown): string[] =>
  String(value ?? '')
    .split(',')
    .map((header) => header.trim().toLowerCase());

for (const dialect of DIALECTS) {
  describe(`CORS (${dialect})`, () => {
    let test: TestApp;

    beforeAll(async () => {
      test = await buildTestApp(dialect, {
        env: { SERVICE_CORS_ALLOWED_ORIGINS: `${ALLOWED_ORIGIN}, ${OTHER_ALLOWED_ORIGIN}` },
      });
    });
    afterAll(() => test.close());

    it('allows a listed origin and exposes Retry-After to it', async () => {
      for (const origin of [ALLOWED_ORIGIN, OTHER_ALLOWED_ORIGIN]) {
        const response = await test.request({ method: 'GET', url: '/api/healthcheck', headers: { origin } });
        expect(response.status).toBe(200);
        expect(response.headers['access-control-allow-origin']).toBe(origin);
        expect(exposedHeaders(response.headers['access-control-expose-headers'])).toContain('retry-after');
      }
    });

    it('gives an unlisted origin no access', async () => {
      const response = await test.request({
        method: 'GET',
        url: '/api/healthcheck',
        headers: { origin: UNLISTED_ORIGIN },
      });
      // Without an allowed origin the browser hides the answer, whatever else is exposed.
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('answers a listed origin’s preflight for every method the API uses, with the Authorization header', async () => {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE']) {
        const response = await test.request({
          method: 'OPTIONS',
          url: '/api/scopes/00000000-0000-4000-8000-000000000000',
          headers: {
            origin: ALLOWED_ORIGIN,
            'access-control-request-method': method,
            'access-control-request-headers': 'authorization, content-type',
          },
        });
        expect(response.status).toBe(204);
        expect(response.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
        const methods = String(response.headers['access-control-allow-methods'])
          .split(',')
          .map((m) => m.trim());
        expect(methods).toContain(method);
        expect(String(response.headers['access-control-allow-headers']).toLowerCase()).toContain(
          'authorization',
        );
      }
    });

    it('gives an unlisted origin’s preflight no access', async () => {
      const response = await test.request({
        method: 'OPTIONS',
        url: '/api/scopes',
        headers: { origin: UNLISTED_ORIGIN, 'access-control-request-method': 'POST' },
      });
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('lets a listed origin read refusals too, including the Retry-After of a 429', async () => {
      const unauthenticated = await test.request({
        method: 'GET',
        url: '/api/scopes',
        headers: { origin: ALLOWED_ORIGIN },
      });
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);

      const attempt = () =>
        test.request({
          method: 'POST',
          url: '/api/auth/login',
          remoteAddress: '198.51.100.150',
          headers: { origin: ALLOWED_ORIGIN },
          body: { email: 'nobody@example.test', password: 'not the password' },
        });
      for (let index = 0; index < 10; index += 1) expect((await attempt()).status).toBe(401);
      const limited = await attempt();
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toBeDefined();
      expect(limited.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
      expect(exposedHeaders(limited.headers['access-control-expose-headers'])).toContain('retry-after');
    });

    it('serves a listed origin’s cross-origin write', async () => {
      const admin = await createSystemAdmin(test);
      const scope = await createScope(test, [admin.id]);
      const response = await test.request({
        method: 'PUT',
        url: `/api/scopes/${scope.id}`,
        token: admin.token,
        headers: { origin: ALLOWED_ORIGIN },
        body: { name: 'Renamed across origins' },
      });
      expect(response.status).toBe(200);
      expect(response.headers['access-control-allow-origin']).toBe(ALLOWED_ORIGIN);
    });
  });

  describe(`CORS without allowed origins (${dialect})`, () => {
    it('gives no origin access', async () => {
      const test = await buildTestApp(dialect);
      try {
        const response = await test.request({
          method: 'GET',
          url: '/api/healthcheck',
          headers: { origin: ALLOWED_ORIGIN },
        });
        expect(response.status).toBe(200);
        expect(response.headers['access-control-allow-origin']).toBeUndefined();
      } finally {
        await test.close();
      }
    });
  });
}
