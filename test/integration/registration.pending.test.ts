import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.ts';
import type { ScopeRow } from '../../src/db/database.ts';
import { purgeExpiredPendingRegistrations } from '../../src/modules/registration/registration.repository.ts';
import { expectRefusal, post, waitForAuditEntries } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  type PersonFixture,
  tokenFor,
} from '../helpers/factories.ts';
import { linkTokenOf, SmtpSink } from '../helpers/smtp.ts';

const CHOSEN_PASSWORD = 'my own registration passphrase';

let addressCounter = 0;
const freshEmail = (label = 'pending') => {
  addressCounter += 1;
  return `${label}-${addressCounter}-${Date.now()}@example.test`;
};

/** Every log line the app writes, as text. */
function capturedLog() {
  const lines: string[] = [];
  return { lines, logger: { level: 'trace', stream: { write: (line: string) => void lines.push(line) } } };
}

for (const dialect of DIALECTS) {
  describe(`pending registrations (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    const log = capturedLog();
    let admin: PersonFixture;
    let owner: PersonFixture;
    let registrations = 0;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        logger: log.logger,
        env: { SERVICE_SMTP_URL: sink.url, SERVICE_EMAIL_FROM: 'Portcullis <no-reply@portcullis.test>' },
      });
      admin = await createSystemAdmin(test);
      owner = await createScopeAdmin(test);
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    // Fresh tokens: tests move the clock past earlier tokens' lifetime.
    const adminToken = () => tokenFor(test, admin.row);
    const ownerToken = () => tokenFor(test, owner.row);
    const openScope = () => createScope(test, [owner.id], { self_registration_enabled: 1 });

    /** Registers, waits for the background worker and the mail, and returns the link token. */
    /** Registers, and returns the token of the mail it sent (none when `mailed` is false). */
    async function register(
      scope: ScopeRow,
      email: string,
      name = 'Pending Person',
      mailed = true,
    ): Promise<string> {
      const mailsBefore = sink.mailsTo(email).length;
      const response = await post(test, '/api/auth/register', {
        name,
        email,
        password: CHOSEN_PASSWORD,
        scopeId: scope.id,
      });
      expect(response.status).toBe(202);
      registrations += 1;
      await waitForAuditEntries(test, 'RegisterCommand', registrations);
      await test.services.mailer.idle();
      if (!mailed) return '';
      // The sink records a mail once it has been received, which may come after the mailer's
      // delivery resolved.
      return linkTokenOf(await sink.waitForMail(email, mailsBefore + 1));
    }

    const list = (scopeId: string, token: string, query = '') =>
      test.request({ method: 'GET', url: `/api/scopes/${scopeId}/pending-registrations${query}`, token });
    const discard = (scopeId: string, registrationId: string, token: string) =>
      test.request({
        method: 'DELETE',
        url: `/api/scopes/${scopeId}/pending-registrations/${registrationId}`,
        token,
      });
    const rowsOf = (scopeId: string) =>
      test.services.db
        .selectFrom('pending_registrations')
        .selectAll()
        .where('scope_id', '=', scopeId)
        .orderBy('created_at')
        .execute();

    it('lists a scope’s registrations awaiting confirmation, newest first, paginated, without secrets', async () => {
      const scope = await openScope();
      const tokens: string[] = [];
      for (const name of ['First', 'Second', 'Third']) {
        tokens.push(await register(scope, freshEmail(), name));
        test.clock.advanceSeconds(60);
      }
      const rows = await rowsOf(scope.id);

      for (const token of [adminToken(), ownerToken()]) {
        const response = await list(scope.id, token);
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          pageNumber: 1,
          pageSize: 100,
          totalRecords: 3,
          messages: ['Pending registrations retrieved successfully.'],
          errors: [],
          success: true,
        });
        expect(response.body.data).toEqual(
          [...rows].reverse().map((row) => ({
            id: row.id,
            name: row.name,
            email: row.email,
            expiresAt: row.expires_at,
            guessesLeft: 10,
            createdAt: row.created_at,
          })),
        );
        // Never the password hash (which carries the salt), the token or the token's hash.
        const text = JSON.stringify(response.body);
        expect(text).not.toContain('$argon2');
        for (const row of rows) {
          expect(text).not.toContain(row.password_hash);
          expect(text).not.toContain(row.token_hash);
        }
        for (const token of tokens) expect(text).not.toContain(token);
      }

      const second = await list(scope.id, ownerToken(), '?PageSize=2&PageNumber=2');
      expect(second.body).toMatchObject({ pageNumber: 2, pageSize: 2, totalRecords: 3 });
      expect(second.body.data.map((item: { name: string }) => item.name)).toEqual(['First']);

      // A wrong guess shows in guessesLeft.
      expect(
        (await post(test, '/api/auth/verify-email', { token: tokens[0], password: 'nope nope' })).status,
      ).toBe(401);
      const afterGuess = await list(scope.id, ownerToken());
      expect(afterGuess.body.data.at(-1)).toMatchObject({ name: 'First', guessesLeft: 9 });

      // Expired registrations are no longer awaiting anything.
      test.clock.advanceSeconds(24 * 60 * 60 - 90);
      const later = await list(scope.id, ownerToken());
      expect(later.body.totalRecords).toBe(1);
      expect(later.body.data.map((item: { name: string }) => item.name)).toEqual(['Third']);
    });

    it('lets only a System Admin or an owner of the scope list, with exact refusals', async () => {
      const scope = await openScope();
      await register(scope, freshEmail());
      const stranger = await createScopeAdmin(test);
      const user = await createUser(test, scope.id);

      expectRefusal(
        await list(scope.id, tokenFor(test, stranger.row)),
        403,
        'You are not an owner of the target scope.',
      );
      expectRefusal(
        await list(scope.id, tokenFor(test, user.row)),
        403,
        'You do not have permission to access this resource.',
      );
      expectRefusal(
        await test.request({ method: 'GET', url: `/api/scopes/${scope.id}/pending-registrations` }),
        401,
        'Invalid token',
      );
      expectRefusal(await list(crypto.randomUUID(), adminToken()), 404, 'Scope not found.');
      expectRefusal(await list('not-a-guid', adminToken()), 400, 'The request is malformed.');
      expectRefusal(
        await list(scope.id, adminToken(), '?PageSize=0'),
        400,
        'Page size must be between 1 and 100.',
      );
      expectRefusal(await list(scope.id, adminToken(), '?PageNumber='), 400, 'The request is malformed.');
    });

    it('discards a registration (audited): its link answers Invalid token. and the registrant may sign up again', async () => {
      const scope = await openScope();
      const email = freshEmail('discarded');
      const tokens = [
        await register(scope, email),
        await register(scope, email),
        await register(scope, email),
      ];
      // The per-address limit is reached: a fourth attempt stores and sends nothing.
      await register(scope, email, undefined, false);
      expect(sink.mailsTo(email)).toHaveLength(3);
      const rows = await rowsOf(scope.id);
      const target = rows.find((row) => row.token_hash === sha256(tokens[0]!))!;

      const discarded = await discard(scope.id, target.id, ownerToken());
      expect({ status: discarded.status, body: discarded.body }).toEqual({
        status: 200,
        body: {
          data: { id: target.id },
          messages: ['Pending registration discarded.'],
          errors: [],
          success: true,
        },
      });
      expect((await rowsOf(scope.id)).map((row) => row.id)).not.toContain(target.id);
      const [entry] = (await auditEntries(test, 'DiscardPendingRegistrationCommand')).filter(
        (row) => row.target_id === target.id,
      );
      expect(entry).toMatchObject({ actor_id: owner.id, succeeded: 1, failure_reason: null });

      expectRefusal(
        await post(test, '/api/auth/verify-email', { token: tokens[0], password: CHOSEN_PASSWORD }),
        400,
        'Invalid token.',
      );
      // The slot is free again: the registrant signs up anew and that link creates the account.
      const again = await register(scope, email);
      expect(sink.mailsTo(email)).toHaveLength(4);
      expect(
        (await post(test, '/api/auth/verify-email', { token: again, password: CHOSEN_PASSWORD })).status,
      ).toBe(200);

      // A repeat finds nothing (and is audited as failed).
      expectRefusal(await discard(scope.id, target.id, adminToken()), 404, 'Pending registration not found.');
      const failed = (await auditEntries(test, 'DiscardPendingRegistrationCommand')).filter(
        (row) => row.target_id === target.id && row.succeeded === 0,
      );
      expect(failed.map((row) => row.failure_reason)).toEqual(['Pending registration not found.']);
    });

    it('refuses a discard through the wrong scope or by a non-owner, changing nothing', async () => {
      const scope = await openScope();
      const other = await openScope();
      await register(scope, freshEmail());
      const [row] = await rowsOf(scope.id);
      const stranger = await createScopeAdmin(test);
      const user = await createUser(test, scope.id);

      expectRefusal(await discard(other.id, row!.id, adminToken()), 404, 'Pending registration not found.');
      expectRefusal(
        await discard(scope.id, row!.id, tokenFor(test, stranger.row)),
        403,
        'You are not an owner of the target scope.',
      );
      expectRefusal(
        await discard(scope.id, row!.id, tokenFor(test, user.row)),
        403,
        'You do not have permission to access this resource.',
      );
      expectRefusal(await discard(crypto.randomUUID(), row!.id, adminToken()), 404, 'Scope not found.');
      expectRefusal(await discard(scope.id, 'not-a-guid', adminToken()), 400, 'The request is malformed.');
      expect(await rowsOf(scope.id)).toEqual([row]);
    });

    it('exports a purge for the retention pass that removes registrations expired over seven days ago', async () => {
      // Earlier tests' registrations are purged first, so the counts below are this test's own.
      const farFuture = new Date(test.clock.now().getTime() + 100 * 24 * 60 * 60 * 1000).toISOString();
      await purgeExpiredPendingRegistrations(test.services.db, farFuture);
      const scope = await openScope();
      await register(scope, freshEmail('purged'));
      test.clock.advanceSeconds(60);
      await register(scope, freshEmail('kept'));
      const [old, recent] = await rowsOf(scope.id);

      // Expired, but not yet seven days ago: kept.
      test.clock.advanceSeconds(24 * 60 * 60 + 7 * 24 * 60 * 60 - 30);
      expect(await purgeExpiredPendingRegistrations(test.services.db, test.clock.now().toISOString())).toBe(
        1,
      );
      expect(await rowsOf(scope.id)).toEqual([recent]);
      expect(old).toBeDefined();

      test.clock.advanceSeconds(60);
      expect(await purgeExpiredPendingRegistrations(test.services.db, test.clock.now().toISOString())).toBe(
        1,
      );
      expect(await rowsOf(scope.id)).toEqual([]);
    });

    it('purges at most a batch at a time, the longest expired first', async () => {
      const farFuture = () => new Date(test.clock.now().getTime() + 100 * 24 * 60 * 60 * 1000).toISOString();
      await purgeExpiredPendingRegistrations(test.services.db, farFuture());
      const scope = await openScope();
      for (const label of ['batch-a', 'batch-b', 'batch-c']) {
        await register(scope, freshEmail(label));
        test.clock.advanceSeconds(60);
      }
      const [, , newest] = await rowsOf(scope.id);
      const later = farFuture();
      expect(await purgeExpiredPendingRegistrations(test.services.db, later, 2)).toBe(2);
      expect(await rowsOf(scope.id)).toEqual([newest]);
      expect(await purgeExpiredPendingRegistrations(test.services.db, later, 2)).toBe(1);
      expect(await purgeExpiredPendingRegistrations(test.services.db, later, 2)).toBe(0);
    });

    it('never writes a link token, the password or its hash to the log', async () => {
      const scope = await openScope();
      const email = freshEmail('logged');
      const token = await register(scope, email);
      const [row] = await rowsOf(scope.id);
      await post(test, '/api/auth/verify-email', { token, password: 'a wrong guess here' });
      await post(test, '/api/auth/verify-email', { token, password: CHOSEN_PASSWORD });
      await test.services.mailer.idle();
      expect(log.lines.length).toBeGreaterThan(0);
      const text = log.lines.join('\n');
      for (const secret of [
        token,
        row!.token_hash,
        row!.password_hash,
        CHOSEN_PASSWORD,
        'a wrong guess here',
      ]) {
        expect(text).not.toContain(secret);
      }
    });
  });
}
