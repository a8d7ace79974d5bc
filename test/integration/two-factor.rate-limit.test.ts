import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, personRow } from '../helpers/factories.ts';
import { activateTwoFactor, appCode, challengeOf } from '../helpers/two-factor.ts';

/**
 * Threat: guessing codes or passwords from one address through the two-factor routes. Every
 * two-factor route that checks a credential (spec §Limits) draws on the shared credential
 * rate limit: ten requests a minute per address, shared with login.
 */
for (const dialect of DIALECTS) {
  describe(`two-factor routes under the credential rate limit (${dialect})`, () => {
    let test: TestApp;
    let scopeId: string;
    let addressCounter = 0;

    beforeAll(async () => {
      test = await buildTestApp(dialect, { redis: true });
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(() => test.close());

    const newAddress = () => {
      addressCounter += 1;
      return `10.250.${addressCounter}.1`;
    };

    it.each([
      '/api/auth/2fa/enable',
      '/api/auth/2fa/confirm',
      '/api/auth/2fa/disable',
      '/api/auth/2fa/recovery-codes/regenerate',
      '/api/auth/2fa/verify',
      '/api/auth/2fa/challenge/resend',
    ])(
      '%s: the 11th request a minute from one address is 429, and refused requests check nothing',
      async (url) => {
        const user = await createUser(test, scopeId);
        const remoteAddress = newAddress();
        const body = {
          challengeToken: 'not-a-challenge',
          currentPassword: 'wrong password',
          appEnabled: true,
        };
        for (let request = 0; request < 10; request++) {
          const answer = await test.request({ method: 'POST', url, token: user.token, body, remoteAddress });
          expect(answer.status, `request ${request + 1}`).not.toBe(429);
        }
        const failuresBefore = (await personRow(test, user.id))?.reauthentication_failures;
        const limited = await test.request({ method: 'POST', url, token: user.token, body, remoteAddress });
        expectRefusal(limited, 429, 'Too many requests.');
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
        expect((await personRow(test, user.id))?.reauthentication_failures).toBe(failuresBefore);
      },
    );

    it('shares the budget with login: verify after ten logins from one address is 429, even with the right code', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      const remoteAddress = newAddress();
      for (let request = 0; request < 10; request++) {
        await test.request({
          method: 'POST',
          url: '/api/auth/login',
          body: { email: user.email, password: 'wrong password', scopeId },
          remoteAddress,
        });
      }
      expectRefusal(
        await test.request({
          method: 'POST',
          url: '/api/auth/2fa/verify',
          body: { challengeToken: challenge, code: appCode(test, sharedKey!) },
          remoteAddress,
        }),
        429,
        'Too many requests.',
      );
      // The refused request redeemed nothing: from another address the challenge still works.
      const elsewhere = await test.request({
        method: 'POST',
        url: '/api/auth/2fa/verify',
        body: { challengeToken: challenge, code: appCode(test, sharedKey!) },
        remoteAddress: newAddress(),
      });
      expect(elsewhere.status).toBe(200);
    });
  });
}
