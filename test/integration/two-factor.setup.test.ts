import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import {
  purgeExpiredTwoFactorArtifacts,
  readTwoFactorState,
  removeTwoFactorData,
} from '../../src/modules/two-factor/two-factor.repository.ts';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { insertExtidpUser } from '../helpers/extidp.ts';
import {
  auditEntries,
  createScope,
  createSystemAdmin,
  createUser,
  PASSWORD,
  personRow,
} from '../helpers/factories.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import {
  activateTwoFactor,
  appCode,
  challengeOf,
  emailCodeOf,
  freshToken,
  post,
  twoFactorRows,
  verify,
  wrongCode,
} from '../helpers/two-factor.ts';

const INCORRECT = 'The password or code is incorrect.';
const NO_SETUP = 'No two-factor setup was found.';
const RECOVERY_CODE_SHAPE = /^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/;

/** Setting two-factor up and changing it (spec §States two-factor setup; DECISIONS §5–§7). */
for (const dialect of DIALECTS) {
  describe(`two-factor setup (${dialect})`, () => {
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

    const status = async (token: string) => test.request({ method: 'GET', url: '/api/auth/2fa', token });

    it('enables the app method: pending, answers the otpauth URI and the base32 key, keeps the key sealed', async () => {
      const user = await createUser(test, scopeId);
      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: true, emailEnabled: false },
        user.token,
      );
      expect(enabled.status).toBe(200);
      const { otpAuthUri, sharedKey, emailCodeSent } = enabled.body.data;
      expect(sharedKey).toMatch(/^[A-Z2-7]{32}$/);
      expect(emailCodeSent).toBe(false);
      const uri = new URL(otpAuthUri as string);
      expect(uri.protocol).toBe('otpauth:');
      expect(uri.searchParams.get('secret')).toBe(sharedKey);
      expect(uri.searchParams.get('algorithm')).toBe('SHA1');
      expect(uri.searchParams.get('digits')).toBe('6');
      expect(uri.searchParams.get('period')).toBe('30');

      const rows = await twoFactorRows(test, user.id);
      expect(rows.config).toMatchObject({ status: 'pending', app_enabled: 1, email_enabled: 0 });
      // Encrypted at rest: the stored value neither is nor contains the key.
      expect(rows.config?.totp_secret_sealed).toMatch(/^v1\./);
      expect(rows.config?.totp_secret_sealed).not.toContain(sharedKey);
      expect((await status(user.token)).body.data).toEqual({
        isActive: false,
        isPending: true,
        appEnabled: true,
        emailEnabled: false,
        remainingRecoveryCodes: 0,
      });
      // Pending is not yet on: login still answers a token.
      const signIn = await post(test, '/api/auth/login', { email: user.email, password: PASSWORD, scopeId });
      expect(signIn.body.data.requiresTwoFactor).toBe(false);
      expect(signIn.body.data.token).toEqual(expect.any(String));
      // App alone is never charged to the account-email budget.
      expect(
        await test.services.db
          .selectFrom('account_email_budgets')
          .selectAll()
          .where('person_id', '=', user.id)
          .executeTakeFirst(),
      ).toBeUndefined();
    });

    it('confirms with a real app code: ten recovery codes once, a new stamp revokes every token', async () => {
      const user = await createUser(test, scopeId);
      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: true },
        user.token,
      );
      const sharedKey = enabled.body.data.sharedKey as string;

      const wrong = await post(
        test,
        '/api/auth/2fa/confirm',
        { appCode: wrongCode(appCode(test, sharedKey)) },
        user.token,
      );
      expectRefusal(wrong, 401, INCORRECT);
      expectRefusal(await post(test, '/api/auth/2fa/confirm', {}, user.token), 401, INCORRECT);
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('pending');
      expect((await personRow(test, user.id))?.security_stamp).toBe(user.row.security_stamp);

      const confirmed = await post(
        test,
        '/api/auth/2fa/confirm',
        { appCode: appCode(test, sharedKey) },
        user.token,
      );
      expect(confirmed.status).toBe(200);
      const codes = confirmed.body.data.recoveryCodes as string[];
      expect(codes).toHaveLength(10);
      expect(new Set(codes).size).toBe(10);
      for (const code of codes) expect(code).toMatch(RECOVERY_CODE_SHAPE);
      const rows = await twoFactorRows(test, user.id);
      expect(rows.config?.status).toBe('active');
      // Stored as SHA-256 of the 16 characters, never in the clear.
      expect(rows.recoveryCodes.map((row) => row.code_hash)).not.toContain(codes[0]);
      expect(rows.recoveryCodes).toHaveLength(10);
      expect(JSON.stringify(await auditEntries(test, 'ConfirmTwoFactorCommand'))).not.toContain(codes[0]);

      // The confirming request's own token is revoked too.
      expectRefusal(await status(user.token), 401, 'This token has been revoked. Sign in again.');
      const token = await freshToken(test, user.id);
      expect((await status(token)).body.data).toEqual({
        isActive: true,
        isPending: false,
        appEnabled: true,
        emailEnabled: false,
        remainingRecoveryCodes: 10,
      });
      // Nothing pending any more: a second confirm has no setup.
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { appCode: appCode(test, sharedKey, 1) }, token),
        404,
        NO_SETUP,
      );
      // Enabling again while active is refused; turn it off first.
      expectRefusal(
        await post(test, '/api/auth/2fa/enable', { currentPassword: PASSWORD, appEnabled: true }, token),
        409,
        'Two-factor authentication is already active. Turn it off first.',
      );
    });

    it('refuses enable with a wrong or missing password and changes nothing', async () => {
      const user = await createUser(test, scopeId);
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/enable',
          { currentPassword: 'wrong password', appEnabled: true },
          user.token,
        ),
        401,
        INCORRECT,
      );
      expectRefusal(
        await post(test, '/api/auth/2fa/enable', { appEnabled: true }, user.token),
        401,
        INCORRECT,
      );
      expect((await twoFactorRows(test, user.id)).config).toBeUndefined();
      expect((await personRow(test, user.id))?.reauthentication_failures).toBe(2);
      expectRefusal(
        await post(test, '/api/auth/2fa/enable', { currentPassword: PASSWORD }, user.token),
        400,
        'Choose at least one two-factor method.',
      );
    });

    it('enables the email method: mails a code, charges the budget after the password, 429 before it', async () => {
      const user = await createUser(test, scopeId);
      const wrong = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: 'wrong password', emailEnabled: true },
        user.token,
      );
      expectRefusal(wrong, 401, INCORRECT);
      // The refused password charged no email and sent none.
      expect(sink.mailsTo(user.email)).toHaveLength(0);

      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: false, emailEnabled: true },
        user.token,
      );
      expect(enabled.status).toBe(200);
      expect(enabled.body.data).toEqual({ otpAuthUri: null, sharedKey: null, emailCodeSent: true });
      const code = emailCodeOf(await sink.waitForMail(user.email));

      // Within the cooldown, a second enable with Email is 429 before the password is checked:
      // even a wrong password is not charged to the re-authentication budget.
      const failuresBefore = (await personRow(test, user.id))?.reauthentication_failures;
      const cooling = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: 'wrong password', emailEnabled: true },
        user.token,
      );
      expectRefusal(
        cooling,
        429,
        'An email of this kind was sent to you recently. Try again in a few minutes.',
      );
      expect(Number(cooling.headers['retry-after'])).toBeGreaterThan(0);
      expect((await personRow(test, user.id))?.reauthentication_failures).toBe(failuresBefore);

      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { emailCode: wrongCode(code) }, user.token),
        401,
        INCORRECT,
      );
      const confirmed = await post(test, '/api/auth/2fa/confirm', { emailCode: code }, user.token);
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.data.recoveryCodes).toHaveLength(10);
    });

    it('needs every chosen method proven: app and email both', async () => {
      const user = await createUser(test, scopeId);
      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: true, emailEnabled: true },
        user.token,
      );
      const sharedKey = enabled.body.data.sharedKey as string;
      const emailCode = emailCodeOf(await sink.waitForMail(user.email));
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { appCode: appCode(test, sharedKey) }, user.token),
        401,
        INCORRECT,
      );
      expectRefusal(await post(test, '/api/auth/2fa/confirm', { emailCode }, user.token), 401, INCORRECT);
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('pending');
      const confirmed = await post(
        test,
        '/api/auth/2fa/confirm',
        { appCode: appCode(test, sharedKey), emailCode },
        user.token,
      );
      expect(confirmed.status).toBe(200);
    });

    it('refuses an expired setup email code', async () => {
      const user = await createUser(test, scopeId);
      await post(test, '/api/auth/2fa/enable', { currentPassword: PASSWORD, emailEnabled: true }, user.token);
      const code = emailCodeOf(await sink.waitForMail(user.email));
      test.clock.advanceSeconds(10 * 60 + 1);
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { emailCode: code }, user.token),
        401,
        INCORRECT,
      );
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('pending');
    });

    it('answers 404 at confirm when no setup was begun', async () => {
      const user = await createUser(test, scopeId);
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { appCode: '123456' }, user.token),
        404,
        NO_SETUP,
      );
      expect((await personRow(test, user.id))?.reauthentication_failures).toBe(0);
    });

    it('disables with password and a second factor; a new stamp revokes tokens', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true });
      const sharedKey = active.sharedKey!;
      // The password alone is not enough while two-factor is active.
      expectRefusal(
        await post(test, '/api/auth/2fa/disable', { currentPassword: PASSWORD }, active.token),
        401,
        INCORRECT,
      );
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/disable',
          { currentPassword: 'wrong password', code: appCode(test, sharedKey) },
          active.token,
        ),
        401,
        INCORRECT,
      );
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('active');
      const disabled = await post(
        test,
        '/api/auth/2fa/disable',
        { currentPassword: PASSWORD, code: appCode(test, sharedKey) },
        active.token,
      );
      expect(disabled.status).toBe(200);
      const rows = await twoFactorRows(test, user.id);
      expect(rows.config).toBeUndefined();
      expect(rows.recoveryCodes).toHaveLength(0);
      expectRefusal(await status(active.token), 401, 'This token has been revoked. Sign in again.');
      const token = await freshToken(test, user.id);
      expect((await status(token)).body.data.isActive).toBe(false);
      const signIn = await post(test, '/api/auth/login', { email: user.email, password: PASSWORD, scopeId });
      expect(signIn.body.data.requiresTwoFactor).toBe(false);
      expectRefusal(
        await post(test, '/api/auth/2fa/disable', { currentPassword: PASSWORD }, token),
        404,
        NO_SETUP,
      );
    });

    it('disables with a recovery code, which is spent', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true });
      const disabled = await post(
        test,
        '/api/auth/2fa/disable',
        { currentPassword: PASSWORD, recoveryCode: active.recoveryCodes[0] },
        active.token,
      );
      expect(disabled.status).toBe(200);
    });

    it('accepts the unspent email code of the latest challenge as the second factor of disable', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true, email: true }, sink);
      const before = sink.mailsTo(user.email).length;
      await challengeOf(test, user);
      const code = emailCodeOf(await sink.waitForMail(user.email, before + 1));
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/disable',
          { currentPassword: PASSWORD, code: wrongCode(code) },
          active.token,
        ),
        401,
        INCORRECT,
      );
      const disabled = await post(
        test,
        '/api/auth/2fa/disable',
        { currentPassword: PASSWORD, code },
        active.token,
      );
      expect(disabled.status).toBe(200);
      expect((await twoFactorRows(test, user.id)).config).toBeUndefined();
    });

    it('cancels a pending setup with the password alone', async () => {
      const user = await createUser(test, scopeId);
      await post(test, '/api/auth/2fa/enable', { currentPassword: PASSWORD, appEnabled: true }, user.token);
      expectRefusal(
        await post(test, '/api/auth/2fa/disable', { currentPassword: 'wrong password' }, user.token),
        401,
        INCORRECT,
      );
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('pending');
      expect(
        (await post(test, '/api/auth/2fa/disable', { currentPassword: PASSWORD }, user.token)).status,
      ).toBe(200);
      expect((await twoFactorRows(test, user.id)).config).toBeUndefined();
    });

    it('regenerates recovery codes: the old set stops working, the stamp is replaced', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true });
      const oldCodes = active.recoveryCodes;
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/recovery-codes/regenerate',
          { currentPassword: PASSWORD, code: wrongCode(appCode(test, active.sharedKey!)) },
          active.token,
        ),
        401,
        INCORRECT,
      );
      const regenerated = await post(
        test,
        '/api/auth/2fa/recovery-codes/regenerate',
        { currentPassword: PASSWORD, recoveryCode: oldCodes[0] },
        active.token,
      );
      expect(regenerated.status).toBe(200);
      const newCodes = regenerated.body.data.recoveryCodes as string[];
      expect(newCodes).toHaveLength(10);
      expect(newCodes.some((code) => oldCodes.includes(code))).toBe(false);
      expectRefusal(await status(active.token), 401, 'This token has been revoked. Sign in again.');

      const challenge = await challengeOf(test, user);
      expectRefusal(
        await verify(test, challenge, { recoveryCode: oldCodes[1]! }),
        401,
        'The code or recovery code is missing, incorrect, or already used.',
      );
      expect((await verify(test, challenge, { recoveryCode: newCodes[1]! })).status).toBe(200);
      expect((await status(await freshToken(test, user.id))).body.data.remainingRecoveryCodes).toBe(9);
    });

    it('answers 404 at regenerate while two-factor is not active', async () => {
      const user = await createUser(test, scopeId);
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/recovery-codes/regenerate',
          { currentPassword: PASSWORD },
          user.token,
        ),
        404,
        NO_SETUP,
      );
    });

    it('shares the re-authentication budget: five failures pause every check, the right one included', async () => {
      const user = await createUser(test, scopeId);
      const active = await activateTwoFactor(test, user, { app: true });
      const sharedKey = active.sharedKey!;
      for (let attempt = 0; attempt < 5; attempt++) {
        expectRefusal(
          await post(
            test,
            '/api/auth/2fa/recovery-codes/regenerate',
            { currentPassword: PASSWORD, code: wrongCode(appCode(test, sharedKey)) },
            active.token,
          ),
          401,
          INCORRECT,
        );
      }
      // Paused: the right password and code are refused alike, at disable as at regenerate.
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/disable',
          { currentPassword: PASSWORD, code: appCode(test, sharedKey) },
          active.token,
        ),
        401,
        INCORRECT,
      );
      expectRefusal(
        await post(
          test,
          '/api/auth/2fa/disable',
          { currentPassword: PASSWORD, recoveryCode: active.recoveryCodes[0] },
          active.token,
        ),
        401,
        INCORRECT,
      );
      // Refused while paused: the recovery code was not spent, nothing changed.
      const rows = await twoFactorRows(test, user.id);
      expect(rows.config?.status).toBe('active');
      expect(rows.recoveryCodes.filter((row) => row.used_at !== null)).toHaveLength(0);
      // It never affects sign-in or the second-factor lock.
      const challenge = await challengeOf(test, user);
      expect((await verify(test, challenge, { code: appCode(test, sharedKey) })).status).toBe(200);
      expect(rows.lock).toBeUndefined();

      test.clock.advanceSeconds(15 * 60 + 1);
      const disabled = await post(
        test,
        '/api/auth/2fa/disable',
        { currentPassword: PASSWORD, recoveryCode: active.recoveryCodes[0] },
        active.token,
      );
      expect(disabled.status).toBe(200);
    });

    it('counts confirm failures in the same budget as enable', async () => {
      const user = await createUser(test, scopeId);
      const enabled = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, appEnabled: true },
        user.token,
      );
      const sharedKey = enabled.body.data.sharedKey as string;
      for (let attempt = 0; attempt < 4; attempt++) {
        expectRefusal(
          await post(test, '/api/auth/2fa/confirm', { appCode: '000000' }, user.token),
          401,
          INCORRECT,
        );
      }
      expectRefusal(
        await post(test, '/api/auth/2fa/enable', { currentPassword: 'wrong', appEnabled: true }, user.token),
        401,
        INCORRECT,
      );
      expectRefusal(
        await post(test, '/api/auth/2fa/confirm', { appCode: appCode(test, sharedKey) }, user.token),
        401,
        INCORRECT,
      );
      expect((await twoFactorRows(test, user.id)).config?.status).toBe('pending');
    });

    it('refuses external-provider users: enable 403, confirm 404, status 403', async () => {
      const id = await insertExtidpUser(test, scopeId);
      const token = test.services.tokens.issueFullToken({
        sub: id,
        role: Role.User,
        kind: 'extidpUser',
        scopeId,
      }).token;
      const notForThem = 'Two-factor authentication is not available to external-provider users.';
      expectRefusal(
        await post(test, '/api/auth/2fa/enable', { currentPassword: 'x', appEnabled: true }, token),
        403,
        notForThem,
      );
      expectRefusal(await post(test, '/api/auth/2fa/confirm', { appCode: '123456' }, token), 404, NO_SETUP);
      expectRefusal(await status(token), 403, notForThem);
      expect(
        await test.services.db
          .selectFrom('two_factor_configs')
          .selectAll()
          .where('person_id', '=', id)
          .execute(),
      ).toEqual([]);
    });

    it('shows twoFactorEnabled on the person once active', async () => {
      const user = await createUser(test, scopeId);
      const read = async (token: string) =>
        (await test.request({ method: 'GET', url: `/api/persons/${user.id}`, token })).body.data
          .twoFactorEnabled;
      expect(await read(user.token)).toBe(false);
      const active = await activateTwoFactor(test, user, { app: true });
      expect(await read(active.token)).toBe(true);
    });

    it('removes two-factor data with a hard delete; reports state without secrets; purges old challenges', async () => {
      const admin = await createSystemAdmin(test);
      const user = await createUser(test, scopeId);
      await activateTwoFactor(test, user, { app: true });
      await challengeOf(test, user);

      const state = await readTwoFactorState(test.services.db, user.id);
      expect(state).toMatchObject({
        status: 'active',
        appEnabled: true,
        emailEnabled: false,
        remainingRecoveryCodes: 10,
        failedSecondFactors: 0,
        secondFactorLockedUntil: null,
      });
      expect(JSON.stringify(state)).not.toMatch(/v1\.|[0-9a-f]{64}/);

      // A challenge is purged seven days after it expired, not before.
      const now = test.clock.now();
      const soon = new Date(now.getTime() + 7 * 24 * 3600_000).toISOString();
      const later = new Date(now.getTime() + 8 * 24 * 3600_000).toISOString();
      await purgeExpiredTwoFactorArtifacts(test.services.db, soon);
      expect((await twoFactorRows(test, user.id)).challenges).toHaveLength(1);
      expect(await purgeExpiredTwoFactorArtifacts(test.services.db, later)).toBeGreaterThanOrEqual(1);
      expect((await twoFactorRows(test, user.id)).challenges).toHaveLength(0);

      // One call removes everything two-factor of a person (erasure, anonymisation).
      const other = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, other, { app: true });
      await verify(test, await challengeOf(test, other), { code: wrongCode(appCode(test, sharedKey!)) });
      const held = await twoFactorRows(test, other.id);
      expect([
        held.config?.status,
        held.recoveryCodes.length,
        held.challenges.length,
        held.lock?.failures,
      ]).toEqual(['active', 10, 1, 1]);
      await test.services.db.transaction().execute((tx) => removeTwoFactorData(tx, other.id));
      expect(await twoFactorRows(test, other.id)).toEqual({
        config: undefined,
        recoveryCodes: [],
        challenges: [],
        lock: undefined,
      });

      await challengeOf(test, user);
      const deleted = await test.request({
        method: 'DELETE',
        url: `/api/persons/${user.id}/hard`,
        token: admin.token,
      });
      expect(deleted.status).toBe(200);
      const rows = await twoFactorRows(test, user.id);
      expect(rows).toEqual({ config: undefined, recoveryCodes: [], challenges: [], lock: undefined });
    });
  });
}
