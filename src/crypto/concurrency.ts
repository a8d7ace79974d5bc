import type { MessagePort } from 'node:worker_threads';
import { answerCalls, portCaller } from '../threads/port-calls.ts';

/**
 * What became of work given to a bound: it ran (`value`), no slot came in time (`busy`), or by the
 * time one came its caller had gone (`abandoned`) and it did not run.
 */
export type BoundOutcome<T> = { readonly value: T } | { readonly busy: true } | { readonly abandoned: true };

/** Runs work under a bound on how much of it runs at once. */
export interface Bound {
  /**
   * Runs `work` under the bound, unless no slot comes within `waitMs`, or `stillWanted` (asked
   * once a slot has come) says its caller has gone: a slot is not spent on work nobody awaits.
   */
  run<T>(work: () => Promise<T>, waitMs: number, stillWanted?: () => boolean): Promise<BoundOutcome<T>>;
}

/** Runs `work` in a slot just acquired (or not: `granted`), and gives the slot back after. */
async function runInSlot<T>(
  granted: boolean,
  work: () => Promise<T>,
  stillWanted: (() => boolean) | undefined,
  release: () => void,
): Promise<BoundOutcome<T>> {
  if (!granted) return { busy: true };
  try {
    if (stillWanted !== undefined && !stillWanted()) return { abandoned: true };
    return { value: await work() };
  } finally {
    release();
  }
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

  async run<T>(
    work: () => Promise<T>,
    waitMs: number,
    stillWanted?: () => boolean,
  ): Promise<BoundOutcome<T>> {
    return runInSlot(await this.acquire(waitMs), work, stillWanted, () => this.release());
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

/** Asks for a slot within `waitMs`, or gives one back. */
type SlotRequest = { readonly waitMs: number } | { readonly release: true };

/**
 * Serves `bound` to another thread through `port` (see `remoteBound`): one bound for the whole
 * process, as spec §Authentication 10 asks, however many HTTP threads check passwords.
 */
export function serveBound(bound: ConcurrencyBound, port: MessagePort): void {
  answerCalls<SlotRequest, boolean>(port, (request) => {
    if ('release' in request) {
      bound.release();
      return true;
    }
    return bound.acquire(request.waitMs);
  });
}

/** The bound another thread serves through `port` (`serveBound`), with the same waiting order. */
export function remoteBound(port: MessagePort): Bound {
  const slots = portCaller<SlotRequest, boolean>(port);
  return {
    async run(work, waitMs, stillWanted) {
      return runInSlot(await slots.call({ waitMs }), work, stillWanted, () => slots.tell({ release: true }));
    },
  };
}
