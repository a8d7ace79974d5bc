import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Tx } from '../../src/db/database.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/open-database.ts';
import { preparedQuery } from '../../src/db/prepared-query.ts';
import type { WriteTransactions } from '../../src/db/write-transactions.ts';

const insert = (tx: Tx, name: string) => sql`insert into items (name) values (${name})`.execute(tx);
// The tables are made by the tests, so the queries are built with an untyped handle.
const insertPrepared = preparedQuery(1, (db, name: string) =>
  (db as unknown as Kysely<Items>).insertInto('items').values({ name }),
);
const selectNamesPrepared = preparedQuery(0, (db) =>
  (db as unknown as Kysely<Items>).selectFrom('items').select('name').orderBy('name'),
);
interface Items {
  items: { name: string };
}

describe('SQLite group commit', () => {
  let directory: string;
  let handle: DatabaseHandle;
  let writes: WriteTransactions;
  /** A second connection to the same file: it sees only what has committed. */
  let observer: BetterSqlite3.Database;
  const committedNames = () =>
    (observer.prepare('select name from items order by name').all() as Array<{ name: string }>).map(
      (row) => row.name,
    );

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-group-commit-'));
    const file = join(directory, 'identity.db');
    handle = openDatabase(`sqlite:${file}`, { sqliteGroupCommitBatch: 4 });
    await sql`create table items (name text not null unique)`.execute(handle.db);
    await sql`create table children (item text not null references items (name))`.execute(handle.db);
    writes = handle.writes;
    observer = new BetterSqlite3(file);
  });
  afterEach(async () => {
    observer.close();
    await handle.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('runs commands that arrive together in one transaction, answering each only after the commit', async () => {
    const seenByObserverDuringSecond: string[][] = [];
    const first = writes.run((tx) => insert(tx, 'a').then(() => 'first'));
    const second = writes.run(async (tx) => {
      seenByObserverDuringSecond.push(committedNames());
      // The first command's row is visible here: both run in the same transaction.
      const rows = await sql<{ name: string }>`select name from items`.execute(tx);
      await insert(tx, 'b');
      return rows.rows.map((row) => row.name);
    });
    expect(await Promise.all([first, second])).toEqual(['first', ['a']]);
    // While the second command ran, nothing of the batch had committed yet.
    expect(seenByObserverDuringSecond).toEqual([[]]);
    expect(committedNames()).toEqual(['a', 'b']);
  });

  it('runs prepared queries on the transaction of the batch: they see its writes, and fail with their command', async () => {
    const outcomes = await Promise.allSettled([
      writes.run((tx) => insertPrepared(tx, 'a')),
      writes.run(async (tx) => {
        await insertPrepared(tx, 'half-written');
        await insertPrepared(tx, 'a'); // unique violation
      }),
      writes.run(async (tx) => {
        await insertPrepared(tx, 'c');
        return (await selectNamesPrepared(tx)).map((row) => row.name);
      }),
    ]);
    expect(outcomes).toEqual([
      { status: 'fulfilled', value: [] },
      { status: 'rejected', reason: expect.objectContaining({ code: 'SQLITE_CONSTRAINT_UNIQUE' }) },
      // Uncommitted yet, the batch's own rows: the first command's, and this one's.
      { status: 'fulfilled', value: ['a', 'c'] },
    ]);
    expect(committedNames()).toEqual(['a', 'c']);
  });

  it('refuses a prepared query on the transaction of a batch that has committed', async () => {
    let kept: Tx | undefined;
    await writes.run(async (tx) => {
      kept = tx;
      await insertPrepared(tx, 'a');
    });
    await expect(insertPrepared(kept!, 'late')).rejects.toThrow('Transaction is already committed');
    expect(committedNames()).toEqual(['a']);
  });

  it('refuses a query built by Kysely on the transaction of a batch that has ended', async () => {
    let committedTx: Tx | undefined;
    await writes.run(async (tx) => {
      committedTx = tx;
      await insert(tx, 'a');
    });
    let rolledBackTx: Tx | undefined;
    await expect(
      writes.run(async (tx) => {
        rolledBackTx = tx;
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    await expect(insert(committedTx!, 'late')).rejects.toThrow('Transaction is already committed');
    await expect(insert(rolledBackTx!, 'late')).rejects.toThrow('Transaction is already rolled back');
    expect(committedNames()).toEqual(['a']);
  });

  it('holds the connection while a batch is open: a query made outside it waits, and sees only what committed', async () => {
    let outsideRead: Promise<string[]> | undefined;
    await writes.run(async (tx) => {
      await insert(tx, 'a');
      outsideRead = sql<{ name: string }>`select name from items`
        .execute(handle.db)
        .then((result) => result.rows.map((row) => row.name));
      // Run now, on the same connection, the read would see the uncommitted row and take part
      // in the batch's transaction.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await insert(tx, 'b');
    });
    expect(await outsideRead).toEqual(['a', 'b']);
    expect(committedNames()).toEqual(['a', 'b']);
  });

  it('rolls a failing command back to its savepoint; the others of its batch commit', async () => {
    const outcomes = await Promise.allSettled([
      writes.run((tx) => insert(tx, 'a')),
      writes.run(async (tx) => {
        await insert(tx, 'half-written');
        await insert(tx, 'a'); // unique violation
      }),
      writes.run((tx) => insert(tx, 'c')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(committedNames()).toEqual(['a', 'c']);
  });

  it('runs a single write statement without a savepoint: if it fails, nothing of it stands', async () => {
    const outcomes = await Promise.allSettled([
      writes.run((tx) => insert(tx, 'a')),
      writes.runSingleWrite((tx) => insert(tx, 'a')), // unique violation
      writes.runSingleWrite((tx) => insert(tx, 'b')),
      writes.run((tx) => insert(tx, 'c')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(committedNames()).toEqual(['a', 'b', 'c']);
  });

  it('rejects the whole batch when SQLite has rolled its transaction back, running nothing after it', async () => {
    const outcomes = await Promise.allSettled([
      writes.run((tx) => insert(tx, 'a')),
      // What SQLite does by itself after an I/O error or a full disk, in the middle of a batch.
      writes.runSingleWrite(async (tx) => {
        await sql`rollback`.execute(tx);
        throw new Error('disk I/O error');
      }),
      // Run now, this would commit on its own, outside any transaction.
      writes.runSingleWrite((tx) => insert(tx, 'c')),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(committedNames()).toEqual([]);
    await writes.run((tx) => insert(tx, 'after'));
    expect(committedNames()).toEqual(['after']);
  });

  it('rolls back a lone failing command entirely', async () => {
    await expect(
      writes.run(async (tx) => {
        await insert(tx, 'lone');
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(committedNames()).toEqual([]);
  });

  it('fails every command of a batch whose commit fails, and keeps none of them', async () => {
    const outcomes = await Promise.allSettled([
      writes.run((tx) => insert(tx, 'a')),
      writes.run(async (tx) => {
        // Checked at commit: the orphan row makes the commit itself fail.
        await sql`pragma defer_foreign_keys = on`.execute(tx);
        await sql`insert into children (item) values ('missing')`.execute(tx);
      }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    expect(committedNames()).toEqual([]);
    // The connection is usable again afterwards.
    await writes.run((tx) => insert(tx, 'after'));
    expect(committedNames()).toEqual(['after']);
  });

  it('shares one commit among at most the batch size; the rest follow in the next batches', async () => {
    const committedBeforeBatch = new Set<number>();
    const names = Array.from({ length: 10 }, (_, index) => `item ${String(index).padStart(2, '0')}`);
    await Promise.all(
      names.map((name) =>
        writes.run(async (tx) => {
          await insert(tx, name);
          // What has committed while a command runs tells which batch it belongs to.
          committedBeforeBatch.add(committedNames().length);
        }),
      ),
    );
    expect(committedNames()).toEqual(names);
    // Batches of 4, 4 and 2: the observer saw 0, then 4, then 8 committed rows.
    expect([...committedBeforeBatch]).toEqual([0, 4, 8]);
  });
});
