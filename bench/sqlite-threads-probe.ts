/**
 * A probe beside the benchmark (`node bench/sqlite-threads-probe.ts`, about half a minute):
 * what the reads of one request cost on SQLite when one thread runs them, and when two threads,
 * each with its own connection to the same file as the service's HTTP threads have, run them at
 * once.
 *
 * Every statement outside a transaction opens and closes a read transaction, and each of those
 * takes and releases a mutex that all connections of the process to the file share (the
 * wal-index's, in `walTryBeginRead` and `pager_unlock`). Statements run back to back on two
 * threads queue for it, and each hand-over is a futex wake-up. The probe runs the authenticated
 * read's statements as they were (the identity, the person, the two-factor flag), as they are
 * (the identity, then the person with the flag), and alone (the person with the flag), and the
 * old three inside one explicit transaction, for comparison.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { migrateToLatest } from '../src/db/migrate.ts';
import { openDatabase } from '../src/db/open-database.ts';

const SHAPES = ['three statements', 'two statements', 'one statement', 'three in one transaction'] as const;
type Shape = (typeof SHAPES)[number];
const ITERATIONS = 200_000;
const PERSONS = 1_000;

interface ProbeData {
  readonly file: string;
  readonly shape: Shape;
}

if (isMainThread) await main();
else parentPort!.postMessage(runShape(workerData as ProbeData));

async function main(): Promise<void> {
  const directory = mkdtempSync(join(tmpdir(), 'portcullis-probe-'));
  const file = join(directory, 'probe.db');
  try {
    const handle = openDatabase(`sqlite:${file}`, { sqliteCheckpointer: false });
    await migrateToLatest(handle.db);
    await handle.close();
    seedPersons(file);
    console.log(`µs per request (${ITERATIONS} requests per thread; with two threads, the slower one's):`);
    for (const shape of SHAPES) {
      const alone = await runThreads(file, shape, 1);
      const together = await runThreads(file, shape, 2);
      console.log(
        `  ${shape.padEnd(26)} one thread ${alone.toFixed(1)}   two threads at once ${together.toFixed(1)}`,
      );
    }
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

function seedPersons(file: string): void {
  const database = new BetterSqlite3(file);
  const insert = database.prepare(
    `insert into persons (id, name, email, email_normalized, role, scope_id, password_hash, security_stamp,
       created_at, updated_at) values (?, ?, ?, ?, 2, null, 'hash', 'stamp', ?, ?)`,
  );
  const now = new Date().toISOString();
  database.transaction(() => {
    for (let index = 0; index < PERSONS; index += 1) {
      const email = `person${index}@example.com`;
      insert.run(crypto.randomUUID(), `Person ${index}`, email, email, now, now);
    }
  })();
  database.close();
}

async function runThreads(file: string, shape: Shape, threads: number): Promise<number> {
  const perThread = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<number>((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), {
            workerData: { file, shape } satisfies ProbeData,
          });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  return Math.max(...perThread);
}

/** Runs one shape on a connection of its own, as an HTTP thread would; µs per request. */
function runShape({ file, shape }: ProbeData): number {
  const database = new BetterSqlite3(file);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  const ids = (database.prepare('select id from persons').all() as Array<{ id: string }>).map(
    (row) => row.id,
  );
  const identity = database.prepare(
    `select "id", "role", "scope_id", "security_stamp", "deleted_at", "erasure_requested_at",
       "anonymised_at", "restricted_at" from "persons" where "id" = +?`,
  );
  const person = database.prepare('select * from "persons" where "id" = +? and "deleted_at" is null');
  const twoFactor = database.prepare(
    'select "person_id" from "two_factor_configs" where "person_id" = +? and "status" = +?',
  );
  const personWithTwoFactor = database.prepare(
    `select "persons".*, case when exists (select "person_id" from "two_factor_configs"
       where "person_id" = "persons"."id" and "status" = +?) then 1 else 0 end as "two_factor_active"
     from "persons" where "id" = +? and "deleted_at" is null`,
  );
  const begin = database.prepare('begin');
  const commit = database.prepare('commit');
  const request: Record<Shape, (id: string) => void> = {
    'three statements': (id) => {
      identity.all(id);
      person.all(id);
      twoFactor.all(id, 'active');
    },
    'two statements': (id) => {
      identity.all(id);
      personWithTwoFactor.all('active', id);
    },
    'one statement': (id) => {
      personWithTwoFactor.all('active', id);
    },
    'three in one transaction': (id) => {
      begin.run();
      identity.all(id);
      person.all(id);
      twoFactor.all(id, 'active');
      commit.run();
    },
  };
  const run = request[shape];
  for (let index = 0; index < ITERATIONS / 10; index += 1) run(ids[index % ids.length] as string);
  const started = performance.now();
  for (let index = 0; index < ITERATIONS; index += 1) run(ids[index % ids.length] as string);
  const elapsed = performance.now() - started;
  database.close();
  return (elapsed * 1000) / ITERATIONS;
}
