import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_SECRET, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';

/**
 * Unexpected failures (spec §Errors: 500 with a fixed message, never a developer exception page;
 * diagnostics only on a loopback instance that allows them) and unknown routes.
 */

const INTERNAL_ERROR = 'Internal server error, please try again later';

/** A test app with a scope whose scope_owners table has gone, so listing scopes fails unexpectedly. */
async function brokenApp(dialect: (typeof DIALECTS)[number], env: Record<string, string> = {}) {
  const test = await buildTestApp(dialect, { env });
  const admin = await createSystemAdmin(test);
  await createScope(test, [admin.id]);
  await sql`drop table scope_owners`.execute(test.services.db);
  return { test, admin };
}

const listScopes = (test: TestApp, admin: PersonFixture) =>
  test.request({ method: 'GET', url: '/api/scopes', token: admin.token });

for (const dialect of DIALECTS) {
  describe(`unexpected failures (${dialect})`, () => {
    it('answer 500 with the fixed message and no exception text', async () => {
      const { test, admin } = await brokenApp(dialect);
      try {
        const response = await listScopes(test, admin);
        expect(response.status).toBe(500);
        expect(response.body).toEqual({ data: null, messages: [], errors: [INTERNAL_ERROR], success: false });
        expect(JSON.stringify(response.body)).not.toContain('scope_owners');
        expect(response.headers['content-type']).toContain('application/json');
      } finally {
        await test.close();
      }
    });

    it('add diagnostic text when sensitive diagnostics are allowed on a loopback host', async () => {
      const { test, admin } = await brokenApp(dialect, {
        SERVICE_ALLOW_SENSITIVE_DIAGNOSTICS: 'true',
        SERVICE_HOST: '127.0.0.1',
      });
      try {
        const response = await listScopes(test, admin);
        expect(response.status).toBe(500);
        expect(response.body.success).toBe(false);
        expect(response.body.errors[0]).toBe(INTERNAL_ERROR);
        expect(response.body.errors).toHaveLength(2);
        expect(response.body.errors[1]).toContain('scope_owners');
        // Diagnostics explain the failure; they still never carry the signing secret.
        expect(JSON.stringify(response.body)).not.toContain(TEST_SECRET);
      } finally {
        await test.close();
      }
    });

    it('never add diagnostic text on a public host, even when allowed', async () => {
      const { test, admin } = await brokenApp(dialect, {
        SERVICE_ALLOW_SENSITIVE_DIAGNOSTICS: 'true',
        SERVICE_HOST: '0.0.0.0',
      });
      try {
        const response = await listScopes(test, admin);
        expect(response.status).toBe(500);
        expect(response.body).toEqual({ data: null, messages: [], errors: [INTERNAL_ERROR], success: false });
      } finally {
        await test.close();
      }
    });

    it('never add diagnostic text on a loopback host unless allowed', async () => {
      const { test, admin } = await brokenApp(dialect, { SERVICE_HOST: '127.0.0.1' });
      try {
        const response = await listScopes(test, admin);
        expect(response.status).toBe(500);
        expect(response.body).toEqual({ data: null, messages: [], errors: [INTERNAL_ERROR], success: false });
      } finally {
        await test.close();
      }
    });
  });

  describe(`unknown routes (${dialect})`, () => {
    let test: TestApp;
    beforeAll(async () => {
      test = await buildTestApp(dialect);
    });
    afterAll(() => test.close());

    for (const [method, url] of [
      ['GET', '/api/no-such-thing'],
      ['POST', '/api/scopes/extra/segments/here'],
      ['PATCH', '/api/scopes'],
      ['GET', '/'],
    ] as const) {
      it(`answer ${method} ${url} with the 404 envelope`, async () => {
        const response = await test.request({ method, url });
        expect(response.status).toBe(404);
        expect(response.body).toEqual({ data: null, messages: [], errors: ['Not found.'], success: false });
      });
    }
  });
}
