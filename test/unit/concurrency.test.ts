import { once } from 'node:events';
import { MessageChannel, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ConcurrencyBound, serveBound } from '../../src/crypto/concurrency.ts';

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
    expect(results.every((result) => 'value' in result)).toBe(true);
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
    expect(await bound.run(async () => 'ran', 20)).toEqual({ value: 'ran' });
  });
});

describe('work whose caller has gone', () => {
  it('does not run when its slot comes, and the slot passes straight on to the next waiter', async () => {
    const bound = new ConcurrencyBound(1);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holder = bound.run(() => held, 1_000);
    let callerConnected = true;
    const ran: string[] = [];
    const abandoned = bound.run(
      async () => ran.push('abandoned'),
      1_000,
      () => callerConnected,
    );
    const next = bound.run(async () => ran.push('next'), 1_000);
    callerConnected = false;
    release();
    expect(await abandoned).toEqual({ abandoned: true });
    expect(await next).toEqual({ value: 1 });
    expect(ran).toEqual(['next']);
    await holder;
  });

  it('runs when its caller is still there', async () => {
    expect(
      await new ConcurrencyBound(1).run(
        async () => 'ran',
        1_000,
        () => true,
      ),
    ).toEqual({ value: 'ran' });
  });
});

describe('one bound for every HTTP thread (spec §Authentication 10)', () => {
  it("counts another thread's checks against the same limit, both ways", async () => {
    const bound = new ConcurrencyBound(1);
    const channel = new MessageChannel();
    serveBound(bound, channel.port1);
    const thread = new Worker(new URL('../helpers/bound-thread.ts', import.meta.url), {
      workerData: channel.port2,
      transferList: [channel.port2],
    });
    const reply = () => once(thread, 'message').then(([message]) => message as string);
    try {
      // The other thread holds the one slot: this thread is told busy, and so is the other's next ask.
      thread.postMessage('hold');
      expect(await reply()).toBe('holding');
      expect(await bound.run(async () => 'ran', 20)).toEqual({ busy: true });
      thread.postMessage('try');
      expect(await reply()).toBe('busy');
      // Given back, the slot serves this thread; held here, the other thread is told busy.
      thread.postMessage('release');
      expect(await bound.run(async () => 'ran', 1_000)).toEqual({ value: 'ran' });
      let releaseHere!: () => void;
      const heldHere = bound.run(() => new Promise<void>((resolve) => (releaseHere = resolve)), 1_000);
      thread.postMessage('try');
      expect(await reply()).toBe('busy');
      releaseHere();
      await heldHere;
      thread.postMessage('try');
      expect(await reply()).toBe('ran');
    } finally {
      thread.postMessage('stop');
      await thread.terminate();
      channel.port1.close();
    }
  });
});
