import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, PASSWORD } from '../helpers/factories.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import {
  appCode,
  emailCodeOf,
  freshToken,
  login,
  post,
  resend,
  verify,
  wrongCode,
} from '../helpers/two-factor.ts';

/**
 * Threat: two-factor secrets copied from log files or the audit trail (read by operators,
 * shipped to log stores). Shared keys, codes, recovery codes and tokens must appear in neither.
 */
for (const dialect of DIALECTS) {
  describe(`no two-factor secret in logs or audit entries (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    const lines: string[] = [];

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, {
        env: { SERVICE_SMTP_URL: sink.url },
        logger: { level: 'trace', stream: { write: (line: string) => void lines.push(line) } },
      });
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    it('walks every two-factor operation and finds none of its secrets in either', async () => {
      const scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
      const user = await createUser(test, scopeId);
      const secrets: string[] = [PASSWORD];
      const codes: string[] = [];

      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: true, emailEnabled: true },
        user.token,
      );
      const sharedKey = enabled.body.data.sharedKey as string;
      secrets.push(sharedKey, enabled.body.data.otpAuthUri as string);
      const setupCode = emailCodeOf(await sink.waitForMail(user.email, 1));
      codes.push(setupCode, appCode(test, sharedKey));
      const confirmed = await post(
        test,
        '/api/auth/2fa/confirm',
        { appCode: appCode(test, sharedKey), emailCode: setupCode },
        user.token,
      );
      expect(confirmed.status).toBe(200);
      const recoveryCodes = confirmed.body.data.recoveryCodes as string[];
      secrets.push(...recoveryCodes, ...recoveryCodes.map((code) => code.replaceAll('-', '')));

      test.clock.advanceSeconds(301);
      const signIn = await login(test, user);
      const challenge = signIn.body.data.challengeToken as string;
      secrets.push(challenge);
      const loginCode = emailCodeOf(await sink.waitForMail(user.email, 2));
      expect((await resend(test, challenge)).status).toBe(200);
      const resentCode = emailCodeOf(await sink.waitForMail(user.email, 3));
      codes.push(loginCode, resentCode);
      expect((await verify(test, challenge, { code: wrongCode(resentCode) })).status).toBe(401);
      const verified = await verify(test, challenge, { code: resentCode });
      expect(verified.status).toBe(200);
      secrets.push(verified.body.data.token as string);

      const token = await freshToken(test, user.id);
      const regenerated = await post(
        test,
        '/api/auth/2fa/recovery-codes/regenerate',
        { currentPassword: PASSWORD, recoveryCode: recoveryCodes[0] },
        token,
      );
      expect(regenerated.status).toBe(200);
      secrets.push(...(regenerated.body.data.recoveryCodes as string[]));
      await test.services.mailer.idle();

      await test.services.auditInbox.settle();
      const audit = JSON.stringify(await test.services.db.selectFrom('audit_entries').selectAll().execute());
      const stored = JSON.stringify(
        await test.services.db.selectFrom('two_factor_configs').selectAll().execute(),
      );
      for (const secret of secrets) {
        expect(lines.filter((line) => line.includes(secret))).toEqual([]);
        expect(audit.includes(secret), 'audit').toBe(false);
        expect(stored.includes(secret), 'stored').toBe(false);
      }
      // Six digits could sit inside a timestamp by chance: only a free-standing code counts.
      for (const code of codes) {
        const standalone = new RegExp(`(^|[^0-9])${code}([^0-9]|$)`);
        expect(lines.filter((line) => standalone.test(line))).toEqual([]);
        expect(standalone.test(audit), 'audit').toBe(false);
      }
      expect(lines.length).toBeGreaterThan(0);
    });
  });
}
