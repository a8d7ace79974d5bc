import { parentPort, workerData } from 'node:worker_threads';
import { ConcurrencyBound, type SharedBoundHandle } from '../../src/crypto/concurrency.ts';
import { stress } from './bound-stress.ts';

/**
 * A thread with its side of a bound made by its parent (concurrency test). Told 'hold', it takes
 * a slot and keeps it until told 'release'; told 'try', it asks for a slot for 20 ms and reports
 * whether it was busy; told 'queue', it asks for a slot for up to 5 s and, once it has one, takes
 * the next number from the shared `counter` cell and reports it (the order in which the threads'
 * waiters got their slots); told 'ask', it asks for a slot for up to 1 s, gives it straight back,
 * and reports whether it got one; told 'stress', it runs `stress` (bound-stress.ts) with
 * `counter` and reports the highest count of works running at once that it saw.
 */
const { handle, counter } = workerData as { handle: SharedBoundHandle; counter: Int32Array };
const bound = new ConcurrencyBound(handle);
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
  } else if (command === 'queue') {
    void bound.run(async () => parentPort!.postMessage(Atomics.add(counter, 0, 1)), 5_000);
  } else if (command === 'ask') {
    void bound.acquire(1_000).then((granted) => {
      if (granted) bound.release();
      parentPort!.postMessage(granted);
    });
  } else if (command === 'stress') {
    void stress(bound, counter).then((peak) => parentPort!.postMessage(peak));
  } else {
    parentPort!.close();
  }
});
