import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadWriteLock } from '../../src/db/thread-write-lock.ts';

/** Checks that `turn` (a side waiting for the lock) is still waiting after `ms`. */
async function expectStillWaiting(turn: Promise<unknown>, ms = 20): Promise<void> {
  let settled = false;
  void turn.then(() => (settled = true));
  await sleep(ms);
  expect(settled).toBe(false);
}

describe('the SQLite write lock the HTTP threads share', () => {
  it('lets one holder in at a time; a release lets a waiting side in', async () => {
    const first = new ThreadWriteLock();
    const second = new ThreadWriteLock(first.shared);
    await first.acquire();
    const secondTurn = second.acquire();
    await expectStillWaiting(secondTurn);
    first.release();
    await secondTurn;
    // Now the first side waits, and a release by a side that does not hold it changes nothing.
    const firstTurn = first.acquire();
    first.release();
    await expectStillWaiting(firstTurn);
    second.release();
    await firstTurn;
    first.release();
  });

  it('makes another thread wait, without blocking either, until the holder releases', async () => {
    const lock = new ThreadWriteLock();
    await lock.acquire();
    const thread = new Worker(new URL('../helpers/write-lock-thread.ts', import.meta.url), {
      workerData: lock.shared,
    });
    try {
      const turn = once(thread, 'message');
      await expectStillWaiting(turn, 100);
      lock.release();
      await turn;
      // The other thread holds it now: this side waits, its timers running meanwhile.
      const myTurn = lock.acquire();
      await expectStillWaiting(myTurn);
      thread.postMessage('release');
      await myTurn;
      lock.release();
    } finally {
      await thread.terminate();
    }
  });
});
