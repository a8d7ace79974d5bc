import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { remoteBound } from '../../src/crypto/concurrency.ts';

/**
 * A thread that runs work under the bound its parent serves (concurrency test): told 'hold',
 * it takes a slot and keeps it until told 'release'; told 'try', it asks for a slot for 20 ms
 * and reports whether it was busy.
 */
const bound = remoteBound(workerData as MessagePort);
let release: (() => void) | null = null;
parentPort!.on('message', (command: string) => {
  if (command === 'hold') {
    void bound.run(() => {
      parentPort!.postMessage('holding');
      return new Promise<void>((resolve) => (release = resolve));
    }, 1_000);
  } else if (command === 'release') {
    release?.();
  } else if (command === 'try') {
    void bound
      .run(async () => 'ran', 20)
      .then((outcome) => parentPort!.postMessage('busy' in outcome ? 'busy' : 'ran'));
  } else {
    parentPort!.close();
  }
});
