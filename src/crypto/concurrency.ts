import type { MessagePort } from 'node:worker_threads';

/** Runs work under a bound on how much of it runs at once. */
export interface Bound {
  /** Runs `work` under the bound, or returns `{ busy: true }` when no slot came within `waitMs`. */
  run<T>(work: () => Promise<T>, waitMs: number): Promise<{ busy: false; value: T } | { busy: true }>;
}

/**
 * A counting semaphore with a waiting deadline. Password hashing is deliberately expensive;
 * without a bound, a burst of sign-ins would queue unbounded work on the libuv pool and every
 * request (including token checks) would slow down. Waiters beyond the deadline get `false`;
 * the others get their slot in the order they asked.
 */
export class ConcurrencyBound implements Bound {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: Array<{ resume: (granted: boolean) => void; timer: NodeJS.Timeout }> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
    this.#limit = limit;
  }

  /** Runs `work` under the bound, or returns `{ busy: true }` when no slot came within `waitMs`. */
  async run<T>(work: () => Promise<T>, waitMs: number): Promise<{ busy: false; value: T } | { busy: true }> {
    if (!(await this.acquire(waitMs))) return { busy: true };
    try {
      return { busy: false, value: await work() };
    } finally {
      this.release();
    }
  }

  /** Takes a slot (true), or gives up after `waitMs` (false). A slot taken must be released. */
  acquire(waitMs: number): Promise<boolean> {
    if (this.#running < this.#limit) {
      this.#running += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const entry = {
        resume: resolve,
        timer: setTimeout(() => {
          const index = this.#waiting.indexOf(entry);
          if (index !== -1) this.#waiting.splice(index, 1);
          resolve(false);
        }, waitMs),
      };
      this.#waiting.push(entry);
    });
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) {
      this.#running -= 1;
      return;
    }
    // Hand the slot straight to the next waiter; the running count stays the same.
    clearTimeout(next.timer);
    next.resume(true);
  }
}

interface SlotRequest {
  readonly id: number;
  /** A slot wanted within this many ms; absent: a slot given back. */
  readonly waitMs?: number;
}
interface SlotAnswer {
  readonly id: number;
  readonly granted: boolean;
}

/**
 * Serves `bound` to another thread through `port` (see `remoteBound`): one bound for the whole
 * process, as spec §Authentication 10 asks, however many HTTP threads check passwords.
 */
export function serveBound(bound: ConcurrencyBound, port: MessagePort): void {
  port.on('message', ({ id, waitMs }: SlotRequest) => {
    if (waitMs === undefined) bound.release();
    else void bound.acquire(waitMs).then((granted) => port.postMessage({ id, granted } satisfies SlotAnswer));
  });
}

/** The bound another thread serves through `port` (`serveBound`), with the same waiting order. */
export function remoteBound(port: MessagePort): Bound {
  const waiting = new Map<number, (granted: boolean) => void>();
  let nextId = 0;
  port.on('message', ({ id, granted }: SlotAnswer) => {
    waiting.get(id)?.(granted);
    waiting.delete(id);
  });
  port.unref();
  return {
    async run(work, waitMs) {
      nextId += 1;
      const id = nextId;
      const granted = await new Promise<boolean>((resolve) => {
        waiting.set(id, resolve);
        port.postMessage({ id, waitMs } satisfies SlotRequest);
      });
      if (!granted) return { busy: true };
      try {
        return { busy: false, value: await work() };
      } finally {
        port.postMessage({ id } satisfies SlotRequest);
      }
    },
  };
}
