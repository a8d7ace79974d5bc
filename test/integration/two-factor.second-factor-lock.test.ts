import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectRefusal } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, type PersonFixture } from '../helpers/factories.ts';
import {
  activateTwoFactor,
  appCode,
  challengeOf,
  twoFactorRows,
  verify,
  wrongCode,
} from '../helpers/two-factor.ts';

const CODE_INCORRECT = 'The code or recovery code is missing, incorrect, or already used.';
const INVALID_CHALLENGE = 'The two-factor challenge is invalid or has expired. Log in again.';

/**
 * Threat: someone with the password guesses second factors across many challenges. The 10th
 * failure per account locks verification for 15 minutes, doubling per repeat up to 24 hours; a
 * correct password does not reset the count; while locked the right code is refused too.
 */
for (const dialect of DIALECTS) {
  describe(`second-factor lock (${dialect})`, () => {
    let test: TestApp;
    let scopeId: string;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(() => test.close());

    /** `count` wrong app codes, across as many challenges as the five-guess limit needs. */
    async function fail(person: PersonFixture, sharedKey: string, count: number): Promise<void> {
      let challenge = await challengeOf(test, person);
      for (let failure = 0; failure < count; failure++) {
        if (failure > 0 && failure % 5 === 0) challenge = await challengeOf(test, person);
        expectRefusal(
          await verify(test, challenge, { code: wrongCode(appCode(test, sharedKey)) }),
          401,
          CODE_INCORRECT,
        );
      }
    }

    it('locks at the 10th failure across challenges; a correct password does not reset the count', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey, recoveryCodes } = await activateTwoFactor(test, user, { app: true });
      // Nine failures over two challenges, each started with the correct password.
      await fail(user, sharedKey!, 9);
      expect((await twoFactorRows(test, user.id)).lock).toMatchObject({ failures: 9, locked_until: null });
      const challenge = await challengeOf(test, user);
      expectRefusal(
        await verify(test, challenge, { recoveryCode: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' }),
        401,
        CODE_INCORRECT,
      );
      const locked = (await twoFactorRows(test, user.id)).lock;
      expect(locked?.lock_count).toBe(1);
      expect(Date.parse(locked!.locked_until!) - test.clock.now().getTime()).toBe(15 * 60 * 1000);

      // Locked: the right app code and an unspent recovery code are refused, and nothing is spent.
      const during = await challengeOf(test, user);
      expectRefusal(await verify(test, during, { code: appCode(test, sharedKey!) }), 401, INVALID_CHALLENGE);
      expectRefusal(await verify(test, during, { recoveryCode: recoveryCodes[0]! }), 401, INVALID_CHALLENGE);
      const rows = await twoFactorRows(test, user.id);
      expect(rows.recoveryCodes.filter((row) => row.used_at !== null)).toHaveLength(0);
      expect(rows.config?.totp_last_step).toBeLessThan(Math.floor(test.clock.now().getTime() / 30_000));

      test.clock.advanceSeconds(14 * 60);
      expectRefusal(
        await verify(test, await challengeOf(test, user), { code: appCode(test, sharedKey!) }),
        401,
        INVALID_CHALLENGE,
      );
      test.clock.advanceSeconds(60);
      expect(
        (await verify(test, await challengeOf(test, user), { code: appCode(test, sharedKey!) })).status,
      ).toBe(200);
      // The success reset the count and the repeat count.
      expect((await twoFactorRows(test, user.id)).lock).toBeUndefined();
    });

    it('doubles the lock at each repeat, and a success starts again from 15 minutes', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const lockedFor = async () => {
        const lock = (await twoFactorRows(test, user.id)).lock;
        return (Date.parse(lock!.locked_until!) - test.clock.now().getTime()) / 60_000;
      };
      await fail(user, sharedKey!, 10);
      expect(await lockedFor()).toBe(15);
      test.clock.advanceSeconds(15 * 60);
      await fail(user, sharedKey!, 10);
      expect(await lockedFor()).toBe(30);
      test.clock.advanceSeconds(30 * 60);
      await fail(user, sharedKey!, 10);
      expect(await lockedFor()).toBe(60);
      // Up to 24 hours, never more.
      await test.services.db
        .updateTable('two_factor_locks')
        .set({ lock_count: 10, locked_until: null })
        .where('person_id', '=', user.id)
        .execute();
      await fail(user, sharedKey!, 10);
      expect(await lockedFor()).toBe(24 * 60);
      test.clock.advanceSeconds(24 * 60 * 60);

      expect(
        (await verify(test, await challengeOf(test, user), { code: appCode(test, sharedKey!) })).status,
      ).toBe(200);
      test.clock.advanceSeconds(30);
      await fail(user, sharedKey!, 10);
      expect(await lockedFor()).toBe(15);
    });
  });
}
