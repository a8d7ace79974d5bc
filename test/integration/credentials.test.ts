import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  type PersonFixture,
} from '../helpers/factories.ts';
import { createApplication, createCredential } from './applications.fixtures.ts';

const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });
const TOO_MANY = 'An application may have at most two live credentials.';

for (const dialect of DIALECTS) {
  describe(`application credentials (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    async function ownedApplication() {
      const owner = await createScopeAdmin(test);
      const coOwner = await createScopeAdmin(test);
      const scope = await createScope(test, [owner.id, coOwner.id]);
      const application = await createApplication(test, scope.id, owner.id);
      const url = `/api/scopes/${scope.id}/applications/${application.id}/credentials`;
      return { owner, coOwner, scope, application, url };
    }

    const credentialRows = (applicationId: string) =>
      test.services.db
        .selectFrom('application_credentials')
        .selectAll()
        .where('application_id', '=', applicationId)
        .orderBy('created_at')
        .execute();

    describe('issue', () => {
      it('issues a never-expiring credential for a request with no body at all; only the hash is stored', async () => {
        const { owner, application, url } = await ownedApplication();
        const response = await test.request({ method: 'POST', url, token: owner.token });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          messages: ['Credential issued successfully.'],
          data: { expiresAt: null, revokedAt: null, isLive: true },
        });
        const { secret } = response.body.data;
        // A recognisable prefix, then 256 bits (43 base64url characters).
        expect(secret).toMatch(/^pcs_[A-Za-z0-9_-]{43}$/);
        const [row] = await credentialRows(application.id);
        expect(row).toMatchObject({
          id: response.body.data.id,
          secret_hash: sha256(secret),
          expires_at: null,
        });
        expect(JSON.stringify(row)).not.toContain(secret);
        const [entry] = (await auditEntries(test, 'IssueApplicationCredentialCommand')).filter(
          (e) => e.target_id === application.id,
        );
        expect(entry).toMatchObject({ actor_id: owner.id, succeeded: 1 });
        expect(JSON.stringify(await auditEntries(test, 'IssueApplicationCredentialCommand'))).not.toContain(
          secret,
        );
      });

      it('reads an empty JSON body (Content-Type application/json) as no expiry', async () => {
        const { url } = await ownedApplication();
        for (const contentType of ['application/json', 'application/json; charset=utf-8', 'text/json']) {
          const { url: fresh } = await ownedApplication();
          const response = await test.request({
            method: 'POST',
            url: fresh,
            token: admin.token,
            body: '',
            headers: { 'content-type': contentType },
          });
          expect(response.status).toBe(200);
          expect(response.body.data.expiresAt).toBeNull();
        }
        const emptyObject = await test.request({ method: 'POST', url, token: admin.token, body: {} });
        expect(emptyObject.status).toBe(200);
        expect(emptyObject.body.data.expiresAt).toBeNull();
        const explicitNull = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { expiresAt: null },
        });
        expect(explicitNull.status).toBe(200);
        expect(explicitNull.body.data.expiresAt).toBeNull();
      });

      it('stores expiresAt in UTC, and refuses one in the past or malformed with nothing written', async () => {
        const { application, url } = await ownedApplication();
        const later = new Date(test.clock.now().getTime() + 86_400_000);
        const offset = `${later.toISOString().slice(0, 19)}+02:00`;
        const response = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { ExpiresAt: offset },
        });
        expect(response.status).toBe(200);
        expect(response.body.data.expiresAt).toBe(new Date(offset).toISOString());
        expect((await credentialRows(application.id))[0]?.expires_at).toBe(new Date(offset).toISOString());

        const past = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { expiresAt: test.clock.now().toISOString() },
        });
        expect(past.status).toBe(400);
        expect(past.body).toEqual(refusal('ExpiresAt must be in the future.'));
        for (const body of [{ expiresAt: 'tomorrow' }, { expiresAt: 5 }, '{not json', '[]']) {
          const malformed = await test.request({
            method: 'POST',
            url,
            token: admin.token,
            body,
            headers: { 'content-type': 'application/json' },
          });
          expect(malformed.status).toBe(400);
          expect(malformed.body).toEqual(refusal('The request is malformed.'));
        }
        expect(await credentialRows(application.id)).toHaveLength(1);
      });

      it('refuses a third live credential with 409; revoked and expired ones do not count', async () => {
        const { application, url } = await ownedApplication();
        const first = await test.request({ method: 'POST', url, token: admin.token });
        const expiring = await test.request({
          method: 'POST',
          url,
          token: admin.token,
          body: { expiresAt: new Date(test.clock.now().getTime() + 60_000).toISOString() },
        });
        expect([first.status, expiring.status]).toEqual([200, 200]);
        const third = await test.request({ method: 'POST', url, token: admin.token });
        expect(third.status).toBe(409);
        expect(third.body).toEqual(refusal(TOO_MANY));
        expect(await credentialRows(application.id)).toHaveLength(2);
        const failures = (await auditEntries(test, 'IssueApplicationCredentialCommand')).filter(
          (e) => e.target_id === application.id && e.succeeded === 0,
        );
        expect(failures.map((e) => e.failure_reason)).toEqual([TOO_MANY]);

        // Expiry is reached: that credential no longer counts.
        test.clock.advanceSeconds(60);
        const afterExpiry = await test.request({ method: 'POST', url, token: admin.token });
        expect(afterExpiry.status).toBe(200);
        expect((await test.request({ method: 'POST', url, token: admin.token })).status).toBe(409);

        // Revoking one makes room for one.
        const revoke = await test.request({
          method: 'DELETE',
          url: `${url}/${first.body.data.id}`,
          token: admin.token,
        });
        expect(revoke.status).toBe(200);
        expect((await test.request({ method: 'POST', url, token: admin.token })).status).toBe(200);
        expect((await test.request({ method: 'POST', url, token: admin.token })).status).toBe(409);
      });

      it('refuses a deleted or another scope’s application (404) and another owner’s (403)', async () => {
        const { coOwner, scope, application, url } = await ownedApplication();
        const deleted = await createApplication(test, scope.id, coOwner.id, { deleted: true });
        const other = await createScope(test, [admin.id]);
        const cases: Array<[string, string, number, string]> = [
          [
            `/api/scopes/${scope.id}/applications/${deleted.id}/credentials`,
            admin.token,
            404,
            'Application not found.',
          ],
          [
            `/api/scopes/${other.id}/applications/${application.id}/credentials`,
            admin.token,
            404,
            'Application not found.',
          ],
          [url, coOwner.token, 403, 'You are not allowed to manage this application.'],
          [url, (await createScopeAdmin(test)).token, 403, 'You are not an owner of the target scope.'],
        ];
        for (const [target, token, status, message] of cases) {
          const response = await test.request({ method: 'POST', url: target, token });
          expect(response.status).toBe(status);
          expect(response.body).toEqual(refusal(message));
        }
        expect(await credentialRows(application.id)).toHaveLength(0);
        expect(await credentialRows(deleted.id)).toHaveLength(0);
      });

      it('keeps refusing an empty JSON body on every other route', async () => {
        const { scope } = await ownedApplication();
        const response = await test.request({
          method: 'POST',
          url: `/api/scopes/${scope.id}/applications`,
          token: admin.token,
          body: '',
          headers: { 'content-type': 'application/json' },
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual(refusal('The request is malformed.'));
      });
    });

    describe('list', () => {
      it('lists newest first with isLive, never a secret or hash', async () => {
        const { owner, application, url } = await ownedApplication();
        const expired = await createCredential(test, application.id, {
          expiresAt: new Date(test.clock.now().getTime() + 1000).toISOString(),
        });
        test.clock.advanceSeconds(2);
        const revoked = await createCredential(test, application.id, { revoked: true });
        test.clock.advanceSeconds(1);
        const live = await createCredential(test, application.id);
        const response = await test.request({ method: 'GET', url, token: owner.token });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ totalRecords: 3, pageNumber: 1, success: true });
        expect(response.body.data.map((c: { id: string; isLive: boolean }) => [c.id, c.isLive])).toEqual([
          [live.id, true],
          [revoked.id, false],
          [expired.id, false],
        ]);
        for (const item of response.body.data) {
          expect(Object.keys(item).sort()).toEqual(['createdAt', 'expiresAt', 'id', 'isLive', 'revokedAt']);
        }
        const text = JSON.stringify(response.body);
        for (const secret of [expired.secret, revoked.secret, live.secret]) {
          expect(text).not.toContain(secret);
          expect(text).not.toContain(sha256(secret));
        }
        const paged = await test.request({
          method: 'GET',
          url: `${url}?PageSize=1&PageNumber=3`,
          token: owner.token,
        });
        expect(paged.body.data.map((c: { id: string }) => c.id)).toEqual([expired.id]);
      });

      it('refuses another owner’s application (403) and a missing one (404)', async () => {
        const { coOwner, scope, url } = await ownedApplication();
        const notYours = await test.request({ method: 'GET', url, token: coOwner.token });
        expect(notYours.status).toBe(403);
        expect(notYours.body).toEqual(refusal('You are not allowed to manage this application.'));
        const missing = await test.request({
          method: 'GET',
          url: `/api/scopes/${scope.id}/applications/00000000-0000-4000-8000-000000000000/credentials`,
          token: admin.token,
        });
        expect(missing.status).toBe(404);
        expect(missing.body).toEqual(refusal('Application not found.'));
      });
    });

    describe('revoke', () => {
      it('revokes, and a repeat answers the credential unchanged', async () => {
        const { owner, application, url } = await ownedApplication();
        const credential = await createCredential(test, application.id);
        const response = await test.request({
          method: 'DELETE',
          url: `${url}/${credential.id}`,
          token: owner.token,
        });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          messages: ['Credential revoked successfully.'],
          data: { id: credential.id, isLive: false, revokedAt: test.clock.now().toISOString() },
        });
        expect(response.body.data.secret).toBeUndefined();
        test.clock.advanceSeconds(10);
        const again = await test.request({
          method: 'DELETE',
          url: `${url}/${credential.id}`,
          token: owner.token,
        });
        expect(again.status).toBe(200);
        expect(again.body.data.revokedAt).toBe(response.body.data.revokedAt);
        const entries = (await auditEntries(test, 'RevokeApplicationCredentialCommand')).filter(
          (e) => e.target_id === application.id,
        );
        expect(entries.map((e) => e.actor_id)).toEqual([owner.id, owner.id]);
      });

      it('refuses another application’s credential (404) and another owner (403), changing nothing', async () => {
        const { coOwner, scope, application, url } = await ownedApplication();
        const sibling = await createApplication(test, scope.id, coOwner.id);
        const foreign = await createCredential(test, sibling.id);
        const own = await createCredential(test, application.id);
        const wrongApplication = await test.request({
          method: 'DELETE',
          url: `${url}/${foreign.id}`,
          token: admin.token,
        });
        expect(wrongApplication.status).toBe(404);
        expect(wrongApplication.body).toEqual(refusal('Credential not found.'));
        const notYours = await test.request({
          method: 'DELETE',
          url: `${url}/${own.id}`,
          token: coOwner.token,
        });
        expect(notYours.status).toBe(403);
        expect(notYours.body).toEqual(refusal('You are not allowed to manage this application.'));
        const rows = await test.services.db
          .selectFrom('application_credentials')
          .select('revoked_at')
          .where('id', 'in', [foreign.id, own.id])
          .execute();
        expect(rows).toEqual([{ revoked_at: null }, { revoked_at: null }]);
      });
    });
  });
}
