/**
 * A counting semaphore with a waiting deadline. Password hashing is deliberately expensive;
 * without a bound, a burst of sign-ins would queue unbounded work on the libuv pool and every
 * request (including token checks) would slow down. Waiters beyond the deadline get `false`.
 */
export class ConcurrencyBound {
  readonly #limit: number;
  #running = 0;
  readonly #waiting: Array<{ resume: (granted: boolean) => void; timer: NodeJS.Timeout }> = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
    this.#limit = limit;
  }

  /** Runs `work` under the bound, or returns `{ busy: true }` when no slot came within `waitMs`. */
  async run<T>(work: () => Promise<T>, waitMs: number): Promise<{ busy: false; value: T } | { busy: true }> {
    if (!(await this.#acquire(waitMs))) return { busy: true };
    try {
      return { busy: false, value: await work() };
    } finally {
      this.#release();
    }
  }

  #acquire(waitMs: number): Promise<boolean> {
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

  #release(): void {
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
