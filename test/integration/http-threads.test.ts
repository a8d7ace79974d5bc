import { describe, expect, it } from 'vitest';
import {
  listeningThreads,
  send,
  type ServerProcess,
  startSqliteService,
  useServerDirectory,
} from '../helpers/server-process.ts';

/**
 * The service served by several HTTP threads on one port (SERVICE_HTTP_THREADS, src/threads):
 * what holds per process must hold across its threads. The kernel spreads new connections over
 * the threads, so every request here opens its own connection, and each test checks from the
 * log that more than one thread answered.
 */

const ADMIN = { email: 'threads-admin@example.test', password: 'threads admin password' };

const directory = useServerDirectory('portcullis-threads-');

const startThreadedServer = (threads: number): ServerProcess =>
  startSqliteService({ directory: directory(), threads, admin: ADMIN });

/** The threads that logged a completed request to `url`. */
function threadsThatAnswered(server: ServerProcess, url: string): Set<number> {
  const requests = new Map<string, number>();
  const threads = new Set<number>();
  for (const line of server.stdout().split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { thread?: number; reqId?: string; req?: { url?: string } };
    if (entry.req?.url === url && entry.reqId !== undefined)
      requests.set(`${entry.thread}:${entry.reqId}`, 1);
  }
  for (const key of requests.keys()) threads.add(Number(key.split(':')[0]));
  return threads;
}

describe('several HTTP threads in one process', () => {
  it('share the rate-limit counters: an address gets its 10 authentication attempts per minute in all, not per thread', async () => {
    const server = startThreadedServer(2);
    const port = await listeningThreads(server, 2);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 16; attempt += 1) {
      const answer = await send(port, 'POST', '/api/auth/login', {
        email: 'nobody@example.test',
        password: 'a wrong password',
      });
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(6).fill(429)]);
    expect(threadsThatAnswered(server, '/api/auth/login').size).toBe(2);
  });

  it('commit concurrent writes from every thread: none is refused for a busy database, each is audited', async () => {
    const server = startThreadedServer(2);
    const port = await listeningThreads(server, 2);
    const signIn = await send(port, 'POST', '/api/auth/login', ADMIN);
    expect(signIn.status).toBe(200);
    const token = String(signIn.body.data?.token);
    const adminId = (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { sub: string })
      .sub;

    const created = await Promise.all(
      Array.from({ length: 60 }, (_, index) =>
        send(port, 'POST', '/api/scopes', { name: `threaded scope ${index}`, ownerIds: [adminId] }, token),
      ),
    );
    expect(created.map((answer) => answer.status)).toEqual(Array<number>(60).fill(200));
    expect(threadsThatAnswered(server, '/api/scopes').size).toBe(2);

    const listed = await send(port, 'GET', '/api/scopes?PageSize=1', undefined, token);
    expect(listed.body.totalRecords).toBe(60);
    const audit = await send(
      port,
      'GET',
      '/api/audit-log?Action=CreateScopeCommand&PageSize=1',
      undefined,
      token,
    );
    expect(audit.body.totalRecords).toBe(60);
  });

  it('stop together on SIGTERM, with exit code 0', async () => {
    const server = startThreadedServer(3);
    const port = await listeningThreads(server, 3);
    expect((await send(port, 'GET', '/api/healthcheck', undefined)).status).toBe(200);
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });
});
