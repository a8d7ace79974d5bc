import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, PASSWORD } from '../helpers/factories.ts';
import { CountingPasswordHasher } from '../helpers/password-checks.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import {
  activateTwoFactor,
  emailCodeOf,
  login,
  post,
  twoFactorRows,
  verify,
  wrongCode,
} from '../helpers/two-factor.ts';

const CODE_INCORRECT = 'The code or recovery code is missing, incorrect, or already used.';
const INCORRECT = 'The password or code is incorrect.';

/**
 * Spec §Authentication 10: "Passwords are checked under a process-wide concurrency bound; email
 * codes too." Each email-code check (2fa/verify, 2fa/confirm, and the second factor of disable
 * and regenerate) takes a slot of the bound, as a password check does, before the transaction.
 */
for (const dialect of DIALECTS) {
  describe(`email-code checks under the bound on credential checks (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let scopeId: string;
    const bound = new ConcurrencyBound(1);
    const passwords = new CountingPasswordHasher(bound);

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, { env: { SERVICE_SMTP_URL: sink.url }, passwords });
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    /** A User with the email method active, signed in up to the challenge, and its mailed code. */
    async function challengeWithEmailCode() {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { email: true }, sink);
      const before = sink.mailsTo(user.email).length;
      const signIn = await login(test, user);
      expect(signIn.body.data.availableMethods).toEqual(['Email']);
      const code = emailCodeOf(await sink.waitForMail(user.email, before + 1));
      return { user, active, challengeToken: signIn.body.data.challengeToken as string, code };
    }

    /** Resolves once `count` checks wait for a slot of the bound; fails after 5 s. */
    async function waitersReach(count: number): Promise<void> {
      const deadline = Date.now() + 5_000;
      while (bound.waiting() < count) {
        if (Date.now() > deadline) throw new Error(`${count} check(s) never waited for a slot`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }

    it('2fa/verify: an email code waits for a slot while the bound is full, and is checked in it', async () => {
      const { challengeToken, code } = await challengeWithEmailCode();
      let release!: () => void;
      const held = passwords.holdSlots(1, new Promise<void>((resolve) => (release = resolve)));
      const checksBefore = passwords.checksRun;
      const answer = verify(test, challengeToken, { code });
      try {
        // The check queues behind the held slot (without the bound it would answer meanwhile).
        await waitersReach(1);
      } finally {
        release();
        await held;
      }
      expect((await answer).status).toBe(200);
      expect(passwords.checksRun - checksBefore).toBe(1);
    });

    it('2fa/verify: a wrong email code is checked in a slot too, and refused', async () => {
      const { challengeToken, code } = await challengeWithEmailCode();
      const checksBefore = passwords.checksRun;
      expectRefusal(await verify(test, challengeToken, { code: wrongCode(code) }), 401, CODE_INCORRECT);
      expect(passwords.checksRun - checksBefore).toBe(1);
    });

    it('2fa/verify: a code matched before the transaction proves nothing once the stored code changed', async () => {
      const { user, challengeToken, code } = await challengeWithEmailCode();
      // Between the check and the transaction, the code is reissued (as a resend would).
      passwords.afterNextCheck = () =>
        test.services.db
          .updateTable('two_factor_challenges')
          .set({ email_code_hash: 'f'.repeat(64) })
          .where('person_id', '=', user.id)
          .where('redeemed_at', 'is', null)
          .execute();
      try {
        expectRefusal(await verify(test, challengeToken, { code }), 401, CODE_INCORRECT);
      } finally {
        passwords.afterNextCheck = null;
      }
      const challenge = (await twoFactorRows(test, user.id)).challenges.at(-1);
      expect(challenge?.redeemed_at).toBeNull();
      expect(challenge?.email_code_hash).toBe('f'.repeat(64));
    });

    it('2fa/confirm: the setup email code is checked in a slot', async () => {
      const user = await createUser(test, scopeId);
      const before = sink.mailsTo(user.email).length;
      const enable = { currentPassword: PASSWORD, appEnabled: false, emailEnabled: true };
      expect((await post(test, '/api/auth/2fa/enable', enable, user.token)).status).toBe(200);
      const code = emailCodeOf(await sink.waitForMail(user.email, before + 1));
      let checksBefore = passwords.checksRun;
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { emailCode: wrongCode(code) }, user.token),
        401,
        INCORRECT,
      );
      expect(passwords.checksRun - checksBefore).toBe(1);
      checksBefore = passwords.checksRun;
      expect((await post(test, '/api/auth/2fa/confirm', { emailCode: code }, user.token)).status).toBe(200);
      expect(passwords.checksRun - checksBefore).toBe(1);
    });

    it('2fa/disable: the password and the email code are two checks, each in a slot', async () => {
      const { active, code } = await challengeWithEmailCode();
      const checksBefore = passwords.checksRun;
      const disabled = await post(
        test,
        '/api/auth/2fa/disable',
        { currentPassword: PASSWORD, code },
        active.token,
      );
      expect(disabled.status).toBe(200);
      expect(passwords.checksRun - checksBefore).toBe(2);
    });
  });
}
