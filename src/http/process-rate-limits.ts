import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { createRequire } from 'node:module';
import type { MessagePort } from 'node:worker_threads';

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
  readonly id: number;
  readonly key: string;
  readonly timeWindow: number;
  readonly max: number;
}
interface Answer {
  readonly id: number;
  readonly current: number;
  readonly ttl: number;
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
    port.on('message', ({ id, key, timeWindow, max }: Charge) =>
      this.#counts.incr(
        key,
        (_error, count) =>
          port.postMessage({ id, current: count?.current ?? 0, ttl: count?.ttl ?? 0 } satisfies Answer),
        timeWindow,
        max,
      ),
    );
  }
}

/** The store of an HTTP thread other than the main one: it charges the main thread's counters. */
export function remoteRateLimitStore(port: MessagePort): FastifyRateLimitStoreCtor {
  const waiting = new Map<number, CountCallback>();
  let nextId = 0;
  port.on('message', ({ id, current, ttl }: Answer) => {
    const callback = waiting.get(id);
    waiting.delete(id);
    callback?.(null, { current, ttl });
  });
  // The port must not keep a closing thread alive; the HTTP server does while it serves.
  port.unref();
  return storeClass((key, callback, timeWindow, max) => {
    nextId += 1;
    waiting.set(nextId, callback);
    port.postMessage({ id: nextId, key, timeWindow, max } satisfies Charge);
  });
}
