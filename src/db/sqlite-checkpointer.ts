import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { workerEntry } from '../threads/worker-entry.ts';

/**
 * Moves SQLite's WAL checkpoints off the event loop.
 *
 * In WAL mode a commit only appends to the log; the checkpoint that copies the log back into the
 * database file is what calls fsync. SQLite runs it inside whichever commit crosses
 * `wal_autocheckpoint` pages, so every few dozen audited writes one request would stall the
 * event loop for an fsync (measured on this machine kind: 3.6k → 9k single-row transactions/s
 * with five indexes once checkpoints stopped landing on commits). A worker thread with its own
 * connection runs a PASSIVE checkpoint every interval instead: it never blocks readers or
 * writers, and the main connection's autocheckpoint stays on, with a higher threshold, as the
 * safety net should the worker ever fall behind.
 */

export const MAIN_CONNECTION_AUTOCHECKPOINT_PAGES = 10_000;
/** SQLite's own threshold, restored should the checkpointing thread fail. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
const CHECKPOINT_INTERVAL_MS = 250;
/** The operating system's name for the checkpointing thread (`top -H`, /proc). */
export const CHECKPOINTER_THREAD_NAME = 'checkpointer';

interface CheckpointerData {
  /** Tells this thread apart from others whose code imports this module (HTTP threads). */
  readonly role: 'sqlite-checkpointer';
  readonly file: string;
  readonly intervalMs: number;
}

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Starts the checkpointing thread for a database file. Should the thread ever fail (it cannot
 * open the file, say), `onFailure` runs once: the caller hands checkpoints back to its own
 * connection, so the log never grows without bound.
 */
export function startCheckpointer(file: string, onFailure: (error: unknown) => void): Checkpointer {
  const worker = new Worker(workerEntry('sqlite-checkpointer', import.meta.url), {
    name: CHECKPOINTER_THREAD_NAME,
    workerData: {
      role: 'sqlite-checkpointer',
      file,
      intervalMs: CHECKPOINT_INTERVAL_MS,
    } satisfies CheckpointerData,
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 },
  });
  // It must never keep the process alive: it holds nothing a checkpoint on reopening would lose.
  worker.unref();
  let running = true;
  const exited = new Promise<void>((resolve) =>
    worker.once('exit', () => {
      running = false;
      resolve();
    }),
  );
  worker.once('error', onFailure);
  return {
    stop: async () => {
      if (!running) return;
      // Referenced again while it closes its connection, so the wait itself keeps us alive.
      worker.ref();
      worker.postMessage('stop');
      await exited;
    },
  };
}

function runCheckpointer({ file, intervalMs }: CheckpointerData): void {
  const database = new BetterSqlite3(file);
  database.pragma('busy_timeout = 1000');
  const checkpoint = database.prepare('pragma wal_checkpoint(PASSIVE)');
  const timer = setInterval(() => {
    try {
      checkpoint.run();
    } catch {
      // Busy or locked: the next tick tries again, and the main connection's autocheckpoint
      // remains as the safety net.
    }
  }, intervalMs);
  parentPort?.on('message', () => {
    clearInterval(timer);
    database.close();
    parentPort?.close();
  });
}

if (!isMainThread && (workerData as Partial<CheckpointerData> | null)?.role === 'sqlite-checkpointer') {
  runCheckpointer(workerData as CheckpointerData);
}
