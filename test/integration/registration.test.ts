import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.ts';
import type { ScopeRow } from '../../src/db/database.ts';
import { REGISTRATION_ACCEPTED_MESSAGE } from '../../src/modules/registration/registration.routes.ts';
import { expectRefusal, post, waitForAuditEntries } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp, type TestResponse } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  personCount,
  type PersonFixture,
  tokenFor,
} from '../helpers/factories.ts';
import { linkOf, linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

const VERIFICATION_BASE = 'https://app.example.test/verify';
const CHOSEN_PASSWORD = 'my own registration passphrase';
const ACCEPTED = { data: null, messages: [REGISTRATION_ACCEPTED_MESSAGE], errors: [], success: true };
const SCOPE_UNAVAILABLE = 'Self-registration is not available for this scope.';
const PASSWORD_REQUIRED = 'The password is required to confirm this registration.';
const WRONG_PASSWORD = 'The password or code is incorrect.';

let addressCounter = 0;
const freshEmail = (label = 'registrant') => {
  addressCounter += 1;
  return `${label}-${addressCounter}-${Date.now()}@example.test`;
};

for (const dialect of DIALECTS) {
  describe(`self-registration (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let admin: PersonFixture;
    let owner: PersonFixture;
    let scope: ScopeRow;
    let registrations = 0;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        env: {
          SERVICE_SMTP_URL: sink.url,
          SERVICE_EMAIL_FROM: 'Portcullis <no-reply@portcullis.test>',
          SERVICE_EMAIL_VERIFICATION_URL: VERIFICATION_BASE,
        },
      });
      admin = await createSystemAdmin(test);
      owner = await createScopeAdmin(test);
      scope = await createScope(test, [owner.id], { self_registration_enabled: 1 });
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    // Fresh tokens: tests move the clock past earlier tokens' lifetime.
    const adminToken = () => tokenFor(test, admin.row);
    const ownerToken = () => tokenFor(test, owner.row);

    /** Registers and, when accepted, waits until the background worker has handled it and its mail is out. */
    async function register(body: Record<string, unknown>): Promise<TestResponse> {
      const response = await post(test, '/api/auth/register', body);
      if (response.status === 202) {
        registrations += 1;
        await waitForAuditEntries(test, 'RegisterCommand', registrations);
        await test.services.mailer.idle();
      }
      return response;
    }

    const registrationBody = (email: string, scopeId = scope.id) => ({
      name: 'Ada Registrant',
      email,
      password: CHOSEN_PASSWORD,
      scopeId,
    });

    const pendingRows = (emailNormalized: string) =>
      test.services.db
        .selectFrom('pending_registrations')
        .selectAll()
        .where('email_normalized', '=', emailNormalized)
        .orderBy('created_at')
        .execute();

    const personsWithEmail = (email: string) =>
      test.services.db
        .selectFrom('persons')
        .selectAll()
        .where('email_normalized', '=', email.toLowerCase())
        .execute();

    const verify = (body: Record<string, unknown>) => post(test, '/api/auth/verify-email', body);

    const signIn = (email: string, scopeId: string, password = CHOSEN_PASSWORD) =>
      post(test, '/api/auth/login', { email, password, scopeId });

    it('creates the account only when the mailed link is followed with the chosen password', async () => {
      const email = freshEmail();
      const accepted = await register(registrationBody(`  ${email.toUpperCase()} `));
      expect({ status: accepted.status, body: accepted.body }).toEqual({ status: 202, body: ACCEPTED });

      const mail = await sink.waitForMail(email);
      expect(mail.subject).toBe('Confirm your registration');
      expect(linkOf(mail)).toMatch(/^https:\/\/app\.example\.test\/verify\?token=[\w-]{43}$/);
      expect(mail.text).toContain(scope.name);
      const token = linkTokenOf(mail);

      // Pending: the token is stored only as its hash, the password only as an Argon2id hash.
      const [pending] = await pendingRows(email);
      expect(pending).toMatchObject({
        scope_id: scope.id,
        name: 'Ada Registrant',
        email: email.toUpperCase(),
        guesses_left: 10,
        token_hash: sha256(token),
      });
      expect(pending?.password_hash).toMatch(/^\$argon2id\$/);
      expect(JSON.stringify(pending)).not.toContain(token);
      expect(JSON.stringify(pending)).not.toContain(CHOSEN_PASSWORD);
      expect(await personsWithEmail(email)).toEqual([]);
      expectRefusal(await signIn(email, scope.id), 401, 'Invalid credentials.');

      const confirmed = await verify({ Token: token, Password: CHOSEN_PASSWORD });
      expect({ status: confirmed.status, body: confirmed.body }).toEqual({
        status: 200,
        body: {
          data: { alreadyVerified: false },
          messages: ['Registration confirmed. Your account has been created.'],
          errors: [],
          success: true,
        },
      });
      const [person] = await personsWithEmail(email);
      expect(person).toMatchObject({
        name: 'Ada Registrant',
        email: email.toUpperCase(),
        role: 3,
        scope_id: scope.id,
        email_verified: 1,
        password_hash: pending?.password_hash,
        deleted_at: null,
      });
      expect(await pendingRows(email)).toEqual([]);
      await test.services.mailer.idle();
      const welcome = await sink.waitForMail(email, 2);
      expect(welcome.subject).toBe('Your account has been created');
      expect(welcome.text).not.toMatch(/token=/);

      const signedIn = await signIn(email, scope.id);
      expect(signedIn.status).toBe(200);
      expect(signedIn.body.data.emailVerified).toBe(true);

      // The link followed again after the account exists: 400, and nothing changes.
      const count = await personCount(test);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Invalid token.');
      expect(await personCount(test)).toBe(count);

      const [registered] = (await auditEntries(test, 'RegisterCommand')).filter(
        (entry) => entry.target_id === pending?.id,
      );
      expect(registered).toMatchObject({ actor_id: null, succeeded: 1, failure_reason: null });
      const [verified] = (await auditEntries(test, 'VerifyEmailCommand')).filter(
        (entry) => entry.target_id === person?.id,
      );
      expect(verified).toMatchObject({ actor_id: null, succeeded: 1 });
      // No secret in the audit trail.
      await test.services.auditInbox.settle();
      const trail = JSON.stringify(await test.services.db.selectFrom('audit_entries').selectAll().execute());
      for (const secret of [token, sha256(token), CHOSEN_PASSWORD, pending?.password_hash ?? '-']) {
        expect(trail).not.toContain(secret);
      }
    });

    it('answers a taken address exactly like a free one, and tells the holder instead', async () => {
      const holder = await createUser(test, scope.id, { email: freshEmail('holder') });
      const before = await personCount(test);

      const free = await register(registrationBody(freshEmail()));
      const taken = await register(registrationBody(holder.email.toUpperCase()));
      // Indistinguishable: the same status, the same body, the same headers that carry meaning.
      expect({ status: taken.status, body: taken.body }).toEqual({ status: free.status, body: free.body });
      expect(taken.headers['content-length']).toBe(free.headers['content-length']);
      expect(taken.headers['content-type']).toBe(free.headers['content-type']);

      const notice = await sink.waitForMail(holder.email);
      expect(notice.subject).toBe('Someone tried to register with your email address');
      expect(notice.text).toContain(scope.name);
      expect(notice.text).not.toMatch(/token=|https?:\/\//);
      expect(await pendingRows(holder.email.toLowerCase())).toEqual([]);
      expect(await personCount(test)).toBe(before);
      // The holder's account is untouched and still signs in.
      expect((await signIn(holder.email, scope.id, 'correct horse battery staple')).status).toBe(200);
    });

    it('neither mails nor stores anything for an address held by a restricted User; a deleted User holds none', async () => {
      const restricted = await createUser(test, scope.id, {
        email: freshEmail('restricted'),
        restricted_at: test.clock.now().toISOString(),
      });
      const response = await register(registrationBody(restricted.email));
      expect({ status: response.status, body: response.body }).toEqual({ status: 202, body: ACCEPTED });
      expect(sink.mailsTo(restricted.email)).toEqual([]);
      expect(await pendingRows(restricted.email.toLowerCase())).toEqual([]);

      // A deleted User no longer holds the address: it can be registered anew.
      const deleted = await createUser(test, scope.id, {
        email: freshEmail('deleted'),
        deleted_at: test.clock.now().toISOString(),
      });
      await register(registrationBody(deleted.email));
      expect((await sink.waitForMail(deleted.email)).subject).toBe('Confirm your registration');
      expect(await pendingRows(deleted.email.toLowerCase())).toHaveLength(1);
    });

    it('creates one account when the link is followed twice at once', async () => {
      const email = freshEmail('racer');
      await register(registrationBody(email));
      const token = linkTokenOf(await sink.waitForMail(email));
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => verify({ token, password: CHOSEN_PASSWORD })),
      );
      expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400, 400, 400]);
      for (const answer of answers.filter((candidate) => candidate.status === 400)) {
        expectRefusal(answer, 400, 'Invalid token.');
      }
      expect(await personsWithEmail(email)).toHaveLength(1);
    });

    it('spends exactly one guess per wrong password, also when they arrive at once', async () => {
      const email = freshEmail('concurrent-guesser');
      await register(registrationBody(email));
      const token = linkTokenOf(await sink.waitForMail(email));
      const answers = await Promise.all(
        Array.from({ length: 4 }, (_, index) => verify({ token, password: `wrong guess ${index}` })),
      );
      for (const answer of answers) expectRefusal(answer, 401, WRONG_PASSWORD);
      const [row] = await pendingRows(email);
      expect(row?.guesses_left).toBe(6);
    });

    it('sends at most three attempt notices per address a day, across scopes', async () => {
      const email = freshEmail('much-wanted');
      const otherOwner = await createScopeAdmin(test);
      const other = await createScope(test, [otherOwner.id], { self_registration_enabled: 1 });
      await createUser(test, scope.id, { email });
      await createUser(test, other.id, { email });

      for (const scopeId of [scope.id, other.id, scope.id, other.id, scope.id]) {
        const response = await register(registrationBody(email, scopeId));
        expect({ status: response.status, body: response.body }).toEqual({ status: 202, body: ACCEPTED });
      }
      expect(sink.mailsTo(email)).toHaveLength(3);
      expect(await pendingRows(email)).toEqual([]);

      test.clock.advanceSeconds(24 * 60 * 60);
      await register(registrationBody(email, other.id));
      await sink.waitForMail(email, 4);
      expect(sink.mailsTo(email)).toHaveLength(4);
    });

    it('keeps at most three live pending registrations per address and scope, then stores and sends nothing', async () => {
      const email = freshEmail('eager');
      const otherOwner = await createScopeAdmin(test);
      const other = await createScope(test, [otherOwner.id], { self_registration_enabled: 1 });
      for (let attempt = 1; attempt <= 4; attempt += 1) {
        const response = await register(registrationBody(email));
        expect({ status: response.status, body: response.body }).toEqual({ status: 202, body: ACCEPTED });
        test.clock.advanceSeconds(1);
      }
      expect(await pendingRows(email)).toHaveLength(3);
      expect(sink.mailsTo(email)).toHaveLength(3);
      // Each of the three links is its own, and each works.
      const tokens = sink.mailsTo(email).map(linkTokenOf);
      expect(new Set(tokens).size).toBe(3);

      // The limit is per scope: another scope still takes the address.
      await register(registrationBody(email, other.id));
      expect(await pendingRows(email)).toHaveLength(4);
      expect(sink.mailsTo(email)).toHaveLength(4);

      // Expired registrations no longer count.
      test.clock.advanceSeconds(24 * 60 * 60);
      await register(registrationBody(email));
      await sink.waitForMail(email, 5);
      expect(await pendingRows(email)).toHaveLength(5);
    });

    it('refuses a missing, deleted or closed scope with 403 and malformed requests with 400, storing nothing', async () => {
      const email = freshEmail('refused');
      const closed = await createScope(test, [owner.id]);
      const deleted = await createScope(test, [owner.id], { self_registration_enabled: 1 });
      expect(
        (await test.request({ method: 'DELETE', url: `/api/scopes/${deleted.id}`, token: adminToken() }))
          .status,
      ).toBe(200);
      const entriesBefore = (await auditEntries(test, 'RegisterCommand')).length;

      for (const scopeId of [crypto.randomUUID(), closed.id, deleted.id]) {
        expectRefusal(await register(registrationBody(email, scopeId)), 403, SCOPE_UNAVAILABLE);
      }
      const malformed: Array<[unknown, string]> = [
        [{ ...registrationBody(email), scopeId: 'not-a-guid' }, 'The request is malformed.'],
        [{ ...registrationBody(email), password: 42 }, 'The request is malformed.'],
        [{ ...registrationBody(email), password: 'short' }, 'Password must be at least 8 characters.'],
        [{ ...registrationBody(email), password: 'qwertyuiop' }, 'Password is too common.'],
        [{ ...registrationBody(email), name: '   ' }, 'Name is required.'],
        [{ ...registrationBody(email), email: 'not an address' }, 'Email is not valid.'],
        ['not json', 'The request is malformed.'],
      ];
      for (const [body, message] of malformed) {
        const response = await post(test, '/api/auth/register', body);
        expectRefusal(response, 400, message);
      }
      const { scopeId: _omitted, ...withoutScope } = registrationBody(email);
      const missingScope = await post(test, '/api/auth/register', withoutScope);
      expect(missingScope.status).toBe(400);
      expect(missingScope.body.success).toBe(false);

      await test.services.mailer.idle();
      expect(sink.mailsTo(email)).toEqual([]);
      expect(await pendingRows(email)).toEqual([]);
      expect(await auditEntries(test, 'RegisterCommand')).toHaveLength(entriesBefore);
    });

    it('opens and closes through PUT /api/scopes/{id}/self-registration', async () => {
      const toggled = await createScope(test, [owner.id]);
      const email = freshEmail('toggle');
      const toggle = (enabled: boolean) =>
        test.request({
          method: 'PUT',
          url: `/api/scopes/${toggled.id}/self-registration`,
          token: ownerToken(),
          body: { enabled },
        });
      expectRefusal(await register(registrationBody(email, toggled.id)), 403, SCOPE_UNAVAILABLE);

      const opened = await toggle(true);
      expect(opened.status).toBe(200);
      expect(opened.body.data.selfRegistrationEnabled).toBe(true);
      expect((await register(registrationBody(email, toggled.id))).status).toBe(202);
      const token = linkTokenOf(await sink.waitForMail(email));

      expect((await toggle(false)).body.data.selfRegistrationEnabled).toBe(false);
      expectRefusal(await register(registrationBody(email, toggled.id)), 403, SCOPE_UNAVAILABLE);
      // A link mailed while it was open no longer creates an account once it is closed.
      const [pending] = await pendingRows(email);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Invalid token.');
      expect(await pendingRows(email)).toEqual([pending]);
      expect(await personsWithEmail(email)).toEqual([]);

      // Open again: the same link works.
      await toggle(true);
      expect((await verify({ token, password: CHOSEN_PASSWORD })).status).toBe(200);
      expect(await personsWithEmail(email)).toHaveLength(1);
    });

    it('asks for the password (422), spends a guess per wrong one (401) and discards it at the tenth', async () => {
      const email = freshEmail('guesser');
      await register(registrationBody(email));
      const token = linkTokenOf(await sink.waitForMail(email));
      const [original] = await pendingRows(email);

      for (const body of [{ token }, { token, password: null }, { token, password: '' }]) {
        expectRefusal(await verify(body), 422, PASSWORD_REQUIRED);
      }
      expect(await pendingRows(email)).toEqual([original]);

      for (let wrong = 1; wrong <= 9; wrong += 1) {
        expectRefusal(await verify({ token, password: `wrong guess ${wrong}` }), 401, WRONG_PASSWORD);
        const [row] = await pendingRows(email);
        expect(row).toEqual({ ...original, guesses_left: 10 - wrong });
      }
      expect(await personsWithEmail(email)).toEqual([]);
      const failures = (await auditEntries(test, 'VerifyEmailCommand')).filter(
        (entry) => entry.target_id === original?.id,
      );
      // Entries of one instant are in no particular order: compare them as a multiset.
      expect(failures.map((entry) => `${entry.succeeded} ${entry.failure_reason}`).sort()).toEqual(
        [
          ...Array.from({ length: 3 }, () => `0 ${PASSWORD_REQUIRED}`),
          ...Array.from({ length: 9 }, () => `0 ${WRONG_PASSWORD}`),
        ].sort(),
      );

      expectRefusal(await verify({ token, password: 'wrong guess 10' }), 401, WRONG_PASSWORD);
      expect(await pendingRows(email)).toEqual([]);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Invalid token.');
      expect(await personsWithEmail(email)).toEqual([]);

      // Discarded: the registrant may sign up again, and the new link works.
      await register(registrationBody(email));
      const fresh = linkTokenOf(await sink.waitForMail(email, 2));
      expect((await verify({ token: fresh, password: CHOSEN_PASSWORD })).status).toBe(200);
      expect(await personsWithEmail(email)).toHaveLength(1);
    });

    it('answers an expired registration link with Token expired. and creates nothing', async () => {
      const email = freshEmail('late');
      await register(registrationBody(email));
      const token = linkTokenOf(await sink.waitForMail(email));
      test.clock.advanceSeconds(24 * 60 * 60);
      const [before] = await pendingRows(email);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Token expired.');
      expectRefusal(await verify({ token, password: 'a wrong guess' }), 400, 'Token expired.');
      expect(await pendingRows(email)).toEqual([before]);
      expect(await personsWithEmail(email)).toEqual([]);
    });

    it('refuses with 409 when the address was taken before the link was followed, keeping nothing', async () => {
      const email = freshEmail('overtaken');
      await register(registrationBody(email));
      const token = linkTokenOf(await sink.waitForMail(email));
      const created = await test.request({
        method: 'POST',
        url: `/api/scopes/${scope.id}/persons`,
        token: ownerToken(),
        body: { name: 'Created By Owner', email, password: 'an administrator chose this' },
      });
      expect(created.status).toBe(200);

      expectRefusal(
        await verify({ token, password: CHOSEN_PASSWORD }),
        409,
        'A person with this email already exists.',
      );
      const holders = await personsWithEmail(email);
      expect(holders.map((row) => row.name)).toEqual(['Created By Owner']);
      // It can never succeed, so it is gone: the link now names nothing.
      expect(await pendingRows(email)).toEqual([]);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Invalid token.');
    });

    it('does not create the account once the scope is deleted', async () => {
      const doomed = await createScope(test, [owner.id], { self_registration_enabled: 1 });
      const email = freshEmail('orphan');
      await register(registrationBody(email, doomed.id));
      const token = linkTokenOf(await sink.waitForMail(email));
      expect(
        (await test.request({ method: 'DELETE', url: `/api/scopes/${doomed.id}`, token: adminToken() }))
          .status,
      ).toBe(200);
      expectRefusal(await verify({ token, password: CHOSEN_PASSWORD }), 400, 'Invalid token.');
      expect(await personsWithEmail(email)).toEqual([]);
      expect(await pendingRows(email)).toHaveLength(1);

      // A hard delete takes the scope's pending registrations with it.
      expect(
        (await test.request({ method: 'DELETE', url: `/api/scopes/${doomed.id}/hard`, token: adminToken() }))
          .status,
      ).toBe(200);
      expect(await pendingRows(email)).toEqual([]);
    });

    it('links to the scope’s own verification page when it has one', async () => {
      const branded = await createScope(test, [owner.id], { self_registration_enabled: 1 });
      const links = await test.request({
        method: 'PUT',
        url: `/api/scopes/${branded.id}/email-links`,
        token: ownerToken(),
        body: { emailVerificationUrl: 'https://tenant.example.test/join', passwordResetUrl: null },
      });
      expect(links.status).toBe(200);
      const email = freshEmail('branded');
      await register(registrationBody(email, branded.id));
      expect(linkOf(await sink.waitForMail(email))).toMatch(
        /^https:\/\/tenant\.example\.test\/join\?token=[\w-]{43}$/,
      );
    });

    it('is charged to the anonymous authentication rate limit', async () => {
      const remoteAddress = '192.0.2.77';
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 11; attempt += 1) {
        const response = await test.request({
          method: 'POST',
          url: '/api/auth/register',
          remoteAddress,
          body: registrationBody(freshEmail('flood'), crypto.randomUUID()),
        });
        statuses.push(response.status);
        if (attempt === 10) {
          expectRefusal(response, 429, 'Too many requests.');
          expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
        }
      }
      expect(statuses).toEqual([...Array.from({ length: 10 }, () => 403), 429]);
    });
  });
}
