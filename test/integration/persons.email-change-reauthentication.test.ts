import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScope, createSystemAdmin, createUser, PASSWORD, personRow } from '../helpers/factories.ts';

const INCORRECT = 'The password or code is incorrect.';

/**
 * Threat: someone holding a stolen token tries to move the account to an address they control,
 * guessing the password through the own-email-change endpoint. Five failures in 15 minutes pause
 * the check for 15 minutes, during which even the right password is refused with the same 401.
 */
for (const dialect of DIALECTS) {
  describe(`own email change re-authentication budget (${dialect})`, () => {
    let test: TestApp;
    let scopeId: string;
    let addressCounter = 0;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      scopeId = (await createScope(test, [(await createSystemAdmin(test)).id])).id;
    });
    afterAll(() => test.close());

    /** Each attempt from its own address: the per-address rate limit is not what is tested here. */
    const changeEmail = (person: { id: string; token: string; name: string }, currentPassword: string) => {
      addressCounter += 1;
      return test.request({
        method: 'PUT',
        url: `/api/persons/${person.id}`,
        token: person.token,
        remoteAddress: `10.88.${addressCounter >> 8}.${addressCounter & 255}`,
        body: { name: person.name, email: `new-${person.id}@example.test`, currentPassword },
      });
    };

    it('pauses after five failures: the right password is refused alike until 15 minutes pass', async () => {
      const user = await createUser(test, scopeId);
      const person = { id: user.id, token: user.token, name: user.row.name };
      for (let attempt = 0; attempt < 5; attempt++) {
        const wrong = await changeEmail(person, `wrong guess ${attempt}`);
        expect([wrong.status, wrong.body.errors]).toEqual([401, [INCORRECT]]);
      }
      const paused = await changeEmail(person, PASSWORD);
      expect([paused.status, paused.body]).toEqual([
        401,
        { data: null, messages: [], errors: [INCORRECT], success: false },
      ]);
      expect(await personRow(test, user.id)).toMatchObject({
        email: user.email,
        security_stamp: user.row.security_stamp,
      });
      test.clock.advanceSeconds(14 * 60);
      expect((await changeEmail(person, PASSWORD)).status).toBe(401);
      test.clock.advanceSeconds(61);
      const accepted = await changeEmail(person, PASSWORD);
      expect(accepted.status).toBe(200);
      expect((await personRow(test, user.id))?.email).toBe(`new-${user.id}@example.test`);
    });

    it('starts the count over once the 15-minute window has passed', async () => {
      const user = await createUser(test, scopeId);
      const person = { id: user.id, token: user.token, name: user.row.name };
      for (let attempt = 0; attempt < 4; attempt++)
        expect((await changeEmail(person, 'wrong')).status).toBe(401);
      test.clock.advanceSeconds(15 * 60 + 1);
      for (let attempt = 0; attempt < 4; attempt++)
        expect((await changeEmail(person, 'wrong')).status).toBe(401);
      expect((await changeEmail(person, PASSWORD)).status).toBe(200);
    });

    it('counts parallel wrong guesses exactly: five at once pause the budget', async () => {
      const user = await createUser(test, scopeId);
      const person = { id: user.id, token: user.token, name: user.row.name };
      const answers = await Promise.all(
        Array.from({ length: 5 }, (_, index) => changeEmail(person, `guess ${index}`)),
      );
      expect(answers.map((answer) => answer.status)).toEqual([401, 401, 401, 401, 401]);
      expect((await personRow(test, user.id))?.reauthentication_paused_until).not.toBeNull();
      expect((await changeEmail(person, PASSWORD)).status).toBe(401);
    });

    it('needs no password from, and charges nothing for, an administrator changing someone else’s email', async () => {
      const admin = await createSystemAdmin(test);
      const user = await createUser(test, scopeId);
      const byAdmin = await test.request({
        method: 'PUT',
        url: `/api/persons/${user.id}`,
        token: admin.token,
        remoteAddress: '10.89.0.1',
        body: { name: 'By admin', email: `admin-set-${user.id}@example.test` },
      });
      expect(byAdmin.status).toBe(200);
      expect((await personRow(test, user.id))?.reauthentication_failures).toBe(0);
    });
  });
}
