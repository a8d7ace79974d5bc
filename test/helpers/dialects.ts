import type { Dialect } from '../../src/db/open-database.ts';

/**
 * Which databases the integration tests run on: TEST_DIALECTS=sqlite,postgres (SQLite always
 * works; PostgreSQL needs TEST_DATABASE_URL or the local default). Redis-backed rate limits are
 * exercised when TEST_REDIS_URL is set.
 */
export const DIALECTS: readonly Dialect[] = (process.env.TEST_DIALECTS ?? 'sqlite')
  .split(',')
  .map((dialect) => dialect.trim())
  .filter((dialect): dialect is Dialect => dialect === 'sqlite' || dialect === 'postgres');

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? null;

/** Every schema a test run makes starts with this, so .ci/run can sweep leftovers. */
export const TEST_SCHEMA_PREFIX = 'portcullis_test_';
