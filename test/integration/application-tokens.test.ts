import { decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, TEST_ENV, TEST_SECRET, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';
import { createApplication, createCredential, createPermission } from './applications.fixtures.ts';

const SECRET_REFUSED = 'The application secret was not accepted.';
const TOKEN_REFUSED = 'The application token was not accepted.';
const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });
const KEY = new TextEncoder().encode(TEST_SECRET);

/** Each exchange comes from its own address, so tests do not spend each other's rate budget. */
let addressCounter = 0;
const nextAddress = () => {
  addressCounter += 1;
  return `10.${Math.floor(addressCounter / 250) % 250}.${addressCounter % 250}.7`;
};

for (const dialect of DIALECTS) {
  describe(`application tokens (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    async function liveApplication() {
      const owner = await createScopeAdmin(test);
      const scope = await createScope(test, [owner.id]);
      const application = await createApplication(test, scope.id, owner.id);
      const credential = await createCredential(test, application.id);
      return { owner, scope, application, credential };
    }

    const exchange = (secret: unknown, remoteAddress = nextAddress()) =>
      test.request({ method: 'POST', url: '/api/applications/token', body: { secret }, remoteAddress });

    const self = (token: string | undefined) =>
      test.request({
        method: 'GET',
        url: '/api/applications/self',
        ...(token === undefined ? {} : { headers: { authorization: token } }),
      });

    async function tokenFor(secret: string): Promise<string> {
      const response = await exchange(secret);
      expect(response.status).toBe(200);
      return response.body.data.token as string;
    }

    describe('POST /api/applications/token', () => {
      it('exchanges a secret for an HS256 application token with the documented claims', async () => {
        const { scope, application, credential } = await liveApplication();
        await createPermission(test, scope.id, { name: 'reports:read', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'billing:write', includeAsJwtClaim: true });
        await createPermission(test, scope.id, { name: 'not-claimed', includeAsJwtClaim: false });
        await createPermission(test, scope.id, { name: 'deleted', includeAsJwtClaim: true, deleted: true });
        await createPermission(test, (await createScope(test, [admin.id])).id, {
          name: 'other-scope',
          includeAsJwtClaim: true,
        });

        const response = await exchange(credential.secret);
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ success: true, messages: ['Application token issued.'] });
        const { token, expiresAt } = response.body.data;
        const issuedAt = Math.floor(test.clock.now().getTime() / 1000);
        expect(expiresAt).toBe(new Date((issuedAt + 600) * 1000).toISOString());
        expect(decodeProtectedHeader(token).alg).toBe('HS256');
        const { payload } = await jwtVerify(token, KEY, {
          issuer: TEST_ENV.SERVICE_AUTH_TOKEN_ISSUER,
          audience: TEST_ENV.SERVICE_APPLICATION_TOKEN_AUDIENCE,
          algorithms: ['HS256'],
          currentDate: test.clock.now(),
        });
        expect(payload).toMatchObject({
          sub: application.id,
          scopeId: scope.id,
          cid: credential.id,
          permissions: ['billing:write', 'reports:read'],
          iat: issuedAt,
          exp: issuedAt + 600,
        });
        expect(payload).not.toHaveProperty('role');
        expect(payload).not.toHaveProperty('sst');
        const entries = await auditEntries(test, 'IssueApplicationTokenCommand');
        expect(entries.find((e) => e.target_id === application.id)).toMatchObject({
          succeeded: 1,
          actor_id: null,
        });
      });

      it('omits the permissions claim when the scope claims none', async () => {
        const { credential } = await liveApplication();
        const { payload } = await jwtVerify(await tokenFor(credential.secret), KEY, {
          currentDate: test.clock.now(),
        });
        expect(payload).not.toHaveProperty('permissions');
      });

      it('answers every refused secret with the same 401 (unknown, revoked, expired, deleted application or scope)', async () => {
        const unknown = 'pcs_this-secret-was-never-issued-by-anyone-at-all';
        const revoked = await liveApplication();
        await test.services.db
          .updateTable('application_credentials')
          .set({ revoked_at: test.clock.now().toISOString() })
          .where('id', '=', revoked.credential.id)
          .execute();
        const expired = await liveApplication();
        const expiring = await createCredential(test, expired.application.id, {
          expiresAt: new Date(test.clock.now().getTime() + 5000).toISOString(),
        });
        const deletedApplication = await liveApplication();
        await test.request({
          method: 'DELETE',
          url: `/api/scopes/${deletedApplication.scope.id}/applications/${deletedApplication.application.id}`,
          token: admin.token,
        });
        const deletedScope = await liveApplication();
        await test.request({
          method: 'DELETE',
          url: `/api/scopes/${deletedScope.scope.id}`,
          token: admin.token,
        });
        test.clock.advanceSeconds(5);

        const answers = [];
        for (const secret of [
          unknown,
          revoked.credential.secret,
          expiring.secret,
          deletedApplication.credential.secret,
          deletedScope.credential.secret,
        ]) {
          answers.push(await exchange(secret));
        }
        for (const answer of answers) {
          expect(answer.status).toBe(401);
          expect(answer.body).toEqual(refusal(SECRET_REFUSED));
          expect(answer.headers['www-authenticate']).toBeUndefined();
        }
        const failures = (await auditEntries(test, 'IssueApplicationTokenCommand')).filter(
          (e) => e.succeeded === 0,
        );
        expect(failures.slice(-5).map((e) => [e.failure_reason, e.target_id])).toEqual(
          Array.from({ length: 5 }, () => [SECRET_REFUSED, null]),
        );
        expect(JSON.stringify(failures)).not.toContain(unknown);
      });

      it('keeps binding failures at 400 without consulting any secret', async () => {
        const missing = await test.request({
          method: 'POST',
          url: '/api/applications/token',
          body: {},
          remoteAddress: nextAddress(),
        });
        expect(missing.status).toBe(400);
        expect(missing.body).toEqual(refusal('Secret is required.'));
        const wrongType = await exchange(42);
        expect(wrongType.status).toBe(400);
        expect(wrongType.body).toEqual(refusal('The request is malformed.'));
      });

      it('limits exchanges to 10 per minute per client address (429 with Retry-After)', async () => {
        const address = nextAddress();
        const statuses: number[] = [];
        for (let attempt = 0; attempt < 10; attempt += 1)
          statuses.push((await exchange('pcs_guess', address)).status);
        expect(statuses).toEqual(Array.from({ length: 10 }, () => 401));
        const limited = await exchange('pcs_guess', address);
        expect(limited.status).toBe(429);
        expect(limited.body).toEqual(refusal('Too many requests.'));
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      });
    });

    describe('GET /api/applications/self', () => {
      it('answers the application, scope and credential of a live token', async () => {
        const { owner, scope, application, credential } = await liveApplication();
        const token = await tokenFor(credential.secret);
        const response = await self(`Bearer ${token}`);
        expect(response.status).toBe(200);
        expect(response.body).toEqual({
          data: {
            application: { id: application.id, name: application.name, scopeId: scope.id, ownerId: owner.id },
            scope: { id: scope.id, name: scope.name },
            credential: { id: credential.id, expiresAt: null },
          },
          messages: ['Application token accepted.'],
          errors: [],
          success: true,
        });
      });

      it('refuses person, challenge and subject-rights tokens, garbage and no token with one 401', async () => {
        const { scope } = await liveApplication();
        const user = await createUser(test, scope.id);
        const challenge = test.services.tokens.issueChallengeToken(
          { sub: user.id, cid: user.id, sst: user.row.security_stamp },
          600,
        ).token;
        const subjectRights = test.services.tokens.issueSubjectRightsToken({
          sub: user.id,
          role: 3,
          kind: 'person',
          sst: user.row.security_stamp,
        }).token;
        for (const header of [
          undefined,
          'Bearer',
          'Bearer not-a-token',
          `Bearer ${user.token}`,
          `Bearer ${admin.token}`,
          `Bearer ${challenge}`,
          `Bearer ${subjectRights}`,
        ]) {
          const response = await self(header);
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(TOKEN_REFUSED));
        }
      });

      it('refuses a forged token: wrong key, HS512, or claims naming another application’s credential', async () => {
        const first = await liveApplication();
        const second = await liveApplication();
        const now = Math.floor(test.clock.now().getTime() / 1000);
        const sign = (claims: Record<string, unknown>, key: Uint8Array, alg = 'HS256') =>
          new SignJWT(claims)
            .setProtectedHeader({ alg })
            .setIssuer(TEST_ENV.SERVICE_AUTH_TOKEN_ISSUER ?? '')
            .setAudience(TEST_ENV.SERVICE_APPLICATION_TOKEN_AUDIENCE ?? '')
            .setIssuedAt(now)
            .setExpirationTime(now + 600)
            .sign(key);
        const claims = { sub: first.application.id, scopeId: first.scope.id, cid: first.credential.id };
        // The control: the same claims signed properly are accepted, so the refusals below are
        // about the forgery and nothing else.
        expect((await self(`Bearer ${await sign(claims, KEY)}`)).status).toBe(200);
        const forged = [
          await sign(claims, new TextEncoder().encode('another-secret-that-is-at-least-32-bytes')),
          await sign(claims, KEY, 'HS512'),
          await sign({ ...claims, cid: second.credential.id }, KEY),
          await sign({ ...claims, scopeId: second.scope.id }, KEY),
        ];
        for (const token of forged) {
          const response = await self(`Bearer ${token}`);
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(TOKEN_REFUSED));
        }
      });

      it('refuses a token at its expiry instant (zero clock skew)', async () => {
        const { credential } = await liveApplication();
        const token = await tokenFor(credential.secret);
        test.clock.advanceSeconds(599);
        expect((await self(`Bearer ${token}`)).status).toBe(200);
        test.clock.advanceSeconds(1);
        const expired = await self(`Bearer ${token}`);
        expect(expired.status).toBe(401);
        expect(expired.body).toEqual(refusal(TOKEN_REFUSED));
      });

      it('sees each kind of revocation at once: revoked or expired credential, deleted or hard-deleted application, deleted scope', async () => {
        const revocations: Array<
          [string, (chain: Awaited<ReturnType<typeof liveApplication>>) => Promise<void>]
        > = [
          [
            'credential revoked',
            async ({ scope, application, credential, owner }) => {
              const response = await test.request({
                method: 'DELETE',
                url: `/api/scopes/${scope.id}/applications/${application.id}/credentials/${credential.id}`,
                token: owner.token,
              });
              expect(response.status).toBe(200);
            },
          ],
          [
            'application deleted',
            async ({ scope, application, owner }) => {
              const response = await test.request({
                method: 'DELETE',
                url: `/api/scopes/${scope.id}/applications/${application.id}`,
                token: owner.token,
              });
              expect(response.status).toBe(200);
            },
          ],
          [
            'application hard-deleted',
            async ({ scope, application }) => {
              const response = await test.request({
                method: 'DELETE',
                url: `/api/scopes/${scope.id}/applications/${application.id}/hard`,
                token: admin.token,
              });
              expect(response.status).toBe(200);
            },
          ],
          [
            'scope deleted',
            async ({ scope }) => {
              const response = await test.request({
                method: 'DELETE',
                url: `/api/scopes/${scope.id}`,
                token: admin.token,
              });
              expect(response.status).toBe(200);
            },
          ],
        ];
        for (const [, revoke] of revocations) {
          const chain = await liveApplication();
          const token = await tokenFor(chain.credential.secret);
          expect((await self(`Bearer ${token}`)).status).toBe(200);
          await revoke(chain);
          const response = await self(`Bearer ${token}`);
          expect(response.status).toBe(401);
          expect(response.body).toEqual(refusal(TOKEN_REFUSED));
          // The secret stops being exchanged too.
          expect((await exchange(chain.credential.secret)).status).toBe(401);
        }

        // A credential reaching its expiry while a token issued from it is still within its lifetime.
        const chain = await liveApplication();
        const expiring = await createCredential(test, chain.application.id, {
          expiresAt: new Date(test.clock.now().getTime() + 60_000).toISOString(),
        });
        const token = await tokenFor(expiring.secret);
        const before = await self(`Bearer ${token}`);
        expect(before.body.data.credential).toEqual({ id: expiring.id, expiresAt: expect.any(String) });
        test.clock.advanceSeconds(60);
        const after = await self(`Bearer ${token}`);
        expect(after.status).toBe(401);
        expect(after.body).toEqual(refusal(TOKEN_REFUSED));
      });

      it('is refused as a bearer token by the service’s own endpoints', async () => {
        const { scope, credential } = await liveApplication();
        const token = await tokenFor(credential.secret);
        const response = await test.request({ method: 'GET', url: `/api/scopes/${scope.id}`, token });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal('Invalid token'));
      });
    });
  });
}
