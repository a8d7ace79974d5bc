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

/** Thread `thread`'s side of a bound that several threads share (`ConcurrencyBound.handleFor`). */
export interface SharedBoundHandle {
  readonly shared: SharedArrayBuffer;
  readonly thread: number;
}

/**
 * A counting semaphore with a waiting deadline, shared by the threads of a process through a
 * SharedArrayBuffer: one bound for the whole process, as spec §Authentication 10 asks, however
 * many HTTP threads check passwords. Password hashing is deliberately expensive; without a
 * bound, a burst of sign-ins would queue unbounded work on the libuv pool and every request
 * (including token checks) would slow down. Waiters beyond the deadline get `false`; the others
 * get their slot in the order they asked, whichever thread they asked on.
 *
 * Slots go by ticket: every ask takes the next ticket, and ticket t holds a slot once fewer
 * than `limit` tickets before it are still unreleased (t < released + limit). Taking a free slot
 * and giving one back are a shared counter each, so a thread never wakes another to ask or to
 * return a slot; it wakes the one thread whose waiting ticket a release has just let in, and no
 * thread at all when that ticket is its own. (Asks and releases used to be messages to the main
 * thread: at about 70 sign-ins a second per thread, sending them cost the worker thread more CPU
 * than writing its answers to the socket, docs/performance-history.md, seventeenth round.)
 *
 * A ticket whose waiter has given up (`busy`) keeps its place: when its slot comes, its thread
 * gives the slot straight back, which lets the next ticket in.
 */
export class ConcurrencyBound implements Bound {
  readonly #counters: BigInt64Array;
  readonly #wakeCalls: Int32Array;
  readonly #thread: number;
  readonly #threads: number;
  readonly #limit: bigint;
  /** This thread's waiting asks, in ticket order. */
  readonly #waiting: Waiter[] = [];
  #listening = false;

