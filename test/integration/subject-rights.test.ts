import { Compile } from 'typebox/compile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataExport } from '../../src/modules/privacy/privacy.schemas.ts';
import { Role } from '../../src/db/database.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { freshClientAddress, refusal } from '../helpers/extidp.ts';
import {
  auditEntries,
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
  personRow,
  tokenFor,
} from '../helpers/factories.ts';
import { cellsContaining, postAs, signIn } from '../helpers/subject-rights.ts';

const WRONG = 'The password or code is incorrect.';
const ALREADY_RESTRICTED = 'Processing is already restricted.';
const NOT_RESTRICTED = 'Processing is not restricted.';
const ERASURE_PENDING = 'Erasure has already been requested.';
const NO_LONGER_VALID = 'This token is no longer valid. Sign in again.';
const FORBIDDEN = 'You do not have permission to access this resource.';
const LAST_OWNER = 'This change would leave a scope without an owner. Add another owner first.';
const DAY_MS = 24 * 60 * 60 * 1000;

/** The data-subject rights of a person, end to end (spec What the service does 10; §States). */
for (const dialect of DIALECTS) {
  describe(`data-subject rights of a person (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    it('restrict → sign in → subject-rights token → export → erasure → pass: no personal data left anywhere', async () => {
      const name = 'Rhiannon Subjectright';
      const email = `rhiannon-${Date.now()}@example.test`;
      const ground = 'I contest the accuracy of my data (ground 4711)';
      const subject = await createPerson(test, { role: Role.ScopeAdmin, name, email, email_verified: 0 });
      const scope = await createScope(test, [admin.id, subject.id]);
      const created = await test.request({
        method: 'POST',
        url: `/api/scopes/${scope.id}/applications`,
        token: admin.token,
        body: { name: 'Subject app', ownerId: subject.id },
      });
      expect(created.status).toBe(200);
      // A link and an account-email budget row of the subject's own making.
      const resent = await postAs(test, '/api/auth/resend-verification', subject.token, undefined);
      expect(resent.status).toBe(200);

      // Restrict: 200, then a second restriction 409 and nothing changes.
      const restricted = await postAs(test, '/api/auth/processing-restriction', subject.token, { ground });
      expect(restricted.status).toBe(200);
      expect(restricted.body.data).toMatchObject({ subjectId: subject.id, ground });
      const restrictedAt = (await personRow(test, subject.id))!.restricted_at;
      expect(restrictedAt).not.toBeNull();
      const again = await postAs(test, '/api/auth/processing-restriction', subject.token, {
        ground: 'other',
      });
      expect(again.status).toBe(409);
      expect(again.body).toEqual(refusal(ALREADY_RESTRICTED));
      expect(await personRow(test, subject.id)).toMatchObject({
        restricted_at: restrictedAt,
        restriction_ground: ground,
      });

      // The full token issued before the restriction: 401 elsewhere, still honoured at the four.
      const elsewhere = await test.request({
        method: 'GET',
        url: `/api/persons/${subject.id}`,
        token: subject.token,
      });
      expect(elsewhere.status).toBe(401);
      expect(elsewhere.body).toEqual(refusal(NO_LONGER_VALID));

      // Sign-in answers processingRestricted and a subject-rights token that claims no scope.
      const signedIn = await signIn(test, { email, password: PASSWORD });
      expect(signedIn.status).toBe(200);
      expect(signedIn.body.data.processingRestricted).toBe(true);
      const rightsToken = signedIn.body.data.token as string;
      const bearer = test.services.tokens.readBearer(rightsToken);
      expect(bearer?.kind).toBe('subjectRights');
      expect(bearer?.claims).not.toHaveProperty('scopeId');
      expect(bearer?.claims).not.toHaveProperty('permissions');
      const refused = await test.request({
        method: 'GET',
        url: `/api/persons/${subject.id}`,
        token: rightsToken,
      });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual(refusal(FORBIDDEN));

      // Export with the subject-rights token.
      const exported = await postAs(test, '/api/auth/data-export', rightsToken, undefined);
      expect(exported.status).toBe(200);
      const data = exported.body.data;
      // The answer has the published shape (docs/data-subject-rights.md).
      expect(Compile(DataExport).Check(data)).toBe(true);
      expect(Object.keys(data)).toEqual(
        expect.arrayContaining([
          'profile',
          'memberships',
          'applications',
          'twoFactor',
          'processing',
          'auditEntries',
          'security',
          'recipients',
          'retention',
        ]),
      );
      expect(data.profile).toMatchObject({
        id: subject.id,
        kind: 'person',
        name,
        email,
        emailVerified: false,
        role: Role.ScopeAdmin,
        scopeId: null,
        externalAccount: null,
      });
      expect(data.memberships).toEqual([
        expect.objectContaining({ scopeId: scope.id, scopeName: scope.name, relation: 'owner' }),
      ]);
      expect(data.applications).toEqual([
        expect.objectContaining({
          id: created.body.data.id,
          name: 'Subject app',
          scopeId: scope.id,
          isDeleted: false,
        }),
      ]);
      expect(data.twoFactor).toEqual({
        isActive: false,
        isPending: false,
        appEnabled: false,
        emailEnabled: false,
        remainingRecoveryCodes: 0,
      });
      expect(data.processing).toEqual({
        restricted: true,
        restrictedAt,
        restrictionGround: ground,
        erasureRequestedAt: null,
        erasureDueAt: null,
      });
      expect(Object.keys(data.security).sort()).toEqual(
        [
          'failedLoginAttempts',
          'lockedOutUntil',
          'reauthenticationFailures',
          'reauthenticationWindowStartedAt',
          'reauthenticationPausedUntil',
          'secondFactorFailures',
          'secondFactorLockedUntil',
          'secondFactorLockRepeats',
          'accountEmailLastSentAt',
          'accountEmailWindowStartedAt',
          'accountEmailWindowCount',
        ].sort(),
      );
      expect(data.security).toMatchObject({
        failedLoginAttempts: 0,
        reauthenticationFailures: 0,
        accountEmailWindowCount: 1,
      });
      expect(data.security.accountEmailLastSentAt).not.toBeNull();
      const actions = (data.auditEntries as Array<{ action: string }>).map((entry) => entry.action);
      expect(actions).toEqual(
        expect.arrayContaining(['ResendVerificationCommand', 'RestrictProcessingCommand', 'LoginCommand']),
      );
      expect(data.recipients.length).toBeGreaterThan(0);
      expect(data.retention.length).toBeGreaterThan(0);
      // Never a secret: no password hash, security stamp or link token hash in the export.
      const stored = (await personRow(test, subject.id))!;
      const text = JSON.stringify(exported.body);
      expect(text).not.toContain(stored.password_hash!);
      expect(text).not.toContain(stored.security_stamp);
      const links = await test.services.db
        .selectFrom('email_links')
        .select('token_hash')
        .where('person_id', '=', subject.id)
        .execute();
      expect(links.length).toBe(1);
      expect(text).not.toContain(links[0]!.token_hash);
      const exports = await auditEntries(test, 'ExportPersonalDataCommand');
      expect(exports.at(-1)).toMatchObject({ actor_id: subject.id, target_id: subject.id, succeeded: 1 });

      // Erasure: a wrong password and a missing one are refused and charged; nothing else changes.
      const wrong = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        currentPassword: 'not it at all',
      });
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual(refusal(WRONG));
      const missing = await postAs(test, '/api/auth/erasure-request', rightsToken, {});
      expect(missing.status).toBe(401);
      expect(missing.body).toEqual(refusal(WRONG));
      expect(await personRow(test, subject.id)).toMatchObject({
        reauthentication_failures: 2,
        erasure_requested_at: null,
        restricted_at: restrictedAt,
      });

      // The right password: restriction lifted, suspended with erasure pending, ownership given up.
      const requested = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        currentPassword: PASSWORD,
      });
      expect(requested.status).toBe(200);
      const now = test.clock.now().toISOString();
      expect(requested.body.data).toEqual({
        subjectId: subject.id,
        restrictionLifted: true,
        requestedAt: now,
        dueAt: new Date(Date.parse(now) + 30 * DAY_MS).toISOString(),
      });
      expect(await personRow(test, subject.id)).toMatchObject({
        erasure_requested_at: now,
        restricted_at: null,
        restriction_ground: null,
        reauthentication_failures: 0,
      });
      const owners = await test.services.db
        .selectFrom('scope_owners')
        .select('person_id')
        .where('scope_id', '=', scope.id)
        .execute();
      expect(owners.map((row) => row.person_id)).toEqual([admin.id]);

      // Repeated: 409. Sign-in: refused. A restriction now: 409 (nothing to restrict any more).
      const repeated = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        currentPassword: PASSWORD,
      });
      expect(repeated.status).toBe(409);
      expect(repeated.body).toEqual(refusal(ERASURE_PENDING));
      // Answered before any password check: a wrong one costs no guess.
      const repeatedWrong = await postAs(test, '/api/auth/erasure-request', rightsToken, {
        currentPassword: 'wrong',
      });
      expect(repeatedWrong.status).toBe(409);
      expect(await personRow(test, subject.id)).toMatchObject({ reauthentication_failures: 0 });
      const suspended = await signIn(test, { email, password: PASSWORD });
      expect(suspended.status).toBe(401);
      expect(suspended.body).toEqual(refusal('Invalid credentials.'));
      const restrictPending = await postAs(test, '/api/auth/processing-restriction', rightsToken, { ground });
      expect(restrictPending.status).toBe(409);
      expect(restrictPending.body).toEqual(refusal(ERASURE_PENDING));

      // The administrators' view: listed, soonest deadline first.
      const listed = await test.request({
        method: 'GET',
        url: '/api/auth/erasure-requests',
        token: admin.token,
      });
      expect(listed.status).toBe(200);
      expect(listed.body.data).toContainEqual({
        subjectId: subject.id,
        subjectKind: 'person',
        requestedAt: now,
        dueAt: requested.body.data.dueAt,
      });
      const byActor = await test.request({
        method: 'GET',
        url: `/api/audit-log?ActorId=${subject.id}`,
        token: admin.token,
      });
      expect(byActor.body.totalRecords).toBeGreaterThan(0);
      const byTarget = await test.request({
        method: 'GET',
        url: `/api/audit-log?TargetId=${subject.id}&Action=RequestErasureCommand&Succeeded=false`,
        token: admin.token,
      });
      // The refused attempts: wrong and missing password, then the two repeats.
      expect(byTarget.body.totalRecords).toBe(4);

      // Reconciliation runs the pass now.
      const reconciled = await test.request({
        method: 'POST',
        url: '/api/auth/erasure-reconciliation',
        token: admin.token,
      });
      expect(reconciled.status).toBe(200);
      expect(reconciled.body.data).toEqual({ anonymised: 1, remaining: 0 });
      expect((await auditEntries(test, 'ErasureReconciliationCommand')).at(-1)).toMatchObject({
        actor_id: admin.id,
        succeeded: 1,
      });

      // No personal data left: search every cell of every table for the name, the address and the
      // ground, and for the id in the audit trail.
      expect(await cellsContaining(test, [name, email, ground, 'Rhiannon'])).toEqual([]);
      await test.services.auditInbox.settle();
      const naming = await test.services.db
        .selectFrom('audit_entries')
        .select('id')
        .where((eb) => eb.or([eb('actor_id', '=', subject.id), eb('target_id', '=', subject.id)]))
        .execute();
      expect(naming).toEqual([]);
      const row = (await personRow(test, subject.id))!;
      expect(row).toMatchObject({
        password_hash: null,
        email_verified: 0,
        failed_login_attempts: 0,
        locked_out_until: null,
        reauthentication_failures: 0,
        reauthentication_window_started_at: null,
        reauthentication_paused_until: null,
        anonymised_at: now,
        deleted_at: now,
      });
      expect(row.security_stamp).not.toBe(stored.security_stamp);
      expect(
        await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', subject.id)
          .execute(),
      ).toEqual([]);
      // A cleared actor cannot be found by filtering on it; the entries themselves are kept.
      const cleared = await test.request({
        method: 'GET',
        url: `/api/audit-log?ActorId=${subject.id}`,
        token: admin.token,
      });
      expect(cleared.body.totalRecords).toBe(0);
      const clearedTarget = await test.request({
        method: 'GET',
        url: `/api/audit-log?TargetId=${subject.id}`,
        token: admin.token,
      });
      expect(clearedTarget.body.totalRecords).toBe(0);
      expect(
        (await auditEntries(test, 'RestrictProcessingCommand')).some((entry) => entry.actor_id === null),
      ).toBe(true);
      // Every token of the person is dead, at the subject-rights endpoints too.
      const afterwards = await postAs(test, '/api/auth/data-export', rightsToken, undefined);
      expect(afterwards.status).toBe(401);
      const listedAfter = await test.request({
        method: 'GET',
        url: '/api/auth/erasure-requests',
        token: admin.token,
      });
      expect(listedAfter.body.data.map((entry: { subjectId: string }) => entry.subjectId)).not.toContain(
        subject.id,
      );
    });

    it('refuses a blank, missing or overlong ground with 400 and restricts nothing', async () => {
      const scope = await createScope(test, [admin.id]);
      const user = await createUser(test, scope.id);
      for (const [body, message] of [
        [{ ground: '   ' }, 'Ground is required.'],
        [{ ground: 'x'.repeat(501) }, null],
        [{}, null],
      ] as const) {
        const response = await postAs(test, '/api/auth/processing-restriction', user.token, body);
        expect(response.status).toBe(400);
        if (message !== null) expect(response.body).toEqual(refusal(message));
      }
      expect(await personRow(test, user.id)).toMatchObject({ restricted_at: null, restriction_ground: null });
    });

    it('answers wrong-typed and non-JSON bodies 400 malformed, and changes nothing', async () => {
      const scope = await createScope(test, [admin.id]);
      const user = await createUser(test, scope.id, { restricted_at: test.clock.now().toISOString() });
      const before = await personRow(test, user.id);
      const cases: Array<[string, unknown]> = [
        ['/api/auth/processing-restriction/lift', { personId: 'not-a-guid' }],
        ['/api/auth/processing-restriction/lift', { personId: 42 }],
        ['/api/auth/processing-restriction', { ground: 42 }],
        ['/api/auth/erasure-request', { currentPassword: 42 }],
        ['/api/auth/erasure-request', { idToken: ['a'] }],
        ['/api/auth/erasure-request', '{not json'],
      ];
      for (const [url, body] of cases) {
        const response = await test.request({
          method: 'POST',
          url,
          token: user.token,
          body,
          headers: { 'content-type': 'application/json' },
          remoteAddress: freshClientAddress(),
        });
        expect(response.status, `${url} ${JSON.stringify(body)}`).toBe(400);
        expect(response.body, `${url} ${JSON.stringify(body)}`).toEqual(refusal('The request is malformed.'));
      }
      expect(await personRow(test, user.id)).toEqual(before);
    });

    it('lets the subject lift their own restriction; the subject-rights token stays 403 elsewhere afterwards', async () => {
      const scope = await createScope(test, [admin.id]);
      const user = await createUser(test, scope.id, { restricted_at: test.clock.now().toISOString() });
      const signedIn = await signIn(test, { email: user.email, password: PASSWORD, scopeId: scope.id });
      const rightsToken = signedIn.body.data.token as string;
      const lifted = await postAs(test, '/api/auth/processing-restriction/lift', rightsToken, {});
      expect(lifted.status).toBe(200);
      expect(lifted.body.data).toEqual({
        subjectId: user.id,
        liftedAt: test.clock.now().toISOString(),
        subjectNotified: false,
      });
      expect(await personRow(test, user.id)).toMatchObject({ restricted_at: null });
      // Lifted: the full token works again, the subject-rights token still does not.
      expect(
        (await test.request({ method: 'GET', url: `/api/persons/${user.id}`, token: user.token })).status,
      ).toBe(200);
      const stillRefused = await test.request({
        method: 'GET',
        url: `/api/persons/${user.id}`,
        token: rightsToken,
      });
      expect(stillRefused.status).toBe(403);
      expect(stillRefused.body).toEqual(refusal(FORBIDDEN));
      // Nothing left to lift: 409.
      const again = await postAs(test, '/api/auth/processing-restriction/lift', user.token, {});
      expect(again.status).toBe(409);
      expect(again.body).toEqual(refusal(NOT_RESTRICTED));
      const entries = await auditEntries(test, 'LiftProcessingRestrictionCommand');
      expect(
        entries
          .filter((entry) => entry.target_id === user.id)
          .map((entry) => entry.succeeded)
          .sort(),
      ).toEqual([0, 1]);
    });

    it('lets only a System Admin with a full token lift another person’s restriction', async () => {
      const scope = await createScope(test, [admin.id]);
      const restrictedAt = test.clock.now().toISOString();
      const user = await createUser(test, scope.id, { restricted_at: restrictedAt });
      const other = await createUser(test, scope.id);
      const scopeAdmin = await createScopeAdmin(test);
      const restrictedAdmin = await createSystemAdmin(test, { restricted_at: restrictedAt });

      const byUser = await postAs(test, '/api/auth/processing-restriction/lift', other.token, {
        personId: user.id,
      });
      expect(byUser.status).toBe(403);
      expect(byUser.body).toEqual(refusal(FORBIDDEN));
      const byScopeAdmin = await postAs(test, '/api/auth/processing-restriction/lift', scopeAdmin.token, {
        personId: user.id,
      });
      expect(byScopeAdmin.status).toBe(403);
      // A restricted System Admin exercises only their own rights.
      const adminRights = (await signIn(test, { email: restrictedAdmin.email, password: PASSWORD })).body.data
        .token as string;
      const byRestrictedAdmin = await postAs(test, '/api/auth/processing-restriction/lift', adminRights, {
        personId: user.id,
      });
      expect(byRestrictedAdmin.status).toBe(403);
      // So does one whose erasure is pending, with the full token they had before.
      const leavingAdmin = await createSystemAdmin(test);
      await test.services.db
        .updateTable('persons')
        .set({ erasure_requested_at: restrictedAt })
        .where('id', '=', leavingAdmin.id)
        .execute();
      const byLeavingAdmin = await postAs(test, '/api/auth/processing-restriction/lift', leavingAdmin.token, {
        personId: user.id,
      });
      expect(byLeavingAdmin.status).toBe(403);
      expect(byLeavingAdmin.body).toEqual(refusal(FORBIDDEN));
      expect(await personRow(test, user.id)).toMatchObject({ restricted_at: restrictedAt });

      const unknown = await postAs(test, '/api/auth/processing-restriction/lift', admin.token, {
        personId: crypto.randomUUID(),
      });
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual(refusal('Person not found.'));
      const notRestricted = await postAs(test, '/api/auth/processing-restriction/lift', admin.token, {
        personId: other.id,
      });
      expect(notRestricted.status).toBe(409);
      expect(notRestricted.body).toEqual(refusal(NOT_RESTRICTED));

      const lifted = await postAs(test, '/api/auth/processing-restriction/lift', admin.token, {
        personId: user.id,
      });
      expect(lifted.status).toBe(200);
      expect(lifted.body.data).toMatchObject({ subjectId: user.id, subjectNotified: true });
      expect(await personRow(test, user.id)).toMatchObject({ restricted_at: null, restriction_ground: null });
      const entries = await auditEntries(test, 'LiftProcessingRestrictionCommand');
      const ofUser = entries.filter((entry) => entry.target_id === user.id);
      // One entry per attempt, refusals included; the success names the administrator.
      expect(ofUser.filter((entry) => entry.succeeded === 1)).toEqual([
        expect.objectContaining({ actor_id: admin.id, target_id: user.id }),
      ]);
      expect(ofUser.filter((entry) => entry.succeeded === 0)).toHaveLength(4);
    });

    it('refuses the erasure of a scope’s last owner with 409 and changes nothing', async () => {
      const owner = await createScopeAdmin(test);
      await createScope(test, [owner.id]);
      const response = await postAs(test, '/api/auth/erasure-request', owner.token, {
        currentPassword: PASSWORD,
      });
      expect(response.status).toBe(409);
      expect(response.body).toEqual(refusal(LAST_OWNER));
      expect(await personRow(test, owner.id)).toMatchObject({ erasure_requested_at: null, deleted_at: null });
      expect(
        (await test.request({ method: 'GET', url: `/api/persons/${owner.id}`, token: owner.token })).status,
      ).toBe(200);
    });

    it('shares the re-authentication budget: five failures pause the check, the right password included', async () => {
      const scope = await createScope(test, [admin.id]);
      const user = await createUser(test, scope.id);
      for (let attempt = 0; attempt < 5; attempt += 1) {
        const response = await postAs(test, '/api/auth/erasure-request', user.token, {
          currentPassword: `wrong ${attempt}`,
        });
        expect(response.status).toBe(401);
      }
      const paused = await postAs(test, '/api/auth/erasure-request', user.token, {
        currentPassword: PASSWORD,
      });
      expect(paused.status).toBe(401);
      expect(paused.body).toEqual(refusal(WRONG));
      expect(await personRow(test, user.id)).toMatchObject({ erasure_requested_at: null });
      expect((await personRow(test, user.id))!.reauthentication_paused_until).not.toBeNull();
    });

    it('charges erasure requests to the credential rate limit of the client address', async () => {
      const scope = await createScope(test, [admin.id]);
      const user = await createUser(test, scope.id);
      const remoteAddress = freshClientAddress();
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 11; attempt += 1) {
        const response = await test.request({
          method: 'POST',
          url: '/api/auth/erasure-request',
          token: user.token,
          body: { currentPassword: 'wrong' },
          remoteAddress,
        });
        statuses.push(response.status);
        if (response.status === 429) {
          expect(response.body).toEqual(refusal('Too many requests.'));
          expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
        }
      }
      expect(statuses.slice(0, 10).every((status) => status === 401)).toBe(true);
      expect(statuses[10]).toBe(429);
    });

    it('answers a missing person token 401 and an administrator’s list to nobody else (403)', async () => {
      const unauthenticated = await test.request({ method: 'POST', url: '/api/auth/data-export' });
      expect(unauthenticated.status).toBe(401);
      const scopeAdmin = await createScopeAdmin(test);
      for (const [method, url] of [
        ['GET', '/api/auth/erasure-requests'],
        ['POST', '/api/auth/erasure-reconciliation'],
      ] as const) {
        const response = await test.request({ method, url, token: scopeAdmin.token });
        expect(response.status).toBe(403);
        expect(response.body).toEqual(refusal(FORBIDDEN));
      }
      expect(tokenFor(test, scopeAdmin.row)).toBeTypeOf('string');
    });
  });
}
