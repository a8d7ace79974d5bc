import { hash, randomBytes } from 'node:crypto';

/**
 * Rate-limit counters shared by every HTTP thread of one process, for when no Redis is
 * configured. Each thread charging its own counters would multiply every budget by the number
 * of threads, so the threads share one table of counters in shared memory: the main thread
 * creates it, and hands it to the other threads (`shared`).
 *
 * The counters used to live in the main thread alone, charged by the other threads through a
 * message port. Every charge of another thread then waited for the main thread's event loop,
 * busy with its own requests, and cost both threads a message: under the secret-exchange
 * benchmark the other thread idled while the main one was the busier. Charged in shared memory,
 * the two are evenly busy, and answered 2–9 % more exchanges at 32 connections
 * (docs/performance-history.md, thirteenth round).
 *
 * Counting is that of @fastify/rate-limit's memory store, which this replaces: a fixed window
 * per key that starts at the key's first charge, no extension while exceeded, no back-off.
 *
 * The table is a set-associative cache of SLOTS keys. A key's hash picks a set of WAYS slots; a
 * new key takes a free slot of its set, else one whose window has ended, else the one whose
 * window ends soonest. Like the plugin's LRU of 15,000 keys, a flood of distinct keys can thus
 * push a live counter out. The hash is keyed with a random secret of the process, so nobody
 * can aim addresses at the set of someone else's counter and push it out with a few keys.
 *
 * Each set has its own lock (a compare-and-swap on shared memory), held only while one charge
 * reads and writes its slots: no allocation, no call out. The two threads rarely meet on one
 * set, and when they do, the wait is shorter than a message would take.
 */

/** Sets in the table: a power of two, so a hash picks one with a mask. */
const SETS = 1024;
/** Slots per set. */
const WAYS = 16;
const SLOTS = SETS * WAYS;
/**
 * Keys up to this many UTF-16 code units are kept as they are; a longer key is kept as its
 * keyed SHA-256 (64 hex digits). Our keys name a budget and an address or actor id: at most 64.
 */
const MAX_KEY_UNITS = 80;
const HASH_SECRET_BYTES = 16;

/** What a charge answers: @fastify/rate-limit's store result. */
export interface Count {
  /** The charges in the current window, this one included. */
  readonly current: number;
  /** Milliseconds until the window ends. */
  readonly ttl: number;
}

/**
 * The table: typed arrays over shared memory, and the hash secret. Handed to another thread
 * (workerData), the arrays stay the same memory.
 */
export interface SharedCounterTable {
  /** Per slot: when its window ends (epoch ms); 0 = free. */
  readonly windowEnds: Float64Array;
  /** Per slot: the charges in its window. */
  readonly counts: Int32Array;
  /** Per slot: its key's length in code units. */
  readonly keyLengths: Int32Array;
  /**
   * Per slot: 32 more bits of its key's hash, compared before the key itself. Keys of one kind
   * share a long prefix ("authentication:ip:10.0."), so comparing texts first cost a dozen
   * code units per slot of the set, and the charge was the service's costliest function in the
   * secret exchange by instructions (docs/performance-history.md, twentieth round).
   */
  readonly tags: Int32Array;
  /** Per slot, MAX_KEY_UNITS code units: its key. */
  readonly keys: Uint16Array;
  /** Per set: 0 free, 1 held. */
  readonly locks: Int32Array;
  /** Keys the hash that picks a key's set (hex). */
  readonly hashSecret: string;
}

function sharedArray<T>(
  View: { new (buffer: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number },
  length: number,
): T {
  return new View(new SharedArrayBuffer(length * View.BYTES_PER_ELEMENT));
}

export class ProcessRateLimitCounters {
  readonly #table: SharedCounterTable;

  /** Without `shared`: a new, empty table (the main thread). With it: that table. */
  constructor(
    shared: SharedCounterTable = {
      windowEnds: sharedArray(Float64Array, SLOTS),
      counts: sharedArray(Int32Array, SLOTS),
      keyLengths: sharedArray(Int32Array, SLOTS),
      tags: sharedArray(Int32Array, SLOTS),
      keys: sharedArray(Uint16Array, SLOTS * MAX_KEY_UNITS),
      locks: sharedArray(Int32Array, SETS),
      hashSecret: randomBytes(HASH_SECRET_BYTES).toString('hex'),
    },
  ) {
    this.#table = shared;
  }

  /** Hand this to the other threads (workerData): `new ProcessRateLimitCounters(shared)` there. */
  get shared(): SharedCounterTable {
    return this.#table;
  }

  /** Charges one request to `key`, whose windows last `timeWindowMs`. */
  charge(key: string, timeWindowMs: number, now: number = Date.now()): Count {
    const table = this.#table;
    const digest = hash('sha256', table.hashSecret + key);
    const stored = key.length <= MAX_KEY_UNITS ? key : digest;
    const set = Number.parseInt(digest.slice(0, 8), 16) & (SETS - 1);
    const tag = Number.parseInt(digest.slice(8, 16), 16) | 0;
    const first = set * WAYS;
    lock(table.locks, set);
    try {
      let slot = -1;
      let victim = first;
      for (let way = first; way < first + WAYS; way += 1) {
        if (table.tags[way] === tag && holdsKey(table, way, stored)) {
          slot = way;
          break;
        }
        if (table.windowEnds[way]! < table.windowEnds[victim]!) victim = way;
      }
      if (slot !== -1 && table.windowEnds[slot]! > now) {
        table.counts[slot]! += 1;
        return { current: table.counts[slot]!, ttl: table.windowEnds[slot]! - now };
      }
      // A new window: in the key's own slot once its window ended, else in the slot that is
      // free (its window end is 0) or nearest its end.
      slot = slot === -1 ? victim : slot;
      storeKey(table, slot, stored);
      table.tags[slot] = tag;
      table.counts[slot] = 1;
      table.windowEnds[slot] = now + timeWindowMs;
      return { current: 1, ttl: timeWindowMs };
    } finally {
      Atomics.store(table.locks, set, 0);
    }
  }
}

function lock(locks: Int32Array, set: number): void {
  // Held for a charge's few hundred nanoseconds, by another thread at most: spin. Should the
  // holder have been preempted mid-charge, waiting 50 µs at a time lets it run.
  for (let attempt = 0; Atomics.compareExchange(locks, set, 0, 1) !== 0; attempt += 1) {
    if (attempt >= SPINS_BEFORE_WAITING) Atomics.wait(locks, set, 1, 0.05);
  }
}
const SPINS_BEFORE_WAITING = 100;

function holdsKey(table: SharedCounterTable, slot: number, key: string): boolean {
  if (table.keyLengths[slot] !== key.length) return false;
  const start = slot * MAX_KEY_UNITS;
  for (let index = 0; index < key.length; index += 1) {
    if (table.keys[start + index] !== key.charCodeAt(index)) return false;
  }
  return true;
}

function storeKey(table: SharedCounterTable, slot: number, key: string): void {
  const start = slot * MAX_KEY_UNITS;
  for (let index = 0; index < key.length; index += 1) table.keys[start + index] = key.charCodeAt(index);
  table.keyLengths[slot] = key.length;
}
