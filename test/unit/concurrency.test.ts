import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { stress } from '../helpers/bound-stress.ts';

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
  /** A thread with its side of `bound` (thread 1 of it), and a counter cell both threads share. */
  function startThread(bound: ConcurrencyBound) {
    const counter = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
    const thread = new Worker(new URL('../helpers/bound-thread.ts', import.meta.url), {
      workerData: { handle: bound.handleFor(1), counter },
    });
    const reply = () => once(thread, 'message').then(([message]) => message as unknown);
    const stop = async () => {
      thread.postMessage('stop');
      await thread.terminate();
    };
    return { thread, counter, reply, stop };
  }

  it("counts another thread's checks against the same limit, both ways", async () => {
    const bound = new ConcurrencyBound(1, 2);
    const { thread, reply, stop } = startThread(bound);
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
      const [heldHere, releaseHere] = holdSlot(bound);
      thread.postMessage('try');
      expect(await reply()).toBe('busy');
      releaseHere();
      await heldHere;
      thread.postMessage('try');
      expect(await reply()).toBe('ran');
    } finally {
      await stop();
    }
  });

  it('hands a slot to the waiter that asked first, whichever thread it asked on', async () => {
    const bound = new ConcurrencyBound(1, 2);
    const { thread, counter, reply, stop } = startThread(bound);
    try {
      const [heldHere, releaseHere] = holdSlot(bound);
      // The other thread asks first, then this thread; each takes a turn number once it has a slot.
      thread.postMessage('queue');
      const otherTurn = reply();
      await waitUntil(() => bound.waiting() === 1);
      const hereTurn = bound.run(async () => Atomics.add(counter, 0, 1), 5_000);
      releaseHere();
      await heldHere;
      expect(await otherTurn).toBe(0);
      expect(await hereTurn).toEqual({ value: 1 });
    } finally {
      await stop();
    }
  });

  it('wakes a waiter of the other thread however soon after its ask the slot comes back', async () => {
    const bound = new ConcurrencyBound(1, 2);
    const { thread, reply, stop } = startThread(bound);
    try {
      // Each round gives the slot back the moment the other thread's ask has taken its ticket, so
      // the release races that thread's check of its slot and the wait it starts after it. A wake
      // lost in between left the ask waiting until its time ran out, and the slot taken after it.
      for (let round = 0; round < 20_000; round += 1) {
        expect(await bound.acquire(1_000)).toBe(true);
        thread.postMessage('ask');
        const granted = reply();
        const deadline = Date.now() + 5_000;
        while (bound.waiting() !== 1 && Date.now() < deadline);
        bound.release();
        expect(await granted).toBe(true);
      }
    } finally {
      await stop();
    }
  });

  it('lets a waiter of the other thread in when a waiter before it gave up', async () => {
    const bound = new ConcurrencyBound(1, 2);
    const { thread, reply, stop } = startThread(bound);
    try {
      const [heldHere, releaseHere] = holdSlot(bound);
      // This thread's ask gives up before the slot comes; the other thread's, made after it, waits.
      const gaveUp = bound.run(async () => 'never', 20);
      thread.postMessage('queue');
      const otherTurn = reply();
      await waitUntil(() => bound.waiting() === 2);
      expect(await gaveUp).toEqual({ busy: true });
      releaseHere();
      await heldHere;
      expect(await otherTurn).toBe(0);
    } finally {
      await stop();
    }
  });

  it('refuses a side for a thread it was not made for', () => {
    const bound = new ConcurrencyBound(2, 2);
    expect(() => bound.handleFor(2)).toThrow(RangeError);
    expect(() => new ConcurrencyBound({ shared: bound.handleFor(1).shared, thread: 2 })).toThrow(RangeError);
  });

  it('never runs more than its limit at once across threads', async () => {
    const bound = new ConcurrencyBound(2, 2);
    const { thread, counter, reply, stop } = startThread(bound);
    try {
      thread.postMessage('stress');
      const [peakThere, peakHere] = await Promise.all([reply(), stress(bound, counter)]);
      expect(Math.max(peakThere as number, peakHere)).toBe(2);
      expect(counter[0]).toBe(0);
    } finally {
      await stop();
    }
  });
});

/** Takes a slot of `bound` on this thread: the work holding it, and what ends that work. */
function holdSlot(bound: ConcurrencyBound): [Promise<unknown>, () => void] {
  let release!: () => void;
  const held = bound.run(() => new Promise<void>((resolve) => (release = resolve)), 5_000);
  // The work starts once the slot is granted, a turn later: `release` is read when called.
  return [held, () => release()];
}

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let waited = 0; !condition(); waited += 5) {
    if (waited > 5_000) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
