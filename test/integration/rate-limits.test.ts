import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, newRateLimitNamespace, type TestApp, type TestResponse } from '../helpers/app.ts';
import { DIALECTS, TEST_REDIS_URL } from '../helpers/dialects.ts';
import { auditEntries, createSystemAdmin, PASSWORD } from '../helpers/factories.ts';

/**
 * The anonymous authentication budget (spec §Limits rows 1–2, §Authentication 14): 10 requests
 * per minute per client address, whoever the client claims to be. Each test spends the budget of
 * addresses no other test uses, so the tests share one app without sharing counters.
 */

const BUDGET = 10;
const TOO_MANY = { data: null, messages: [], errors: ['Too many requests.'], success: false };
const TRUSTED_PROXY = '10.0.0.1';
const TRUSTED_PROXY_NETWORK = '172.16.0.0/12';
const TRUSTED_IPV6_PROXY_NETWORK = 'fd00::/8';
const CALLER_KEY = 'trusted-caller-key-number-one-0123456789';
const NEXT_CALLER_KEY = 'trusted-caller-key-number-two-0123456789';

interface Attempt {
  readonly remoteAddress: string;
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
}

/** A sign-in attempt with a wrong password: any answer counts against the budget. */
const attemptLogin = (test: TestApp, attempt: Attempt): Promise<TestResponse> =>
  test.request({
    method: 'POST',
    url: '/api/auth/login',
    remoteAddress: attempt.remoteAddress,
    ...(attempt.headers === undefined ? {} : { headers: attempt.headers }),
    body: attempt.body ?? { email: 'nobody@example.test', password: 'not the password' },
  });

/** Spends the whole budget, checking that none of it was refused as over the limit. */
async function spendBudget(test: TestApp, attempts: (index: number) => Attempt): Promise<void> {
  for (let index = 0; index < BUDGET; index += 1) {
    const response = await attemptLogin(test, attempts(index));
    expect(response.status).toBe(401);
  }
}

