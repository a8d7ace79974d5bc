import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { startHttpThreads } from '../../src/threads/http-threads.ts';
import { TEST_ENV } from '../helpers/app.ts';

/** The main thread's side of the HTTP threads, with a stand-in for each thread's app. */
function options(port: number, onExit: (code: number) => void) {
  const silent = { error: () => {} } as never;
  return {
    config: loadConfig({ ...TEST_ENV, SERVICE_DATABASE_URL: 'sqlite:/unused/identity.db' }, () => {}),
    port,
    counters: null,
    sqliteWriteLock: null,
    // The main thread and up to two more.
    credentialChecks: new ConcurrencyBound(1, 3),
    log: silent,
    onExit,
    entry: new URL('../helpers/stand-in-http-thread.ts', import.meta.url),
  };
}

describe('the HTTP threads of the main thread', () => {
  it('reports a thread that exits on its own, and still closes the rest', async () => {
    const exits: number[] = [];
    const starting = startHttpThreads(
      1,
      options(3, (code) => exits.push(code)),
    );
    // Keep this thread busy while the other one starts, says it listens and exits: both then
    // reach this side in one go, the hardest order for the report.
    const busyUntil = Date.now() + 1_500;
    while (Date.now() < busyUntil);
    const threads = await starting;
    for (let waited = 0; exits.length === 0 && waited < 5_000; waited += 10) await sleep(10);
    expect(exits).toEqual([3]);
    // Closing waits for every thread to be gone: one that died already does not hold it up.
    await threads.close();
  });

  it('closes its threads on request, without reporting them as unexpected exits', async () => {
    const exits: number[] = [];
    const threads = await startHttpThreads(
      2,
      options(8080, (code) => exits.push(code)),
    );
    await threads.close();
    await sleep(20);
    expect(exits).toEqual([]);
  });
});
