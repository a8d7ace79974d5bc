import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, type PersonFixture } from '../helpers/factories.ts';

/**
 * Binding (spec §Errors "Binding rules", §Endpoints rule 2; DECISIONS §2): what a request must
 * look like before any handler sees it, and the order of authentication, role gate and binding.
 */

const MALFORMED = { data: null, messages: [], errors: ['The request is malformed.'], success: false };

for (const dialect of DIALECTS) {
  describe(`binding (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const scopeNamed = async (name: string) =>
      test.services.db.selectFrom('scopes').selectAll().where('name', '=', name).executeTakeFirst();

    /** Creates a scope with the raw payload and content type given. */
    const createScopeRaw = (payload: string, contentType: string, token: string | null = admin.token) =>
      test.request({
        method: 'POST',
        url: '/api/scopes',
        ...(token === null ? {} : { token }),
        headers: { 'content-type': contentType },
        body: payload,
      });

    describe('media types and JSON', () => {
      it('refuses a body that is not JSON (text/plain) as malformed and creates nothing', async () => {
        const payload = JSON.stringify({ name: 'Plain text scope', ownerIds: [admin.id] });
        const response = await createScopeRaw(payload, 'text/plain');
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
        expect(await scopeNamed('Plain text scope')).toBeUndefined();
      });

      it('refuses a form-encoded body as malformed', async () => {
        const response = await createScopeRaw('name=Form', 'application/x-www-form-urlencoded');
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
      });

      for (const contentType of ['application/json', 'text/json', 'application/json-patch+json']) {
        it(`refuses invalid JSON sent as ${contentType} as malformed`, async () => {
          const response = await createScopeRaw('{"name": "Broken", ', contentType);
          expect(response.status).toBe(400);
          expect(response.body).toEqual(MALFORMED);
          expect(await scopeNamed('Broken')).toBeUndefined();
        });
      }

      it('refuses an empty JSON body where one is required as malformed', async () => {
        const response = await createScopeRaw('', 'application/json');
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
      });

      it('refuses a JSON body that is not an object as malformed', async () => {
        const response = await createScopeRaw('["name"]', 'application/json');
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
      });

      for (const contentType of [
        'text/json',
        'application/vnd.portcullis+json',
        'application/json; charset=utf-8',
      ]) {
        it(`accepts a JSON body sent as ${contentType}`, async () => {
          const name = `Scope via ${contentType}`;
          const response = await createScopeRaw(JSON.stringify({ name, ownerIds: [admin.id] }), contentType);
          expect(response.status).toBe(200);
          expect(response.body.data.name).toBe(name);
          expect(await scopeNamed(name)).toBeDefined();
        });
      }

      it('refuses a body over the size limit as malformed', async () => {
        const payload = JSON.stringify({
          name: 'Huge',
          description: 'x'.repeat(70 * 1024),
          ownerIds: [admin.id],
        });
        const response = await createScopeRaw(payload, 'application/json');
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
        expect(await scopeNamed('Huge')).toBeUndefined();
      });
    });

    describe('keys and values', () => {
      it('matches body keys case-insensitively and ignores unknown keys', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { NAME: 'Shouting scope', DeScRiPtIoN: 'Mixed', OWNERIDS: [admin.id], isAdmin: true },
        });
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({ name: 'Shouting scope', description: 'Mixed' });
      });

      it('matches query parameter names case-insensitively', async () => {
        await createScope(test, [admin.id], { name: 'Query case zeta' });
        for (const query of [
          'name=case%20zeta&pagesize=1',
          'NAME=case%20zeta&PAGESIZE=1',
          'Name=case%20zeta&PageSize=1',
        ]) {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes?${query}`,
            token: admin.token,
          });
          expect(response.status).toBe(200);
          expect(response.body.pageSize).toBe(1);
          expect(response.body.data.map((scope: { name: string }) => scope.name)).toEqual([
            'Query case zeta',
          ]);
        }
      });

      it('refuses a wrong-typed body value as malformed, even when a required field is missing too', async () => {
        for (const body of [
          { name: 42, ownerIds: [admin.id] },
          { name: 'Typed', ownerIds: admin.id },
          { name: 'Typed', ownerIds: [42] },
          { ownerIds: 'not-a-list' },
        ]) {
          const response = await test.request({
            method: 'POST',
            url: '/api/scopes',
            token: admin.token,
            body,
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(MALFORMED);
        }
        expect(await scopeNamed('Typed')).toBeUndefined();
      });

      it('refuses a non-GUID owner id in the body as malformed', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'Bad owner id', ownerIds: ['not-a-guid'] },
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
        expect(await scopeNamed('Bad owner id')).toBeUndefined();
      });

      it('refuses a non-GUID value in a nullable GUID body field as malformed', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/auth/login',
          body: { email: admin.email, password: 'whatever-it-is', scopeId: 'not-a-guid' },
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
      });

      it('keeps the validator message for a missing required field', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { ownerIds: [admin.id] },
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          data: null,
          messages: [],
          errors: ['Name is required.'],
          success: false,
        });
      });

      it('refuses a wrong-typed boolean in a body (a string "true") as malformed', async () => {
        const scope = await createScope(test, [admin.id]);
        const response = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/self-registration`,
          token: admin.token,
          body: { enabled: 'true' },
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
        const stored = await test.services.db
          .selectFrom('scopes')
          .select('self_registration_enabled')
          .where('id', '=', scope.id)
          .executeTakeFirstOrThrow();
        expect(stored.self_registration_enabled).toBe(0);
      });
    });

    describe('query parameters', () => {
      for (const query of [
        'IncludeDeleted=1',
        'IncludeDeleted=',
        'IncludeDeleted=yes',
        'PageNumber=',
        'PageSize=abc',
      ]) {
        it(`refuses ${query} on a list endpoint with a DataOutput, not a page`, async () => {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes?${query}`,
            token: admin.token,
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(MALFORMED);
          expect(response.body).not.toHaveProperty('pageNumber');
        });
      }

      it('answers a pagination constraint with its own message, as a DataOutput', async () => {
        const response = await test.request({
          method: 'GET',
          url: '/api/scopes?PageSize=101',
          token: admin.token,
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          data: null,
          messages: [],
          errors: ['Page size must be between 1 and 100.'],
          success: false,
        });
      });

      it('binds an empty nullable filter to null and ignores it', async () => {
        const response = await test.request({ method: 'GET', url: '/api/scopes?Name=', token: admin.token });
        expect(response.status).toBe(200);
        expect(response.body.pageNumber).toBe(1);
      });

      it('refuses a repeated single-valued parameter as malformed', async () => {
        const response = await test.request({
          method: 'GET',
          url: '/api/scopes?PageSize=1&PageSize=2',
          token: admin.token,
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual(MALFORMED);
      });
    });

    describe('path parameters', () => {
      for (const id of ['not-a-guid', '12345', `${randomUUID()}x`]) {
        it(`refuses the path id ${id} as malformed`, async () => {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes/${id}`,
            token: admin.token,
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(MALFORMED);
        });
      }

      it('reads a GUID path id in upper case', async () => {
        const scope = await createScope(test, [admin.id]);
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id.toUpperCase()}`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.data.id).toBe(scope.id);
      });
    });

    describe('order: authentication, then role, then binding', () => {
      it('answers a malformed body without a token with 401', async () => {
        const response = await createScopeRaw('{not json', 'application/json', null);
        expect(response.status).toBe(401);
        expect(response.body.errors).toEqual(['Invalid token']);
      });

      it('answers a non-JSON body without a token with 401', async () => {
        const response = await createScopeRaw('hello', 'text/plain', null);
        expect(response.status).toBe(401);
        expect(response.body.errors).toEqual(['Invalid token']);
      });

      it('answers a malformed body from a User on an admin route with 403', async () => {
        const user = await createUser(test, (await createScope(test, [admin.id])).id);
        const response = await createScopeRaw('{not json', 'application/json', user.token);
        expect(response.status).toBe(403);
        expect(response.body.errors).toEqual(['You do not have permission to access this resource.']);
      });

      it('answers a non-GUID path id from a User on an admin route with 403', async () => {
        const user = await createUser(test, (await createScope(test, [admin.id])).id);
        const response = await test.request({
          method: 'DELETE',
          url: '/api/scopes/not-a-guid',
          token: user.token,
        });
        expect(response.status).toBe(403);
      });

      it('answers a bad query from a User on an admin list route with 403', async () => {
        const user = await createUser(test, (await createScope(test, [admin.id])).id);
        const response = await test.request({
          method: 'GET',
          url: '/api/scopes?PageSize=abc',
          token: user.token,
        });
        expect(response.status).toBe(403);
      });
    });
  });
}
