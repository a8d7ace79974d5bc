import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimedPermissionNames } from '../../src/modules/permissions/permissions.repository.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';
import { countRows, createPermission } from './applications.fixtures.ts';

const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });
const NAME_TAKEN = 'A permission with this name already exists in this scope.';
const NOT_SCOPE_OWNER = 'You are not an owner of the target scope.';

for (const dialect of DIALECTS) {
  describe(`scope permissions (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    async function ownedScope() {
      const owner = await createScopeAdmin(test);
      const scope = await createScope(test, [owner.id]);
      return { owner, scope, url: `/api/scopes/${scope.id}/permissions` };
    }

    const permissionRow = (id: string) =>
      test.services.db.selectFrom('scope_permissions').selectAll().where('id', '=', id).executeTakeFirst();

    describe('create', () => {
      it('lets an owning Scope Admin create one; includeAsJwtClaim defaults to false; audited', async () => {
        const { owner, scope, url } = await ownedScope();
        const response = await test.request({
          method: 'POST',
          url,
          token: owner.token,
          body: { Name: ' reports:read ', Description: 'Read reports', IncludeAsJwtClaim: true },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          messages: ['Scope permission created successfully.'],
          data: {
            name: 'reports:read',
            description: 'Read reports',
            includeAsJwtClaim: true,
            scopeId: scope.id,
            isDeleted: false,
          },
        });
        expect(Object.keys(response.body.data).sort()).toEqual(
          [
            'createdAt',
            'description',
            'id',
            'includeAsJwtClaim',
            'isDeleted',
            'name',
            'scopeId',
            'updatedAt',
          ].sort(),
        );
        const plain = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { name: 'plain' },
        });
        expect(plain.body.data).toMatchObject({ includeAsJwtClaim: false, description: '' });
        const entry = (await auditEntries(test, 'CreateScopePermissionCommand')).find(
          (e) => e.target_id === response.body.data.id,
        );
        expect(entry).toMatchObject({ actor_id: owner.id, succeeded: 1 });
      });

      it('refuses a live duplicate name in the scope, case-insensitively (409); other scopes and deleted ones do not clash', async () => {
        const { scope, url } = await ownedScope();
        await createPermission(test, scope.id, { name: 'Billing:Write' });
        await createPermission(test, scope.id, { name: 'old', deleted: true });
        await createPermission(test, (await createScope(test, [admin.id])).id, { name: 'shared' });
        const before = await countRows(test, 'scope_permissions');
        const duplicate = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { name: 'billing:WRITE' },
        });
        expect(duplicate.status).toBe(409);
        expect(duplicate.body).toEqual(refusal(NAME_TAKEN));
        expect(await countRows(test, 'scope_permissions')).toBe(before);
        for (const name of ['old', 'shared']) {
          const response = await test.request({ method: 'POST', url, token: admin.token, body: { name } });
          expect(response.status).toBe(200);
        }
      });

      it('refuses a non-owning Scope Admin and a User (403), no token (401), a missing scope (404)', async () => {
        const { scope, url } = await ownedScope();
        const user = await createUser(test, scope.id);
        const before = await countRows(test, 'scope_permissions');
        const cases: Array<[string, string | undefined, number, string]> = [
          [url, (await createScopeAdmin(test)).token, 403, NOT_SCOPE_OWNER],
          [url, user.token, 403, 'You do not have permission to access this resource.'],
          [url, undefined, 401, 'Invalid token'],
          [
            '/api/scopes/00000000-0000-4000-8000-000000000000/permissions',
            admin.token,
            404,
            'Scope not found.',
          ],
        ];
        for (const [target, token, status, message] of cases) {
          const response = await test.request({
            method: 'POST',
            url: target,
            ...(token === undefined ? {} : { token }),
            body: { name: 'nope' },
          });
          expect(response.status).toBe(status);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await countRows(test, 'scope_permissions')).toBe(before);
      });

      it('answers binding failures with 400', async () => {
        const { url } = await ownedScope();
        const missing = await test.request({ method: 'POST', url, token: admin.token, body: {} });
        expect(missing.body).toEqual(refusal('Name is required.'));
        const wrongType = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { name: 'x', includeAsJwtClaim: 'yes' },
        });
        expect(wrongType.status).toBe(400);
        expect(wrongType.body).toEqual(refusal('The request is malformed.'));
      });
    });

    describe('read and list', () => {
      it('reads one inside its scope only; a deleted one with includeDeleted=true', async () => {
        const { owner, scope, url } = await ownedScope();
        const permission = await createPermission(test, scope.id);
        const deleted = await createPermission(test, scope.id, { deleted: true });
        const found = await test.request({
          method: 'GET',
          url: `${url}/${permission.id}`,
          token: owner.token,
        });
        expect(found.status).toBe(200);
        expect(found.body.data).toMatchObject({ id: permission.id, name: permission.name });
        const other = await ownedScope();
        const wrongScope = await test.request({
          method: 'GET',
          url: `${other.url}/${permission.id}`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(wrongScope.body).toEqual(refusal('Scope permission not found.'));
        const hidden = await test.request({ method: 'GET', url: `${url}/${deleted.id}`, token: owner.token });
        expect(hidden.status).toBe(404);
        const shown = await test.request({
          method: 'GET',
          url: `${url}/${deleted.id}?includeDeleted=true`,
          token: owner.token,
        });
        expect(shown.body.data.isDeleted).toBe(true);
      });

      it('lists by name with filters and pages', async () => {
        const { owner, scope, url } = await ownedScope();
        await createPermission(test, scope.id, { name: 'c:read', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'a:read' });
        await createPermission(test, scope.id, { name: 'b:write', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'd:read', deleted: true });
        const all = await test.request({ method: 'GET', url, token: owner.token });
        expect(all.body.data.map((p: { name: string }) => p.name)).toEqual(['a:read', 'b:write', 'c:read']);
        const filtered = await test.request({
          method: 'GET',
          url: `${url}?name=READ&IncludeDeleted=true&PageSize=2&PageNumber=2`,
          token: owner.token,
        });
        expect(filtered.body).toMatchObject({ totalRecords: 3, pageNumber: 2, pageSize: 2 });
        expect(filtered.body.data.map((p: { name: string }) => p.name)).toEqual(['d:read']);
        const claimed = await test.request({
          method: 'GET',
          url: `${url}?IncludeAsJwtClaim=true`,
          token: owner.token,
        });
        expect(claimed.body.data.map((p: { name: string }) => p.name)).toEqual(['b:write', 'c:read']);
        const malformed = await test.request({
          method: 'GET',
          url: `${url}?IncludeDeleted=1`,
          token: owner.token,
        });
        expect(malformed.status).toBe(400);
        expect(malformed.body).toEqual(refusal('The request is malformed.'));
        const stranger = await test.request({
          method: 'GET',
          url,
          token: (await createScopeAdmin(test)).token,
        });
        expect(stranger.status).toBe(403);
        expect(stranger.body).toEqual(refusal(NOT_SCOPE_OWNER));
      });
    });

    describe('update', () => {
      it('updates name, description and IncludeAsJwtClaim', async () => {
        const { owner, scope, url } = await ownedScope();
        const permission = await createPermission(test, scope.id, {
          name: 'before',
          includeAsJwtClaim: true,
        });
        const response = await test.request({
          method: 'PUT',
          url: `${url}/${permission.id}`,
          token: owner.token,
          body: { name: 'after', description: 'Now described', includeAsJwtClaim: false },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          messages: ['Scope permission updated successfully.'],
          data: { id: permission.id, name: 'after', description: 'Now described', includeAsJwtClaim: false },
        });
        expect(await permissionRow(permission.id)).toMatchObject({
          name: 'after',
          name_normalized: 'after',
          include_as_jwt_claim: 0,
        });
      });

      it('refuses a clashing name (409), another scope’s or a deleted permission (404), changing nothing', async () => {
        const { scope, url } = await ownedScope();
        const taken = await createPermission(test, scope.id, { name: 'taken' });
        const permission = await createPermission(test, scope.id, { name: 'mine' });
        const deleted = await createPermission(test, scope.id, { deleted: true });
        const other = await ownedScope();
        const foreign = await createPermission(test, other.scope.id);
        const cases: Array<[string, number, string]> = [
          [`${url}/${permission.id}`, 409, NAME_TAKEN],
          [`${url}/${foreign.id}`, 404, 'Scope permission not found.'],
          [`${url}/${deleted.id}`, 404, 'Scope permission not found.'],
        ];
        for (const [target, status, message] of cases) {
          const response = await test.request({
            method: 'PUT',
            url: target,
            token: admin.token,
            body: { name: 'TAKEN' },
          });
          expect(response.status).toBe(status);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await permissionRow(permission.id)).toEqual(permission);
        expect(await permissionRow(foreign.id)).toEqual(foreign);
        expect(await permissionRow(deleted.id)).toEqual(deleted);
        expect(await permissionRow(taken.id)).toEqual(taken);
      });

      it('keeps its own name when only the case changes', async () => {
        const { scope, url } = await ownedScope();
        const permission = await createPermission(test, scope.id, { name: 'case' });
        const response = await test.request({
          method: 'PUT',
          url: `${url}/${permission.id}`,
          token: admin.token,
          body: { name: 'CASE' },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.name).toBe('CASE');
      });
    });

    describe('delete', () => {
      it('logically deletes, repeats idempotently, and the name drops out of claims', async () => {
        const { owner, scope, url } = await ownedScope();
        const permission = await createPermission(test, scope.id, {
          name: 'claimed',
          includeAsJwtClaim: true,
        });
        expect(await claimedPermissionNames(test.services.db, scope.id)).toEqual(['claimed']);
        const first = await test.request({
          method: 'DELETE',
          url: `${url}/${permission.id}`,
          token: owner.token,
        });
        expect(first.status).toBe(200);
        expect(first.body).toMatchObject({
          data: { id: permission.id, alreadyDeleted: false },
          messages: ['Scope permission deleted successfully.'],
        });
        expect(await claimedPermissionNames(test.services.db, scope.id)).toEqual([]);
        const again = await test.request({
          method: 'DELETE',
          url: `${url}/${permission.id}`,
          token: owner.token,
        });
        expect(again.body.data).toEqual({ id: permission.id, alreadyDeleted: true });
      });

      it('hard-deletes in any state (owning Scope Admin too); a repeat or another scope’s is 404', async () => {
        const { owner, scope, url } = await ownedScope();
        const live = await createPermission(test, scope.id);
        const deleted = await createPermission(test, scope.id, { deleted: true });
        for (const permission of [live, deleted]) {
          const response = await test.request({
            method: 'DELETE',
            url: `${url}/${permission.id}/hard`,
            token: owner.token,
          });
          expect(response.status).toBe(200);
          expect(response.body).toMatchObject({
            data: { id: permission.id },
            messages: ['Scope permission permanently deleted.'],
          });
          expect(await permissionRow(permission.id)).toBeUndefined();
          const repeat = await test.request({
            method: 'DELETE',
            url: `${url}/${permission.id}/hard`,
            token: owner.token,
          });
          expect(repeat.status).toBe(404);
          expect(repeat.body).toEqual(refusal('Scope permission not found.'));
        }
        const other = await ownedScope();
        const foreign = await createPermission(test, other.scope.id);
        const wrongScope = await test.request({
          method: 'DELETE',
          url: `${url}/${foreign.id}/hard`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(await permissionRow(foreign.id)).toEqual(foreign);
        const stranger = await test.request({
          method: 'DELETE',
          url: `${other.url}/${foreign.id}/hard`,
          token: owner.token,
        });
        expect(stranger.status).toBe(403);
        expect(stranger.body).toEqual(refusal(NOT_SCOPE_OWNER));
        expect(await permissionRow(foreign.id)).toEqual(foreign);
      });
    });

    describe('claimedPermissionNames', () => {
      it('returns the live flagged names of the scope only, in name order', async () => {
        const { scope } = await ownedScope();
        await createPermission(test, scope.id, { name: 'z:claimed', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'a:claimed', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'unflagged' });
        await createPermission(test, scope.id, { name: 'gone', includeAsJwtClaim: true, deleted: true });
        await createPermission(test, (await ownedScope()).scope.id, {
          name: 'elsewhere',
          includeAsJwtClaim: true,
        });
        expect(await claimedPermissionNames(test.services.db, scope.id)).toEqual(['a:claimed', 'z:claimed']);
      });
    });
  });
}
