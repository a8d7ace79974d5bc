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
import {
  applicationRow,
  countRows,
  createApplication,
  createCredential,
  createPermission,
} from './applications.fixtures.ts';

const OWNER_RULE = 'Owner must be a Scope Admin or System Admin who owns the scope.';
const NOT_YOURS = 'You are not allowed to manage this application.';
const NOT_SCOPE_OWNER = 'You are not an owner of the target scope.';
const MISSING_GUID = '00000000-0000-4000-8000-000000000000';

const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });

for (const dialect of DIALECTS) {
  describe(`applications (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    /** A scope owned by a fresh Scope Admin (and a co-owning Scope Admin). */
    async function ownedScope() {
      const owner = await createScopeAdmin(test);
      const coOwner = await createScopeAdmin(test);
      const scope = await createScope(test, [owner.id, coOwner.id]);
      return { owner, coOwner, scope };
    }

    describe('create', () => {
      it('lets a System Admin register an application for an owning Scope Admin, audited', async () => {
        const { owner, scope } = await ownedScope();
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: { Name: '  Billing  ', OwnerId: owner.id.toUpperCase() },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          errors: [],
          messages: ['Application created successfully.'],
          data: { name: 'Billing', scopeId: scope.id, ownerId: owner.id, isDeleted: false },
        });
        expect(Object.keys(response.body.data).sort()).toEqual(
          ['createdAt', 'id', 'isDeleted', 'name', 'ownerId', 'scopeId', 'updatedAt'].sort(),
        );
        const entries = await auditEntries(test, 'CreateApplicationCommand');
        expect(entries.find((entry) => entry.target_id === response.body.data.id)).toMatchObject({
          actor_id: admin.id,
          succeeded: 1,
        });
      });

      it('lets a System Admin who owns the scope name themselves', async () => {
        const scope = await createScope(test, [admin.id]);
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: { name: 'Mine', ownerId: admin.id },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.ownerId).toBe(admin.id);
      });

      it('lets an owning Scope Admin register an application for themselves', async () => {
        const { owner, scope } = await ownedScope();
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: owner.token,
          body: { name: 'Self-owned', ownerId: owner.id },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.ownerId).toBe(owner.id);
      });

      it('refuses a Scope Admin naming a co-owner as owner (403) and writes nothing', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const before = await countRows(test, 'applications');
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: owner.token,
          body: { name: 'For someone else', ownerId: coOwner.id },
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(refusal(NOT_YOURS));
        expect(await countRows(test, 'applications')).toBe(before);
        const failures = (await auditEntries(test, 'CreateApplicationCommand')).filter(
          (e) => e.succeeded === 0,
        );
        expect(failures.at(-1)).toMatchObject({ actor_id: owner.id, failure_reason: NOT_YOURS });
      });

      it('refuses an owner who is a User, a non-owning or deleted administrator, or nobody (400)', async () => {
        const { scope } = await ownedScope();
        const user = await createUser(test, scope.id);
        const outsider = await createScopeAdmin(test);
        const deletedAdmin = await createScopeAdmin(test);
        await test.services.db
          .insertInto('scope_owners')
          .values({ scope_id: scope.id, person_id: deletedAdmin.id, created_at: new Date().toISOString() })
          .execute();
        await test.services.db
          .updateTable('persons')
          .set({ deleted_at: new Date().toISOString() })
          .where('id', '=', deletedAdmin.id)
          .execute();
        const before = await countRows(test, 'applications');
        for (const ownerId of [user.id, outsider.id, deletedAdmin.id, MISSING_GUID]) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/applications`,
            token: admin.token,
            body: { name: 'Owner check', ownerId },
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(refusal(OWNER_RULE));
        }
        expect(await countRows(test, 'applications')).toBe(before);
      });

      it('refuses a Scope Admin who does not own the scope (403), a User (403), and no token (401)', async () => {
        const { owner, scope } = await ownedScope();
        const stranger = await createScopeAdmin(test);
        const user = await createUser(test, scope.id);
        const before = await countRows(test, 'applications');
        const cases: Array<[string | undefined, number, string]> = [
          [stranger.token, 403, NOT_SCOPE_OWNER],
          [user.token, 403, 'You do not have permission to access this resource.'],
          [undefined, 401, 'Invalid token'],
        ];
        for (const [token, status, message] of cases) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/applications`,
            ...(token === undefined ? {} : { token }),
            body: { name: 'Nope', ownerId: owner.id },
          });
          expect(response.status).toBe(status);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await countRows(test, 'applications')).toBe(before);
      });

      it('answers 404 for a missing or deleted scope', async () => {
        const deleted = await createScope(test, [admin.id]);
        await test.services.db
          .updateTable('scopes')
          .set({ deleted_at: new Date().toISOString() })
          .where('id', '=', deleted.id)
          .execute();
        for (const scopeId of [MISSING_GUID, deleted.id]) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scopeId}/applications`,
            token: admin.token,
            body: { name: 'Nowhere', ownerId: admin.id },
          });
          expect(response.status).toBe(404);
          expect(response.body).toEqual(refusal('Scope not found.'));
        }
      });

      it('keeps the validator message for a missing name and 400 malformed for wrong types', async () => {
        const { owner, scope } = await ownedScope();
        const missing = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: { ownerId: owner.id },
        });
        expect(missing.status).toBe(400);
        expect(missing.body.errors).toEqual(['Name is required.']);
        const missingOwner = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: { name: 'x' },
        });
        expect(missingOwner.body.errors).toEqual(['OwnerId is required.']);
        const wrongType = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: { name: 7, ownerId: owner.id },
        });
        expect(wrongType.status).toBe(400);
        expect(wrongType.body.errors).toEqual(['The request is malformed.']);
        const badPath = await test.request({
          method: 'POST',
          url: `/api/scopes/not-a-guid/applications`,
          token: admin.token,
          body: { name: 'x', ownerId: owner.id },
        });
        expect(badPath.status).toBe(400);
        expect(badPath.body.errors).toEqual(['The request is malformed.']);
      });
    });

    describe('list', () => {
      it('shows a System Admin every application of the scope, and a Scope Admin only their own', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const mine = await createApplication(test, scope.id, owner.id, { name: 'B mine' });
        const theirs = await createApplication(test, scope.id, coOwner.id, { name: 'A theirs' });
        await createApplication(test, (await createScope(test, [owner.id])).id, owner.id, {
          name: 'elsewhere',
        });

        const all = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
        });
        expect(all.status).toBe(200);
        expect(all.body).toMatchObject({ totalRecords: 2, pageNumber: 1, pageSize: 100, success: true });
        expect(all.body.data.map((a: { id: string }) => a.id)).toEqual([theirs.id, mine.id]);

        const own = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications`,
          token: owner.token,
        });
        expect(own.body.totalRecords).toBe(1);
        expect(own.body.data.map((a: { id: string }) => a.id)).toEqual([mine.id]);

        // Asking for a co-owner's applications does not widen a Scope Admin's view.
        const peek = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications?OwnerId=${coOwner.id}`,
          token: owner.token,
        });
        expect(peek.status).toBe(200);
        expect(peek.body).toMatchObject({ data: [], totalRecords: 0 });
      });

      it('filters by Name and OwnerId, hides deleted ones unless IncludeDeleted, and pages', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        await createApplication(test, scope.id, owner.id, { name: 'Reporting one' });
        const two = await createApplication(test, scope.id, owner.id, { name: 'Reporting two' });
        const gone = await createApplication(test, scope.id, owner.id, {
          name: 'Reporting gone',
          deleted: true,
        });
        await createApplication(test, scope.id, coOwner.id, { name: 'Reporting other' });

        const byName = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications?name=REPORTING&ownerId=${owner.id}&PageSize=1&PageNumber=2`,
          token: admin.token,
        });
        expect(byName.status).toBe(200);
        expect(byName.body).toMatchObject({ totalRecords: 2, pageNumber: 2, pageSize: 1 });
        expect(byName.body.data.map((a: { id: string }) => a.id)).toEqual([two.id]);

        const withDeleted = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications?IncludeDeleted=true&OwnerId=${owner.id}`,
          token: owner.token,
        });
        expect(withDeleted.body.totalRecords).toBe(3);
        expect(withDeleted.body.data.find((a: { id: string }) => a.id === gone.id).isDeleted).toBe(true);
      });

      it('answers binding failures with DataOutput 400 and refuses a non-owning Scope Admin', async () => {
        const { scope } = await ownedScope();
        for (const query of ['IncludeDeleted=1', 'PageSize=', 'OwnerId=nope', 'PageNumber=x']) {
          const response = await test.request({
            method: 'GET',
            url: `/api/scopes/${scope.id}/applications?${query}`,
            token: admin.token,
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(refusal('The request is malformed.'));
        }
        const pageSize = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications?PageSize=101`,
          token: admin.token,
        });
        expect(pageSize.body).toEqual(refusal('Page size must be between 1 and 100.'));
        const stranger = await createScopeAdmin(test);
        const refused = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications`,
          token: stranger.token,
        });
        expect(refused.status).toBe(403);
        expect(refused.body).toEqual(refusal(NOT_SCOPE_OWNER));
      });
    });

    describe('get', () => {
      it('resolves the application inside the addressed scope only', async () => {
        const { owner, scope } = await ownedScope();
        const other = await createScope(test, [owner.id]);
        const application = await createApplication(test, scope.id, owner.id);
        const found = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/${application.id.toUpperCase()}`,
          token: owner.token,
        });
        expect(found.status).toBe(200);
        expect(found.body.data).toMatchObject({ id: application.id, name: application.name });
        const wrongScope = await test.request({
          method: 'GET',
          url: `/api/scopes/${other.id}/applications/${application.id}`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(wrongScope.body).toEqual(refusal('Application not found.'));
      });

      it('shows a deleted application only with includeDeleted=true', async () => {
        const { owner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id, { deleted: true });
        const hidden = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: admin.token,
        });
        expect(hidden.status).toBe(404);
        const shown = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/${application.id}?includeDeleted=true`,
          token: owner.token,
        });
        expect(shown.status).toBe(200);
        expect(shown.body.data.isDeleted).toBe(true);
      });

      it('refuses a Scope Admin another owner’s application, and one who no longer owns the scope', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, coOwner.id);
        const notYours = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: owner.token,
        });
        expect(notYours.status).toBe(403);
        expect(notYours.body).toEqual(refusal(NOT_YOURS));
        // The owner of the application loses the scope: the application is out of reach.
        await test.services.db
          .deleteFrom('scope_owners')
          .where('scope_id', '=', scope.id)
          .where('person_id', '=', coOwner.id)
          .execute();
        const lostScope = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: coOwner.token,
        });
        expect(lostScope.status).toBe(403);
        expect(lostScope.body).toEqual(refusal(NOT_SCOPE_OWNER));
      });
    });

    describe('update', () => {
      it('changes the name and hands the application to another owner of the scope', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id);
        test.clock.advanceSeconds(5);
        const response = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: owner.token,
          body: { NAME: 'Renamed', ownerid: coOwner.id },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          messages: ['Application updated successfully.'],
          data: {
            id: application.id,
            name: 'Renamed',
            ownerId: coOwner.id,
            createdAt: application.created_at,
          },
        });
        expect(response.body.data.updatedAt > application.created_at).toBe(true);
        expect(await applicationRow(test, application.id)).toMatchObject({
          name: 'Renamed',
          owner_id: coOwner.id,
        });
      });

      it('refuses an ineligible new owner (400) and changes nothing', async () => {
        const { owner, scope } = await ownedScope();
        const user = await createUser(test, scope.id);
        const outsider = await createPerson(test, { role: 2 });
        const application = await createApplication(test, scope.id, owner.id, { name: 'Unchanged' });
        for (const ownerId of [user.id, outsider.id]) {
          const response = await test.request({
            method: 'PUT',
            url: `/api/scopes/${scope.id}/applications/${application.id}`,
            token: admin.token,
            body: { name: 'Changed', ownerId },
          });
          expect(response.status).toBe(400);
          expect(response.body).toEqual(refusal(OWNER_RULE));
        }
        expect(await applicationRow(test, application.id)).toEqual(application);
        const failures = (await auditEntries(test, 'UpdateApplicationCommand')).filter(
          (entry) => entry.target_id === application.id,
        );
        expect(failures.map((entry) => [entry.succeeded, entry.failure_reason])).toEqual([
          [0, OWNER_RULE],
          [0, OWNER_RULE],
        ]);
      });

      it('refuses another scope’s application (404), a deleted one (404), another owner’s (403)', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const other = await createScope(test, [owner.id]);
        const elsewhere = await createApplication(test, other.id, owner.id);
        const deleted = await createApplication(test, scope.id, owner.id, { deleted: true });
        const theirs = await createApplication(test, scope.id, coOwner.id);
        const cases: Array<[string, number, string]> = [
          [elsewhere.id, 404, 'Application not found.'],
          [deleted.id, 404, 'Application not found.'],
          [theirs.id, 403, NOT_YOURS],
        ];
        for (const [id, status, message] of cases) {
          const response = await test.request({
            method: 'PUT',
            url: `/api/scopes/${scope.id}/applications/${id}`,
            token: owner.token,
            body: { name: 'Changed', ownerId: owner.id },
          });
          expect(response.status).toBe(status);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await applicationRow(test, elsewhere.id)).toEqual(elsewhere);
        expect(await applicationRow(test, deleted.id)).toEqual(deleted);
        expect(await applicationRow(test, theirs.id)).toEqual(theirs);
      });
    });

    describe('delete', () => {
      it('logically deletes and repeats idempotently', async () => {
        const { owner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id);
        const first = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: owner.token,
        });
        expect(first.status).toBe(200);
        expect(first.body).toMatchObject({
          data: { id: application.id, alreadyDeleted: false },
          messages: ['Application deleted successfully.'],
        });
        const deletedAt = (await applicationRow(test, application.id))?.deleted_at;
        expect(deletedAt).not.toBeNull();
        test.clock.advanceSeconds(1);
        const again = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/applications/${application.id}`,
          token: owner.token,
        });
        expect(again.status).toBe(200);
        expect(again.body.data).toEqual({ id: application.id, alreadyDeleted: true });
        expect((await applicationRow(test, application.id))?.deleted_at).toBe(deletedAt);
      });

      it('refuses another scope’s application (404) and another owner’s (403), changing nothing', async () => {
        const { owner, coOwner, scope } = await ownedScope();
        const other = await createScope(test, [owner.id]);
        const elsewhere = await createApplication(test, other.id, owner.id);
        const theirs = await createApplication(test, scope.id, coOwner.id);
        const wrongScope = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/applications/${elsewhere.id}`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(wrongScope.body).toEqual(refusal('Application not found.'));
        const notYours = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/applications/${theirs.id}`,
          token: owner.token,
        });
        expect(notYours.status).toBe(403);
        expect(notYours.body).toEqual(refusal(NOT_YOURS));
        expect(await applicationRow(test, elsewhere.id)).toEqual(elsewhere);
        expect(await applicationRow(test, theirs.id)).toEqual(theirs);
      });
    });

    describe('hard delete', () => {
      it('removes a live or deleted application with its credentials; scope and owner stay; a repeat is 404', async () => {
        const { owner, scope } = await ownedScope();
        for (const deleted of [false, true]) {
          const application = await createApplication(test, scope.id, owner.id, { deleted });
          const credential = await createCredential(test, application.id);
          const response = await test.request({
            method: 'DELETE',
            url: `/api/scopes/${scope.id}/applications/${application.id}/hard`,
            token: admin.token,
          });
          expect(response.status).toBe(200);
          expect(response.body).toMatchObject({
            data: { id: application.id },
            messages: ['Application permanently deleted.'],
          });
          expect(await applicationRow(test, application.id)).toBeUndefined();
          const credentialRow = await test.services.db
            .selectFrom('application_credentials')
            .select('id')
            .where('id', '=', credential.id)
            .executeTakeFirst();
          expect(credentialRow).toBeUndefined();
          const repeat = await test.request({
            method: 'DELETE',
            url: `/api/scopes/${scope.id}/applications/${application.id}/hard`,
            token: admin.token,
          });
          expect(repeat.status).toBe(404);
          expect(repeat.body).toEqual(refusal('Application not found.'));
        }
        const scopeRow = await test.services.db
          .selectFrom('scopes')
          .select('deleted_at')
          .where('id', '=', scope.id)
          .executeTakeFirst();
        expect(scopeRow).toEqual({ deleted_at: null });
        const ownerRow = await test.services.db
          .selectFrom('persons')
          .select('deleted_at')
          .where('id', '=', owner.id)
          .executeTakeFirst();
        expect(ownerRow).toEqual({ deleted_at: null });
      });

      it('is for System Admins only, and never reaches through another scope', async () => {
        const { owner, scope } = await ownedScope();
        const other = await createScope(test, [admin.id]);
        const application = await createApplication(test, scope.id, owner.id);
        const byOwner = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/applications/${application.id}/hard`,
          token: owner.token,
        });
        expect(byOwner.status).toBe(403);
        expect(byOwner.body).toEqual(refusal('You do not have permission to access this resource.'));
        const wrongScope = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${other.id}/applications/${application.id}/hard`,
          token: admin.token,
        });
        expect(wrongScope.status).toBe(404);
        expect(wrongScope.body).toEqual(refusal('Application not found.'));
        expect(await applicationRow(test, application.id)).toEqual(application);
      });
    });

    describe('cascades', () => {
      it('a scope’s logical delete logically deletes its applications', async () => {
        const { owner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id);
        const response = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect((await applicationRow(test, application.id))?.deleted_at).not.toBeNull();
      });

      it('a scope’s hard delete purges its applications, credentials and permissions', async () => {
        const { owner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id);
        const credential = await createCredential(test, application.id);
        const permission = await createPermission(test, scope.id);
        const response = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/hard`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(await applicationRow(test, application.id)).toBeUndefined();
        const leftovers = await Promise.all([
          test.services.db
            .selectFrom('application_credentials')
            .select('id')
            .where('id', '=', credential.id)
            .executeTakeFirst(),
          test.services.db
            .selectFrom('scope_permissions')
            .select('id')
            .where('id', '=', permission.id)
            .executeTakeFirst(),
        ]);
        expect(leftovers).toEqual([undefined, undefined]);
      });

      it('removing a person removes the applications they own (foreign key cascade)', async () => {
        const { owner, scope } = await ownedScope();
        const application = await createApplication(test, scope.id, owner.id);
        await test.services.db.deleteFrom('persons').where('id', '=', owner.id).execute();
        expect(await applicationRow(test, application.id)).toBeUndefined();
      });
    });
  });
}
