import { parentPort, workerData } from 'node:worker_threads';

/**
 * One busy thread of the steadiness meter (steadiness.ts): repeats a fixed unit of work, a chain of
 * integer operations of a few hundred nanoseconds that touches no memory, and reads the clock after
 * each. A unit that took far longer than the usual one was a time its thread did not run: the
 * kernel gave the core to another thread, or the host took the virtual CPU away. Nothing here
 * allocates, so no collection of this thread's can pass for one.
 */
const { seconds } = workerData as { seconds: number };

/** A unit this long or longer counts as time the thread was held up, not as work. */
const HELD_UP_MS = 0.1;

const started = performance.now();
const until = started + seconds * 1000;
let state = 0x2545f491;
let units = 0;
let heldUpUnits = 0;
let heldUpMs = 0;
let stallsOver1Ms = 0;
let stallsOver5Ms = 0;
let longestMs = 0;
let previous = started;
while (previous < until) {
  for (let i = 0; i < 100; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
  }
  const now = performance.now();
  const unitMs = now - previous;
  previous = now;
  units += 1;
  if (unitMs >= HELD_UP_MS) {
    heldUpUnits += 1;
    heldUpMs += unitMs;
    if (unitMs >= 1) stallsOver1Ms += 1;
    if (unitMs >= 5) stallsOver5Ms += 1;
    if (unitMs > longestMs) longestMs = unitMs;
  }
}
parentPort!.postMessage({
  elapsedMs: previous - started,
  units,
  heldUpUnits,
  heldUpMs,
  stallsOver1Ms,
  stallsOver5Ms,
  longestMs,
  // Keeps the chain from being optimised away.
  state,
});