function expectRefused(response: TestResponse): void {
  expect(response.status).toBe(429);
  expect(response.body).toEqual(TOO_MANY);
  const retryAfter = Number(response.headers['retry-after']);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

function expectServed(response: TestResponse): void {
  expect(response.status).toBe(401);
  expect(response.body.errors).toEqual(['Invalid credentials.']);
}

for (const dialect of DIALECTS) {
  describe(`authentication rate limit (${dialect})`, () => {
    let test: TestApp;

    beforeAll(async () => {
      test = await buildTestApp(dialect, {
        env: {
          SERVICE_TRUSTED_PROXIES: `${TRUSTED_PROXY}, ${TRUSTED_PROXY_NETWORK} ${TRUSTED_IPV6_PROXY_NETWORK}`,
          SERVICE_TRUSTED_CALLER_KEYS: `${CALLER_KEY},${NEXT_CALLER_KEY}`,
        },
      });
    });
    afterAll(() => test.close());

    describe('per connection address', () => {
      it('refuses the 11th request in a minute with 429 and Retry-After, before the command runs', async () => {
        await spendBudget(test, () => ({ remoteAddress: '198.51.100.1' }));
        const auditedBefore = (await auditEntries(test, 'LoginCommand')).length;
        expectRefused(await attemptLogin(test, { remoteAddress: '198.51.100.1' }));
        expect((await auditEntries(test, 'LoginCommand')).length).toBe(auditedBefore);
      });

      it('refuses even a correct password once the budget is spent (guessing cannot continue)', async () => {
        const admin = await createSystemAdmin(test);
        await spendBudget(test, () => ({ remoteAddress: '198.51.100.2' }));
        const response = await attemptLogin(test, {
          remoteAddress: '198.51.100.2',
          body: { email: admin.email, password: PASSWORD },
        });
        expectRefused(response);
        expect(response.body.data).toBeNull();
      });

      it('counts malformed requests too', async () => {
        for (let index = 0; index < BUDGET; index += 1) {
          const response = await attemptLogin(test, { remoteAddress: '198.51.100.3', body: 'not json' });
          expect(response.status).toBe(400);
        }
        expectRefused(await attemptLogin(test, { remoteAddress: '198.51.100.3' }));
      });

      it('leaves another address unaffected', async () => {
        await spendBudget(test, () => ({ remoteAddress: '198.51.100.4' }));
        expectRefused(await attemptLogin(test, { remoteAddress: '198.51.100.4' }));
        expectServed(await attemptLogin(test, { remoteAddress: '198.51.100.5' }));
      });

      it('does not limit authenticated routes outside the budget', async () => {
        const admin = await createSystemAdmin(test);
        for (let index = 0; index < BUDGET + 2; index += 1) {
          const response = await test.request({
            method: 'GET',
            url: '/api/scopes',
            token: admin.token,
            remoteAddress: '198.51.100.6',
          });
          expect(response.status).toBe(200);
        }
      });
    });

    describe('behind reverse proxies', () => {
      it('counts the forwarded client of a trusted proxy (address form), not the proxy', async () => {
        const forwarded = { 'x-forwarded-for': '203.0.113.5' };
        await spendBudget(test, () => ({ remoteAddress: TRUSTED_PROXY, headers: forwarded }));
        expectRefused(await attemptLogin(test, { remoteAddress: TRUSTED_PROXY, headers: forwarded }));
        // Another client behind the same proxy, and the proxy itself, still have their budgets.
        expectServed(
          await attemptLogin(test, {
            remoteAddress: TRUSTED_PROXY,
            headers: { 'x-forwarded-for': '203.0.113.6' },
          }),
        );
        expectServed(await attemptLogin(test, { remoteAddress: TRUSTED_PROXY }));
      });

      it('counts the forwarded client of any proxy in a trusted network (CIDR form)', async () => {
        const forwarded = { 'x-forwarded-for': '203.0.113.7' };
        await spendBudget(test, (index) => ({ remoteAddress: `172.20.0.${index + 1}`, headers: forwarded }));
        expectRefused(await attemptLogin(test, { remoteAddress: '172.31.255.254', headers: forwarded }));
      });

      it('believes one hop only: the last X-Forwarded-For entry, whatever the client prepends', async () => {
        await spendBudget(test, (index) => ({
          remoteAddress: TRUSTED_PROXY,
          headers: { 'x-forwarded-for': `192.0.2.${index + 1}, 203.0.113.8` },
        }));
        expectRefused(
          await attemptLogin(test, {
            remoteAddress: TRUSTED_PROXY,
            headers: { 'x-forwarded-for': '192.0.2.200, 203.0.113.8' },
          }),
        );
      });

      it('ignores X-Forwarded-For from an untrusted peer (spoofing does not buy a fresh budget)', async () => {
        await spendBudget(test, (index) => ({
          remoteAddress: '192.0.2.50',
          headers: { 'x-forwarded-for': `203.0.113.${100 + index}` },
        }));
        expectRefused(
          await attemptLogin(test, {
            remoteAddress: '192.0.2.50',
            headers: { 'x-forwarded-for': '203.0.113.99' },
          }),
        );
        // The forged addresses were never charged.
        expectServed(await attemptLogin(test, { remoteAddress: '203.0.113.100' }));
      });

      it('falls back to the proxy address when its X-Forwarded-For is unusable', async () => {
        const proxy = '172.16.5.5';
        await spendBudget(test, () => ({
          remoteAddress: proxy,
          headers: { 'x-forwarded-for': 'not-an-address' },
        }));
        expectRefused(await attemptLogin(test, { remoteAddress: proxy }));
      });
    });

    describe('trusted callers', () => {
      const callerHeaders = (key: string, clientAddress: string) => ({
        'x-service-caller-key': key,
        'x-service-client-address': clientAddress,
      });

      it('counts a trusted caller under the client address it names, in its own bucket, with either key', async () => {
        const caller = '10.9.9.9';
        const client = '203.0.113.20';
        await spendBudget(test, (index) => ({
          remoteAddress: caller,
          headers: callerHeaders(index % 2 === 0 ? CALLER_KEY : NEXT_CALLER_KEY, client),
        }));
        expectRefused(
          await attemptLogin(test, { remoteAddress: caller, headers: callerHeaders(CALLER_KEY, client) }),
        );
        // The caller's own connection address and the client's direct connections are other buckets.
        expectServed(await attemptLogin(test, { remoteAddress: caller }));
        expectServed(await attemptLogin(test, { remoteAddress: client }));
        // Another client of the same caller has its own budget.
        expectServed(
          await attemptLogin(test, {
            remoteAddress: caller,
            headers: callerHeaders(CALLER_KEY, '203.0.113.21'),
          }),
        );
      });

      it('falls back to the connection address for a wrong key (a forged key buys nothing)', async () => {
        const connection = '10.8.8.8';
        await spendBudget(test, (index) => ({
          remoteAddress: connection,
          headers: callerHeaders('a-wrong-caller-key-that-is-long-enough-0000', `203.0.113.${30 + index}`),
        }));
        expectRefused(await attemptLogin(test, { remoteAddress: connection }));
        expectServed(
          await attemptLogin(test, {
            remoteAddress: connection,
            headers: callerHeaders(CALLER_KEY, '203.0.113.30'),
          }),
        );
      });

      it('falls back to the connection address for an unusable client address', async () => {
        const connection = '10.7.7.7';
        await spendBudget(test, () => ({
          remoteAddress: connection,
          headers: callerHeaders(CALLER_KEY, 'not-an-address'),
        }));
        expectRefused(await attemptLogin(test, { remoteAddress: connection }));
      });

      it('falls back to the connection address for a client address without a key', async () => {
        const connection = '10.6.6.6';
        await spendBudget(test, (index) => ({
          remoteAddress: connection,
          headers: { 'x-service-client-address': `203.0.113.${50 + index}` },
        }));
        expectRefused(await attemptLogin(test, { remoteAddress: connection }));
      });
    });

    describe('IPv6', () => {
      it('counts addresses of one /56 together, and a neighbouring /56 apart', async () => {
        await spendBudget(test, (index) => ({
          remoteAddress:
            index % 2 === 0
              ? '2001:db8:1:100::1'
              : `2001:db8:1:1${(index * 16).toString(16).padStart(2, '0')}::${index}`,
        }));
        expectRefused(await attemptLogin(test, { remoteAddress: '2001:db8:1:1ff:ffff:ffff:ffff:ffff' }));
        expectServed(await attemptLogin(test, { remoteAddress: '2001:db8:1:200::1' }));
        expectServed(await attemptLogin(test, { remoteAddress: '2001:db8:1:ff::1' }));
      });

      it('groups an IPv6 client forwarded by a trusted IPv6 proxy by its /56', async () => {
        await spendBudget(test, (index) => ({
          remoteAddress: 'fd12:3456::1',
          headers: { 'x-forwarded-for': `2001:db8:77:4${index}0::1` },
        }));
        expectRefused(
          await attemptLogin(test, {
            remoteAddress: 'fd99::2',
            headers: { 'x-forwarded-for': '2001:db8:77:4ff::9' },
          }),
        );
        expectServed(
          await attemptLogin(test, {
            remoteAddress: 'fd99::2',
            headers: { 'x-forwarded-for': '2001:db8:77:500::9' },
          }),
        );
      });

      it('counts an IPv4-mapped IPv6 connection as its IPv4 address', async () => {
        await spendBudget(test, () => ({ remoteAddress: '::ffff:198.51.100.77' }));
        expectRefused(await attemptLogin(test, { remoteAddress: '198.51.100.77' }));
      });
    });
  });

  describe.skipIf(TEST_REDIS_URL === null)(`rate limits shared through Redis (${dialect})`, () => {
    it('two instances sharing a namespace share the counters', async () => {
      const namespace = newRateLimitNamespace();
      const first = await buildTestApp(dialect, { redis: true, rateLimitNamespace: namespace });
      const second = await buildTestApp(dialect, { redis: true, rateLimitNamespace: namespace });
      try {
        for (let index = 0; index < BUDGET; index += 1) {
          expectServed(
            await attemptLogin(index % 2 === 0 ? first : second, { remoteAddress: '198.51.100.90' }),
          );
        }
        expectRefused(await attemptLogin(first, { remoteAddress: '198.51.100.90' }));
        expectRefused(await attemptLogin(second, { remoteAddress: '198.51.100.90' }));
        expectServed(await attemptLogin(second, { remoteAddress: '198.51.100.91' }));
      } finally {
        await first.close();
        await second.close();
      }
    });

    it('instances in different namespaces do not', async () => {
      const first = await buildTestApp(dialect, { redis: true });
      const second = await buildTestApp(dialect, { redis: true });
      try {
        await spendBudget(first, () => ({ remoteAddress: '198.51.100.92' }));
        expectRefused(await attemptLogin(first, { remoteAddress: '198.51.100.92' }));
        expectServed(await attemptLogin(second, { remoteAddress: '198.51.100.92' }));
      } finally {
        await first.close();
        await second.close();
      }
    });
  });

  describe(`rate limits when Redis is unreachable (${dialect})`, () => {
    it('serves the requests at once rather than refusing them (neither 429 nor 500), and logs why', async () => {
      const lines: string[] = [];
      // Every charge fails, as when the shared store is down.
      const test = await buildTestApp(dialect, {
        redis: 'unreachable',
        logger: { level: 'warn', stream: { write: (line: string) => void lines.push(line) } },
      });
      try {
        for (let index = 0; index < BUDGET + 2; index += 1) {
          expectServed(await attemptLogin(test, { remoteAddress: '198.51.100.93' }));
        }
        // The client retries at most two seconds apart, and each failed attempt is logged.
        await vi.waitFor(
          () => expect(lines.some((line) => line.includes('rate-limit store connection failed'))).toBe(true),
          { timeout: 5_000, interval: 50 },
        );
      } finally {
        await test.close();
      }
      const failures = lines.filter((line) => line.includes('rate-limit store unreachable'));
      expect(failures).toHaveLength(BUDGET + 2);
    });
  });
}
