import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser } from '../helpers/factories.ts';
import { activateTwoFactor, appCode, challengeOf, verify } from '../helpers/two-factor.ts';

/**
 * Threat: one intercepted code or recovery code used by several requests at once. A challenge
 * is redeemed once, a TOTP step accepted once, a recovery code spent once, however the requests
 * interleave.
 */
for (const dialect of DIALECTS) {
  describe(`two-factor single use under parallel requests (${dialect})`, () => {
    let test: TestApp;
    let scopeId: string;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(() => test.close());

    const statuses = (answers: Array<{ status: number }>) => answers.map((answer) => answer.status).sort();

    it('redeems one challenge once when five requests present the right code together', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      const code = appCode(test, sharedKey!);
      const answers = await Promise.all(Array.from({ length: 5 }, () => verify(test, challenge, { code })));
      expect(statuses(answers)).toEqual([200, 401, 401, 401, 401]);
    });

    it('accepts one TOTP step once: of two parallel requests one wins, and a later challenge refuses it', async () => {
      const user = await createUser(test, scopeId);
      const { sharedKey } = await activateTwoFactor(test, user, { app: true });
      // Two challenges of one person are never outstanding together (a login replaces the
      // other), so the replay across challenges is tried afterwards, within the same step.
      const first = await challengeOf(test, user);
      const code = appCode(test, sharedKey!);
      const answers = await Promise.all([verify(test, first, { code }), verify(test, first, { code })]);
      expect(statuses(answers)).toEqual([200, 401]);
      const second = await challengeOf(test, user);
      expect((await verify(test, second, { code })).status).toBe(401);
    });

    it('spends a recovery code once when presented by parallel requests', async () => {
      const user = await createUser(test, scopeId);
      const { recoveryCodes } = await activateTwoFactor(test, user, { app: true });
      const challenge = await challengeOf(test, user);
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => verify(test, challenge, { recoveryCode: recoveryCodes[0]! })),
      );
      expect(statuses(answers)).toEqual([200, 401, 401, 401]);
      const used = await test.services.db
        .selectFrom('two_factor_recovery_codes')
        .select('used_at')
        .where('person_id', '=', user.id)
        .where('used_at', 'is not', null)
        .execute();
      expect(used).toHaveLength(1);
    });
  });
}