  /**
   * `new ConcurrencyBound(limit, threads)`: a bound of `limit` slots for up to `threads` threads,
   * this side being thread 0 (hand the others `handleFor(1..threads - 1)`).
   * `new ConcurrencyBound(handle)`: another thread's side of a bound made elsewhere.
   */
  constructor(source: number | SharedBoundHandle, threads: number = 1) {
    let shared: SharedArrayBuffer;
    if (typeof source === 'number') {
      if (!Number.isInteger(source) || source < 1) throw new RangeError('limit must be a positive integer');
      if (!Number.isInteger(threads) || threads < 1)
        throw new RangeError('threads must be a positive integer');
      shared = new SharedArrayBuffer(sharedBytes(threads));
      const counters = new BigInt64Array(shared, 0, COUNTER_CELLS + threads);
      counters[LIMIT] = BigInt(source);
      counters.fill(NO_TICKET, COUNTER_CELLS);
      this.#thread = 0;
    } else {
      shared = source.shared;
      this.#thread = source.thread;
    }
    requireThreadOf({ shared, thread: this.#thread });
    this.#threads = threadsOf(shared);
    this.#counters = new BigInt64Array(shared, 0, COUNTER_CELLS + this.#threads);
    this.#wakeCalls = new Int32Array(shared, (COUNTER_CELLS + this.#threads) * 8, this.#threads);
    this.#limit = Atomics.load(this.#counters, LIMIT);
  }

  /** How many asks wait for a slot now, on every thread (one that gave up counts until its turn). */
  waiting(): number {
    const waiting =
      Atomics.load(this.#counters, ISSUED) - Atomics.load(this.#counters, RELEASED) - this.#limit;
    return waiting > 0n ? Number(waiting) : 0;
  }

  /** What thread `thread` (1 up to `threads - 1`) builds its side from (workerData). */
  handleFor(thread: number): SharedBoundHandle {
    // Refused here, in the thread that made the bound, rather than in the thread it was for.
    return requireThreadOf({ shared: this.#counters.buffer as SharedArrayBuffer, thread });
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
    const ticket = Atomics.add(this.#counters, ISSUED, 1n);
    if (this.#holdsSlot(ticket)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter: Waiter = {
        ticket,
        resume: resolve,
        timer: setTimeout(() => {
          waiter.gaveUp = true;
          resolve(false);
        }, waitMs),
        gaveUp: false,
      };
      this.#waiting.push(waiter);
      this.#letInDueAndListen();
    });
  }

  release(): void {
    this.#giveSlotBack();
    this.#letInDue();
  }

  #holdsSlot(ticket: bigint): boolean {
    return ticket < Atomics.load(this.#counters, RELEASED) + this.#limit;
  }

  /** Returns one slot, and wakes the other thread whose first waiting ticket that lets in. */
  #giveSlotBack(): void {
    const letIn = Atomics.add(this.#counters, RELEASED, 1n) + this.#limit;
    for (let thread = 0; thread < this.#threads; thread += 1) {
      if (thread === this.#thread || Atomics.load(this.#counters, COUNTER_CELLS + thread) !== letIn) continue;
      Atomics.add(this.#wakeCalls, thread, 1);
      Atomics.notify(this.#wakeCalls, thread);
    }
  }

  /**
   * Resumes this thread's first waiters while they hold slots (giving back those of waiters
   * that gave up), then publishes its first waiting ticket for the releasing threads to see.
   * The ticket is published before its slot is checked once more: a release between the two
   * either sees it (and wakes this thread) or is seen by the check.
   */
  #letInDue(): void {
    for (;;) {
      const first = this.#waiting[0];
      Atomics.store(this.#counters, COUNTER_CELLS + this.#thread, first?.ticket ?? NO_TICKET);
      if (first === undefined || !this.#holdsSlot(first.ticket)) return;
      this.#waiting.shift();
      clearTimeout(first.timer);
      if (first.gaveUp) this.#giveSlotBack();
      else first.resume(true);
    }
  }

  /**
   * Lets in this thread's due waiters; then, while some still wait, waits (off the event loop)
   * for another thread's release. The wake calls are read before the waiters' slots are checked:
   * a release after that check wakes this thread by bumping them past the value read, so the wait
   * ends at once. (Read after the check, they could already hold that bump, and the wait would
   * sleep through the release it was for: the waiter gave up when its time ran out, and its slot
   * stayed taken until the thread's next ask.)
   */
  #letInDueAndListen(): void {
    const seen = Atomics.load(this.#wakeCalls, this.#thread);
    this.#letInDue();
    if (this.#listening || this.#waiting.length === 0) return;
    const wait = Atomics.waitAsync(this.#wakeCalls, this.#thread, seen);
    this.#listening = true;
    const woken = () => {
      this.#listening = false;
      this.#letInDueAndListen();
    };
    // Not pending: a release came since `seen` was read. The waiters' timers keep the thread
    // alive meanwhile (a pending waitAsync does not).
    if (wait.async) void wait.value.then(woken);
    else queueMicrotask(woken);
  }
}

interface Waiter {
  readonly ticket: bigint;
  readonly resume: (granted: boolean) => void;
  readonly timer: NodeJS.Timeout;
  gaveUp: boolean;
}

// The shared memory: BigInt64 cells (tickets never wrap) for the limit, the tickets issued, the
// slots released and each thread's first waiting ticket; then an Int32 cell per thread that
// releasing threads bump to wake it.
const LIMIT = 0;
const ISSUED = 1;
const RELEASED = 2;
const COUNTER_CELLS = 3;
/** A thread's first waiting ticket when it has none (tickets start at 0). */
const NO_TICKET = -1n;

const sharedBytes = (threads: number) => (COUNTER_CELLS + threads) * 8 + threads * 4;
const threadsOf = (shared: SharedArrayBuffer) => (shared.byteLength - COUNTER_CELLS * 8) / 12;
function requireThreadOf(handle: SharedBoundHandle): SharedBoundHandle {
  const { shared, thread } = handle;
  if (!Number.isInteger(thread) || thread < 0 || thread >= threadsOf(shared)) {
    throw new RangeError('thread must name one of the threads the bound was made for');
  }
  return handle;
}
