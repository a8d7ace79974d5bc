import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.ts';
import { Role } from '../../src/db/database.ts';
import { post, waitForAuditEntries } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createPerson, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';
import { SmtpSink } from '../helpers/smtp.ts';

/** Every log line the app writes, as text. */
function capturedLog() {
  const lines: string[] = [];
  return { lines, logger: { level: 'trace', stream: { write: (line: string) => void lines.push(line) } } };
}

/** Hashes of every link token the app has issued. */
async function issuedTokenHashes(test: TestApp): Promise<Set<string>> {
  const rows = await test.services.db.selectFrom('email_links').select('token_hash').execute();
  return new Set(rows.map((row) => row.token_hash));
}

/** Any token-shaped string in the log whose hash is an issued link's: a working credential in the log. */
function leakedTokens(lines: readonly string[], hashes: ReadonlySet<string>): string[] {
  // Every 43-character window of every run of token characters: a token can sit right after
  // other such characters (a JSON-escaped newline is `\n`, which ends in the letter n).
  const runs = lines.flatMap((line) => line.match(/[A-Za-z0-9_-]{43,}/g) ?? []);
  const candidates = runs.flatMap((run) =>
    Array.from({ length: run.length - 42 }, (_, start) => run.slice(start, start + 43)),
  );
  return candidates.filter((candidate) => hashes.has(sha256(candidate)));
}

/** Sends one mail of each kind that carries a link to the person. */
async function sendEveryLink(test: TestApp, admin: PersonFixture, person: PersonFixture): Promise<void> {
  expect((await post(test, '/api/auth/resend-verification', undefined, person.token)).status).toBe(200);
  expect((await post(test, `/api/persons/${person.id}/password-reset`, undefined, admin.token)).status).toBe(
    200,
  );
  test.clock.advanceSeconds(301);
  expect((await post(test, '/api/auth/password-recovery', { email: person.email })).status).toBe(200);
  await waitForAuditEntries(test, 'PasswordRecoveryCommand', 1);
  await test.services.mailer.idle();
}

/** Threat: link tokens copied from log files (shipped to log stores, read by operators) take over accounts. */
for (const dialect of DIALECTS) {
  describe(`no link token in logs (${dialect})`, () => {
    describe('logging fallback (no email provider)', () => {
      let test: TestApp;
      const log = capturedLog();

      beforeAll(async () => {
        test = await buildTestApp(dialect, { logger: log.logger });
      });
      afterAll(() => test.close());

      it('logs the kind and address of each mail and never its token', async () => {
        const admin = await createSystemAdmin(test);
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        await sendEveryLink(test, admin, person);

        const hashes = await issuedTokenHashes(test);
        expect(hashes.size).toBe(3);
        const mailLines = log.lines
          .map((line) => JSON.parse(line) as { kind?: string; to?: string; msg: string })
          .filter((entry) => entry.msg === 'mail not delivered: no email provider configured');
        expect(mailLines.map((entry) => [entry.kind, entry.to])).toEqual([
          ['verification', person.email],
          ['password-reset', person.email],
          ['password-reset', person.email],
        ]);
        expect(leakedTokens(log.lines, hashes)).toEqual([]);
      });
    });

    describe('failing SMTP delivery', () => {
      let test: TestApp;
      let sink: SmtpSink;
      const log = capturedLog();

      beforeAll(async () => {
        sink = await SmtpSink.start();
        sink.rejectWith = 'mailbox unavailable';
        test = await buildTestApp(dialect, { logger: log.logger, env: { SERVICE_SMTP_URL: sink.url } });
      });
      afterAll(async () => {
        await test.close();
        await sink.close();
      });

      it('answers the requests as usual, logs each failure, and logs no token', async () => {
        const admin = await createSystemAdmin(test);
        const person = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
        await sendEveryLink(test, admin, person);

        const failures = log.lines
          .map((line) => JSON.parse(line) as { kind?: string; msg: string })
          .filter((entry) => entry.msg === 'mail delivery failed');
        expect(failures.map((entry) => entry.kind)).toEqual([
          'verification',
          'password-reset',
          'password-reset',
        ]);
        expect(sink.mails).toEqual([]);
        expect(leakedTokens(log.lines, await issuedTokenHashes(test))).toEqual([]);
      });
    });
  });
}
