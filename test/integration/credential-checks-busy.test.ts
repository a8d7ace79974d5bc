import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { CREDENTIAL_CHECK_WAIT_MS, PasswordHasher } from '../../src/crypto/passwords.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';

/**
 * DECISIONS §7: a password check that gets no turn of the process-wide bound within 10 s is
 * answered 503 with Retry-After. The wait is real (no fake clock), so this runs on one dialect:
 * the bound is the process's, not the database's.
 */
describe(`a sign-in that waits for the bound on credential checks too long (${DIALECTS[0]})`, () => {
  let test: TestApp;
  const bound = new ConcurrencyBound(1);
  let releaseSlot!: () => void;
  let slotHeld: Promise<unknown>;

  beforeAll(async () => {
    test = await buildTestApp(DIALECTS[0] ?? 'sqlite', { passwords: new PasswordHasher(bound) });
    // Another check holds the one slot for longer than a sign-in may wait.
    slotHeld = bound.run(() => new Promise<void>((resolve) => (releaseSlot = resolve)), 1_000);
  });
  afterAll(async () => {
    releaseSlot();
    await slotHeld;
    await test.close();
  });

  it('is answered 503 with Retry-After: 5 once 10 s have passed', async () => {
    const started = Date.now();
    const response = await test.request({
      method: 'POST',
      url: '/api/auth/login',
      body: { email: 'anyone@example.test', password: 'some password 1' },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(CREDENTIAL_CHECK_WAIT_MS - 50);
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
    expect(response.body).toEqual({
      data: null,
      messages: [],
      errors: ['The service is busy verifying credentials. Try again shortly.'],
      success: false,
    });
  }, 30_000);
});
