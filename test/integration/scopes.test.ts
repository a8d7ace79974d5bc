import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';

for (const dialect of DIALECTS) {
  describe(`scopes (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const scopeCount = async () =>
      Number(
        (
          await test.services.db
            .selectFrom('scopes')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    /** A scope deleted logically through the API, so its name is free again. */
    const createDeletedScope = async (name: string) => {
      const scope = await createScope(test, [admin.id], { name });
      const deleted = await test.request({
        method: 'DELETE',
        url: `/api/scopes/${scope.id}`,
        token: admin.token,
      });
      expect(deleted.status).toBe(200);
    };

    describe('create', () => {
      it('creates a scope with its owners and records CreateScopeCommand', async () => {
        const owner = await createScopeAdmin(test);
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: {
            name: '  Acme Create ',
            Description: 'Widgets',
            OwnerIds: [owner.id, admin.id.toUpperCase()],
          },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          errors: [],
          messages: ['Scope created successfully.'],
          data: {
            name: 'Acme Create',
            description: 'Widgets',
            extidpSignInEnabled: false,
            selfRegistrationEnabled: false,
            emailVerificationUrl: null,
            passwordResetUrl: null,
            isDeleted: false,
          },
        });
        expect(new Set(response.body.data.ownerIds)).toEqual(new Set([owner.id, admin.id]));
        const [entry] = (await auditEntries(test, 'CreateScopeCommand')).filter(
          (row) => row.target_id === response.body.data.id,
        );
        expect(entry).toMatchObject({ actor_id: admin.id, succeeded: 1, failure_reason: null });
      });

      it('answers the owners in the order a read of the scope lists them', async () => {
        // The answer is built from what the command wrote, not read back: it must match a read.
        const owners = [admin, ...(await Promise.all([1, 2, 3].map(() => createScopeAdmin(test))))];
        const given = owners
          .map((owner) => owner.id)
          .toSorted()
          .toReversed();
        const created = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'Owner order', ownerIds: [...given, given[0]!.toUpperCase()] },
        });
        expect(created.status).toBe(200);
        const read = await test.request({
          method: 'GET',
          url: `/api/scopes/${created.body.data.id}`,
          token: admin.token,
        });
        expect(read.body.data.ownerIds).toHaveLength(owners.length);
        expect(created.body.data).toEqual(read.body.data);
      });

      it('refuses a duplicate live name, case-insensitively, with 409 and writes nothing', async () => {
        await createScope(test, [admin.id], { name: 'Duplicate Name' });
        const before = await scopeCount();
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'duplicate NAME', ownerIds: [admin.id] },
        });
        expect(response.status).toBe(409);
        expect(response.body).toEqual({
          data: null,
          messages: [],
          errors: ['A scope with this name already exists.'],
          success: false,
        });
        expect(await scopeCount()).toBe(before);
        const failures = (await auditEntries(test, 'CreateScopeCommand')).filter(
          (row) => row.succeeded === 0,
        );
        expect(failures.at(-1)).toMatchObject({
          actor_id: admin.id,
          failure_reason: 'A scope with this name already exists.',
        });
      });

      it('accepts the name of a logically deleted scope', async () => {
        await createDeletedScope('Create Freed');
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'create FREED', ownerIds: [admin.id] },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.name).toBe('create FREED');
      });

      it('refuses an owner who is a User or does not exist', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const before = await scopeCount();
        for (const ownerId of [user.id, '00000000-0000-4000-8000-000000000000']) {
          const response = await test.request({
            method: 'POST',
            url: '/api/scopes',
            token: admin.token,
            body: { name: `Owner check ${ownerId}`, ownerIds: [ownerId] },
          });
          expect(response.status).toBe(400);
          expect(response.body.errors).toEqual(['Every owner must be a live Scope Admin or System Admin.']);
        }
        expect(await scopeCount()).toBe(before);
      });

      it('keeps the validator message for a missing field and 400 malformed for a wrong type', async () => {
        const missing = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { ownerIds: [admin.id] },
        });
        expect(missing.status).toBe(400);
        expect(missing.body.errors).toEqual(['Name is required.']);
        const noOwners = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'x', ownerIds: [] },
        });
        expect(noOwners.status).toBe(400);
        expect(noOwners.body.errors).toEqual(['OwnerIds must have at least 1 item.']);
        const wrongType = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 5, ownerIds: [admin.id] },
        });
        expect(wrongType.status).toBe(400);
        expect(wrongType.body.errors).toEqual(['The request is malformed.']);
        const notGuid = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: admin.token,
          body: { name: 'x', ownerIds: ['nope'] },
        });
        expect(notGuid.status).toBe(400);
      });

      it('refuses Scope Admins and Users with 403 and anonymous callers with 401', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const before = await scopeCount();
        const forbidden = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: scopeAdmin.token,
          body: { name: 'Not allowed', ownerIds: [scopeAdmin.id] },
        });
        expect(forbidden.status).toBe(403);
        expect(forbidden.body.errors).toEqual(['You do not have permission to access this resource.']);
        const anonymous = await test.request({
          method: 'POST',
          url: '/api/scopes',
          body: { name: 'x', ownerIds: [admin.id] },
        });
        expect(anonymous.status).toBe(401);
        expect(anonymous.body.errors).toEqual(['Invalid token']);
        expect(await scopeCount()).toBe(before);
      });
    });

    describe('list', () => {
      it('shows a Scope Admin only their own scopes, page and total alike', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const mine = await createScope(test, [scopeAdmin.id], { name: 'Zeta mine' });
        await createScope(test, [admin.id], { name: 'Zeta not mine' });
        const response = await test.request({
          method: 'GET',
          url: '/api/scopes?PageSize=25',
          token: scopeAdmin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ pageNumber: 1, pageSize: 25, totalRecords: 1, success: true });
        expect(response.body.data.map((scope: { id: string }) => scope.id)).toEqual([mine.id]);
      });

      it('filters by name case-insensitively and pages in name order', async () => {
        const prefix = `Paging ${Date.now()}`;
        for (const suffix of ['c', 'a', 'b'])
          await createScope(test, [admin.id], { name: `${prefix} ${suffix}` });
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes?name=${encodeURIComponent(prefix.toUpperCase())}&pageSize=2&pageNumber=2`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.totalRecords).toBe(3);
        expect(response.body.data.map((scope: { name: string }) => scope.name)).toEqual([`${prefix} c`]);
      });

      it('answers binding failures with DataOutput and the contract messages', async () => {
        const cases: Array<[string, string]> = [
          ['PageSize=', 'The request is malformed.'],
          ['PageNumber=abc', 'The request is malformed.'],
          ['IncludeDeleted=1', 'The request is malformed.'],
          ['IncludeDeleted=', 'The request is malformed.'],
          ['PageNumber=0', 'Page number must be at least 1.'],
          ['PageSize=101', 'Page size must be between 1 and 100.'],
          ['PageNumber=99999999&PageSize=100', 'Page number is too large.'],
        ];
        for (const [query, message] of cases) {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes?${query}`,
            token: admin.token,
          });
          expect(response.status, query).toBe(400);
          expect(response.body, query).toEqual({
            data: null,
            messages: [],
            errors: [message],
            success: false,
          });
        }
        const emptyNullable = await test.request({
          method: 'GET',
          url: '/api/scopes?Name=',
          token: admin.token,
        });
        expect(emptyNullable.status).toBe(200);
      });

      it('refuses Users with 403', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const response = await test.request({ method: 'GET', url: '/api/scopes', token: user.token });
        expect(response.status).toBe(403);
      });
    });

    describe('read one', () => {
      it('admits a System Admin, an owning Scope Admin and the scope’s own User; refuses others', async () => {
        const owner = await createScopeAdmin(test);
        const stranger = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const otherScope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        const outsider = await createUser(test, otherScope.id);
        for (const reader of [admin, owner, user]) {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes/${scope.id}`,
            token: reader.token,
          });
          expect(response.status).toBe(200);
          expect(response.body.data.id).toBe(scope.id);
        }
        for (const reader of [stranger, outsider]) {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes/${scope.id}`,
            token: reader.token,
          });
          expect(response.status).toBe(403);
          expect(response.body.errors).toEqual(['You are not allowed to view this scope.']);
        }
      });

      it('answers 404 for a missing scope and 400 for a non-GUID id', async () => {
        const missing = await test.request({
          method: 'GET',
          url: '/api/scopes/00000000-0000-4000-8000-000000000000',
          token: admin.token,
        });
        expect(missing.status).toBe(404);
        expect(missing.body.errors).toEqual(['Scope not found.']);
        const malformed = await test.request({
          method: 'GET',
          url: '/api/scopes/not-a-guid',
          token: admin.token,
        });
        expect(malformed.status).toBe(400);
        expect(malformed.body.errors).toEqual(['The request is malformed.']);
      });
    });

    describe('rename', () => {
      const rename = (id: string, name: string) =>
        test.request({ method: 'PUT', url: `/api/scopes/${id}`, token: admin.token, body: { name } });

      it('refuses another live scope’s name, case-insensitively, with 409 and changes nothing', async () => {
        await createScope(test, [admin.id], { name: 'Rename Taken' });
        const scope = await createScope(test, [admin.id], { name: 'Rename Source' });
        const response = await rename(scope.id, '  rename TAKEN ');
        expect(response.status).toBe(409);
        expect(response.body.errors).toEqual(['A scope with this name already exists.']);
        const row = await test.services.db
          .selectFrom('scopes')
          .select('name')
          .where('id', '=', scope.id)
          .executeTakeFirstOrThrow();
        expect(row.name).toBe('Rename Source');
        const [entry] = (await auditEntries(test, 'UpdateScopeCommand')).filter(
          (candidate) => candidate.target_id === scope.id,
        );
        expect(entry).toMatchObject({
          succeeded: 0,
          failure_reason: 'A scope with this name already exists.',
        });
      });

      it('lets a scope keep its own name in another case, and take a deleted scope’s name', async () => {
        const scope = await createScope(test, [admin.id], { name: 'Rename Self' });
        const recased = await rename(scope.id, 'RENAME self');
        expect(recased.status).toBe(200);
        expect(recased.body.data.name).toBe('RENAME self');
        await createDeletedScope('Rename Freed');
        const reused = await rename(scope.id, 'Rename Freed');
        expect(reused.status).toBe(200);
        expect(reused.body.data.name).toBe('Rename Freed');
      });
    });

    describe('delete', () => {
      it('logically deletes, takes the scope’s Users with it, and repeats idempotently', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const first = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}`,
          token: admin.token,
        });
        expect(first.status).toBe(200);
        expect(first.body.data).toEqual({ id: scope.id, alreadyDeleted: false });
        const userRow = await test.services.db
          .selectFrom('persons')
          .select('deleted_at')
          .where('id', '=', user.id)
          .executeTakeFirstOrThrow();
        expect(userRow.deleted_at).not.toBeNull();
        // The deleted User's token is refused from now on.
        const refused = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}`,
          token: user.token,
        });
        expect(refused.status).toBe(401);
        expect(refused.body.errors).toEqual(['This token is no longer valid. Sign in again.']);
        const again = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}`,
          token: admin.token,
        });
        expect(again.body.data).toEqual({ id: scope.id, alreadyDeleted: true });
        const hidden = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}`,
          token: admin.token,
        });
        expect(hidden.status).toBe(404);
        const shown = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}?includeDeleted=true`,
          token: admin.token,
        });
        expect(shown.body.data.isDeleted).toBe(true);
      });

      it('hard-deletes in any state with its owners and Users; a repeat is 404', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const first = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/hard`,
          token: admin.token,
        });
        expect(first.status).toBe(200);
        expect(first.body.data).toEqual({ id: scope.id });
        const owners = await test.services.db
          .selectFrom('scope_owners')
          .selectAll()
          .where('scope_id', '=', scope.id)
          .execute();
        expect(owners).toEqual([]);
        const users = await test.services.db
          .selectFrom('persons')
          .select('id')
          .where('id', '=', user.id)
          .execute();
        expect(users).toEqual([]);
        const again = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/hard`,
          token: admin.token,
        });
        expect(again.status).toBe(404);
        expect(again.body.errors).toEqual(['Scope not found.']);
      });
    });

    describe('settings', () => {
      it('lets an owning Scope Admin toggle sign-in options and set email links; refuses a non-owner', async () => {
        const owner = await createScopeAdmin(test);
        const stranger = await createPerson(test, { role: 2 });
        const scope = await createScope(test, [owner.id]);
        const extidp = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/extidp-signin`,
          token: owner.token,
          body: { Enabled: true },
        });
        expect(extidp.status).toBe(200);
        expect(extidp.body.data.extidpSignInEnabled).toBe(true);
        const registration = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/self-registration`,
          token: owner.token,
          body: { enabled: true },
        });
        expect(registration.body.data.selfRegistrationEnabled).toBe(true);
        const links = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/email-links`,
          token: owner.token,
          body: { emailVerificationUrl: 'https://app.example.com/verify', passwordResetUrl: null },
        });
        expect(links.body.data).toMatchObject({
          emailVerificationUrl: 'https://app.example.com/verify',
          passwordResetUrl: null,
        });
        const refused = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/self-registration`,
          token: stranger.token,
          body: { enabled: false },
        });
        expect(refused.status).toBe(403);
        expect(refused.body.errors).toEqual(['You are not an owner of the target scope.']);
        const row = await test.services.db
          .selectFrom('scopes')
          .selectAll()
          .where('id', '=', scope.id)
          .executeTakeFirstOrThrow();
        expect(row.self_registration_enabled).toBe(1);
      });

      it('refuses email links that are not absolute http(s) URLs of at most 2048 characters', async () => {
        const scope = await createScope(test, [admin.id]);
        for (const url of [
          'ftp://example.com/x',
          '/relative/path',
          `https://example.com/${'a'.repeat(2040)}`,
        ]) {
          const response = await test.request({
            method: 'PUT',
            url: `/api/scopes/${scope.id}/email-links`,
            token: admin.token,
            body: { emailVerificationUrl: url, passwordResetUrl: null },
          });
          expect(response.status, url.slice(0, 30)).toBe(400);
          expect(response.body.errors).toEqual([
            'Email link URLs must be absolute http or https URLs of at most 2048 characters.',
          ]);
        }
        const row = await test.services.db
          .selectFrom('scopes')
          .selectAll()
          .where('id', '=', scope.id)
          .executeTakeFirstOrThrow();
        expect(row.email_verification_url).toBeNull();
      });
    });
  });
}
