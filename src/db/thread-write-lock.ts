/**
 * A lock that the HTTP threads of one process share (through a SharedArrayBuffer), taken
 * around every SQLite write transaction.
 *
 * SQLite lets one connection write at a time. Left to SQLite alone, a thread that finds the
 * write lock taken can only try again later: it cannot learn when the holder commits, so it
 * sleeps past the moment the lock came free (profiled under the secret-exchange benchmark: the
 * main thread idle a fifth of the time). With this lock, the holder's release wakes a waiting
 * thread at once. Waiting is `Atomics.waitAsync`: the event loop runs on meanwhile.
 *
 * It is deliberately not first-come-first-served: a thread that still has commands queued when
 * it commits may go on, so batches stay large (a ticket lock that alternated strictly between
 * threads cost 15–20 % of the secret exchange's throughput). A thread's group commit takes the
 * lock again only for a batch that was already waiting, so the other thread's turn comes.
 *
 * SQLite's own lock stays the authority (another process may use the file): the driver still
 * takes it, and retries should it be busy.
 */
export class ThreadWriteLock {
  /** 0: free; 1: held by one of the threads. */
  readonly #state: Int32Array;
  #held = false;

  constructor(shared: SharedArrayBuffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)) {
    this.#state = new Int32Array(shared);
  }

  /** Hand this to the other threads (workerData): they share the lock through it. */
  get shared(): SharedArrayBuffer {
    return this.#state.buffer as SharedArrayBuffer;
  }

  async acquire(): Promise<void> {
    while (Atomics.compareExchange(this.#state, 0, FREE, HELD) !== FREE) {
      const wait = Atomics.waitAsync(this.#state, 0, HELD);
      if (!wait.async) continue;
      // A pending waitAsync does not keep the event loop alive: a thread with nothing else to
      // do would exit mid-wait, its transaction never run. The timer keeps it, as I/O would.
      const keepAlive = setTimeout(() => {}, MAX_TIMER_MS);
      try {
        await wait.value;
      } finally {
        clearTimeout(keepAlive);
      }
    }
    this.#held = true;
  }

  /** Frees the lock and wakes the waiting threads. Releasing a lock this side does not hold does nothing. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    Atomics.store(this.#state, 0, FREE);
    Atomics.notify(this.#state, 0);
  }
}

const FREE = 0;
const HELD = 1;
/** The longest delay a Node.js timer takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;
