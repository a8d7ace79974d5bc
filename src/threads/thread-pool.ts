import { getPriority, setPriority } from 'node:os';
import { processThreads } from './process-threads.ts';

/**
 * libuv's thread pool, where the password hashes run: its size, and its priority.
 *
 * Size: one thread per credential check that may run at once (DECISIONS §7: one per CPU), unless
 * the operator set `UV_THREADPOOL_SIZE`. libuv's own default is four threads, whatever the machine:
 * - with more than four CPUs, the bound let more checks start than the pool had threads, so at
 *   most four hashes ran at once and the other cores stayed idle under a flood of sign-ins;
 * - with two, the cores stood 5–15 % idle between hashes, against 1 % with a pool of two
 *   (docs/performance-history.md, twenty-fourth round: 10–16 % more verifies per second, two in
 *   flight either way).
 * The pool also serves DNS look-ups and file reads (the external provider's keys, the API
 * explorer's files): under a flood of sign-ins each waits for a running hash to end, a few
 * milliseconds, as the bound lets no more checks start than there are threads.
 *
 * libuv reads the variable once, when the pool starts (its first use): call this first thing.
 */
export function sizeThreadPool(checksAtOnce: number, env: NodeJS.ProcessEnv = process.env): void {
  const configured = env[THREAD_POOL_SIZE_VARIABLE];
  if (configured === undefined || configured.trim() === '')
    env[THREAD_POOL_SIZE_VARIABLE] = String(checksAtOnce);
}

export const THREAD_POOL_SIZE_VARIABLE = 'UV_THREADPOOL_SIZE';

/**
 * How much nicer than the process libuv's thread pool runs, where Argon2id runs (the HTTP threads
 * keep the process's niceness).
 *
 * A password hash is 10 ms or more of one core; what the HTTP threads do for a request is far
 * shorter. At equal priority, a flood of sign-ins takes most of the cores from every other request,
 * among them the live check that consumers call on each of theirs. Below the HTTP threads, the
 * hashes take what the requests leave. Measured on 2 cores (docs/performance-history.md, eighth
 * round): during a sign-in flood the health check answered 1.5–1.9 times as many requests
 * (9,300–9,500 → 14,500–17,800 req/s; p99 5 → 3 ms); during a flood of health checks, sign-ins went
 * on at half their rate (69–75 → 38/s). Neither bound changes: at most one hash per core, and a
 * wait of over 10 s is a 503.
 */
export const THREAD_POOL_NICENESS_OFFSET = 10;

/** The highest niceness Linux has. */
const NICEST = 19;

/** Linux names libuv's pool threads so. */
export const POOL_THREAD_NAME = 'libuv-worker';

/**
 * Lowers the priority of the process's libuv pool threads by `offset` (to at most 19) and returns
 * how many it lowered. Linux only (elsewhere it does nothing and returns 0): the pool's threads
 * are found by name in /proc, and a niceness set on a thread id applies to that thread alone.
 * libuv starts the whole pool at its first use, so call this after a first hash.
 */
export function lowerThreadPoolPriority(offset: number = THREAD_POOL_NICENESS_OFFSET): number {
  if (process.platform !== 'linux') return 0;
  const niceness = Math.min(NICEST, getPriority() + offset);
  let lowered = 0;
  for (const thread of processThreads()) {
    if (thread.name !== POOL_THREAD_NAME) continue;
    try {
      setPriority(thread.id, niceness);
      lowered += 1;
    } catch {
      // The thread ended since the listing, or the system refused the change: the pool then
      // keeps its priority, and the start log's count says so.
    }
  }
  return lowered;
}
