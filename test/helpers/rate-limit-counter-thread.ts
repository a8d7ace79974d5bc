import { parentPort, workerData } from 'node:worker_threads';
import { ProcessRateLimitCounters, type SharedCounterTable } from '../../src/http/process-rate-limits.ts';

/**
 * A thread that charges one key of a shared counter table `charges` times, as soon as it is
 * told to, and answers with the count each charge saw (process-rate-limits test).
 */
const { table, key, charges } = workerData as { table: SharedCounterTable; key: string; charges: number };
const counters = new ProcessRateLimitCounters(table);
parentPort!.once('message', () => {
  const seen = Array.from({ length: charges }, () => counters.charge(key, 60_000).current);
  parentPort!.postMessage(seen);
  parentPort!.close();
});
