import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  createScope,
  createSystemAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
} from '../helpers/factories.ts';

/** Spec What the service does 7: flagged, live permission names of the scope reach sign-in tokens. */
for (const dialect of DIALECTS) {
  describe(`permission claims in sign-in tokens (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const createPermission = async (scopeId: string, name: string, includeAsJwtClaim: boolean) => {
      const response = await test.request({
        method: 'POST',
        url: `/api/scopes/${scopeId}/permissions`,
        token: admin.token,
        body: { name, includeAsJwtClaim },
      });
      expect(response.status).toBe(200);
      return response.body.data.id as string;
    };
    const login = async (body: Record<string, unknown>) => {
      const response = await test.request({ method: 'POST', url: '/api/auth/login', body });
      expect(response.status).toBe(200);
      return decodeJwt(response.body.data.token as string);
    };

    it('puts the live flagged names of the User’s scope in the token, and none in an administrator’s', async () => {
      const scope = await createScope(test, [admin.id]);
      const other = await createScope(test, [admin.id]);
      await createPermission(scope.id, 'orders:write', true);
      await createPermission(scope.id, 'orders:read', true);
      await createPermission(scope.id, 'reports:view', false);
      const deleted = await createPermission(scope.id, 'legacy:admin', true);
      await createPermission(other.id, 'elsewhere:all', true);
      const removal = await test.request({
        method: 'DELETE',
        url: `/api/scopes/${scope.id}/permissions/${deleted}`,
        token: admin.token,
      });
      expect(removal.status).toBe(200);

      const user = await createUser(test, scope.id);
      const userClaims = await login({ email: user.email, password: PASSWORD, scopeId: scope.id });
      expect(userClaims.permissions).toEqual(['orders:read', 'orders:write']);
      expect(userClaims.scopeId).toBe(scope.id);

      const adminClaims = await login({ email: admin.email, password: PASSWORD });
      expect(adminClaims.permissions).toBeUndefined();
    });

    it('omits the claim when the scope flags none', async () => {
      const scope = await createScope(test, [admin.id]);
      await createPermission(scope.id, 'not:flagged', false);
      const user = await createUser(test, scope.id);
      const claims = await login({ email: user.email, password: PASSWORD, scopeId: scope.id });
      expect(claims.permissions).toBeUndefined();
    });
  });
}
