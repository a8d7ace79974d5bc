import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/open-database.ts';
import { preparedQuery } from '../../src/db/prepared-query.ts';

/**
 * The reads of one turn of the event loop share one SQLite read transaction
 * (src/db/sqlite-read-snapshots.ts). `other` is a second connection to the same file, as another
 * HTTP thread holds; it runs synchronously, so its commits land exactly between two reads.
 */

const countItems = preparedQuery(0, (db) =>
  (db as unknown as Db).selectFrom(sql`items`.as('items') as never).select(sql<number>`count(*)`.as('count')),
);
const count = async (handle: DatabaseHandle) => (await countItems(handle.db))[0]!;

describe('SQLite read snapshots', () => {
  let directory: string;
  let handle: DatabaseHandle;
  let other: BetterSqlite3.Database;
  const insertElsewhere = () => other.prepare(`insert into items (name) values ('elsewhere')`).run();
  const countElsewhere = () => other.prepare('select count(*) as count from items').get();

  beforeEach(async () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-read-snapshots-'));
    const url = `sqlite:${join(directory, 'identity.db')}`;
    handle = openDatabase(url, { sqliteCheckpointer: false });
    await sql`create table items (name text not null)`.execute(handle.db);
    other = new BetterSqlite3(join(directory, 'identity.db'));
    // Each test starts on a turn of its own, with no snapshot open from the set-up.
    await nextTurn();
  });
  afterEach(async () => {
    other.close();
    await handle.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it('the reads of one turn agree with each other, though another connection commits between them', async () => {
    const first = await count(handle);
    insertElsewhere();
    const second = await count(handle);
    expect(second).toEqual(first);
  });

  it('a read in a later turn sees every commit that finished before it', async () => {
    expect(await count(handle)).toEqual({ count: 0 });
    insertElsewhere();
    await nextTurn();
    expect(await count(handle)).toEqual({ count: 1 });
  });

  it('a write after a read in the same turn commits at once, outside the snapshot', async () => {
    expect(await count(handle)).toEqual({ count: 0 });
    await sql`insert into items (name) values ('here')`.execute(handle.db);
    // Had the insert joined the read transaction, it would wait uncommitted for the turn's end.
    expect(countElsewhere()).toEqual({ count: 1 });
  });

  it('a command’s transaction begun in the same turn as a read takes the write lock and commits', async () => {
    expect(await count(handle)).toEqual({ count: 0 });
    // Not through the group commit, which starts on a later turn: Kysely's transaction begins
    // (`begin immediate`) while the read snapshot is still open.
    await handle.db.transaction().execute(async (tx) => {
      await sql`insert into items (name) values ('in a transaction')`.execute(tx);
    });
    expect(countElsewhere()).toEqual({ count: 1 });
    expect(await count(handle)).toEqual({ count: 1 });
  });

  it('a command’s group commit after a read sees and keeps its own writes', async () => {
    expect(await count(handle)).toEqual({ count: 0 });
    const counted = await handle.writes.run(async (tx) => {
      await sql`insert into items (name) values ('grouped')`.execute(tx);
      return (await countItems(tx))[0];
    });
    expect(counted).toEqual({ count: 1 });
    expect(await count(handle)).toEqual({ count: 1 });
  });
});
