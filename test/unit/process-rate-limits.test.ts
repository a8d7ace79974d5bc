import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ProcessRateLimitCounters } from '../../src/http/process-rate-limits.ts';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 22);

describe('the rate-limit counters the HTTP threads share', () => {
  it('counts a key in a fixed window from its first charge, then starts a new one', () => {
    const counters = new ProcessRateLimitCounters();
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0)).toEqual({ current: 1, ttl: MINUTE });
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0 + 1_000)).toEqual({
      current: 2,
      ttl: MINUTE - 1_000,
    });
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0 + MINUTE - 1)).toEqual({
      current: 3,
      ttl: 1,
    });
    // The window has ended: the next charge is the first of a new one.
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0 + MINUTE)).toEqual({
      current: 1,
      ttl: MINUTE,
    });
  });

  it('counts keys apart, comparing them whole', () => {
    const counters = new ProcessRateLimitCounters();
    counters.charge('authentication:ip:10.0.0.1', MINUTE, T0);
    counters.charge('authentication:ip:10.0.0.1', MINUTE, T0);
    expect(counters.charge('authentication:ip:10.0.0.2', MINUTE, T0).current).toBe(1);
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0).current).toBe(3);
    expect(counters.charge('authentication:ip:10.0.0.12', MINUTE, T0).current).toBe(1);
  });

  it('counts a key longer than a slot holds by its digest, still apart from its neighbours', () => {
    const counters = new ProcessRateLimitCounters();
    const long = `authentication:caller:${'a'.repeat(100)}`;
    counters.charge(`${long}1`, MINUTE, T0);
    expect(counters.charge(`${long}1`, MINUTE, T0).current).toBe(2);
    expect(counters.charge(`${long}2`, MINUTE, T0).current).toBe(1);
  });

  it('keeps a live counter through a flood of keys whose windows end sooner', () => {
    const counters = new ProcessRateLimitCounters();
    counters.charge('authentication:ip:10.0.0.1', MINUTE, T0);
    // Six times as many keys as the table has slots, each window ending before the first's.
    for (let index = 0; index < 100_000; index += 1) counters.charge(`flood:${index}`, 1_000, T0);
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0 + 1).current).toBe(2);
  });

  it('gives way, like any bounded store, to a flood of more live keys than it holds', () => {
    const counters = new ProcessRateLimitCounters();
    counters.charge('authentication:ip:10.0.0.1', MINUTE, T0);
    for (let index = 0; index < 100_000; index += 1) counters.charge(`flood:${index}`, 2 * MINUTE, T0);
    expect(counters.charge('authentication:ip:10.0.0.1', MINUTE, T0 + 1).current).toBe(1);
  });

  it('hands each of many charges from several threads at once its own count', async () => {
    const counters = new ProcessRateLimitCounters();
    const key = 'authentication:caller:10.0.0.1';
    const charges = 100_000;
    const threads = [1, 2].map(
      () =>
        new Worker(new URL('../helpers/rate-limit-counter-thread.ts', import.meta.url), {
          workerData: { table: counters.shared, key, charges },
        }),
    );
    await Promise.all(threads.map((thread) => once(thread, 'online')));
    const answers = threads.map(async (thread) => (await once(thread, 'message'))[0] as number[]);
    for (const thread of threads) thread.postMessage('go');
    const own = Array.from({ length: charges }, () => counters.charge(key, MINUTE).current);
    const seen = [...own, ...(await Promise.all(answers)).flat()].sort((a, b) => a - b);
    // No two charges saw the same count, and none was lost.
    expect(seen).toEqual(Array.from({ length: 3 * charges }, (_, index) => index + 1));
  });
});
