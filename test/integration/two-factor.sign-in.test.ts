import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/crypto/secrets.ts';
import { newId } from '../../src/crypto/secrets.ts';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, PASSWORD, personRow } from '../helpers/factories.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import {
  activateTwoFactor,
  appCode,
  challengeOf,
  emailCodeOf,
  freshToken,
  login,
  post,
  resend,
  twoFactorRows,
  verify,
  wrongCode,
} from '../helpers/two-factor.ts';

const CODE_INCORRECT = 'The code or recovery code is missing, incorrect, or already used.';
const INVALID_CHALLENGE = 'The two-factor challenge is invalid or has expired. Log in again.';
const RESENT = 'If the challenge is still valid, a new code has been sent.';

/** Signing in with two-factor active: the challenge and its redemption (spec §States, §Authentication 5, 12). */
for (const dialect of DIALECTS) {
  describe(`two-factor sign-in challenge (${dialect})`, () => {
    let test: TestApp;
    let sink: SmtpSink;
    let scopeId: string;

    beforeAll(async () => {
      sink = await SmtpSink.start();
      test = await buildTestApp(dialect, { env: { SERVICE_SMTP_URL: sink.url } });
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(async () => {
      await test.close();
      await sink.close();
    });

    const me = (token: string) => test.request({ method: 'GET', url: '/api/auth/2fa', token });

    it('answers a challenge instead of a token, and verify with an app code gives the full token', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const signIn = await login(test, user);
      expect(signIn.status).toBe(200);
      const answer = signIn.body.data;
      expect(answer).toMatchObject({
        token: null,
        expiresAt: null,
        requiresTwoFactor: true,
        availableMethods: ['App'],
        processingRestricted: false,
      });
      const lifetime = Date.parse(answer.challengeExpiresAt) - test.clock.now().getTime();
      // Ten minutes (JWT expiry is in whole seconds).
      expect(lifetime).toBeGreaterThan(10 * 60 * 1000 - 1000);
      expect(lifetime).toBeLessThanOrEqual(10 * 60 * 1000);
      // The challenge token is never a bearer credential.
      expectRefusal(await me(answer.challengeToken), 401, 'Invalid token');

      const verified = await verify(test, answer.challengeToken, { code: appCode(test, sharedKey!) });
      expect(verified.status).toBe(200);
      expect(verified.body.data).toMatchObject({
        requiresTwoFactor: false,
        challengeToken: null,
        processingRestricted: false,
        emailVerified: true,
      });
      expect((await me(verified.body.data.token)).status).toBe(200);
      // Single use: the same challenge cannot be redeemed again, even with a fresh code.
      test.clock.advanceSeconds(30);
      expectRefusal(
        await verify(test, answer.challengeToken, { code: appCode(test, sharedKey!) }),
        401,
        INVALID_CHALLENGE,
      );
    });

    it('never accepts the same TOTP step twice', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const code = appCode(test, sharedKey!);
      expect((await verify(test, await challengeOf(test, user), { code })).status).toBe(200);
      const again = await challengeOf(test, user);
      expectRefusal(await verify(test, again, { code }), 401, CODE_INCORRECT);
      // The previous step (within the ±1 window) is older than the accepted one: refused too.
      expectRefusal(await verify(test, again, { code: appCode(test, sharedKey!, -1) }), 401, CODE_INCORRECT);
      // The next step is accepted (one step of drift).
      expect((await verify(test, again, { code: appCode(test, sharedKey!, 1) })).status).toBe(200);
    });

    it('refuses a missing code, a wrong code, a forged or app token as challenge with the same 401', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      expectRefusal(await verify(test, challenge, {}), 401, CODE_INCORRECT);
      expectRefusal(
        await verify(test, challenge, { code: wrongCode(appCode(test, sharedKey!)) }),
        401,
        CODE_INCORRECT,
      );
      expectRefusal(await verify(test, 'not-a-token', { code: '123456' }), 401, INVALID_CHALLENGE);
      // A full token is not a challenge token (its audience differs).
      expectRefusal(await verify(test, user.token, { code: '123456' }), 401, INVALID_CHALLENGE);
      // A challenge token sent as the Authorization header is not read.
      const asHeader = await test.request({
        method: 'POST',
        url: '/api/auth/2fa/verify',
        token: challenge,
        body: { code: appCode(test, sharedKey!) },
        remoteAddress: '10.200.0.1',
      });
      expect(asHeader.status).toBe(400);
      expect((await verify(test, challenge, { code: appCode(test, sharedKey!) })).status).toBe(200);
    });

    it('retires the challenge at the fifth wrong app or recovery code', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      for (let guess = 0; guess < 3; guess++) {
        expectRefusal(
          await verify(test, challenge, { code: wrongCode(appCode(test, sharedKey!)) }),
          401,
          CODE_INCORRECT,
        );
      }
      expectRefusal(
        await verify(test, challenge, { recoveryCode: 'AAAA-BBBB-CCCC-DDDD' }),
        401,
        CODE_INCORRECT,
      );
      expectRefusal(
        await verify(test, challenge, { recoveryCode: 'AAAA-BBBB-CCCC-DDDE' }),
        401,
        CODE_INCORRECT,
      );
      expectRefusal(
        await verify(test, challenge, { code: appCode(test, sharedKey!) }),
        401,
        INVALID_CHALLENGE,
      );
      // A new login (password again) gives a challenge that works.
      expect(
        (await verify(test, await challengeOf(test, user), { code: appCode(test, sharedKey!) })).status,
      ).toBe(200);
    });

    it('expires the challenge after ten minutes', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      test.clock.advanceSeconds(10 * 60);
      expectRefusal(
        await verify(test, challenge, { code: appCode(test, sharedKey!) }),
        401,
        INVALID_CHALLENGE,
      );
    });

    it('replaces an outstanding challenge with a newer login', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const first = await challengeOf(test, user);
      const second = await challengeOf(test, user);
      expectRefusal(await verify(test, first, { code: appCode(test, sharedKey!) }), 401, INVALID_CHALLENGE);
      expect((await verify(test, second, { code: appCode(test, sharedKey!) })).status).toBe(200);
    });

    it('invalidates a challenge when the security stamp changes before redemption', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      // Regenerating recovery codes replaces the stamp.
      const regenerated = await post(
        test,
        '/api/auth/2fa/recovery-codes/regenerate',
        { currentPassword: PASSWORD, recoveryCode: active.recoveryCodes[0] },
        active.token,
      );
      expect(regenerated.status).toBe(200);
      expectRefusal(
        await verify(test, challenge, { code: appCode(test, active.sharedKey!) }),
        401,
        INVALID_CHALLENGE,
      );
    });

    it('accepts recovery codes with or without hyphens, spaces, any case, O/I/L misread; each once', async () => {
      const user = await createUser(test, scopeId);
      const { recoveryCodes } = await activateTwoFactor(test, user, { app: true });
      const [first, second, third, fourth] = recoveryCodes as [string, string, string, string];
      const misread = (code: string) => code.toLowerCase().replaceAll('0', 'o').replaceAll('1', 'l');
      const variants = [
        first.replaceAll('-', ''),
        ` ${second.replaceAll('-', ' ')} `,
        misread(third),
        fourth.replaceAll('1', 'I').replaceAll('0', 'O'),
      ];
      for (const variant of variants) {
        const answer = await verify(test, await challengeOf(test, user), { recoveryCode: variant });
        expect(answer.status, variant).toBe(200);
      }
      // Spent: the same code again is refused.
      expectRefusal(
        await verify(test, await challengeOf(test, user), { recoveryCode: first }),
        401,
        CODE_INCORRECT,
      );
      expect((await me(await freshToken(test, user.id))).body.data.remainingRecoveryCodes).toBe(6);
    });

    it('still accepts an older XXXX-XXXX recovery code until used', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { app: true });
      await test.services.db
        .insertInto('two_factor_recovery_codes')
        .values({
          id: newId(),
          person_id: user.id,
          code_hash: sha256('7K3M9QX2'),
          created_at: test.clock.now().toISOString(),
          used_at: null,
        })
        .execute();
      expect((await verify(test, await challengeOf(test, user), { recoveryCode: '7k3m-9qx2' })).status).toBe(
        200,
      );
      expectRefusal(
        await verify(test, await challengeOf(test, user), { recoveryCode: '7K3M-9QX2' }),
        401,
        CODE_INCORRECT,
      );
    });

    it('mails a code at login with the email method; verify with it; a code works once', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { email: true }, sink);
      const before = sink.mailsTo(user.email).length;
      const signIn = await login(test, user);
      expect(signIn.body.data.availableMethods).toEqual(['Email']);
      const code = emailCodeOf(await sink.waitForMail(user.email, before + 1));
      // Wrong email codes do not retire the challenge (only app and recovery codes count there).
      for (let guess = 0; guess < 5; guess++) {
        expectRefusal(
          await verify(test, signIn.body.data.challengeToken, { code: wrongCode(code) }),
          401,
          CODE_INCORRECT,
        );
      }
      const verified = await verify(test, signIn.body.data.challengeToken, { code });
      expect(verified.status).toBe(200);
      expect(verified.body.data.token).toEqual(expect.any(String));
      // The email code of a challenge expires with its ten minutes.
      const next = await login(test, user);
      const nextCode = emailCodeOf(await sink.waitForMail(user.email, before + 2));
      test.clock.advanceSeconds(10 * 60);
      expectRefusal(
        await verify(test, next.body.data.challengeToken, { code: nextCode }),
        401,
        INVALID_CHALLENGE,
      );
    });

    it('signs a restricted person in with a subject-rights token after the challenge; the code is mailed', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { email: true }, sink);
      const restrictedAt = test.clock.now().toISOString();
      await test.services.db
        .updateTable('persons')
        .set({ restricted_at: restrictedAt })
        .where('id', '=', user.id)
        .execute();
      const before = sink.mailsTo(user.email).length;
      const signIn = await login(test, user);
      expect(signIn.body.data).toMatchObject({
        requiresTwoFactor: true,
        processingRestricted: true,
        token: null,
      });
      const code = emailCodeOf(await sink.waitForMail(user.email, before + 1));
      const verified = await verify(test, signIn.body.data.challengeToken, { code });
      expect(verified.status).toBe(200);
      expect(verified.body.data.processingRestricted).toBe(true);
      const bearer = test.services.tokens.readBearer(verified.body.data.token);
      expect(bearer?.kind).toBe('subjectRights');
      expectRefusal(
        await me(verified.body.data.token),
        403,
        'You do not have permission to access this resource.',
      );
    });

    it('resend: always the same 200; reissues a code at most three times, inside the challenge window', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { email: true }, sink);
      const before = sink.mailsTo(user.email).length;
      const signIn = await login(test, user);
      const challenge = signIn.body.data.challengeToken as string;
      const firstCode = emailCodeOf(await sink.waitForMail(user.email, before + 1));

      const same = { data: null, messages: [RESENT], errors: [], success: true };
      // Charged like other account emails: wait out the cooldown the setup mail started.
      test.clock.advanceSeconds(301);
      const reissued = await resend(test, challenge);
      expect([reissued.status, reissued.body]).toEqual([200, same]);
      const secondCode = emailCodeOf(await sink.waitForMail(user.email, before + 2));
      // The replaced code no longer works; the new one does, within the challenge window only.
      const rows = await twoFactorRows(test, user.id);
      expect(rows.challenges.at(-1)?.email_code_expires_at).toBe(rows.challenges.at(-1)?.expires_at);
      // (A one-in-a-million chance that the new code equals the old one is not a failure.)
      if (secondCode !== firstCode) {
        expectRefusal(await verify(test, challenge, { code: firstCode }), 401, CODE_INCORRECT);
      }

      // Within the account-email cooldown: nothing is sent, the answer is the same.
      expect([(await resend(test, challenge)).status, (await resend(test, challenge)).body]).toEqual([
        200,
        same,
      ]);
      expect(sink.mailsTo(user.email)).toHaveLength(before + 2);

      // Unknown, forged, wrong-kind and malformed-but-string tokens: the same 200, nothing sent.
      for (const token of ['garbage', user.token, `${challenge}x`, '', null, undefined, 'x'.repeat(5000)]) {
        expect([(await resend(test, token)).status, (await resend(test, token)).body]).toEqual([200, same]);
      }
      expect(sink.mailsTo(user.email)).toHaveLength(before + 2);
      // Only a value of the wrong type is malformed, as for every body (binding rules).
      expectRefusal(await resend(test, 5), 400, 'The request is malformed.');
      expect((await verify(test, challenge, { code: secondCode })).status).toBe(200);
      // Redeemed: resend sends nothing.
      test.clock.advanceSeconds(301);
      expect((await resend(test, challenge)).body).toEqual(same);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(sink.mailsTo(user.email)).toHaveLength(before + 2);
    });

    it('resend: at most three reissues per challenge; none for an app-only challenge', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { email: true }, sink);
      const base = sink.mailsTo(user.email).length;
      const challenge = (await login(test, user)).body.data.challengeToken as string;
      await sink.waitForMail(user.email, base + 1);
      for (let reissue = 1; reissue <= 3; reissue++) {
        test.clock.advanceSeconds(60);
        await test.services.db.deleteFrom('account_email_budgets').where('person_id', '=', user.id).execute();
        expect((await resend(test, challenge)).status).toBe(200);
        await sink.waitForMail(user.email, base + 1 + reissue);
      }
      await test.services.db.deleteFrom('account_email_budgets').where('person_id', '=', user.id).execute();
      expect((await resend(test, challenge)).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(sink.mailsTo(user.email)).toHaveLength(base + 4);
      // Expired challenge: nothing sent.
      test.clock.advanceSeconds(10 * 60);
      const lastCode = emailCodeOf(sink.mailsTo(user.email).at(-1)!);
      expectRefusal(await verify(test, challenge, { code: lastCode }), 401, INVALID_CHALLENGE);

      const appUser = await createUser(test, scopeId);
      await activateTwoFactor(test, appUser, { app: true });
      expect((await resend(test, await challengeOf(test, appUser))).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(sink.mailsTo(appUser.email)).toHaveLength(0);
    });

    it('refuses a challenge whose person was deleted or suspended for erasure after the login', async () => {
      for (const column of ['deleted_at', 'erasure_requested_at'] as const) {
        const user = await createUser(test, scopeId);
        const { sharedKey } = await activateTwoFactor(test, user, { app: true });
        const challenge = await challengeOf(test, user);
        await test.services.db
          .updateTable('persons')
          .set({ [column]: test.clock.now().toISOString() })
          .where('id', '=', user.id)
          .execute();
        expectRefusal(
          await verify(test, challenge, { code: appCode(test, sharedKey!) }),
          401,
          INVALID_CHALLENGE,
        );
        expect((await twoFactorRows(test, user.id)).challenges[0]?.redeemed_at).toBeNull();
      }
    });

    it('still signs in when the code mail cannot be delivered (the failure is logged, not shown)', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { email: true }, sink);
      sink.rejectWith = '550 mailbox unavailable';
      try {
        const signIn = await login(test, user);
        expect(signIn.status).toBe(200);
        expect(signIn.body.data.requiresTwoFactor).toBe(true);
        await test.services.mailer.idle();
      } finally {
        sink.rejectWith = null;
      }
    });

    it('keeps a person without two-factor on the plain login, and a deleted person gets no challenge', async () => {
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { app: true });
      await test.services.db
        .updateTable('persons')
        .set({ deleted_at: test.clock.now().toISOString() })
        .where('id', '=', user.id)
        .execute();
      expectRefusal(await login(test, user), 401, 'Invalid credentials.');
      expect((await twoFactorRows(test, user.id)).challenges).toHaveLength(0);
      expect((await personRow(test, user.id))?.deleted_at).not.toBeNull();
    });
  });
}
