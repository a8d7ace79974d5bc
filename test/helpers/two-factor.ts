import { expect } from 'vitest';
import { Secret, TOTP } from 'otpauth';
import type { TestApp, TestResponse } from './app.ts';
import { freshAddress, post } from './account-email.ts';
import { PASSWORD, type PersonFixture, personRow, tokenFor } from './factories.ts';
import type { ReceivedMail, SmtpSink } from './smtp.ts';

/** The code an authenticator app holding `sharedKey` shows at the test clock's time (± steps). */
export function appCode(test: TestApp, sharedKey: string, stepOffset = 0): string {
  return TOTP.generate({
    secret: Secret.fromBase32(sharedKey),
    algorithm: 'SHA1',
    digits: 6,
    period: 30,
    timestamp: test.clock.now().getTime() + stepOffset * 30_000,
  });
}

/** A six-digit code different from `code` (a wrong guess). */
export const wrongCode = (code: string): string => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

/** The six-digit code in a two-factor mail. */
export function emailCodeOf(mail: ReceivedMail): string {
  const match = /^(\d{6})$/m.exec(mail.text);
  if (match === null) throw new Error(`no code in mail "${mail.subject}"`);
  return match[1]!;
}

/** A fresh token of the person as stored now (after a stamp change revoked the old one). */
export async function freshToken(test: TestApp, personId: string): Promise<string> {
  return tokenFor(test, (await personRow(test, personId))!);
}

export interface ActiveTwoFactor {
  readonly sharedKey: string | null;
  readonly recoveryCodes: string[];
  /** A token issued after the confirm (the confirm revoked the earlier ones). */
  readonly token: string;
}

/**
 * Enable and confirm two-factor with the chosen methods, proving them with real codes, and
 * moving the clock past the confirming TOTP step so the next code is a new one.
 */
export async function activateTwoFactor(
  test: TestApp,
  person: PersonFixture,
  methods: { app?: boolean; email?: boolean },
  sink?: SmtpSink,
): Promise<ActiveTwoFactor> {
  const mailsBefore = sink?.mailsTo(person.email).length ?? 0;
  const enabled = await post(
    test,
    '/api/auth/2fa/enable',
    { currentPassword: PASSWORD, appEnabled: methods.app === true, emailEnabled: methods.email === true },
    person.token,
  );
  expect(enabled.status).toBe(200);
  const sharedKey = enabled.body.data.sharedKey as string | null;
  const emailCode =
    methods.email === true ? emailCodeOf(await sink!.waitForMail(person.email, mailsBefore + 1)) : undefined;
  const confirmed = await post(
    test,
    '/api/auth/2fa/confirm',
    {
      ...(sharedKey === null ? {} : { appCode: appCode(test, sharedKey) }),
      ...(emailCode === undefined ? {} : { emailCode }),
    },
    person.token,
  );
  expect(confirmed.status).toBe(200);
  test.clock.advanceSeconds(30);
  return {
    sharedKey,
    recoveryCodes: confirmed.body.data.recoveryCodes as string[],
    token: await freshToken(test, person.id),
  };
}

export function login(test: TestApp, person: PersonFixture, password = PASSWORD): Promise<TestResponse> {
  return post(test, '/api/auth/login', {
    email: person.email,
    password,
    ...(person.row.scope_id === null ? {} : { scopeId: person.row.scope_id }),
  });
}

/** Login of a person with two-factor active: the challenge token. */
export async function challengeOf(test: TestApp, person: PersonFixture): Promise<string> {
  const answer = await login(test, person);
  expect(answer.status).toBe(200);
  expect(answer.body.data.requiresTwoFactor).toBe(true);
  return answer.body.data.challengeToken as string;
}

export function verify(
  test: TestApp,
  challengeToken: string,
  factor: { code?: string; recoveryCode?: string },
): Promise<TestResponse> {
  return post(test, '/api/auth/2fa/verify', { challengeToken, ...factor });
}

export function resend(test: TestApp, challengeToken: unknown): Promise<TestResponse> {
  return post(test, '/api/auth/2fa/challenge/resend', { challengeToken });
}

export { freshAddress, post };

/** The stored two-factor rows of a person (to assert what a refusal left unchanged). */
export async function twoFactorRows(test: TestApp, personId: string) {
  const db = test.services.db;
  return {
    config: await db
      .selectFrom('two_factor_configs')
      .selectAll()
      .where('person_id', '=', personId)
      .executeTakeFirst(),
    recoveryCodes: await db
      .selectFrom('two_factor_recovery_codes')
      .selectAll()
      .where('person_id', '=', personId)
      .orderBy('id')
      .execute(),
    challenges: await db
      .selectFrom('two_factor_challenges')
      .selectAll()
      .where('person_id', '=', personId)
      .orderBy('created_at')
      .execute(),
    lock: await db
      .selectFrom('two_factor_locks')
      .selectAll()
      .where('person_id', '=', personId)
      .executeTakeFirst(),
  };
}
