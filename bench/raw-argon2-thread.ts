import { parentPort, workerData } from 'node:worker_threads';
import { verifySync } from '@node-rs/argon2';

/**
 * One thread of the raw Argon2id reference (run.ts, measureRawArgon2Rate): says it is ready, then,
 * given the time to stop at (a `Date.now()` value), verifies back to back until then and answers
 * how many it verified. Nothing waits between two verifies: no hand-over to another thread.
 */
const { stored, password } = workerData as { stored: string; password: string };
const port = parentPort!;
port.once('message', (until: number) => {
  let verified = 0;
  while (Date.now() < until) {
    verifySync(stored, password);
    verified += 1;
  }
  port.postMessage(verified);
});
port.postMessage('ready');
