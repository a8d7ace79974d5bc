import { readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  listeningPort,
  type ServerProcess,
  startServerProcess,
  useServerDirectory,
} from '../helpers/server-process.ts';
import { HTTP_THREAD_NAME } from '../../src/threads/http-threads.ts';
import { processThreads } from '../../src/threads/process-threads.ts';
import { POOL_THREAD_NAME, THREAD_POOL_NICENESS_OFFSET } from '../../src/threads/thread-pool.ts';

/**
 * The real process, built as `npm start` builds it, started as a child process: start-up refusals
 * must end the process with a non-zero code and a message naming the variable and never its
 * value; a good configuration must serve and stop cleanly on SIGTERM.
 */

const GOOD_SECRET = 'start-up-test-secret-of-at-least-32-bytes';

const directory = useServerDirectory('portcullis-startup-');

/** Starts the server on a SQLite file in this test's directory, with exactly these settings. */
function startServer(settings: Record<string, string>): ServerProcess {
  return startServerProcess({
    SERVICE_DATABASE_URL: `sqlite:${join(directory(), 'identity.db')}`,
    ...settings,
  });
}

describe('start-up refusals (spec §Authentication 7, 14; DECISIONS §8)', () => {
  const refusals: Array<[string, Record<string, string>, string, string]> = [
    [
      'a signing secret under 32 bytes',
      { SERVICE_AUTH_TOKEN_SECRET: 'short-but-secret-value-1234' },
      'SERVICE_AUTH_TOKEN_SECRET',
      'short-but-secret-value-1234',
    ],
    [
      'a non-ASCII previous signing secret',
      {
        SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET,
        SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: 'previous-sécret-value-of-enough-length-xyz',
      },
      'SERVICE_AUTH_TOKEN_SECRET_PREVIOUS',
      'previous-sécret-value-of-enough-length-xyz',
    ],
    [
      'production without an issuer',
      {
        SERVICE_ENVIRONMENT: 'production',
        SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET,
        SERVICE_AUTH_TOKEN_AUDIENCE: 'startup-api',
        SERVICE_APPLICATION_TOKEN_AUDIENCE: 'startup-applications',
      },
      'SERVICE_AUTH_TOKEN_ISSUER',
      GOOD_SECRET,
    ],
    [
      'an application audience equal to the subject-rights audience',
      {
        SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET,
        SERVICE_AUTH_TOKEN_AUDIENCE: 'startup-api',
        SERVICE_APPLICATION_TOKEN_AUDIENCE: 'startup-api.subject-rights',
      },
      'SERVICE_APPLICATION_TOKEN_AUDIENCE',
      GOOD_SECRET,
    ],
    [
      'a trusted caller key under 32 characters',
      { SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET, SERVICE_TRUSTED_CALLER_KEYS: 'caller-key-too-short-0987' },
      'SERVICE_TRUSTED_CALLER_KEYS',
      'caller-key-too-short-0987',
    ],
    [
      'PostgreSQL without a signing secret',
      { SERVICE_DATABASE_URL: 'postgres://user:database-password-4321@127.0.0.1:1/none' },
      'SERVICE_AUTH_TOKEN_SECRET',
      'database-password-4321',
    ],
  ];

  for (const [refusal, settings, variable, secretText] of refusals) {
    it(`refuses ${refusal}: non-zero exit, the variable named, the value absent`, async () => {
      const started = startServer(settings);
      const { code } = await started.exited;
      expect(code).not.toBe(0);
      expect(code).toBe(78);
      expect(started.stderr()).toContain(`Configuration error: ${variable}`);
      expect(started.stderr()).not.toContain(secretText);
      expect(started.stdout()).not.toContain(secretText);
      // Refused before anything was opened: no database file was made.
      expect(() => statSync(join(directory(), 'identity.db'))).toThrow();
    });
  }
});

describe('a good start', () => {
  it('serves /api/healthcheck, logs warnings for unusable lifetimes, and exits 0 on SIGTERM', async () => {
    const started = startServer({
      SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET,
      SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS: 'forever',
    });
    const port = await listeningPort(started);
    const response = await fetch(`http://127.0.0.1:${port}/api/healthcheck`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'Healthy' });

    const output = started.stdout();
    expect(output).toContain(
      'SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS: the value \\"forever\\" is not usable (whole seconds from 1 to 31536000); using the default 3600.',
    );
    expect(output).toContain('Generated password (shown once)');
    expect(output + started.stderr()).not.toContain(GOOD_SECRET);

    started.child.kill('SIGTERM');
    // Both, so that a failure names the signal that ended the process instead of a bare null.
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.stdout()).toContain('shutting down');
  });

  it('on SIGTERM while an HTTP thread is still starting, lets it start, closes it and exits 0', async () => {
    const started = startServer({ SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET, SERVICE_HTTP_THREADS: '2' });
    // The signal goes the moment the main thread listens: the second thread starts only then.
    // Exiting under a thread that was loading its native modules aborted the process.
    started.child.stdout!.on('data', () => {
      if (started.stdout().includes('Server listening at') && !started.child.killed)
        started.child.kill('SIGTERM');
    });
    expect(await started.exited).toEqual({ code: 0, signal: null });
    expect(started.stdout()).toContain('shutting down');
    expect(started.stdout().split('Server listening at').length - 1).toBe(2);
  });

  it.runIf(process.platform === 'linux')(
    "gives libuv's thread pool (the password hashes) one thread per CPU, below the HTTP threads",
    async () => {
      const started = startServer({ SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET, SERVICE_HTTP_THREADS: '2' });
      await listeningPort(started);
      const threads = processThreads(started.child.pid!);
      const main = threads.find((thread) => thread.name === 'MainThread')!;
      const httpThreads = threads.filter((thread) => thread.name === HTTP_THREAD_NAME);
      const pool = threads.filter((thread) => thread.name === POOL_THREAD_NAME);
      // DECISIONS §7: one check per CPU at once; libuv's own default would be four threads.
      expect(pool).toHaveLength(availableParallelism());
      expect(httpThreads.length).toBeGreaterThan(0);
      const expected = Math.min(19, main.niceness + THREAD_POOL_NICENESS_OFFSET);
      expect(pool.map((thread) => thread.niceness)).toEqual(pool.map(() => expected));
      expect(httpThreads.map((thread) => thread.niceness)).toEqual(httpThreads.map(() => main.niceness));
    },
  );

  it.runIf(process.platform === 'linux')("keeps the operator's UV_THREADPOOL_SIZE", async () => {
    const size = availableParallelism() + 1;
    const started = startServer({ SERVICE_AUTH_TOKEN_SECRET: GOOD_SECRET, UV_THREADPOOL_SIZE: String(size) });
    await listeningPort(started);
    const pool = processThreads(started.child.pid!).filter((thread) => thread.name === POOL_THREAD_NAME);
    expect(pool).toHaveLength(size);
  });

  it('in development without a secret, keeps a generated one beside the SQLite file and reuses it; the admin is made once', async () => {
    const first = startServer({});
    await listeningPort(first);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    const secretFile = join(directory(), 'token-secret');
    const secret = readFileSync(secretFile, 'ascii');
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(first.stdout()).not.toContain(secret);
    expect(first.stdout()).toContain('Generated password (shown once)');

    const second = startServer({});
    const port = await listeningPort(second);
    expect((await fetch(`http://127.0.0.1:${port}/healthcheck`)).status).toBe(200);
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(readFileSync(secretFile, 'ascii')).toBe(secret);
    // The System Admin made on the first start is still there: none is made or printed again.
    expect(second.stdout()).not.toContain('Generated password');
  });
});
