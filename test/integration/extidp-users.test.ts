import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { allExtidpUsers, idTokenNow, refusal, signInWithExtidp } from '../helpers/extidp.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';
import { TestIdentityProvider } from '../helpers/identity-provider.ts';

const NOT_FOUND = 'External-provider user not found.';
const NOT_ALLOWED_TO_VIEW = 'You are not allowed to view this external-provider user.';
const NO_PERMISSION = 'You do not have permission to access this resource.';
const NOT_OWNER = 'You are not an owner of the target scope.';
const NO_LONGER_VALID = 'This token is no longer valid. Sign in again.';

interface ExtidpFixture {
  readonly id: string;
  readonly token: string;
  readonly subject: string;
}

for (const dialect of DIALECTS) {
  describe(`external-provider users (${dialect})`, () => {
    let provider: TestIdentityProvider;
    let test: TestApp;
    let admin: PersonFixture;
    let owner: PersonFixture;
    let stranger: PersonFixture;
    let scopeId: string;
    let otherScopeId: string;

    beforeAll(async () => {
      provider = await TestIdentityProvider.start();
      test = await buildTestApp(dialect, { env: provider.environment() });
      admin = await createSystemAdmin(test);
      owner = await createScopeAdmin(test);
      stranger = await createScopeAdmin(test);
      scopeId = (await createScope(test, [owner.id], { extidp_signin_enabled: 1 })).id;
      otherScopeId = (await createScope(test, [stranger.id], { extidp_signin_enabled: 1 })).id;
    });
    afterAll(async () => {
      await test.close();
      await provider.close();
    });

    /** A new external-provider user, made the real way: a first sign-in with a provider token. */
    async function signUp(inScope = scopeId, name = 'Extidp Person'): Promise<ExtidpFixture> {
      const subject = `subject-${Math.random().toString(36).slice(2)}`;
      const response = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { claims: { sub: subject, name } }),
        scopeId: inScope,
      });
      expect(response.status).toBe(200);
      const token: string = response.body.data.token;
      const id = test.services.tokens.readBearer(token)!.claims.sub;
      return { id, token, subject };
    }

    const usersUrl = (inScope: string) => `/api/scopes/${inScope}/extidp-users`;
    const userUrl = (inScope: string, id: string) => `${usersUrl(inScope)}/${id}`;
    const rowOf = (id: string) =>
      test.services.db.selectFrom('extidp_users').selectAll().where('id', '=', id).executeTakeFirst();

    describe('GET list', () => {
      it('lists the scope’s users by name for a System Admin and an owner, with paging and includeDeleted', async () => {
        const listScope = (await createScope(test, [owner.id], { extidp_signin_enabled: 1 })).id;
        const zed = await signUp(listScope, 'Zed');
        const amy = await signUp(listScope, 'Amy');
        const mia = await signUp(listScope, 'Mia');
        await signUp(otherScopeId, 'Elsewhere');
        await test.request({ method: 'DELETE', url: userUrl(listScope, mia.id), token: owner.token });

        for (const caller of [admin, owner]) {
          const response = await test.request({
            method: 'GET',
            url: usersUrl(listScope),
            token: caller.token,
          });
          expect(response.status).toBe(200);
          expect(response.body).toMatchObject({
            pageNumber: 1,
            pageSize: 100,
            totalRecords: 2,
            success: true,
            messages: ['External-provider users retrieved successfully.'],
          });
          expect(response.body.data.map((user: { id: string }) => user.id)).toEqual([amy.id, zed.id]);
          expect(response.body.data[0]).toEqual({
            id: amy.id,
            subject: amy.subject,
            name: 'Amy',
            email: expect.stringMatching(/@example\.test$/),
            emailVerified: true,
            pictureUrl: 'https://pictures.example.test/me.png',
            scopeId: listScope,
            isDeleted: false,
            createdAt: expect.any(String),
            updatedAt: expect.any(String),
          });
        }

        const withDeleted = await test.request({
          method: 'GET',
          url: `${usersUrl(listScope)}?includeDeleted=true&PageSize=2&PageNumber=2`,
          token: owner.token,
        });
        expect(withDeleted.status).toBe(200);
        expect(withDeleted.body).toMatchObject({ pageNumber: 2, pageSize: 2, totalRecords: 3 });
        expect(withDeleted.body.data).toEqual([expect.objectContaining({ id: zed.id, isDeleted: false })]);
      });

      it('refuses a Scope Admin who does not own the scope, a User and an external-provider user', async () => {
        const user = await createUser(test, scopeId);
        const extidpUser = await signUp();
        const cases = [
          [stranger.token, NOT_OWNER],
          [user.token, NO_PERMISSION],
          [extidpUser.token, NO_PERMISSION],
        ] as const;
        for (const [token, message] of cases) {
          const response = await test.request({ method: 'GET', url: usersUrl(scopeId), token });
          expect(response.status).toBe(403);
          expect(response.body).toEqual(refusal(message));
        }
      });

      it('answers a missing scope with 404 and an empty or non-boolean includeDeleted with 400', async () => {
        const missing = await test.request({
          method: 'GET',
          url: usersUrl('0b7d3c9e-2f1a-4e6b-8c5d-9a0f1e2d3c4b'),
          token: admin.token,
        });
        expect(missing.status).toBe(404);
        expect(missing.body).toEqual(refusal('Scope not found.'));
        for (const value of ['', '1']) {
          const response = await test.request({
            method: 'GET',
            url: `${usersUrl(scopeId)}?includeDeleted=${value}`,
            token: admin.token,
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(refusal('The request is malformed.'));
        }
      });
    });

    describe('GET one', () => {
      it('admits the user themselves, a System Admin and the owning Scope Admin', async () => {
        const me = await signUp();
        for (const token of [me.token, admin.token, owner.token]) {
          const response = await test.request({ method: 'GET', url: userUrl(scopeId, me.id), token });
          expect(response.status).toBe(200);
          expect(response.body).toMatchObject({
            success: true,
            messages: ['External-provider user retrieved successfully.'],
            data: { id: me.id, subject: me.subject, scopeId, isDeleted: false },
          });
        }
      });

      it('refuses another external-provider user, a User of the scope and a non-owning Scope Admin with 403', async () => {
        const target = await signUp();
        const neighbour = await signUp();
        const user = await createUser(test, scopeId);
        for (const token of [neighbour.token, user.token, stranger.token]) {
          const response = await test.request({ method: 'GET', url: userUrl(scopeId, target.id), token });
          expect(response.status).toBe(403);
          expect(response.body).toEqual(refusal(NOT_ALLOWED_TO_VIEW));
        }
      });

      it('does not find a user through another scope, not even for the user themselves', async () => {
        const me = await signUp();
        for (const token of [me.token, admin.token]) {
          const response = await test.request({ method: 'GET', url: userUrl(otherScopeId, me.id), token });
          expect(response.status).toBe(404);
          expect(response.body).toEqual(refusal(NOT_FOUND));
        }
      });

      it('shows a deleted user to an administrator only with includeDeleted', async () => {
        const gone = await signUp();
        await test.request({ method: 'DELETE', url: userUrl(scopeId, gone.id), token: admin.token });
        const hidden = await test.request({
          method: 'GET',
          url: userUrl(scopeId, gone.id),
          token: owner.token,
        });
        expect(hidden.status).toBe(404);
        expect(hidden.body).toEqual(refusal(NOT_FOUND));
        const shown = await test.request({
          method: 'GET',
          url: `${userUrl(scopeId, gone.id)}?includeDeleted=true`,
          token: owner.token,
        });
        expect(shown.status).toBe(200);
        expect(shown.body.data).toMatchObject({ id: gone.id, isDeleted: true });
      });
    });

    describe('DELETE (logical)', () => {
      it('deletes the user, refuses their token from then on, and a repeat answers alreadyDeleted', async () => {
        const target = await signUp();
        const first = await test.request({
          method: 'DELETE',
          url: userUrl(scopeId, target.id),
          token: owner.token,
        });
        expect(first.status).toBe(200);
        expect(first.body).toEqual({
          data: { id: target.id, alreadyDeleted: false },
          messages: ['External-provider user deleted successfully.'],
          errors: [],
          success: true,
        });
        const deletedAt = (await rowOf(target.id))?.deleted_at;
        expect(deletedAt).not.toBeNull();

        const again = await test.request({
          method: 'DELETE',
          url: userUrl(scopeId, target.id),
          token: owner.token,
        });
        expect(again.status).toBe(200);
        expect(again.body.data).toEqual({ id: target.id, alreadyDeleted: true });
        expect((await rowOf(target.id))?.deleted_at).toBe(deletedAt);

        const [entry] = (await auditEntries(test, 'DeleteExtidpUserCommand')).filter(
          (row) => row.target_id === target.id,
        );
        expect(entry).toMatchObject({ actor_id: owner.id, succeeded: 1 });
      });

      it('refuses a user reached through another scope with 404 and changes nothing', async () => {
        const target = await signUp();
        const before = await allExtidpUsers(test);
        const response = await test.request({
          method: 'DELETE',
          url: userUrl(otherScopeId, target.id),
          token: admin.token,
        });
        expect(response.status).toBe(404);
        expect(response.body).toEqual(refusal(NOT_FOUND));
        expect(await allExtidpUsers(test)).toEqual(before);
      });

      it('refuses a Scope Admin who does not own the scope, a User and the user themselves with 403', async () => {
        const target = await signUp();
        const user = await createUser(test, scopeId);
        const before = await allExtidpUsers(test);
        const cases = [
          [stranger.token, NOT_OWNER],
          [user.token, NO_PERMISSION],
          [target.token, NO_PERMISSION],
        ] as const;
        for (const [token, message] of cases) {
          const response = await test.request({ method: 'DELETE', url: userUrl(scopeId, target.id), token });
          expect(response.status).toBe(403);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await allExtidpUsers(test)).toEqual(before);
      });
    });

    describe('DELETE hard', () => {
      it('removes the user for a System Admin; a second call is 404', async () => {
        const target = await signUp();
        const first = await test.request({
          method: 'DELETE',
          url: `${userUrl(scopeId, target.id)}/hard`,
          token: admin.token,
        });
        expect(first.status).toBe(200);
        expect(first.body).toEqual({
          data: { id: target.id },
          messages: ['External-provider user permanently deleted.'],
          errors: [],
          success: true,
        });
        expect(await rowOf(target.id)).toBeUndefined();
        const second = await test.request({
          method: 'DELETE',
          url: `${userUrl(scopeId, target.id)}/hard`,
          token: admin.token,
        });
        expect(second.status).toBe(404);
        expect(second.body).toEqual(refusal(NOT_FOUND));
        // The removed user's token names nobody now.
        const read = await test.request({
          method: 'GET',
          url: userUrl(scopeId, target.id),
          token: target.token,
        });
        expect(read.status).toBe(401);
        expect(read.body).toEqual(refusal(NO_LONGER_VALID));
      });

      it('also removes a logically deleted user', async () => {
        const target = await signUp();
        await test.request({ method: 'DELETE', url: userUrl(scopeId, target.id), token: admin.token });
        const response = await test.request({
          method: 'DELETE',
          url: `${userUrl(scopeId, target.id)}/hard`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(await rowOf(target.id)).toBeUndefined();
      });

      it('refuses a user reached through another scope with 404, and a Scope Admin with 403; nothing changes', async () => {
        const target = await signUp();
        const before = await allExtidpUsers(test);
        const wrongScope = await test.request({
          method: 'DELETE',
          url: `${userUrl(otherScopeId, target.id)}/hard`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(wrongScope.body).toEqual(refusal(NOT_FOUND));
        const byOwner = await test.request({
          method: 'DELETE',
          url: `${userUrl(scopeId, target.id)}/hard`,
          token: owner.token,
        });
        expect(byOwner.status).toBe(403);
        expect(byOwner.body).toEqual(refusal(NO_PERMISSION));
        expect(await allExtidpUsers(test)).toEqual(before);
      });
    });

    describe('sign-out', () => {
      const signOut = (token?: string) =>
        test.request({
          method: 'POST',
          url: '/api/auth/extidp/sign-out',
          ...(token === undefined ? {} : { token }),
        });

      it('records the sign-out of a live external-provider user', async () => {
        const me = await signUp();
        test.clock.advanceSeconds(3);
        const response = await signOut(me.token);
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          data: { signedOutAt: test.clock.now().toISOString() },
          messages: ['Signed out successfully.'],
          errors: [],
          success: true,
        });
        expect((await rowOf(me.id))?.last_signed_out_at).toBe(test.clock.now().toISOString());
        const [entry] = (await auditEntries(test, 'ExtidpSignOutCommand')).filter(
          (row) => row.target_id === me.id,
        );
        expect(entry).toMatchObject({ actor_id: me.id, succeeded: 1 });
      });

      it('is honest about stateless tokens: the signed-out token is not revoked and works until it expires', async () => {
        const me = await signUp();
        expect((await signOut(me.token)).status).toBe(200);
        const read = await test.request({ method: 'GET', url: userUrl(scopeId, me.id), token: me.token });
        expect(read.status).toBe(200);
      });

      it('answers 401 to no token, a person’s token and a deleted external-provider user’s token', async () => {
        const person = await createUser(test, scopeId);
        const deleted = await signUp();
        await test.request({ method: 'DELETE', url: userUrl(scopeId, deleted.id), token: admin.token });
        const cases = [
          [undefined, 'Invalid token'],
          [person.token, 'Invalid token'],
          [admin.token, 'Invalid token'],
          [deleted.token, NO_LONGER_VALID],
        ] as const;
        for (const [token, message] of cases) {
          const response = await signOut(token);
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(message));
        }
        expect((await rowOf(deleted.id))?.last_signed_out_at).toBeNull();
      });
    });

    describe('identity of an external-provider user token', () => {
      it('refuses the token of a deleted user with 401 on every authenticated route', async () => {
        const me = await signUp();
        await test.services.db
          .updateTable('extidp_users')
          .set({ deleted_at: test.clock.now().toISOString() })
          .where('id', '=', me.id)
          .execute();
        for (const url of [userUrl(scopeId, me.id), `/api/scopes/${scopeId}`]) {
          const response = await test.request({ method: 'GET', url, token: me.token });
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(NO_LONGER_VALID));
        }
      });

      it('refuses the full token of a user restricted after it was issued with 401', async () => {
        const me = await signUp();
        await test.services.db
          .updateTable('extidp_users')
          .set({ restricted_at: test.clock.now().toISOString() })
          .where('id', '=', me.id)
          .execute();
        const response = await test.request({ method: 'GET', url: userUrl(scopeId, me.id), token: me.token });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal(NO_LONGER_VALID));
      });

      it('lets a live user read their own scope (the token carries scope and User role, no stamp)', async () => {
        const me = await signUp();
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes/${scopeId}`,
          token: me.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.data.id).toBe(scopeId);
      });
    });

    it('publishes the six extidp operations in the OpenAPI document', async () => {
      const response = await test.request({ method: 'GET', url: '/openapi.json' });
      expect(response.status).toBe(200);
      const operationIds = Object.values(
        response.body.paths as Record<string, Record<string, { operationId?: string }>>,
      ).flatMap((path) => Object.values(path).map((operation) => operation.operationId));
      expect(operationIds).toEqual(
        expect.arrayContaining([
          'Auth_ExtidpSignIn',
          'Auth_ExtidpSignOut',
          'ExtidpUser_List',
          'ExtidpUser_Get',
          'ExtidpUser_Delete',
          'ExtidpUser_HardDelete',
        ]),
      );
    });

    describe('scope deletion', () => {
      it('takes the scope’s external-provider users with a logical delete, and removes them with a hard delete', async () => {
        const doomed = (await createScope(test, [owner.id], { extidp_signin_enabled: 1 })).id;
        const member = await signUp(doomed);
        const bystander = await signUp();

        const logical = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${doomed}`,
          token: admin.token,
        });
        expect(logical.status).toBe(200);
        expect((await rowOf(member.id))?.deleted_at).toBe(test.clock.now().toISOString());
        expect((await rowOf(bystander.id))?.deleted_at).toBeNull();
        const refused = await test.request({
          method: 'GET',
          url: userUrl(doomed, member.id),
          token: member.token,
        });
        expect(refused.status).toBe(401);
        expect(refused.body).toEqual(refusal(NO_LONGER_VALID));

        const hard = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${doomed}/hard`,
          token: admin.token,
        });
        expect(hard.status).toBe(200);
        expect(await rowOf(member.id)).toBeUndefined();
        expect(await rowOf(bystander.id)).toBeDefined();
      });
    });
  });
}
