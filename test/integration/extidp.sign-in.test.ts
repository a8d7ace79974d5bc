import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  allExtidpUsers,
  extidpUserBySubject,
  extidpUsersOfScope,
  idTokenNow,
  refusal,
  signInWithExtidp,
} from '../helpers/extidp.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';
import { type IdTokenOptions, OTHER_CLIENT_ID, TestIdentityProvider } from '../helpers/identity-provider.ts';

const FAILED = 'Extidp authentication failed.';
const SCOPE_UNAVAILABLE = 'Extidp sign-in is not available for this scope.';
const UNVERIFIED = 'Extidp sign-up requires a verified email address.';
const CONFLICT = 'A person with this email already exists.';

for (const dialect of DIALECTS) {
  describe(`extidp sign-in (${dialect})`, () => {
    let provider: TestIdentityProvider;
    let test: TestApp;
    let admin: PersonFixture;
    let scopeId: string;

    beforeAll(async () => {
      provider = await TestIdentityProvider.start();
      test = await buildTestApp(dialect, { env: provider.environment() });
      admin = await createSystemAdmin(test);
      scopeId = (await createScope(test, [admin.id], { extidp_signin_enabled: 1 })).id;
    });
    afterAll(async () => {
      await test.close();
      await provider.close();
    });

    const token = (options: IdTokenOptions = {}) => idTokenNow(test, provider, options);
    const subject = () => `subject-${Math.random().toString(36).slice(2)}`;

    it('creates the external-provider user on the first sign-in and answers a full token without a stamp', async () => {
      const sub = subject();
      const response = await signInWithExtidp(test, {
        idToken: await token({
          claims: { sub, email: ' First.Visit@Example.test ', name: 'First Visit' },
        }),
        scopeId,
      });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({
        success: true,
        errors: [],
        messages: ['Signed in successfully.'],
        data: {
          emailVerified: true,
          requiresTwoFactor: false,
          challengeToken: null,
          challengeExpiresAt: null,
          availableMethods: null,
          processingRestricted: false,
        },
      });
      const user = await extidpUserBySubject(test, scopeId, sub);
      expect(user).toMatchObject({
        issuer: provider.issuer,
        name: 'First Visit',
        email: 'First.Visit@Example.test',
        email_normalized: 'first.visit@example.test',
        email_verified: 1,
        picture_url: 'https://pictures.example.test/me.png',
        deleted_at: null,
      });
      const bearer = test.services.tokens.readBearer(response.body.data.token);
      expect(bearer?.kind).toBe('full');
      expect(bearer?.claims).toMatchObject({ sub: user?.id, role: 3, kind: 'extidpUser', scopeId });
      expect(bearer?.claims).not.toHaveProperty('sst');
      expect(response.body.data.expiresAt).toBe(new Date(bearer!.claims.exp * 1000).toISOString());

      const [entry] = (await auditEntries(test, 'ExtidpSignInCommand')).filter(
        (row) => row.target_id === user?.id,
      );
      expect(entry).toMatchObject({ actor_id: null, succeeded: 1 });
    });

    it('signs the same external account in again without a second user, refreshing name, email and picture', async () => {
      const sub = subject();
      const first = await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
      expect(first.status).toBe(200);
      const created = await extidpUserBySubject(test, scopeId, sub);
      test.clock.advanceSeconds(5);

      const again = await signInWithExtidp(test, {
        idToken: await token({
          claims: {
            sub,
            email: 'renamed@example.test',
            name: 'Renamed Person',
            picture: 'https://pictures.example.test/new.png',
          },
        }),
        scopeId,
      });
      expect(again.status).toBe(200);
      const rows = (await extidpUsersOfScope(test, scopeId)).filter((row) => row.subject === sub);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        id: created?.id,
        name: 'Renamed Person',
        email: 'renamed@example.test',
        picture_url: 'https://pictures.example.test/new.png',
        created_at: created?.created_at,
      });
      expect(rows[0]!.updated_at > created!.updated_at).toBe(true);
      expect(test.services.tokens.readBearer(again.body.data.token)?.claims.sub).toBe(created?.id);
    });

    it('keeps one external account apart per scope: the same subject in another scope is another user', async () => {
      const otherScope = await createScope(test, [admin.id], { extidp_signin_enabled: 1 });
      const sub = subject();
      const inFirst = await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
      const inSecond = await signInWithExtidp(test, {
        idToken: await token({ claims: { sub } }),
        scopeId: otherScope.id,
      });
      expect([inFirst.status, inSecond.status]).toEqual([200, 200]);
      const first = await extidpUserBySubject(test, scopeId, sub);
      const second = await extidpUserBySubject(test, otherScope.id, sub);
      expect(first?.id).toBeDefined();
      expect(second?.id).toBeDefined();
      expect(first?.id).not.toBe(second?.id);
    });

    it('accepts a token for any of the configured client ids', async () => {
      const response = await signInWithExtidp(test, {
        idToken: await token({ audience: OTHER_CLIENT_ID }),
        scopeId,
      });
      expect(response.status).toBe(200);
    });

    describe('scope', () => {
      const refusedFor = async (targetScopeId: string) => {
        const before = await allExtidpUsers(test);
        const response = await signInWithExtidp(test, { idToken: await token(), scopeId: targetScopeId });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(refusal(SCOPE_UNAVAILABLE));
        expect(await allExtidpUsers(test)).toEqual(before);
      };

      it('refuses a scope with extidp sign-in turned off with 403 and creates nothing', async () => {
        const disabled = await createScope(test, [admin.id], { extidp_signin_enabled: 0 });
        await refusedFor(disabled.id);
      });

      it('refuses a logically deleted scope with the same 403', async () => {
        const deleted = await createScope(test, [admin.id], { extidp_signin_enabled: 1 });
        const response = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${deleted.id}`,
          token: admin.token,
        });
        expect(response.status).toBe(200);
        await refusedFor(deleted.id);
      });

      it('refuses a scope that does not exist with the same 403', async () => {
        await refusedFor('6a1f0c2e-8d1b-4c55-9b1e-0f4f3a9d2b7c');
      });

      it('reveals nothing about scopes to a caller without a valid provider token (401 first)', async () => {
        const response = await signInWithExtidp(test, {
          idToken: await token({ audience: 'someone-else' }),
          scopeId: '6a1f0c2e-8d1b-4c55-9b1e-0f4f3a9d2b7c',
        });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal(FAILED));
      });
    });

    describe('email rules', () => {
      it('refuses a first sign-in with email_verified false with 403 and creates nothing', async () => {
        const sub = subject();
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { sub, email_verified: false } }),
          scopeId,
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(refusal(UNVERIFIED));
        expect(await extidpUserBySubject(test, scopeId, sub)).toBeUndefined();
      });

      it('refuses a first sign-in without the email_verified claim, or without an address', async () => {
        for (const omit of [['email_verified'], ['email']]) {
          const sub = subject();
          const response = await signInWithExtidp(test, {
            idToken: await token({ claims: { sub }, omit }),
            scopeId,
          });
          expect(response.status).toBe(403);
          expect(response.body).toEqual(refusal(UNVERIFIED));
          expect(await extidpUserBySubject(test, scopeId, sub)).toBeUndefined();
        }
      });

      it('checks the verified flag before the address: an unverified address of a User is 403, not 409', async () => {
        const user = await createUser(test, scopeId);
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { email: user.email, email_verified: false } }),
          scopeId,
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(refusal(UNVERIFIED));
      });

      it('signs an existing user in whatever the claim says, and records the flag', async () => {
        const sub = subject();
        expect(
          (await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId })).status,
        ).toBe(200);
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { sub, email_verified: false } }),
          scopeId,
        });
        expect(response.status).toBe(200);
        expect(response.body.data.emailVerified).toBe(false);
        expect((await extidpUserBySubject(test, scopeId, sub))?.email_verified).toBe(0);
      });

      it('never links an account by email: a live User’s address (any case) is a 409 and nothing is created', async () => {
        const user = await createUser(test, scopeId, { email: `taken-${Date.now()}@example.test` });
        const before = await allExtidpUsers(test);
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { email: user.email.toUpperCase() } }),
          scopeId,
        });
        expect(response.status).toBe(409);
        expect(response.body).toEqual(refusal(CONFLICT));
        expect(await allExtidpUsers(test)).toEqual(before);
        const failures = (await auditEntries(test, 'ExtidpSignInCommand')).filter(
          (row) => row.failure_reason === CONFLICT,
        );
        expect(failures.length).toBeGreaterThan(0);
      });

      it('does not let an existing user take over a User’s address by changing theirs (409, nothing changed)', async () => {
        const sub = subject();
        await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        const before = await extidpUserBySubject(test, scopeId, sub);
        const user = await createUser(test, scopeId);
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { sub, email: user.email, name: 'Changed' } }),
          scopeId,
        });
        expect(response.status).toBe(409);
        expect(response.body).toEqual(refusal(CONFLICT));
        expect(await extidpUserBySubject(test, scopeId, sub)).toEqual(before);
      });

      it('does not count a deleted User, a User of another scope, or an administrator as a conflict', async () => {
        const otherScope = await createScope(test, [admin.id]);
        const elsewhere = await createUser(test, otherScope.id);
        const administrator = await createPerson(test, { role: 2 });
        const deleted = await createUser(test, scopeId);
        await test.services.db
          .updateTable('persons')
          .set({ deleted_at: test.clock.now().toISOString() })
          .where('id', '=', deleted.id)
          .execute();
        for (const email of [elsewhere.email, administrator.email, deleted.email]) {
          const response = await signInWithExtidp(test, {
            idToken: await token({ claims: { email } }),
            scopeId,
          });
          expect(response.status).toBe(200);
        }
      });
    });

    describe('account state', () => {
      it('refuses a logically deleted account with 401 and does not re-create it', async () => {
        const sub = subject();
        await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        const user = await extidpUserBySubject(test, scopeId, sub);
        const deleted = await test.request({
          method: 'DELETE',
          url: `/api/scopes/${scopeId}/extidp-users/${user?.id}`,
          token: admin.token,
        });
        expect(deleted.status).toBe(200);
        const before = await allExtidpUsers(test);

        const response = await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal(FAILED));
        expect(await allExtidpUsers(test)).toEqual(before);
      });

      it('refuses an account suspended for erasure with 401', async () => {
        const sub = subject();
        await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        await test.services.db
          .updateTable('extidp_users')
          .set({ erasure_requested_at: test.clock.now().toISOString() })
          .where('subject', '=', sub)
          .execute();
        const response = await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal(FAILED));
      });

      it('signs a restricted account in with processingRestricted true and a subject-rights-only token', async () => {
        const sub = subject();
        await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        await test.services.db
          .updateTable('extidp_users')
          .set({ restricted_at: test.clock.now().toISOString(), restriction_ground: 'test' })
          .where('subject', '=', sub)
          .execute();
        const response = await signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId });
        expect(response.status).toBe(200);
        expect(response.body.data.processingRestricted).toBe(true);
        const bearer = test.services.tokens.readBearer(response.body.data.token);
        expect(bearer?.kind).toBe('subjectRights');
        expect(bearer?.claims).toMatchObject({ kind: 'extidpUser', role: 3 });
        expect(bearer?.claims).not.toHaveProperty('scopeId');
        // Outside the four subject-rights endpoints the token opens nothing.
        const user = await extidpUserBySubject(test, scopeId, sub);
        const read = await test.request({
          method: 'GET',
          url: `/api/scopes/${scopeId}/extidp-users/${user?.id}`,
          token: response.body.data.token,
        });
        expect(read.status).toBe(403);
        expect(read.body).toEqual(refusal('You do not have permission to access this resource.'));
      });

      it('creates one user when two first sign-ins of the same account race', async () => {
        const sub = subject();
        const [a, b] = await Promise.all([
          signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId }),
          signInWithExtidp(test, { idToken: await token({ claims: { sub } }), scopeId }),
        ]);
        expect([a.status, b.status]).toEqual([200, 200]);
        const rows = (await extidpUsersOfScope(test, scopeId)).filter((row) => row.subject === sub);
        expect(rows).toHaveLength(1);
        const subjects = [a, b].map(
          (answer) => test.services.tokens.readBearer(answer.body.data.token)?.claims.sub,
        );
        expect(subjects).toEqual([rows[0]!.id, rows[0]!.id]);
      });
    });

    describe('binding', () => {
      it('answers a missing idToken or scopeId with the field’s message and a non-GUID scope with 400', async () => {
        const noToken = await signInWithExtidp(test, { scopeId } as never);
        expect(noToken.status).toBe(400);
        expect(noToken.body).toEqual(refusal('IdToken is required.'));
        const noScope = await signInWithExtidp(test, { idToken: await token() } as never);
        expect(noScope.status).toBe(400);
        expect(noScope.body).toEqual(refusal('ScopeId is required.'));
        const badScope = await signInWithExtidp(test, { idToken: await token(), scopeId: 'not-a-guid' });
        // The message of a non-GUID body value is the binding layer's (see the report to the lead).
        expect(badScope.status).toBe(400);
        expect(badScope.body).toMatchObject({ data: null, success: false });
      });

      it('answers a token that is not a JWT at all with 401, never 500', async () => {
        for (const idToken of ['garbage', 'a.b.c', '....', 'eyJhbGciOiJub25lIn0.e30.']) {
          const response = await signInWithExtidp(test, { idToken, scopeId });
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(FAILED));
        }
      });

      it('charges the anonymous authentication budget: the 11th sign-in a minute from one address is 429', async () => {
        const statuses: number[] = [];
        for (let attempt = 0; attempt < 11; attempt += 1) {
          const response = await test.request({
            method: 'POST',
            url: '/api/auth/extidp',
            body: { idToken: 'garbage', scopeId },
            remoteAddress: '192.0.2.77',
          });
          statuses.push(response.status);
          if (attempt === 10) {
            expect(response.body).toEqual(refusal('Too many requests.'));
            expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
          }
        }
        expect(statuses).toEqual([...Array<number>(10).fill(401), 429]);
      });
    });
  });
}
