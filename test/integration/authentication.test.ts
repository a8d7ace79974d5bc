import { randomUUID } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { buildTestApp, TEST_ENV, TEST_SECRET, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';

/**
 * Bearer-token authentication and role gates (spec §Authentication 1–8; DECISIONS §3).
 * Every hostile token here is signed by the test itself, so each one differs from a valid token
 * in exactly the property under test.
 */

const ISSUER = TEST_ENV.SERVICE_AUTH_TOKEN_ISSUER!;
const AUDIENCE = TEST_ENV.SERVICE_AUTH_TOKEN_AUDIENCE!;
const APPLICATION_AUDIENCE = TEST_ENV.SERVICE_APPLICATION_TOKEN_AUDIENCE!;
const PREVIOUS_SECRET = 'the-previous-secret-also-at-least-32-bytes!!';

const INVALID_TOKEN = { data: null, messages: [], errors: ['Invalid token'], success: false };
const REVOKED = {
  data: null,
  messages: [],
  errors: ['This token has been revoked. Sign in again.'],
  success: false,
};
const NO_LONGER_VALID = {
  data: null,
  messages: [],
  errors: ['This token is no longer valid. Sign in again.'],
  success: false,
};
const FORBIDDEN = {
  data: null,
  messages: [],
  errors: ['You do not have permission to access this resource.'],
  success: false,
};

type Algorithm = 'HS256' | 'HS384' | 'HS512';

/** Signs claims as the test says; registered claims default to a valid full person token. */
function signToken(
  test: TestApp,
  claims: Record<string, unknown>,
  options: { algorithm?: Algorithm; key?: string } = {},
): string {
  const now = Math.floor(test.clock.now().getTime() / 1000);
  const sign = createSigner({ key: options.key ?? TEST_SECRET, algorithm: options.algorithm ?? 'HS256' });
  return sign({
    iss: ISSUER,
    aud: AUDIENCE,
    iat: now,
    nbf: now,
    exp: now + 3600,
    jti: randomUUID(),
    ...claims,
  });
}

/** The identity claims of a person, as the service puts them in a full token. */
function personClaims(person: PersonFixture): Record<string, unknown> {
  return {
    sub: person.id,
    role: person.row.role,
    kind: 'person',
    sst: person.row.security_stamp,
    ...(person.row.scope_id === null ? {} : { scopeId: person.row.scope_id }),
  };
}

/** An unsigned token (`alg: none`): header and payload with an empty signature. */
function unsignedToken(claims: Record<string, unknown>): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims)}.`;
}

for (const dialect of DIALECTS) {
  describe(`authentication (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    /** A System Admin route that writes nothing: reading one scope. */
    const readScopes = (token: string | undefined, headers?: Record<string, string>) =>
      test.request({
        method: 'GET',
        url: '/api/scopes',
        ...(token === undefined ? {} : { token }),
        ...(headers === undefined ? {} : { headers }),
      });

    it('admits a valid HS256 person token signed with the configured secret', async () => {
      const response = await readScopes(signToken(test, personClaims(admin)));
      expect(response.status).toBe(200);
      expect(response.body.success).toBe(true);
    });

    it('refuses a request without a token with 401 Invalid token', async () => {
      const response = await readScopes(undefined);
      expect(response.status).toBe(401);
      expect(response.body).toEqual(INVALID_TOKEN);
    });

    describe('algorithm confusion', () => {
      for (const algorithm of ['HS384', 'HS512'] as const) {
        it(`refuses a token signed with ${algorithm} under the right secret`, async () => {
          const response = await readScopes(signToken(test, personClaims(admin), { algorithm }));
          expect(response.status).toBe(401);
          expect(response.body).toEqual(INVALID_TOKEN);
        });
      }

      it('refuses an unsigned token (alg none)', async () => {
        const now = Math.floor(test.clock.now().getTime() / 1000);
        const token = unsignedToken({
          ...personClaims(admin),
          iss: ISSUER,
          aud: AUDIENCE,
          iat: now,
          nbf: now,
          exp: now + 3600,
        });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });
    });

    describe('forgery and misdirected tokens', () => {
      it('refuses a token signed with another secret', async () => {
        const token = signToken(test, personClaims(admin), {
          key: 'an-attacker-secret-of-at-least-32-bytes!!!',
        });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token whose signature was tampered with', async () => {
        const [header, payload, signature] = signToken(test, personClaims(admin)).split('.') as [
          string,
          string,
          string,
        ];
        const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
        const response = await readScopes(`${header}.${payload}.${flipped}`);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token whose payload was changed after signing (role escalation)', async () => {
        const user = await createUser(test, (await createScope(test, [admin.id])).id);
        const [header, , signature] = user.token.split('.') as [string, string, string];
        const escalated = Buffer.from(
          JSON.stringify({ ...personClaims(user), role: Role.SystemAdmin }),
        ).toString('base64url');
        const response = await readScopes(`${header}.${escalated}.${signature}`);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token from another issuer', async () => {
        const token = signToken(test, { ...personClaims(admin), iss: 'https://elsewhere.test' });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token without an issuer', async () => {
        const token = signToken(test, { ...personClaims(admin), iss: undefined });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token for another audience', async () => {
        const token = signToken(test, { ...personClaims(admin), aud: 'some-other-api' });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token carrying two audiences (person and subject-rights)', async () => {
        const token = signToken(test, {
          ...personClaims(admin),
          aud: [AUDIENCE, `${AUDIENCE}.subject-rights`],
        });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a token carrying the person and application audiences', async () => {
        const token = signToken(test, { ...personClaims(admin), aud: [AUDIENCE, APPLICATION_AUDIENCE] });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a two-factor challenge token used as a bearer token', async () => {
        const { token } = test.services.tokens.issueChallengeToken(
          { sub: admin.id, cid: randomUUID(), sst: admin.row.security_stamp },
          600,
        );
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses a challenge-audience token even when it carries person claims', async () => {
        const token = signToken(test, { ...personClaims(admin), aud: `${AUDIENCE}.2fa-challenge` });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses an application token as a bearer token', async () => {
        const scope = await createScope(test, [admin.id]);
        const { token } = test.services.tokens.issueApplicationToken({
          sub: randomUUID(),
          scopeId: scope.id,
          cid: randomUUID(),
        });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });

      it('refuses an application-audience token carrying a System Admin role', async () => {
        const token = signToken(test, { ...personClaims(admin), aud: APPLICATION_AUDIENCE });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });
    });

    describe('lifetime', () => {
      it('refuses a token once it has expired, and not a second before', async () => {
        const token = signToken(test, personClaims(admin));
        test.clock.advanceSeconds(3599);
        try {
          expect((await readScopes(token)).status).toBe(200);
          test.clock.advanceSeconds(1);
          const response = await readScopes(token);
          expect(response.status).toBe(401);
          expect(response.body).toEqual(INVALID_TOKEN);
        } finally {
          test.clock.advanceSeconds(-3600);
        }
      });

      it('refuses a token that is not valid yet', async () => {
        const now = Math.floor(test.clock.now().getTime() / 1000);
        const token = signToken(test, { ...personClaims(admin), nbf: now + 60, iat: now + 60 });
        const early = await readScopes(token);
        expect(early.status).toBe(401);
        expect(early.body).toEqual(INVALID_TOKEN);
        test.clock.advanceSeconds(60);
        try {
          expect((await readScopes(token)).status).toBe(200);
        } finally {
          test.clock.advanceSeconds(-60);
        }
      });

      it('refuses a token without an expiry', async () => {
        const token = signToken(test, { ...personClaims(admin), exp: undefined });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(INVALID_TOKEN);
      });
    });

    describe('malformed Authorization headers', () => {
      const cases: Array<[string, (token: string) => string]> = [
        ['another scheme', (token) => `Basic ${token}`],
        ['the scheme alone', () => 'Bearer'],
        ['the scheme and a blank', () => 'Bearer '],
        ['the token without a scheme', (token) => token],
        ['two tokens', (token) => `Bearer ${token} ${token}`],
        ['garbage in place of a JWT', () => 'Bearer not-a-jwt'],
        ['a JWT with a missing part', (token) => `Bearer ${token.split('.').slice(0, 2).join('.')}`],
        ['a JWT with non-JSON parts', () => 'Bearer aGVsbG8.d29ybGQ.c2ln'],
      ];
      for (const [name, header] of cases) {
        it(`refuses ${name} with 401 Invalid token`, async () => {
          const response = await readScopes(undefined, { authorization: header(admin.token) });
          expect(response.status).toBe(401);
          expect(response.body).toEqual(INVALID_TOKEN);
        });
      }

      it('accepts the scheme name in any case', async () => {
        const response = await readScopes(undefined, { authorization: `bEaReR ${admin.token}` });
        expect(response.status).toBe(200);
      });
    });

    describe('security stamp (revocation)', () => {
      it('refuses a token without a stamp', async () => {
        const token = signToken(test, { ...personClaims(admin), sst: undefined });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(REVOKED);
      });

      it('refuses a token issued before the stamp changed (e.g. a password reset)', async () => {
        const other = await createSystemAdmin(test);
        expect((await readScopes(other.token)).status).toBe(200);
        await test.services.db
          .updateTable('persons')
          .set({ security_stamp: 'a-fresh-stamp' })
          .where('id', '=', other.id)
          .execute();
        const response = await readScopes(other.token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(REVOKED);
      });

      it('refuses a stale stamp on an Any-auth route too', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        await test.services.db
          .updateTable('persons')
          .set({ security_stamp: 'another-fresh-stamp' })
          .where('id', '=', owner.id)
          .execute();
        const response = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}`,
          token: owner.token,
        });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(REVOKED);
      });
    });

    describe('identity state read on every request', () => {
      it('refuses the token of a deleted person', async () => {
        const person = await createSystemAdmin(test);
        await test.services.db
          .updateTable('persons')
          .set({ deleted_at: test.clock.now().toISOString() })
          .where('id', '=', person.id)
          .execute();
        const response = await readScopes(person.token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(NO_LONGER_VALID);
      });

      it('refuses the full token of a person restricted after it was issued', async () => {
        const person = await createSystemAdmin(test);
        await test.services.db
          .updateTable('persons')
          .set({ restricted_at: test.clock.now().toISOString(), restriction_ground: 'objection' })
          .where('id', '=', person.id)
          .execute();
        const response = await readScopes(person.token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(NO_LONGER_VALID);
      });

      it('refuses the token of a person whose erasure is pending', async () => {
        const person = await createSystemAdmin(test);
        await test.services.db
          .updateTable('persons')
          .set({ erasure_requested_at: test.clock.now().toISOString() })
          .where('id', '=', person.id)
          .execute();
        const response = await readScopes(person.token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(NO_LONGER_VALID);
      });

      it('refuses the token of a person who no longer exists', async () => {
        const person = await createSystemAdmin(test);
        await test.services.db.deleteFrom('persons').where('id', '=', person.id).execute();
        const response = await readScopes(person.token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(NO_LONGER_VALID);
      });

      it('refuses a validly signed token naming an identity that never existed', async () => {
        const token = signToken(test, { ...personClaims(admin), sub: randomUUID() });
        const response = await readScopes(token);
        expect(response.status).toBe(401);
        expect(response.body).toEqual(NO_LONGER_VALID);
      });

      it('gates on the stored role, not the role written in the token', async () => {
        const demoted = await createSystemAdmin(test);
        await test.services.db
          .updateTable('persons')
          .set({ role: Role.ScopeAdmin })
          .where('id', '=', demoted.id)
          .execute();
        const response = await test.request({
          method: 'POST',
          url: '/api/scopes',
          token: demoted.token,
          body: { name: 'Demoted scope', ownerIds: [demoted.id] },
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
        const created = await test.services.db
          .selectFrom('scopes')
          .select('id')
          .where('name', '=', 'Demoted scope')
          .execute();
        expect(created).toEqual([]);
      });
    });

    describe('subject-rights-only tokens', () => {
      it('are refused with 403 on ordinary endpoints, even for a System Admin', async () => {
        const { token } = test.services.tokens.issueSubjectRightsToken({
          sub: admin.id,
          role: Role.SystemAdmin,
          kind: 'person',
          sst: admin.row.security_stamp,
        });
        const response = await readScopes(token);
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
      });

      it('are refused with 403 on Any-auth endpoints', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const { token } = test.services.tokens.issueSubjectRightsToken({
          sub: user.id,
          role: Role.User,
          kind: 'person',
          sst: user.row.security_stamp,
        });
        const response = await test.request({ method: 'GET', url: `/api/scopes/${scope.id}`, token });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
      });
    });

    describe('role gates', () => {
      it('refuses a User on a System Admin route with 403 and writes nothing', async () => {
        const scope = await createScope(test, [admin.id]);
        const user = await createUser(test, scope.id);
        const response = await test.request({
          method: 'PUT',
          url: `/api/scopes/${scope.id}`,
          token: user.token,
          body: { name: 'Renamed by a User' },
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
        const stored = await test.services.db
          .selectFrom('scopes')
          .select('name')
          .where('id', '=', scope.id)
          .executeTakeFirstOrThrow();
        expect(stored.name).toBe(scope.name);
      });

      it('refuses a User on an administrators route with 403', async () => {
        const user = await createUser(test, (await createScope(test, [admin.id])).id);
        const response = await readScopes(user.token);
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
      });

      it('refuses a Scope Admin on a System Admin route with 403', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const response = await test.request({
          method: 'GET',
          url: '/api/healthcheck/detailed',
          token: scopeAdmin.token,
        });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(FORBIDDEN);
      });

      it('admits a Scope Admin on an administrators route', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        const response = await readScopes(scopeAdmin.token);
        expect(response.status).toBe(200);
      });
    });
  });

  describe(`signing-secret rotation (${dialect})`, () => {
    it('accepts tokens signed with the previous secret only while SERVICE_AUTH_TOKEN_SECRET_PREVIOUS names it', async () => {
      const rotated = await buildTestApp(dialect, {
        env: { SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET },
      });
      const unrotated = await buildTestApp(dialect);
      try {
        for (const test of [rotated, unrotated]) {
          const admin = await createSystemAdmin(test);
          const token = signToken(test, personClaims(admin), { key: PREVIOUS_SECRET });
          const response = await test.request({ method: 'GET', url: '/api/scopes', token });
          if (test === rotated) {
            expect(response.status).toBe(200);
          } else {
            expect(response.status).toBe(401);
            expect(response.body).toEqual(INVALID_TOKEN);
          }
          // The current secret is accepted either way.
          const current = await test.request({ method: 'GET', url: '/api/scopes', token: admin.token });
          expect(current.status).toBe(200);
        }
      } finally {
        await rotated.close();
        await unrotated.close();
      }
    });

    it('treats a blank or empty quoted previous secret as none', async () => {
      for (const blank of ['', '   ', '""', "''"]) {
        const test = await buildTestApp(dialect, { env: { SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: blank } });
        try {
          const admin = await createSystemAdmin(test);
          const token = signToken(test, personClaims(admin), { key: PREVIOUS_SECRET });
          const response = await test.request({ method: 'GET', url: '/api/scopes', token });
          expect(response.status).toBe(401);
          expect(response.body).toEqual(INVALID_TOKEN);
          expect((await test.request({ method: 'GET', url: '/api/scopes', token: admin.token })).status).toBe(
            200,
          );
        } finally {
          await test.close();
        }
      }
    });
  });
}
