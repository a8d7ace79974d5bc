import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { CHECKPOINTER_THREAD_NAME } from '../../src/db/sqlite-checkpointer.ts';
import { HTTP_THREAD_NAME } from '../../src/threads/http-threads.ts';
import { processThreads } from '../../src/threads/process-threads.ts';
import {
  listeningThreads,
  send,
  type ServerEntry,
  startServerProcess,
  startSqliteService,
  TEST_TOKEN_SECRET,
  useServerDirectory,
} from '../helpers/server-process.ts';
import { DIALECTS, TEST_DATABASE_URL, TEST_REDIS_URL, TEST_SCHEMA_PREFIX } from '../helpers/dialects.ts';

/**
 * The service as `npm start` runs it: bundled by scripts/build.ts, one file per thread's entry in
 * dist/ (the run's own build here). What a bundle could lose is what modules find beside
 * themselves at run time (the worker threads' entries, the common-password list) and what it
 * leaves to node_modules to load once configured (the PostgreSQL and Redis clients). The other
 * process tests (start-up, several HTTP threads) run the build as well.
 */

const ADMIN = { email: 'built-admin@example.test', password: 'built admin password' };

const directory = useServerDirectory('portcullis-built-');

const startService = (entry: ServerEntry, threads: number) =>
  startSqliteService({ directory: directory(), threads, admin: ADMIN, entry });

describe('the service run from its build and from source', () => {
  it.each<ServerEntry>(['build', 'source'])(
    'from the %s: starts every worker thread from its own entry (the other HTTP threads, the SQLite checkpointer)',
    async (entry) => {
      const server = startService(entry, 3);
      const port = await listeningThreads(server, 3);
      expect((await send(port, 'GET', '/api/healthcheck', undefined)).status).toBe(200);
      // A thread whose entry cannot be loaded ends at once: the checkpointer's would be gone by now.
      const names = processThreads(server.child.pid!).map((thread) => thread.name);
      expect(names.filter((name) => name === HTTP_THREAD_NAME)).toHaveLength(2);
      expect(names.filter((name) => name === CHECKPOINTER_THREAD_NAME)).toHaveLength(1);
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    },
  );

  it('from the build: reads the common-password list shipped beside it (DECISIONS §7)', async () => {
    const server = startService('build', 1);
    const port = await listeningThreads(server, 1);
    const signIn = await send(port, 'POST', '/api/auth/login', ADMIN);
    expect(signIn.status).toBe(200);
    const token = String(signIn.body.data?.token);
    const person = (password: string) => ({
      name: 'Common',
      email: `common-${password.length}@example.test`,
      password,
      role: 'SystemAdmin',
    });

    const common = await send(port, 'POST', '/api/persons', person('baseball'), token);
    expect(common).toMatchObject({ status: 400, body: { errors: ['Password is too common.'] } });
    const uncommon = await send(port, 'POST', '/api/persons', person('an uncommon pass phrase'), token);
    expect(uncommon.status).toBe(200);
  });
});

describe.runIf(DIALECTS.includes('postgres'))('the build on PostgreSQL', () => {
  /** Runs `statement` on the test database (schemas are made and dropped outside the service). */
  async function onTestDatabase(statement: string): Promise<void> {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  }

  it('loads the clients it leaves to node_modules once configured: PostgreSQL, and Redis when the run has one', async () => {
    const schema = `${TEST_SCHEMA_PREFIX}build_${randomUUID().replaceAll('-', '')}`;
    await onTestDatabase(`create schema ${schema}`);
    try {
      const url = new URL(TEST_DATABASE_URL);
      url.searchParams.set('options', `-c search_path=${schema}`);
      const server = startServerProcess({
        SERVICE_DATABASE_URL: url.toString(),
        SERVICE_AUTH_TOKEN_SECRET: TEST_TOKEN_SECRET,
        SERVICE_HTTP_THREADS: '2',
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
        ...(TEST_REDIS_URL === null ? {} : { SERVICE_REDIS_URL: TEST_REDIS_URL }),
      });
      const port = await listeningThreads(server, 2);
      const starting = server
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; database?: string; rateLimitStore?: string })
        .find((entry) => entry.msg === 'starting');
      expect(starting).toMatchObject({
        database: 'postgres',
        rateLimitStore: TEST_REDIS_URL === null ? 'memory' : 'redis',
      });
      expect((await send(port, 'POST', '/api/auth/login', ADMIN)).status).toBe(200);
      server.child.kill('SIGTERM');
      expect((await server.exited).code).toBe(0);
    } finally {
      await onTestDatabase(`drop schema if exists ${schema} cascade`);
    }
  });
});
