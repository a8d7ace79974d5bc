import { parentPort, workerData } from 'node:worker_threads';
import { ThreadWriteLock } from '../../src/db/thread-write-lock.ts';

/** A thread that takes the shared write lock, says so, and releases it when told (thread-write-lock test). */
const lock = new ThreadWriteLock(workerData as SharedArrayBuffer);
await lock.acquire();
parentPort!.postMessage('acquired');
parentPort!.once('message', () => {
  lock.release();
  parentPort!.close();
});
