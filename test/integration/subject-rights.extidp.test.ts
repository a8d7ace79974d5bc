import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataExport } from '../../src/modules/privacy/privacy.schemas.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { extidpUserBySubject, idTokenNow, refusal, signInWithExtidp } from '../helpers/extidp.ts';
import {
  auditEntries,
  createScope,
  createSystemAdmin,
  createUser,
  type PersonFixture,
} from '../helpers/factories.ts';
import { TestIdentityProvider } from '../helpers/identity-provider.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import { cellsContaining, postAs } from '../helpers/subject-rights.ts';

const CREDENTIAL_REFUSED = 'The credential presented was not accepted.';

/** External-provider users' rights, and the notice a System Admin's lift mails (spec §States). */
for (const dialect of DIALECTS) {
  describe(`data-subject rights of an external-provider user (${dialect})`, () => {
    let provider: TestIdentityProvider;
    let sink: SmtpSink;
    let test: TestApp;
    let admin: PersonFixture;
    let scopeId: string;

    beforeAll(async () => {
      provider = await TestIdentityProvider.start();
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, { env: { ...provider.environment(), SERVICE_SMTP_URL: sink.url } });
      admin = await createSystemAdmin(test);
      scopeId = (await createScope(test, [admin.id], { extidp_signin_enabled: 1 })).id;
    });
    afterAll(async () => {
      await test.close();
      await provider.close();
      await sink.close();
    });

    it('restrict → extidp sign-in → export → erasure with a fresh ID token → pass: nothing personal left', async () => {
      const sub = `subject-erase-${Date.now()}`;
      const email = `extidp-erase-${Date.now()}@example.test`;
      const name = 'Eirlys Extidperson';
      const claims = { sub, email, name };
      const first = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { claims }),
        scopeId,
      });
      expect(first.status).toBe(200);
      const fullToken = first.body.data.token as string;
      const user = (await extidpUserBySubject(test, scopeId, sub))!;

      const ground = 'Objection to processing, case 9931';
      const restricted = await postAs(test, '/api/auth/processing-restriction', fullToken, { ground });
      expect(restricted.status).toBe(200);
      const elsewhere = await test.request({
        method: 'GET',
        url: `/api/scopes/${scopeId}/extidp-users/${user.id}`,
        token: fullToken,
      });
      expect(elsewhere.status).toBe(401);

      const again = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { claims }),
        scopeId,
      });
      expect(again.status).toBe(200);
      expect(again.body.data.processingRestricted).toBe(true);
      const rightsToken = again.body.data.token as string;
      expect(test.services.tokens.readBearer(rightsToken)?.kind).toBe('subjectRights');

      const exported = await postAs(test, '/api/auth/data-export', rightsToken, undefined);
      expect(exported.status).toBe(200);
      expect(Compile(DataExport).Check(exported.body.data)).toBe(true);
      expect(exported.body.data.profile).toMatchObject({
        id: user.id,
        kind: 'extidpUser',
        name,
        email,
        role: 3,
        scopeId,
        externalAccount: { issuer: provider.issuer, subject: sub },
      });
      expect(exported.body.data.memberships).toEqual([
        expect.objectContaining({ scopeId, relation: 'member' }),
      ]);
      expect(exported.body.data.processing).toMatchObject({ restricted: true, restrictionGround: ground });
      expect(exported.body.data.security).toMatchObject({
        failedLoginAttempts: null,
        accountEmailWindowCount: null,
      });

      // Bad credentials: none, a forged string, another account's token, a stale one; all 401 and nothing changes.
      const stale = await provider.idToken({
        claims,
        issuedAt: new Date(test.clock.now().getTime() - 11 * 60 * 1000),
        lifetimeSeconds: 3600,
      });
      for (const body of [
        {},
        { idToken: 'not-a-token' },
        { idToken: await idTokenNow(test, provider, { claims: { ...claims, sub: `${sub}-other` } }) },
        { idToken: stale },
        { currentPassword: 'a password is no credential here' },
      ]) {
        const refused = await postAs(test, '/api/auth/erasure-request', rightsToken, body);
        expect(refused.status).toBe(401);
        expect(refused.body).toEqual(refusal(CREDENTIAL_REFUSED));
      }
      expect(await extidpUserBySubject(test, scopeId, sub)).toMatchObject({ erasure_requested_at: null });
      expect(
        (await auditEntries(test, 'RequestErasureCommand')).filter((entry) => entry.target_id === user.id),
      ).toHaveLength(5);

      const requested = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        idToken: await idTokenNow(test, provider, { claims }),
      });
      expect(requested.status).toBe(200);
      expect(requested.body.data).toMatchObject({ subjectId: user.id, restrictionLifted: true });
      const repeated = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        idToken: await idTokenNow(test, provider, { claims }),
      });
      expect(repeated.status).toBe(409);
      expect(repeated.body).toEqual(refusal('Erasure has already been requested.'));
      const signInRefused = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { claims }),
        scopeId,
      });
      expect(signInRefused.status).toBe(401);
      expect(signInRefused.body).toEqual(refusal('Extidp authentication failed.'));

      const listed = await test.request({
        method: 'GET',
        url: '/api/auth/erasure-requests',
        token: admin.token,
      });
      expect(listed.body.data).toContainEqual(
        expect.objectContaining({ subjectId: user.id, subjectKind: 'extidpUser' }),
      );

      const reconciled = await test.request({
        method: 'POST',
        url: '/api/auth/erasure-reconciliation',
        token: admin.token,
      });
      expect(reconciled.status).toBe(200);
      expect(reconciled.body.data).toEqual({ anonymised: 1, remaining: 0 });
      expect(await cellsContaining(test, [name, email, sub, ground])).toEqual([]);
      await test.services.auditInbox.settle();
      const naming = await test.services.db
        .selectFrom('audit_entries')
        .select('id')
        .where((eb) => eb.or([eb('actor_id', '=', user.id), eb('target_id', '=', user.id)]))
        .execute();
      expect(naming).toEqual([]);
      const row = await test.services.db
        .selectFrom('extidp_users')
        .selectAll()
        .where('id', '=', user.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ picture_url: null, last_signed_in_at: null, restricted_at: null });
      expect(row.anonymised_at).not.toBeNull();
      expect(row.deleted_at).not.toBeNull();
    });

    it('mails the subject a notice when a System Admin lifts their restriction, and none when they lift their own', async () => {
      const restrictedAt = test.clock.now().toISOString();
      const byAdmin = await createUser(test, scopeId, { restricted_at: restrictedAt });
      const bySelf = await createUser(test, scopeId, { restricted_at: restrictedAt });

      const lifted = await postAs(test, '/api/auth/processing-restriction/lift', admin.token, {
        personId: byAdmin.id,
      });
      expect(lifted.status).toBe(200);
      const notice = await sink.waitForMail(byAdmin.email);
      expect(notice.subject).toBe('The restriction of processing of your data was lifted');
      expect(notice.text).toContain('An administrator lifted the restriction');

      const own = await postAs(test, '/api/auth/processing-restriction/lift', bySelf.token, {});
      expect(own.status).toBe(200);
      await test.services.mailer.idle();
      expect(sink.mailsTo(bySelf.email)).toEqual([]);
    });

    it('lets a System Admin lift an external-provider user’s restriction', async () => {
      const sub = `subject-lift-${Date.now()}`;
      const email = `extidp-lift-${Date.now()}@example.test`;
      const signedIn = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { claims: { sub, email } }),
        scopeId,
      });
      const restricted = await postAs(test, '/api/auth/processing-restriction', signedIn.body.data.token, {
        ground: 'g',
      });
      expect(restricted.status).toBe(200);
      const user = (await extidpUserBySubject(test, scopeId, sub))!;
      const lifted = await postAs(test, '/api/auth/processing-restriction/lift', admin.token, {
        personId: user.id,
      });
      expect(lifted.status).toBe(200);
      expect(lifted.body.data).toMatchObject({ subjectId: user.id, subjectNotified: true });
      expect(await extidpUserBySubject(test, scopeId, sub)).toMatchObject({
        restricted_at: null,
        restriction_ground: null,
      });
      await sink.waitForMail(email);
    });
  });
}
