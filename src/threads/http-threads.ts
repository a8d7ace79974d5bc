import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config/config.ts';
import type { ConcurrencyBound, SharedBoundHandle } from '../crypto/concurrency.ts';
import type { ProcessRateLimitCounters, SharedCounterTable } from '../http/process-rate-limits.ts';
import { workerEntry } from './worker-entry.ts';

/**
 * The HTTP threads besides the main one (SERVICE_HTTP_THREADS - 1), each a full copy of the app
 * listening on the same port. A thread that dies unexpectedly is reported through `onExit`:
 * server.ts then stops the whole process, so that its supervisor restarts it whole rather than
 * it serving on with part of its capacity.
 */

/** What an HTTP thread starts from (its entry is http-thread.ts). */
export interface HttpThreadData {
  readonly config: Config;
  /** The port the main thread bound (it may have asked the OS for any free one). */
  readonly port: number;
  /** The process's rate-limit counters (process-rate-limits.ts); null when they live in Redis. */
  readonly rateLimitCounters: SharedCounterTable | null;
  /** The main thread's SQLite write lock, shared (null with PostgreSQL). */
  readonly sqliteWriteLock: SharedArrayBuffer | null;
  /** This thread's side of the process's bound on credential checks. */
  readonly credentialChecks: SharedBoundHandle;
}

/** Sent to the main thread once this thread listens. */
export const LISTENING = 'listening';
/** Received from the main thread: finish the requests in flight, close, and exit. */
export const CLOSE = 'close';

export interface HttpThreads {
  /** Lets every thread finish its requests in flight and close; resolves when all have exited. */
  close(): Promise<void>;
}

export interface HttpThreadOptions {
  readonly config: Config;
  readonly port: number;
  /** The process's rate-limit counters, or null when Redis holds them. */
  readonly counters: ProcessRateLimitCounters | null;
  readonly sqliteWriteLock: SharedArrayBuffer | null;
  /** The process's bound on credential checks (spec §Authentication 10), made for every thread. */
  readonly credentialChecks: ConcurrencyBound;
  readonly log: FastifyBaseLogger;
  readonly onExit: (code: number) => void;
  /** The threads' entry module: http-thread.ts (tests give a stand-in). */
  readonly entry?: URL;
}

const HTTP_THREAD_ENTRY = workerEntry('http-thread', import.meta.url);

/** The operating system's name for each HTTP thread but the main one (`top -H`, /proc). */
export const HTTP_THREAD_NAME = 'http-thread';

export async function startHttpThreads(count: number, options: HttpThreadOptions): Promise<HttpThreads> {
  const started: Array<Awaited<ReturnType<typeof startHttpThread>>> = [];
  let closing = false;
  const close = async () => {
    closing = true;
    await Promise.all(
      started.map(async ({ worker, exited }) => {
        worker.postMessage(CLOSE);
        await exited;
      }),
    );
  };
  try {
    for (let index = 0; index < count; index += 1) {
      // The main thread is thread 0 of the bound on credential checks.
      const thread = await startHttpThread(options, index + 1, (code) => {
        if (!closing) options.onExit(code);
      });
      started.push(thread);
      thread.worker.on('error', (error) => options.log.error({ err: error }, 'HTTP thread failed'));
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}

/** Starts one thread; `onExitAfterStart` hears of its exit once it has said it listens. */
async function startHttpThread(
  options: HttpThreadOptions,
  thread: number,
  onExitAfterStart: (code: number) => void,
) {
  const worker = new Worker(options.entry ?? HTTP_THREAD_ENTRY, {
    name: HTTP_THREAD_NAME,
    workerData: {
      config: options.config,
      port: options.port,
      rateLimitCounters: options.counters?.shared ?? null,
      sqliteWriteLock: options.sqliteWriteLock,
      credentialChecks: options.credentialChecks.handleFor(thread),
    } satisfies HttpThreadData,
  });
  // Settles once the thread is gone, however it ended (a thread that died has exited already).
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // Listened for from the start: a thread that says it listens and exits at once has both
  // delivered in one go (Node hands over a thread's last messages just before its 'exit'), so
  // a listener added once start-up has resolved would come too late. An exit before it listens
  // fails the start-up instead (below).
  let listening = false;
  worker.once('message', (message) => (listening = message === LISTENING));
  worker.once('exit', (code) => {
    if (listening) onExitAfterStart(code);
  });
  // Start-up fails if the thread fails before it listens (`once` rejects on 'error').
  const [message] = (await Promise.race([
    once(worker, 'message'),
    once(worker, 'exit').then(([code]) => {
      throw new Error(`An HTTP thread exited with code ${code} while starting.`);
    }),
  ])) as [unknown];
  if (message !== LISTENING) throw new Error('An HTTP thread sent an unexpected message while starting.');
  return { worker, exited };
}
