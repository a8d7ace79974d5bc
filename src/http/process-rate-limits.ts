import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { createRequire } from 'node:module';
import type { MessagePort } from 'node:worker_threads';
import { answerCalls, portCaller } from '../threads/port-calls.ts';

/**
 * Rate-limit counters shared by every HTTP thread of one process, for when no Redis is
 * configured. Each thread charging its own counters would multiply every budget by the number
 * of threads; so the counters live in the main thread, and the other threads charge them
 * through a message port. The counting is @fastify/rate-limit's own memory store (a fixed
 * window per key in an LRU map), so one thread or several count alike.
 */

interface Count {
  readonly current: number;
  readonly ttl: number;
}
type CountCallback = (error: Error | null, result?: Count) => void;
interface MemoryStore {
  incr(key: string, callback: CountCallback, timeWindow: number, max: number): void;
}

const LocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  cache: number,
) => MemoryStore;

/** The plugin keeps 5,000 keys per route; our keys name their budget, and there are three. */
const COUNTED_KEYS = 15_000;

interface Charge {
  readonly key: string;
  readonly timeWindow: number;
  readonly max: number;
}

/** A store class for @fastify/rate-limit that charges `incr`. Keys carry their budget's name,
 * so every route shares the one store (`child` returns it). */
function storeClass(incr: MemoryStore['incr']): FastifyRateLimitStoreCtor {
  return class implements FastifyRateLimitStore {
    incr(key: string, callback: CountCallback, timeWindow: number, max: number): void {
      incr(key, callback, timeWindow, max);
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

/** The counters themselves: created in the main thread, which serves the other threads. */
export class ProcessRateLimitCounters {
  readonly #counts = new LocalStore(false, false, COUNTED_KEYS);

  /** The store of the main thread's own app. */
  store(): FastifyRateLimitStoreCtor {
    return storeClass((key, callback, timeWindow, max) => this.#counts.incr(key, callback, timeWindow, max));
  }

  /** Answers the charges another thread sends through `port` (see `remoteRateLimitStore`). */
  serve(port: MessagePort): void {
    answerCalls<Charge, Count>(
      port,
      ({ key, timeWindow, max }) =>
        new Promise((resolve) =>
          this.#counts.incr(
            key,
            (_error, count) => resolve({ current: count?.current ?? 0, ttl: count?.ttl ?? 0 }),
            timeWindow,
            max,
          ),
        ),
    );
  }
}

/** The store of an HTTP thread other than the main one: it charges the main thread's counters. */
export function remoteRateLimitStore(port: MessagePort): FastifyRateLimitStoreCtor {
  const counters = portCaller<Charge, Count>(port);
  return storeClass((key, callback, timeWindow, max) => {
    void counters.call({ key, timeWindow, max }).then((count) => callback(null, count));
  });
}
