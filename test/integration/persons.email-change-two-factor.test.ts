import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, PASSWORD, personRow } from '../helpers/factories.ts';
import { SmtpSink } from '../helpers/smtp.ts';
import {
  activateTwoFactor,
  appCode,
  freshAddress,
  post,
  twoFactorRows,
  wrongCode,
} from '../helpers/two-factor.ts';

const INCORRECT = 'The password or code is incorrect.';
const EMAIL_METHOD_ON = 'Turn off the email sign-in method before changing your email address.';

/**
 * Threat: a stolen token (and even a stolen password) must not move an account protected by
 * two-factor to an address the thief controls. Own email change needs the second factor, and
 * is refused while codes are mailed to the current address.
 */
for (const dialect of DIALECTS) {
  describe(`own email change with two-factor (${dialect})`, () => {
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

    const changeEmail = (
      person: { id: string; row: { name: string } },
      token: string,
      body: { currentPassword?: string; twoFactorCode?: string },
    ) =>
      test.request({
        method: 'PUT',
        url: `/api/persons/${person.id}`,
        token,
        remoteAddress: freshAddress(),
        body: { name: person.row.name, email: `moved-${person.id}@example.test`, ...body },
      });

    it('requires the second factor when two-factor is active: missing or wrong is 401 and changes nothing', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey, token } = await activateTwoFactor(test, user, { app: true });
      expectRefusal(await changeEmail(user, token, { currentPassword: PASSWORD }), 401, INCORRECT);
      expectRefusal(
        await changeEmail(user, token, {
          currentPassword: PASSWORD,
          twoFactorCode: wrongCode(appCode(test, sharedKey!)),
        }),
        401,
        INCORRECT,
      );
      const row = await personRow(test, user.id);
      expect(row).toMatchObject({ email: user.email, reauthentication_failures: 2 });
      const changed = await changeEmail(user, token, {
        currentPassword: PASSWORD,
        twoFactorCode: appCode(test, sharedKey!),
      });
      expect(changed.status).toBe(200);
      expect((await personRow(test, user.id))?.email).toBe(`moved-${user.id}@example.test`);
    });

    it('accepts a recovery code, which is spent; a wrong password spends none', async () => {
      const user = await createUser(test, scopeId);
      const { recoveryCodes, token } = await activateTwoFactor(test, user, { app: true });
      expectRefusal(
        await changeEmail(user, token, {
          currentPassword: 'wrong password',
          twoFactorCode: recoveryCodes[0],
        }),
        401,
        INCORRECT,
      );
      expect(
        (await twoFactorRows(test, user.id)).recoveryCodes.filter((code) => code.used_at !== null),
      ).toHaveLength(0);
      const changed = await changeEmail(user, token, {
        currentPassword: PASSWORD,
        twoFactorCode: recoveryCodes[0],
      });
      expect(changed.status).toBe(200);
      expect(
        (await twoFactorRows(test, user.id)).recoveryCodes.filter((code) => code.used_at !== null),
      ).toHaveLength(1);
    });

    it('answers 409 while the email method is pending or active, before any password check', async () => {
      const user = await createUser(test, scopeId);
      const pending = await post(
        test,
        '/api/auth/2fa/enable',
        { currentPassword: PASSWORD, emailEnabled: true },
        user.token,
      );
      expect(pending.status).toBe(200);
      expectRefusal(await changeEmail(user, user.token, { currentPassword: PASSWORD }), 409, EMAIL_METHOD_ON);
      expectRefusal(await changeEmail(user, user.token, { currentPassword: 'wrong' }), 409, EMAIL_METHOD_ON);
      expect(await personRow(test, user.id)).toMatchObject({
        email: user.email,
        reauthentication_failures: 0,
      });

      const other = await createUser(test, scopeId);
      const { token } = await activateTwoFactor(test, other, { app: true, email: true }, sink);
      expectRefusal(await changeEmail(other, token, { currentPassword: PASSWORD }), 409, EMAIL_METHOD_ON);
      expect((await personRow(test, other.id))?.email).toBe(other.email);
    });

    it('changes nothing for a person without two-factor: the password alone still suffices', async () => {
      const user = await createUser(test, scopeId);
      expect((await changeEmail(user, user.token, { currentPassword: PASSWORD })).status).toBe(200);
    });
  });
}
