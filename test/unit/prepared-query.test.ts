import { CompiledQuery, sql } from 'kysely';
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

describe('SQLite parameters', () => {
  let handle: DatabaseHandle;
  beforeEach(async () => {
    handle = openDatabase('sqlite::memory:');
    await sql`create table parents (id text primary key, deleted_at text)`.execute(handle.db);
    await sql`create table children (id text primary key, parent_id text, rank integer)`.execute(handle.db);
    await sql`insert into parents values ('p', null), ('1', null)`.execute(handle.db);
    await sql`insert into children values ('c', 'p', 1), ('d', 'p', 2), ('2', '1', 3)`.execute(handle.db);
  });
  afterEach(() => handle.close());

  // A bare `?` in a join's WHERE clause makes SQLite re-plan the statement on every run; the
  // compiler writes `+?`, which keeps the plan while comparing exactly as `?` would.
  const childrenOf = (parentId: unknown, minimumRank: unknown) =>
    sql<{ id: string }>`select c.id from children c join parents p on p.id = c.parent_id
      where p.id = ${parentId} and c.rank >= ${minimumRank} order by c.id`;

  it('are written as unary-plus expressions', () => {
    expect(childrenOf('p', 1).compile(handle.db).sql).toMatch(/p\.id = \+\? and c\.rank >= \+\?/);
  });

  it('answer exactly as bare parameters do, whatever the type of the value', async () => {
    for (const [parentId, minimumRank] of [
      ['p', 2],
      [1, 0],
      ['1', '0'],
      [null, 0],
      ['p', '1.5'],
    ] as const) {
      const query = childrenOf(parentId, minimumRank).compile(handle.db);
      const bare = CompiledQuery.raw(query.sql.replaceAll('+?', '?'), [...query.parameters]);
      const expected = (await handle.db.executeQuery(bare)).rows;
      expect((await handle.db.executeQuery(query)).rows).toEqual(expected);
    }
    expect((await childrenOf('p', 2).execute(handle.db)).rows).toEqual([{ id: 'd' }]);
  });
});
