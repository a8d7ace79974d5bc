import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { ThreadWriteLock } from '../../src/db/thread-write-lock.ts';

describe('the SQLite write lock the HTTP threads share', () => {
  it('lets one holder in at a time; a release lets a waiting side in', async () => {
    const first = new ThreadWriteLock();
    const second = new ThreadWriteLock(first.shared);
    await first.acquire();
    let secondIn = false;
    const secondTurn = second.acquire().then(() => (secondIn = true));
    await sleep(20);
    expect(secondIn).toBe(false);
    first.release();
    await secondTurn;
    // Now the first side waits, and a release by a side that does not hold it changes nothing.
    let firstIn = false;
    const firstTurn = first.acquire().then(() => (firstIn = true));
    first.release();
    await sleep(20);
    expect(firstIn).toBe(false);
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
      let acquired = false;
      const turn = once(thread, 'message').then(() => (acquired = true));
      await sleep(100);
      expect(acquired).toBe(false);
      lock.release();
      await turn;
      // The other thread holds it now: this side waits, its timers running meanwhile.
      let mine = false;
      const myTurn = lock.acquire().then(() => (mine = true));
      await sleep(20);
      expect(mine).toBe(false);
      thread.postMessage('release');
      await myTurn;
      lock.release();
    } finally {
      await thread.terminate();
    }
  });
});
