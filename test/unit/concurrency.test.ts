import { describe, expect, it } from 'vitest';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';

describe('ConcurrencyBound', () => {
  it('never runs more than its limit at once and hands slots to waiters in order', async () => {
    const bound = new ConcurrencyBound(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const work = (id: number) => async () => {
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(id);
      running -= 1;
      return id;
    };
    const results = await Promise.all([1, 2, 3, 4, 5].map((id) => bound.run(work(id), 1_000)));
    expect(peak).toBe(2);
    expect(results.every((result) => !result.busy)).toBe(true);
    expect(order.slice(2)).toEqual([3, 4, 5]);
  });

  it('answers busy when no slot frees up within the wait', async () => {
    const bound = new ConcurrencyBound(1);
    let release!: () => void;
    const holder = bound.run(() => new Promise<void>((resolve) => (release = resolve)), 1_000);
    const waiter = await bound.run(async () => 'never', 20);
    expect(waiter).toEqual({ busy: true });
    release();
    await holder;
    // The timed-out waiter gave its place up: the next caller gets the slot at once.
    expect(await bound.run(async () => 'ran', 20)).toEqual({ busy: false, value: 'ran' });
  });
});
