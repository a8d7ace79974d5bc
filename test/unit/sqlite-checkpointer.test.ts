import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/open-database.ts';
import { startCheckpointer } from '../../src/db/sqlite-checkpointer.ts';

describe('SQLite checkpoints off the event loop', () => {
  const directories: string[] = [];
  afterEach(() => {
    for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
  });

  it('copies committed pages into the database file from the worker, not on commit', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'portcullis-checkpoint-'));
    directories.push(directory);
    const file = join(directory, 'identity.db');
    const handle = openDatabase(`sqlite:${file}`);
    try {
      await sql`create table filler (body text not null)`.execute(handle.db);
      const sizeBefore = statSync(file).size;
      // About 100 pages of commits: far below the main connection's autocheckpoint threshold,
      // so only the worker's checkpoint can move them into the database file.
      for (let index = 0; index < 100; index += 1) {
        await sql`insert into filler (body) values (${'x'.repeat(4000)})`.execute(handle.db);
      }
      expect(statSync(file).size).toBe(sizeBefore);
      await expect
        .poll(() => statSync(file).size, { timeout: 5000, interval: 50 })
        .toBeGreaterThan(sizeBefore + 100 * 4000);
    } finally {
      await handle.close();
    }
  });

  it('reports a thread that cannot work, so the caller takes checkpoints back; stopping it then returns', async () => {
    const failures: unknown[] = [];
    const checkpointer = startCheckpointer(join(tmpdir(), 'no-such-directory', 'identity.db'), (error) =>
      failures.push(error),
    );
    await expect.poll(() => failures.length, { timeout: 5000, interval: 20 }).toBe(1);
    await checkpointer.stop();
  });
});
