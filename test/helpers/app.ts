import { randomBytes } from 'node:crypto';
import type { FastifyServerOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../src/app.ts';
import { type Config, type Env, loadConfig } from '../../src/config/config.ts';
import type { PasswordHasher } from '../../src/crypto/passwords.ts';
import type { Dialect } from '../../src/db/open-database.ts';
import type { App, Services } from '../../src/services.ts';
import { connectRedis } from '../../src/threads/instance.ts';
import { TestClock } from './clock.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { TEST_REDIS_URL } from './dialects.ts';

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long!!';

/** The environment every test app starts from; a test overrides what it is about. */
export const TEST_ENV: Env = {
  SERVICE_ENVIRONMENT: 'development',
  SERVICE_AUTH_TOKEN_SECRET: TEST_SECRET,
  SERVICE_AUTH_TOKEN_ISSUER: 'https://portcullis.test',
  SERVICE_AUTH_TOKEN_AUDIENCE: 'portcullis-test-api',
  SERVICE_APPLICATION_TOKEN_AUDIENCE: 'portcullis-test-applications',
  SERVICE_DATABASE_URL: 'sqlite::memory:',
};

export interface TestApp {
  readonly app: App;
  readonly services: Services;
  readonly config: Config;
  readonly clock: TestClock;
  readonly database: TestDatabase;
  readonly dialect: Dialect;
  request(options: RequestOptions): Promise<TestResponse>;
  close(): Promise<void>;
}

export interface RequestOptions {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'OPTIONS' | 'PATCH';
  readonly url: string;
  readonly token?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly remoteAddress?: string;
}

export interface TestResponse {
  readonly status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers are read field by field in assertions.
  readonly body: any;
  readonly headers: LightMyRequestResponse['headers'];
}

export interface TestAppOptions {
  readonly env?: Env;
  /**
   * Use Redis for rate-limit counters when the run provides one (TEST_REDIS_URL); or, with
   * `'unreachable'`, the service's own client (connectRedis) of a port nothing listens on, as in
   * a store outage.
   */
  readonly redis?: boolean | 'unreachable';
  /** Fastify's logger option (default: no logging); tests that read the log pass a stream. */
  readonly logger?: FastifyServerOptions['logger'];
  /** Share rate-limit counters with another test app (with Redis: two instances, one store). */
  readonly rateLimitNamespace?: string;
  /** Run the retention pass on this schedule while the app is up (default: never). */
  readonly retentionSchedule?: { readonly intervalMs: number };
  /** The password hasher (default: the service's own, with its bound of one check per CPU). */
  readonly passwords?: PasswordHasher;
}

/** Port 1: nothing listens there. */
const UNREACHABLE_REDIS_URL = 'redis://127.0.0.1:1';

/** The whole service on a fresh database of the dialect, with a movable clock. */
export async function buildTestApp(dialect: Dialect, options: TestAppOptions = {}): Promise<TestApp> {
  const config = loadConfig({ ...TEST_ENV, ...options.env }, () => {});
  const database = await createTestDatabase(dialect);
  const clock = new TestClock();
  const redis =
    options.redis === 'unreachable'
      ? await connectRedis({ ...config, redisUrl: UNREACHABLE_REDIS_URL })
      : options.redis === true && TEST_REDIS_URL !== null
        ? new Redis(TEST_REDIS_URL)
        : null;
  const app = await buildApp({
    config,
    database: database.handle,
    clock,
    redis,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    rateLimitNamespace: options.rateLimitNamespace ?? newRateLimitNamespace(),
    ...(options.retentionSchedule === undefined ? {} : { retentionSchedule: options.retentionSchedule }),
    ...(options.passwords === undefined ? {} : { passwords: options.passwords }),
  });
  await app.ready();
  return {
    app,
    services: app.services,
    config,
    clock,
    database,
    dialect,
    request: (request) => send(app, request),
    close: async () => {
      await app.close();
      await database.drop();
      // A client that never reached its server has nothing to say goodbye to.
      if (redis?.status === 'ready') await redis.quit();
      else redis?.disconnect();
    },
  };
}

/** A rate-limit key prefix no other test app uses. */
export const newRateLimitNamespace = (): string => `portcullis-test:${randomBytes(6).toString('hex')}:`;

async function send(app: App, options: RequestOptions): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const response = await app.inject({
    method: options.method,
    url: options.url,
    headers,
    ...(options.remoteAddress === undefined ? {} : { remoteAddress: options.remoteAddress }),
    ...(options.body === undefined
      ? {}
      : typeof options.body === 'string'
        ? { payload: options.body }
        : { payload: options.body as object }),
  });
  let body: unknown = response.body;
  if ((response.headers['content-type'] ?? '').toString().includes('json') && response.body !== '') {
    body = response.json();
  }
  return { status: response.statusCode, body, headers: response.headers };
}
