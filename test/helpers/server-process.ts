import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, inject } from 'vitest';

/**
 * The real process, started as a child process by tests: by default as `npm start` runs it, from
 * the build (the run's own, test/global-setup.ts); or from source (`node src/server.ts`).
 */

const SOURCE_ENTRY = resolve(import.meta.dirname, '../../src/server.ts');

export type ServerEntry = 'build' | 'source';

const entryFile = (entry: ServerEntry): string =>
  entry === 'source' ? SOURCE_ENTRY : join(inject('serviceBuild'), 'server.js');

export interface ServerProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: ChildProcess[] = [];

/** Starts the server with exactly these settings (nothing inherited from the test's own env). */
export function startServerProcess(
  settings: Record<string, string>,
  entry: ServerEntry = 'build',
): ServerProcess {
  const child = spawn(process.execPath, [entryFile(entry)], {
    env: { PATH: process.env.PATH ?? '', SERVICE_PORT: '0', ...settings },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) =>
    child.once('close', (code, signal) => resolveExit({ code, signal })),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** A token secret for the tests' processes (any value of 32 bytes or more would do). */
export const TEST_TOKEN_SECRET = 'server-process-test-secret-of-at-least-32-bytes';

/**
 * The service on a SQLite file in `directory`, served by `threads` HTTP threads, with `admin` as
 * its bootstrap System Admin; from the build unless `entry` says otherwise.
 */
export function startSqliteService(options: {
  readonly directory: string;
  readonly threads: number;
  readonly admin: { readonly email: string; readonly password: string };
  readonly entry?: ServerEntry;
}): ServerProcess {
  return startServerProcess(
    {
      SERVICE_DATABASE_URL: `sqlite:${join(options.directory, 'identity.db')}`,
      SERVICE_AUTH_TOKEN_SECRET: TEST_TOKEN_SECRET,
      SERVICE_HTTP_THREADS: String(options.threads),
      SERVICE_BOOTSTRAP_ADMIN_EMAIL: options.admin.email,
      SERVICE_BOOTSTRAP_ADMIN_PASSWORD: options.admin.password,
    },
    options.entry,
  );
}

/**
 * Gives each test of the file a fresh directory for the server's files (named `prefix`…), and
 * after each test kills every server it left running and removes the directory. Returns the
 * current test's directory.
 */
export function useServerDirectory(prefix: string): () => string {
  let directory = '';
  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    for (const child of running.splice(0))
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(directory, { recursive: true, force: true });
  });
  return () => directory;
}

/** The port from Fastify's "Server listening at http://127.0.0.1:PORT" log line. */
export async function listeningPort(started: ServerProcess): Promise<number> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(started.stdout());
    if (match !== null) return Number(match[1]);
    if (started.child.exitCode !== null) break;
    await new Promise((wait) => setTimeout(wait, 50));
  }
  throw new Error(`the server did not start:\n${started.stdout()}\n${started.stderr()}`);
}

/** Every HTTP thread logs that it listens; the test waits for all of them. */
export async function listeningThreads(server: ServerProcess, threads: number): Promise<number> {
  const port = await listeningPort(server);
  const deadline = Date.now() + 20_000;
  while (server.stdout().split('Server listening at').length - 1 < threads) {
    if (Date.now() > deadline) throw new Error(`not every thread listens:\n${server.stdout()}`);
    await new Promise((wait) => setTimeout(wait, 50));
  }
  return port;
}

/** One request on a connection of its own (no keep-alive pool), so it may reach any thread. */
export function send(
  port: number,
  method: string,
  path: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; body: { data?: Record<string, unknown>; totalRecords?: number } }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: {
          'content-type': 'application/json',
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body === undefined ? undefined : JSON.stringify(body));
  });
}
