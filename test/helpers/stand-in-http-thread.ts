import { parentPort, workerData } from 'node:worker_threads';
import { CLOSE, type HttpThreadData, LISTENING } from '../../src/threads/http-threads.ts';

/**
 * Stands in for src/threads/http-thread.ts (http-threads test): says it listens, then exits
 * with code 3 when its config's port is 3 (a thread that dies), or cleanly when told to close.
 */
const data = workerData as HttpThreadData;
parentPort!.postMessage(LISTENING);
if (data.port === 3) process.exit(3);
parentPort!.on('message', (message) => {
  if (message === CLOSE) parentPort!.close();
});
