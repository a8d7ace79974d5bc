import { describe, expect, it } from 'vitest';
import { BoundedWorkQueue } from '../../src/modules/account-email/work-queue.ts';
import { PASSWORD_RECOVERY_QUEUE_CAPACITY } from '../../src/modules/account-email/password-recovery.ts';

/** A worker that waits until the test releases it. */
function blockedWorker() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const done: number[] = [];
  return {
    done,
    release,
    work: async (item: number) => {
      await gate;
      done.push(item);
    },
  };
}

describe('BoundedWorkQueue (password-recovery flood)', () => {
  it('holds at most 1,024 waiting requests behind a blocked worker and drops the rest', async () => {
    expect(PASSWORD_RECOVERY_QUEUE_CAPACITY).toBe(1024);
    const worker = blockedWorker();
    const queue = new BoundedWorkQueue<number>({
      capacity: PASSWORD_RECOVERY_QUEUE_CAPACITY,
      work: worker.work,
      onError: () => {},
    });
    // The first item goes straight to the worker; 1,024 more wait; everything after is dropped.
    const accepted = Array.from({ length: 1100 }, (_, index) => queue.enqueue(index));
    expect(accepted.filter(Boolean)).toHaveLength(1 + 1024);
    expect(accepted.slice(0, 1025).every(Boolean)).toBe(true);
    expect(accepted.slice(1025).some(Boolean)).toBe(false);
    expect(queue.size).toBe(1024);

    worker.release();
    await queue.idle();
    expect(worker.done).toEqual(Array.from({ length: 1025 }, (_, index) => index));
    // Room again once drained.
    expect(queue.enqueue(5000)).toBe(true);
    await queue.idle();
    expect(worker.done.at(-1)).toBe(5000);
  });

  it('keeps working after a failed item, reporting the failure', async () => {
    const failures: unknown[] = [];
    const done: number[] = [];
    const queue = new BoundedWorkQueue<number>({
      capacity: 10,
      work: async (item) => {
        if (item === 2) throw new Error('boom');
        done.push(item);
      },
      onError: (error) => failures.push(error),
    });
    for (const item of [1, 2, 3]) queue.enqueue(item);
    await queue.idle();
    expect(done).toEqual([1, 3]);
    expect(failures).toHaveLength(1);
  });

  it('drops what is queued when stopped, and accepts nothing afterwards', async () => {
    const worker = blockedWorker();
    const queue = new BoundedWorkQueue<number>({ capacity: 10, work: worker.work, onError: () => {} });
    for (const item of [1, 2, 3]) queue.enqueue(item);
    const stopped = queue.stop();
    expect(queue.enqueue(4)).toBe(false);
    worker.release();
    await stopped;
    expect(worker.done).toEqual([1]);
  });
});
