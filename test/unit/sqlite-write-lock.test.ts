import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Tx } from '../../src/db/database.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/open-database.ts';

/**
 * Two connections to one SQLite file, as two HTTP threads hold (src/db/sqlite-dialect.ts). Here
 * both live in one thread, which makes the test strict: a wait that blocked the thread would
 * also stop the connection it waits for.
 */

const insert = (tx: Tx, name: string) => sql`insert into items (name) values (${name})`.execute(tx);
const names = async (handle: DatabaseHandle) =>
  (await sql<{ name: string }>`select name from items order by rowid`.execute(handle.db)).rows.map(
    (row) => row.name,
  );

/** A write transaction on `handle` that has written `name` and holds the lock until released. */
async function holdWriteLock(handle: DatabaseHandle, name: string) {
  let release!: () => void;
  const committed = handle.writes.run(async (tx) => {
    await insert(tx, name);
    await new Promise<void>((resolve) => (release = resolve));
  });
  await sleep(5);
  return { committed, release: () => release() };
}

describe('SQLite write transactions across connections', () => {
  let directory: string;
  let first: DatabaseHandle;
  let second: DatabaseHandle;

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-write-lock-'));
    const url = `sqlite:${join(directory, 'identity.db')}`;
    first = openDatabase(url, { sqliteCheckpointer: false });
    second = openDatabase(url, { sqliteCheckpointer: false });
    await sql`create table items (name text not null)`.execute(first.db);
  });
  afterEach(async () => {
    await first.close();
    await second.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('a transaction that read before another connection wrote still commits: the lock is taken at its start', async () => {
    // The first transaction reads, then pauses (a timer: the thread goes on) before it writes.
    // Had it begun without the lock, the second connection's commit in that pause would leave
    // it on an old snapshot, and its write would fail with SQLITE_BUSY_SNAPSHOT.
    const reader = first.writes.run(async (tx) => {
      const before = (await sql<{ n: number }>`select count(*) as n from items`.execute(tx)).rows[0]!.n;
      await sleep(30);
      await insert(tx, 'first');
      return before;
    });
    await sleep(5);
    const writer = second.writes.run((tx) => insert(tx, 'second'));
    expect(await Promise.all([reader, writer])).toEqual([0, expect.anything()]);
    // The second connection waited for the first one's commit.
    expect(await names(first)).toEqual(['first', 'second']);
  });

  it('waits for the lock without blocking the thread, and takes it once the holder commits', async () => {
    const held = await holdWriteLock(first, 'first');
    const waiting = second.writes.run((tx) => insert(tx, 'second'));
    let settled = false;
    void waiting.then(() => (settled = true));
    // SQLite's own busy wait would freeze this thread for its whole timeout (5 s): timers
    // would stop, and so would the transaction it waits for.
    const pausedAt = Date.now();
    await sleep(50);
    expect(Date.now() - pausedAt).toBeLessThan(1000);
    expect(settled).toBe(false);
    held.release();
    await Promise.all([held.committed, waiting]);
    expect(await names(second)).toEqual(['first', 'second']);
  });

  it('commands that arrive while a connection waits for the lock share the commit it then makes', async () => {
    const held = await holdWriteLock(first, 'held');
    // What has committed when each command runs tells which batch it belongs to.
    const committedWhenRun: number[] = [];
    const command = (name: string) =>
      second.writes.run(async (tx) => {
        committedWhenRun.push((await names(first)).length);
        await insert(tx, name);
      });
    const early = command('early');
    await sleep(20); // the second connection is waiting for the lock now
    const late = [command('late 1'), command('late 2')];
    held.release();
    await Promise.all([held.committed, early, ...late]);
    // One batch: all three ran before any of them had committed.
    expect(committedWhenRun).toEqual([1, 1, 1]);
    // Read on the connection that committed last: `first` read in this same turn (above), and
    // the reads of one turn share a snapshot (sqlite-read-snapshots.ts).
    expect(await names(second)).toEqual(['held', 'early', 'late 1', 'late 2']);
  });

  it('with the process lock shared, a rolled-back transaction lets the next writer in, and a commit does too', async () => {
    const url = `sqlite:${join(directory, 'identity.db')}`;
    const sharing = openDatabase(url, { sqliteCheckpointer: false, sqliteWriteLock: first.sqliteWriteLock });
    try {
      const failed = first.writes.run(async (tx) => {
        await insert(tx, 'rolled back');
        throw new Error('the command failed');
      });
      const after = sharing.writes.run((tx) => insert(tx, 'after the rollback'));
      await expect(failed).rejects.toThrow('the command failed');
      await after;
      await first.writes.run((tx) => insert(tx, 'after the commit'));
      expect(await names(first)).toEqual(['after the rollback', 'after the commit']);
    } finally {
      await sharing.close();
    }
  });
});
