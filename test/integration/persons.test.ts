import { verify } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  ownerIdsOf,
  PASSWORD,
  type PersonFixture,
  personCount,
  personRow,
} from '../helpers/factories.ts';

const NEW_PASSWORD = 'a perfectly fine passphrase';
const MISSING_ID = '00000000-0000-4000-8000-000000000000';

for (const dialect of DIALECTS) {
  describe(`persons (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });
    /** The failure reasons recorded for an action (entries of one test share a clock time). */
    const failureReasons = async (action: string) =>
      (await auditEntries(test, action))
        .filter((row) => row.succeeded === 0)
        .map((row) => row.failure_reason);
    /** The entries of an action about one target. */
    const auditAbout = async (action: string, targetId: string) =>
      (await auditEntries(test, action)).filter((row) => row.target_id === targetId);
    /** The credential rate limit counts per address; each PUT comes from an address of its own. */
    let addressCounter = 0;
    const freshAddress = () => {
      addressCounter += 1;
      return `10.77.${addressCounter >> 8}.${addressCounter & 255}`;
    };

    describe('POST /api/persons', () => {
      it('creates an administrator with no scope, unverified, with a hashed password, and audits it', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/persons',
          token: admin.token,
          body: {
            Name: ' Ada Admin ',
            email: '  Ada@Example.test ',
            password: NEW_PASSWORD,
            role: 'scopeadmin',
          },
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          errors: [],
          messages: ['Person created successfully.'],
          data: {
            name: 'Ada Admin',
            email: 'Ada@Example.test',
            role: Role.ScopeAdmin,
            scopeId: null,
            emailVerified: false,
            twoFactorEnabled: false,
            ownedScopeIds: [],
            isDeleted: false,
          },
        });
        const row = await personRow(test, response.body.data.id);
        expect(row?.email_normalized).toBe('ada@example.test');
        expect(row?.password_hash).not.toContain(NEW_PASSWORD);
        expect(await verify(row?.password_hash ?? '', NEW_PASSWORD)).toBe(true);
        expect(JSON.stringify(response.body)).not.toContain(NEW_PASSWORD);
        const [entry] = (await auditEntries(test, 'CreatePersonCommand')).filter(
          (item) => item.target_id === response.body.data.id,
        );
        expect(entry).toMatchObject({ actor_id: admin.id, succeeded: 1 });
      });

      it('accepts the role as a number and creates a System Admin', async () => {
        const response = await test.request({
          method: 'POST',
          url: '/api/persons',
          token: admin.token,
          body: { name: 'Sys Two', email: 'sys-two@example.test', password: NEW_PASSWORD, role: 1 },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.role).toBe(Role.SystemAdmin);
      });

      it('refuses a User role, an unknown role, a weak or common password, and writes nothing', async () => {
        const before = await personCount(test);
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ role: 'User' }, 'Role must be Scope Admin or System Admin.'],
          [{ role: 3 }, 'Role must be Scope Admin or System Admin.'],
          [{ role: 'Emperor' }, 'Role is not valid.'],
          [{ role: 9 }, 'Role is not valid.'],
          [{ password: 'short' }, 'Password must be at least 8 characters.'],
          [{ password: 'x'.repeat(257) }, 'Password must be at most 256 characters.'],
          [{ password: 'Password1' }, 'Password is too common.'],
          [{ password: 'qwertyuiop' }, 'Password is too common.'],
          [{ email: 'not-an-address' }, 'Email is not valid.'],
          [{ name: '   ' }, 'Name is required.'],
          [{ role: true }, 'The request is malformed.'],
        ];
        for (const [override, message] of cases) {
          const response = await test.request({
            method: 'POST',
            url: '/api/persons',
            token: admin.token,
            body: {
              name: 'Refused',
              email: 'refused@example.test',
              password: NEW_PASSWORD,
              role: 2,
              ...override,
            },
          });
          expect([response.status, response.body]).toEqual([400, refusal(message)]);
        }
        const missing = await test.request({
          method: 'POST',
          url: '/api/persons',
          token: admin.token,
          body: { name: 'Refused', email: 'refused@example.test', role: 2 },
        });
        expect([missing.status, missing.body.errors]).toEqual([400, ['Password is required.']]);
        expect(await personCount(test)).toBe(before);
        expect(await failureReasons('CreatePersonCommand')).toContain('Name is required.');
      });

      it('refuses an address already held by a live administrator, case-insensitively (409)', async () => {
        const existing = await createScopeAdmin(test, { email: 'taken-admin@example.test' });
        const before = await personCount(test);
        const response = await test.request({
          method: 'POST',
          url: '/api/persons',
          token: admin.token,
          body: { name: 'Dup', email: ' TAKEN-admin@example.test', password: NEW_PASSWORD, role: 2 },
        });
        expect([response.status, response.body]).toEqual([
          409,
          refusal('A person with this email already exists.'),
        ]);
        expect(await personCount(test)).toBe(before);
        expect((await personRow(test, existing.id))?.name).toBe(existing.row.name);
      });

      it('lets an administrator reuse the address of a User and of a deleted administrator', async () => {
        const scope = await createScope(test, [admin.id]);
        await createUser(test, scope.id, { email: 'shared@example.test' });
        await createScopeAdmin(test, { email: 'gone@example.test', deleted_at: new Date().toISOString() });
        for (const email of ['shared@example.test', 'gone@example.test']) {
          const response = await test.request({
            method: 'POST',
            url: '/api/persons',
            token: admin.token,
            body: { name: 'Reuse', email, password: NEW_PASSWORD, role: 2 },
          });
          expect(response.status).toBe(200);
        }
      });

      it('refuses Scope Admins and Users (403) before reading the body', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const before = await personCount(test);
        const response = await test.request({
          method: 'POST',
          url: '/api/persons',
          token: scopeAdmin.token,
          body: { name: 'x', email: 'x@example.test', password: NEW_PASSWORD, role: 2 },
        });
        expect([response.status, response.body]).toEqual([
          403,
          refusal('You do not have permission to access this resource.'),
        ]);
        expect(await personCount(test)).toBe(before);
      });
    });

    describe('POST /api/scopes/{scopeId}/persons and /owners', () => {
      it('creates a User in a scope the Scope Admin owns', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id.toUpperCase()}/persons`,
          token: owner.token,
          body: { name: 'Uma User', email: 'uma@example.test', password: NEW_PASSWORD },
        });
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({ role: Role.User, scopeId: scope.id, ownedScopeIds: [] });
        expect(await auditAbout('CreateScopeUserCommand', response.body.data.id)).toEqual([
          expect.objectContaining({ actor_id: owner.id, succeeded: 1 }),
        ]);
      });

      it('keeps User addresses unique per scope only', async () => {
        const scope = await createScope(test, [admin.id]);
        const other = await createScope(test, [admin.id]);
        await createUser(test, scope.id, { email: 'per-scope@example.test' });
        const before = await personCount(test);
        const duplicate = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/persons`,
          token: admin.token,
          body: { name: 'Dup', email: 'Per-Scope@example.test', password: NEW_PASSWORD },
        });
        expect([duplicate.status, duplicate.body.errors]).toEqual([
          409,
          ['A person with this email already exists.'],
        ]);
        expect(await personCount(test)).toBe(before);
        const elsewhere = await test.request({
          method: 'POST',
          url: `/api/scopes/${other.id}/persons`,
          token: admin.token,
          body: { name: 'Elsewhere', email: 'per-scope@example.test', password: NEW_PASSWORD },
        });
        expect(elsewhere.status).toBe(200);
      });

      it('refuses a Scope Admin who does not own the scope (403) and a missing scope (404)', async () => {
        const outsider = await createScopeAdmin(test);
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const before = await personCount(test);
        const body = { name: 'x', email: 'x-outsider@example.test', password: NEW_PASSWORD };
        for (const path of ['persons', 'owners']) {
          const forbidden = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/${path}`,
            token: outsider.token,
            body,
          });
          expect([forbidden.status, forbidden.body]).toEqual([
            403,
            refusal('You are not an owner of the target scope.'),
          ]);
          const missing = await test.request({
            method: 'POST',
            url: `/api/scopes/${MISSING_ID}/${path}`,
            token: admin.token,
            body,
          });
          expect([missing.status, missing.body]).toEqual([404, refusal('Scope not found.')]);
        }
        const asUser = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/persons`,
          token: user.token,
          body,
        });
        expect(asUser.status).toBe(403);
        expect(await personCount(test)).toBe(before);
      });

      it('creates a new Scope Admin who co-owns the scope', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/owners`,
          token: owner.token,
          body: { name: 'Co Owner', email: 'co-owner@example.test', password: NEW_PASSWORD },
        });
        expect(response.status).toBe(200);
        expect(response.body.messages).toEqual(['Owner created successfully.']);
        expect(response.body.data).toMatchObject({
          role: Role.ScopeAdmin,
          scopeId: null,
          ownedScopeIds: [scope.id],
        });
        expect(await ownerIdsOf(test, scope.id)).toEqual([owner.id, response.body.data.id].sort());
        expect(await auditAbout('CreateScopeOwnerCommand', response.body.data.id)).toEqual([
          expect.objectContaining({ actor_id: owner.id, succeeded: 1 }),
        ]);
      });
    });

    describe('owners: add, promote, remove', () => {
      it('adds an existing Scope Admin or System Admin as owner; repeating changes nothing', async () => {
        const owner = await createScopeAdmin(test);
        const candidate = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        for (let attempt = 0; attempt < 2; attempt++) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/owners/${candidate.id}`,
            token: owner.token,
          });
          expect(response.status).toBe(200);
          expect(response.body.data).toMatchObject({ id: candidate.id, ownedScopeIds: [scope.id] });
        }
        const other = await createSystemAdmin(test);
        const sysAdmin = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/owners/${other.id}`,
          token: owner.token,
        });
        expect(sysAdmin.status).toBe(200);
        expect(await ownerIdsOf(test, scope.id)).toEqual([owner.id, candidate.id, other.id].sort());
        expect(await auditAbout('AddScopeOwnerCommand', other.id)).toEqual([
          expect.objectContaining({ actor_id: owner.id, succeeded: 1 }),
        ]);
      });

      it('refuses an ineligible person (400), a stranger (404), and a scope not owned (403)', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const other = await createScope(test, [admin.id]);
        const ownUser = await createUser(test, scope.id);
        const foreignUser = await createUser(test, other.id);
        const restricted = await createScopeAdmin(test, { restricted_at: new Date().toISOString() });
        const deleted = await createScopeAdmin(test, { deleted_at: new Date().toISOString() });
        const cases: Array<[string, number, string]> = [
          [ownUser.id, 400, 'The person cannot become an owner of this scope.'],
          [restricted.id, 400, 'The person cannot become an owner of this scope.'],
          [foreignUser.id, 404, 'Person not found.'],
          [deleted.id, 404, 'Person not found.'],
          [MISSING_ID, 404, 'Person not found.'],
        ];
        for (const [personId, status, message] of cases) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/owners/${personId}`,
            token: owner.token,
          });
          expect([response.status, response.body]).toEqual([status, refusal(message)]);
        }
        const notMine = await test.request({
          method: 'POST',
          url: `/api/scopes/${other.id}/owners/${owner.id}`,
          token: owner.token,
        });
        expect([notMine.status, notMine.body]).toEqual([
          403,
          refusal('You are not an owner of the target scope.'),
        ]);
        expect(await ownerIdsOf(test, scope.id)).toEqual([owner.id]);
        expect(await ownerIdsOf(test, other.id)).toEqual([admin.id]);
      });

      it('promotes the scope’s User to a Scope Admin owner who leaves the scope’s Users', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/users/${user.id}/promote`,
          token: owner.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({
          id: user.id,
          role: Role.ScopeAdmin,
          scopeId: null,
          ownedScopeIds: [scope.id],
        });
        expect(await ownerIdsOf(test, scope.id)).toEqual([owner.id, user.id].sort());
        const users = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/persons`,
          token: owner.token,
        });
        expect(users.body.data.map((person: { id: string }) => person.id)).not.toContain(user.id);
        // The person now signs in as an administrator, without a scope id.
        const login = await test.request({
          method: 'POST',
          url: '/api/auth/login',
          body: { email: user.email, password: PASSWORD },
        });
        expect(login.status).toBe(200);
        expect(await auditAbout('PromoteScopeUserCommand', user.id)).toEqual([
          expect.objectContaining({ actor_id: owner.id, succeeded: 1 }),
        ]);
      });

      it('refuses to promote an administrator, a User of another scope, or onto a taken admin address', async () => {
        const scope = await createScope(test, [admin.id]);
        const other = await createScope(test, [admin.id]);
        const scopeAdmin = await createScopeAdmin(test, { email: 'promote-clash@example.test' });
        const foreign = await createUser(test, other.id);
        const clash = await createUser(test, scope.id, { email: 'Promote-Clash@example.test' });
        const restricted = await createUser(test, scope.id, { restricted_at: new Date().toISOString() });
        const cases: Array<[string, number, string]> = [
          [scopeAdmin.id, 404, 'Person not found.'],
          [foreign.id, 404, 'Person not found.'],
          [clash.id, 409, 'A person with this email already exists.'],
          [restricted.id, 400, 'The person cannot become an owner of this scope.'],
        ];
        for (const [personId, status, message] of cases) {
          const response = await test.request({
            method: 'POST',
            url: `/api/scopes/${scope.id}/users/${personId}/promote`,
            token: admin.token,
          });
          expect([response.status, response.body]).toEqual([status, refusal(message)]);
        }
        expect(await personRow(test, clash.id)).toMatchObject({ role: Role.User, scope_id: scope.id });
        expect(await ownerIdsOf(test, scope.id)).toEqual([admin.id]);
      });

      it('removes an owner but never the last one, whatever their role', async () => {
        const first = await createScopeAdmin(test);
        const second = await createSystemAdmin(test);
        const scope = await createScope(test, [first.id, second.id]);
        const removed = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/owners/${first.id}`,
          token: first.token,
        });
        expect(removed.status).toBe(200);
        expect(removed.body.messages).toEqual(['Owner removed successfully.']);
        expect(await ownerIdsOf(test, scope.id)).toEqual([second.id]);
        const last = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/owners/${second.id}`,
          token: admin.token,
        });
        expect([last.status, last.body]).toEqual([
          409,
          refusal('This change would leave a scope without an owner. Add another owner first.'),
        ]);
        expect(await ownerIdsOf(test, scope.id)).toEqual([second.id]);
        const notOwner = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scope.id}/owners/${first.id}`,
          token: admin.token,
        });
        expect([notOwner.status, notOwner.body]).toEqual([404, refusal('Person not found.')]);
        expect(await failureReasons('RemoveScopeOwnerCommand')).toContain('Person not found.');
      });
    });

    describe('GET /api/persons/{id}', () => {
      it('lets a person read themselves, with every scope they own', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const a = await createScope(test, [scopeAdmin.id]);
        const b = await createScope(test, [scopeAdmin.id, admin.id]);
        const response = await test.request({
          method: 'GET',
          url: `/api/persons/${scopeAdmin.id}`,
          token: scopeAdmin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({
          id: scopeAdmin.id,
          email: scopeAdmin.email,
          role: Role.ScopeAdmin,
        });
        expect(response.body.data.ownedScopeIds).toEqual([a.id, b.id].sort());
        expect(Object.keys(response.body.data).sort()).toEqual(
          [
            'createdAt',
            'email',
            'emailVerified',
            'id',
            'isDeleted',
            'name',
            'ownedScopeIds',
            'role',
            'scopeId',
            'twoFactorEnabled',
            'updatedAt',
          ].sort(),
        );
      });

      it('shows a Scope Admin the Users and co-owners of their scopes, cut to the scopes they share', async () => {
        const reader = await createScopeAdmin(test);
        const coOwner = await createScopeAdmin(test);
        const shared = await createScope(test, [reader.id, coOwner.id]);
        await createScope(test, [coOwner.id]);
        const user = await createUser(test, shared.id);
        const coOwnerAnswer = await test.request({
          method: 'GET',
          url: `/api/persons/${coOwner.id}`,
          token: reader.token,
        });
        expect(coOwnerAnswer.status).toBe(200);
        expect(coOwnerAnswer.body.data.ownedScopeIds).toEqual([shared.id]);
        const userAnswer = await test.request({
          method: 'GET',
          url: `/api/persons/${user.id}`,
          token: reader.token,
        });
        expect(userAnswer.status).toBe(200);
        const systemAnswer = await test.request({
          method: 'GET',
          url: `/api/persons/${coOwner.id}`,
          token: admin.token,
        });
        expect(systemAnswer.body.data.ownedScopeIds).toHaveLength(2);
      });

      it('refuses strangers with 403 whether or not the person exists', async () => {
        const reader = await createScopeAdmin(test);
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const sameScopeUser = await createUser(test, scope.id);
        for (const [token, id] of [
          [reader.token, user.id],
          [reader.token, admin.id],
          [reader.token, MISSING_ID],
          [sameScopeUser.token, user.id],
        ] as const) {
          const response = await test.request({ method: 'GET', url: `/api/persons/${id}`, token });
          expect([response.status, response.body]).toEqual([
            403,
            refusal('You are not allowed to view this person.'),
          ]);
        }
      });

      it('answers 404 for a missing or deleted person, and shows a deleted one with includeDeleted', async () => {
        const gone = await createScopeAdmin(test, { deleted_at: new Date().toISOString() });
        const missing = await test.request({
          method: 'GET',
          url: `/api/persons/${MISSING_ID}`,
          token: admin.token,
        });
        expect([missing.status, missing.body]).toEqual([404, refusal('Person not found.')]);
        const deleted = await test.request({
          method: 'GET',
          url: `/api/persons/${gone.id}`,
          token: admin.token,
        });
        expect(deleted.status).toBe(404);
        const included = await test.request({
          method: 'GET',
          url: `/api/persons/${gone.id}?includeDeleted=true`,
          token: admin.token,
        });
        expect(included.status).toBe(200);
        expect(included.body.data.isDeleted).toBe(true);
        const malformed = await test.request({
          method: 'GET',
          url: '/api/persons/not-a-guid',
          token: admin.token,
        });
        expect([malformed.status, malformed.body]).toEqual([400, refusal('The request is malformed.')]);
      });
    });

    describe('lists', () => {
      it('lists a scope’s Users by name, withholding restricted and deleted ones', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const b = await createPerson(test, { role: Role.User, scope_id: scope.id, name: 'Bea' });
        const a = await createPerson(test, { role: Role.User, scope_id: scope.id, name: 'Abe' });
        await createPerson(test, {
          role: Role.User,
          scope_id: scope.id,
          name: 'Ria',
          restricted_at: new Date().toISOString(),
        });
        const gone = await createPerson(test, {
          role: Role.User,
          scope_id: scope.id,
          name: 'Gus',
          deleted_at: new Date().toISOString(),
        });
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/persons`,
          token: owner.token,
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ pageNumber: 1, pageSize: 100, totalRecords: 2, success: true });
        expect(response.body.data.map((person: { id: string }) => person.id)).toEqual([a.id, b.id]);
        const withDeleted = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/persons?includeDeleted=true&name=G`,
          token: owner.token,
        });
        expect(withDeleted.body.data.map((person: { id: string }) => person.id)).toEqual([gone.id]);
        const forbidden = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/persons`,
          token: (await createScopeAdmin(test)).token,
        });
        expect([forbidden.status, forbidden.body]).toEqual([
          403,
          refusal('You are not an owner of the target scope.'),
        ]);
        const badPage = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/persons?PageSize=0`,
          token: owner.token,
        });
        expect([badPage.status, badPage.body]).toEqual([
          400,
          refusal('Page size must be between 1 and 100.'),
        ]);
      });

      it('lists a scope’s owners, withholding restricted ones', async () => {
        const owner = await createScopeAdmin(test);
        const restricted = await createScopeAdmin(test, { restricted_at: new Date().toISOString() });
        const scope = await createScope(test, [owner.id, restricted.id, admin.id]);
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/owners`,
          token: owner.token,
        });
        expect(response.status).toBe(200);
        expect(response.body.totalRecords).toBe(2);
        expect(response.body.data.map((person: { id: string }) => person.id).sort()).toEqual(
          [owner.id, admin.id].sort(),
        );
      });

      it('lists who may own a scope: Scope Admins, System Admins only for a System Admin, minus owners', async () => {
        const marker = `Zed ${Date.now()}`;
        const ownerAdmin = await createPerson(test, { role: Role.ScopeAdmin, name: `${marker} owner` });
        const freeAdmin = await createPerson(test, { role: Role.ScopeAdmin, name: `${marker} free` });
        const sysAdmin = await createPerson(test, { role: Role.SystemAdmin, name: `${marker} system` });
        await createPerson(test, {
          role: Role.ScopeAdmin,
          name: `${marker} restricted`,
          restricted_at: new Date().toISOString(),
        });
        const scope = await createScope(test, [ownerAdmin.id]);
        const asSystem = await test.request({
          method: 'GET',
          url: `/api/persons/scope-admins?name=${encodeURIComponent(marker)}`,
          token: admin.token,
        });
        expect(asSystem.status).toBe(200);
        expect(asSystem.body.data).toEqual([
          { id: freeAdmin.id, name: `${marker} free`, email: freeAdmin.email },
          { id: ownerAdmin.id, name: `${marker} owner`, email: ownerAdmin.email },
          { id: sysAdmin.id, name: `${marker} system`, email: sysAdmin.email },
        ]);
        const asOwner = await test.request({
          method: 'GET',
          url: `/api/persons/scope-admins?name=${encodeURIComponent(marker)}&excludeOwnersOf=${scope.id}`,
          token: ownerAdmin.token,
        });
        expect(asOwner.body.data.map((person: { id: string }) => person.id)).toEqual([freeAdmin.id]);
        const foreign = await test.request({
          method: 'GET',
          url: `/api/persons/scope-admins?excludeOwnersOf=${scope.id}`,
          token: freeAdmin.token,
        });
        expect([foreign.status, foreign.body]).toEqual([
          403,
          refusal('You are not an owner of the target scope.'),
        ]);
      });

      it('lists System Admins by name with case-insensitive filters; others get 403', async () => {
        const marker = `Sysfilter${Date.now()}`;
        const b = await createPerson(test, {
          role: Role.SystemAdmin,
          name: `${marker} B`,
          email: `b.${marker}@example.test`,
        });
        const a = await createPerson(test, {
          role: Role.SystemAdmin,
          name: `${marker} A`,
          email: `a.${marker}@example.test`,
        });
        await createPerson(test, {
          role: Role.SystemAdmin,
          name: `${marker} C`,
          deleted_at: new Date().toISOString(),
        });
        await createPerson(test, { role: Role.ScopeAdmin, name: `${marker} D` });
        const response = await test.request({
          method: 'GET',
          url: `/api/persons/system-admins?Name=${marker.toUpperCase()}&pageSize=1&pageNumber=2`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ totalRecords: 2, pageNumber: 2, pageSize: 1 });
        expect(response.body.data).toEqual([{ id: b.id, name: `${marker} B`, email: b.email }]);
        const byEmail = await test.request({
          method: 'GET',
          url: `/api/persons/system-admins?email=A.${marker.toUpperCase()}`,
          token: admin.token,
        });
        expect(byEmail.body.data.map((person: { id: string }) => person.id)).toEqual([a.id]);
        const forbidden = await test.request({
          method: 'GET',
          url: '/api/persons/system-admins',
          token: (await createScopeAdmin(test)).token,
        });
        expect([forbidden.status, forbidden.body]).toEqual([
          403,
          refusal('You do not have permission to access this resource.'),
        ]);
      });
    });

    describe('PUT /api/persons/{id}', () => {
      it('updates a User’s name and email as their scope’s owner: unverified, tokens revoked', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        const response = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${user.id}`,
          token: owner.token,
          body: { name: ' Renamed ', email: ' renamed@example.test ' },
        });
        expect(response.status).toBe(200);
        expect(response.body.data).toMatchObject({
          name: 'Renamed',
          email: 'renamed@example.test',
          emailVerified: false,
        });
        const row = await personRow(test, user.id);
        expect(row?.security_stamp).not.toBe(user.row.security_stamp);
        const oldToken = await test.request({
          method: 'GET',
          url: `/api/persons/${user.id}`,
          token: user.token,
        });
        expect([oldToken.status, oldToken.body]).toEqual([
          401,
          refusal('This token has been revoked. Sign in again.'),
        ]);
        expect(await auditAbout('UpdatePersonCommand', user.id)).toEqual([
          expect.objectContaining({ actor_id: owner.id, succeeded: 1 }),
        ]);
      });

      it('treats surrounding whitespace as no change, and a change of case as a change', async () => {
        const person = await createScopeAdmin(test, { email: 'Case@example.test' });
        const same = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${person.id}`,
          token: admin.token,
          body: { name: person.row.name, email: '  Case@example.test  ' },
        });
        expect(same.status).toBe(200);
        const unchanged = await personRow(test, person.id);
        expect(unchanged).toMatchObject({ email_verified: 1, security_stamp: person.row.security_stamp });
        const recased = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${person.id}`,
          token: admin.token,
          body: { name: person.row.name, email: 'case@example.test' },
        });
        expect(recased.status).toBe(200);
        const changed = await personRow(test, person.id);
        expect(changed).toMatchObject({ email: 'case@example.test', email_verified: 0 });
        expect(changed?.security_stamp).not.toBe(person.row.security_stamp);
      });

      it('lets a person rename themselves without a password', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const response = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${user.id}`,
          token: user.token,
          body: { name: 'Self Named', email: user.email },
        });
        expect(response.status).toBe(200);
        expect((await personRow(test, user.id))?.name).toBe('Self Named');
      });

      it('requires the current password for an own email change, and revokes the caller’s own token', async () => {
        const person = await createScopeAdmin(test);
        for (const currentPassword of [undefined, 'wrong password']) {
          const refused = await test.request({
            method: 'PUT',
            remoteAddress: freshAddress(),
            url: `/api/persons/${person.id}`,
            token: person.token,
            body: { name: person.row.name, email: 'moved@example.test', currentPassword },
          });
          expect([refused.status, refused.body]).toEqual([
            401,
            refusal('The password or code is incorrect.'),
          ]);
        }
        expect(await personRow(test, person.id)).toMatchObject({
          email: person.email,
          security_stamp: person.row.security_stamp,
          reauthentication_failures: 2,
        });
        const accepted = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${person.id}`,
          token: person.token,
          body: { name: person.row.name, email: 'moved@example.test', currentPassword: PASSWORD },
        });
        expect(accepted.status).toBe(200);
        expect(await personRow(test, person.id)).toMatchObject({
          email: 'moved@example.test',
          reauthentication_failures: 0,
        });
        const after = await test.request({
          method: 'GET',
          url: `/api/persons/${person.id}`,
          token: person.token,
        });
        expect(after.status).toBe(401);
        expect(after.body.errors).toEqual(['This token has been revoked. Sign in again.']);
      });

      it('refuses an address taken in the same uniqueness group (409) and changes nothing', async () => {
        const scope = await createScope(test, [admin.id]);
        await createUser(test, scope.id, { email: 'holder@example.test' });
        const user = await createUser(test, scope.id);
        const response = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${user.id}`,
          token: admin.token,
          body: { name: 'x', email: 'HOLDER@example.test' },
        });
        expect([response.status, response.body]).toEqual([
          409,
          refusal('A person with this email already exists.'),
        ]);
        expect(await personRow(test, user.id)).toMatchObject({
          email: user.email,
          name: user.row.name,
          email_verified: 1,
        });
      });

      it('lets only a System Admin change a role, and only between the administrator roles', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const self = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${scopeAdmin.id}`,
          token: scopeAdmin.token,
          body: { name: 'x', email: scopeAdmin.email, role: 'SystemAdmin' },
        });
        expect([self.status, self.body]).toEqual([403, refusal('Only a System Admin may change a role.')]);
        const sameRole = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${scopeAdmin.id}`,
          token: scopeAdmin.token,
          body: { name: 'Same role', email: scopeAdmin.email, role: 2 },
        });
        expect(sameRole.status).toBe(200);
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        for (const [id, role] of [
          [user.id, 'ScopeAdmin'],
          [scopeAdmin.id, 'User'],
        ] as const) {
          const refused = await test.request({
            method: 'PUT',
            remoteAddress: freshAddress(),
            url: `/api/persons/${id}`,
            token: admin.token,
            body: { name: 'x', email: 'x@example.test', role },
          });
          expect([refused.status, refused.body]).toEqual([
            400,
            refusal('A role can only change between Scope Admin and System Admin.'),
          ]);
        }
        expect((await personRow(test, user.id))?.role).toBe(Role.User);
        const promoted = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${scopeAdmin.id}`,
          token: admin.token,
          body: { name: 'Now system', email: scopeAdmin.email, role: 'systemadmin' },
        });
        expect(promoted.status).toBe(200);
        expect(promoted.body.data.role).toBe(Role.SystemAdmin);
      });

      it('refuses callers who may not update the person (403) and answers 404 to a System Admin', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const other = await createScope(test, [admin.id]);
        const foreignUser = await createUser(test, other.id);
        const coOwner = await createScopeAdmin(test);
        const sameScopeUser = await createUser(test, scope.id);
        const peer = await createUser(test, scope.id);
        for (const [token, id] of [
          [owner.token, foreignUser.id],
          [owner.token, coOwner.id],
          [owner.token, MISSING_ID],
          [sameScopeUser.token, peer.id],
        ] as const) {
          const response = await test.request({
            method: 'PUT',
            remoteAddress: freshAddress(),
            url: `/api/persons/${id}`,
            token,
            body: { name: 'Hijacked', email: 'hijack@example.test' },
          });
          expect([response.status, response.body]).toEqual([
            403,
            refusal('You are not allowed to update this person.'),
          ]);
        }
        expect((await personRow(test, foreignUser.id))?.name).toBe(foreignUser.row.name);
        expect((await personRow(test, peer.id))?.name).toBe(peer.row.name);
        const missing = await test.request({
          method: 'PUT',
          remoteAddress: freshAddress(),
          url: `/api/persons/${MISSING_ID}`,
          token: admin.token,
          body: { name: 'x', email: 'x@example.test' },
        });
        expect([missing.status, missing.body]).toEqual([404, refusal('Person not found.')]);
      });
    });

    describe('DELETE /api/persons/{id}', () => {
      it('deletes logically, then answers alreadyDeleted; the person can no longer sign in', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        const first = await test.request({
          method: 'DELETE',
          url: `/api/persons/${user.id}`,
          token: owner.token,
        });
        expect([first.status, first.body.data]).toEqual([200, { id: user.id, alreadyDeleted: false }]);
        expect((await personRow(test, user.id))?.deleted_at).not.toBeNull();
        const again = await test.request({
          method: 'DELETE',
          url: `/api/persons/${user.id}`,
          token: admin.token,
        });
        expect(again.body.data).toEqual({ id: user.id, alreadyDeleted: true });
        const token = await test.request({
          method: 'GET',
          url: `/api/persons/${user.id}`,
          token: user.token,
        });
        expect(token.status).toBe(401);
        const entries = await auditAbout('DeletePersonCommand', user.id);
        expect(entries.map((entry) => [entry.actor_id, entry.succeeded]).sort()).toEqual(
          [
            [owner.id, 1],
            [admin.id, 1],
          ].sort(),
        );
      });

      it('refuses deleting oneself, as a System Admin too', async () => {
        for (const person of [admin, await createScopeAdmin(test)]) {
          for (const path of ['', '/hard']) {
            if (path === '/hard' && person !== admin) continue;
            const response = await test.request({
              method: 'DELETE',
              url: `/api/persons/${person.id}${path}`,
              token: person.token,
            });
            expect([response.status, response.body]).toEqual([
              403,
              refusal('You cannot delete your own person record.'),
            ]);
            expect((await personRow(test, person.id))?.deleted_at).toBeNull();
          }
        }
      });

      it('refuses a Scope Admin deleting anyone but a User of a scope they own', async () => {
        const owner = await createScopeAdmin(test);
        const coOwner = await createScopeAdmin(test);
        await createScope(test, [owner.id, coOwner.id]);
        const other = await createScope(test, [admin.id]);
        const foreignUser = await createUser(test, other.id);
        for (const id of [coOwner.id, foreignUser.id, MISSING_ID]) {
          const response = await test.request({
            method: 'DELETE',
            url: `/api/persons/${id}`,
            token: owner.token,
          });
          expect([response.status, response.body]).toEqual([
            403,
            refusal('You are not allowed to delete this person.'),
          ]);
        }
        expect((await personRow(test, coOwner.id))?.deleted_at).toBeNull();
        expect((await personRow(test, foreignUser.id))?.deleted_at).toBeNull();
        const user = await createUser(test, other.id);
        const asUser = await test.request({
          method: 'DELETE',
          url: `/api/persons/${foreignUser.id}`,
          token: user.token,
        });
        expect(asUser.status).toBe(403);
        const missing = await test.request({
          method: 'DELETE',
          url: `/api/persons/${MISSING_ID}`,
          token: admin.token,
        });
        expect([missing.status, missing.body]).toEqual([404, refusal('Person not found.')]);
      });

      it('refuses deleting the last owner of a live scope (409); a co-owned scope lets it through', async () => {
        const sole = await createSystemAdmin(test);
        const scope = await createScope(test, [sole.id]);
        const refused = await test.request({
          method: 'DELETE',
          url: `/api/persons/${sole.id}`,
          token: admin.token,
        });
        expect([refused.status, refused.body]).toEqual([
          409,
          refusal('This change would leave a scope without an owner. Add another owner first.'),
        ]);
        expect((await personRow(test, sole.id))?.deleted_at).toBeNull();
        expect(await ownerIdsOf(test, scope.id)).toEqual([sole.id]);
        expect(await failureReasons('DeletePersonCommand')).toContain(
          'This change would leave a scope without an owner. Add another owner first.',
        );
        const coOwner = await createScopeAdmin(test);
        await test.services.db
          .insertInto('scope_owners')
          .values({ scope_id: scope.id, person_id: coOwner.id, created_at: new Date().toISOString() })
          .execute();
        const deleted = await test.request({
          method: 'DELETE',
          url: `/api/persons/${sole.id}`,
          token: admin.token,
        });
        expect(deleted.status).toBe(200);
        expect(await ownerIdsOf(test, scope.id)).toEqual([coOwner.id]);
      });
    });

    describe('DELETE /api/persons/{id}/hard', () => {
      it('removes the person and their ownerships; a repeat is 404', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id, admin.id]);
        const response = await test.request({
          method: 'DELETE',
          url: `/api/persons/${owner.id}/hard`,
          token: admin.token,
        });
        expect([response.status, response.body.data]).toEqual([200, { id: owner.id }]);
        expect(await personRow(test, owner.id)).toBeUndefined();
        expect(await ownerIdsOf(test, scope.id)).toEqual([admin.id]);
        const again = await test.request({
          method: 'DELETE',
          url: `/api/persons/${owner.id}/hard`,
          token: admin.token,
        });
        expect([again.status, again.body]).toEqual([404, refusal('Person not found.')]);
        const entries = await auditAbout('HardDeletePersonCommand', owner.id);
        expect(entries.map((entry) => entry.failure_reason).sort()).toEqual(
          ['Person not found.', null].sort(),
        );
      });

      it('refuses the last owner (409) and Scope Admins (403)', async () => {
        const sole = await createScopeAdmin(test);
        const scope = await createScope(test, [sole.id]);
        const refused = await test.request({
          method: 'DELETE',
          url: `/api/persons/${sole.id}/hard`,
          token: admin.token,
        });
        expect(refused.status).toBe(409);
        expect(await personRow(test, sole.id)).toBeDefined();
        expect(await ownerIdsOf(test, scope.id)).toEqual([sole.id]);
        const user = await createUser(test, scope.id);
        const byScopeAdmin = await test.request({
          method: 'DELETE',
          url: `/api/persons/${user.id}/hard`,
          token: sole.token,
        });
        expect([byScopeAdmin.status, byScopeAdmin.body]).toEqual([
          403,
          refusal('You do not have permission to access this resource.'),
        ]);
        expect(await personRow(test, user.id)).toBeDefined();
      });
    });
  });
}
