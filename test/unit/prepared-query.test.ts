import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/database.ts';
import { type DatabaseHandle, openDatabase } from '../../src/db/open-database.ts';
import { preparedQuery } from '../../src/db/prepared-query.ts';

// A table of the real schema is not needed: the query is built untyped over a scratch table.
const countItems = preparedQuery(1, (db, name: string) =>
  (db as unknown as Db)
    .selectFrom(sql`items`.as('items') as never)
    .select(sql<number>`count(*)`.as('count'))
    .where(sql`name`, '=', name),
);

describe('prepared queries', () => {
  let handle: DatabaseHandle;
  beforeEach(async () => {
    handle = openDatabase('sqlite::memory:');
    await sql`create table items (name text not null)`.execute(handle.db);
  });
  afterEach(() => handle.close());

  it('run with new values each time, on the handle and inside a transaction alike', async () => {
    await sql`insert into items (name) values ('a'), ('a'), ('b')`.execute(handle.db);
    expect(await countItems(handle.db, 'a')).toEqual([{ count: 2 }]);
    expect(await countItems(handle.db, 'b')).toEqual([{ count: 1 }]);
    await handle.db.transaction().execute(async (tx) => {
      await sql`insert into items (name) values ('b')`.execute(tx);
      expect(await countItems(tx, 'b')).toEqual([{ count: 2 }]);
    });
  });

  it('never read another command’s uncommitted work: while a transaction is open, a read waits for it', async () => {
    let rollBack!: () => void;
    const held = new Promise<void>((resolve) => (rollBack = resolve));
    let inserted!: () => void;
    const insertDone = new Promise<void>((resolve) => (inserted = resolve));
    const transaction = handle.db
      .transaction()
      .execute(async (tx) => {
        await sql`insert into items (name) values ('uncommitted')`.execute(tx);
        inserted();
        await held;
        throw new Error('rolled back');
      })
      .catch(() => undefined);
    await insertDone;
    // Started while the transaction is open; had it run on the connection at once, it would see
    // the uncommitted row. It queues, and runs after the rollback.
    const read = countItems(handle.db, 'uncommitted');
    rollBack();
    await transaction;
    expect(await read).toEqual([{ count: 0 }]);
  });
});
