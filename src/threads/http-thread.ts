import { parentPort, workerData } from 'node:worker_threads';
import { buildApp } from '../app.ts';
import { ConcurrencyBound } from '../crypto/concurrency.ts';
import { PasswordHasher } from '../crypto/passwords.ts';
import { openDatabase } from '../db/open-database.ts';
import { ProcessRateLimitCounters } from '../http/process-rate-limits.ts';
import { type HttpThreadData, LISTENING } from './http-threads.ts';
import { connectRedis, listenOptions, serviceLogger } from './instance.ts';

/**
 * Entry of an HTTP thread other than the main one (started by http-threads.ts): the same app on
 * its own database connection, bound to the main thread's port. The main thread alone migrates,
 * creates the bootstrap admin, checkpoints and runs the retention pass; the rate-limit counters
 * and the bound on credential checks are in shared memory that it created and that every thread
 * uses directly.
 */

async function runHttpThread({
  config,
  port,
  rateLimitCounters,
  sqliteWriteLock,
  credentialChecks,
}: HttpThreadData): Promise<void> {
  const database = openDatabase(config.databaseUrl, { sqliteCheckpointer: false, sqliteWriteLock });
  const redis = await connectRedis(config);
  const app = await buildApp({
    config,
    database,
    redis,
    ...(rateLimitCounters === null
      ? {}
      : { rateLimitCounters: new ProcessRateLimitCounters(rateLimitCounters) }),
    passwords: new PasswordHasher(new ConcurrencyBound(credentialChecks)),
    logger: serviceLogger(config),
  });
  await app.services.passwords.prepareDecoy();
  await app.listen(listenOptions(config, port));
  parentPort!.once('message', async () => {
    await app.close();
    await database.close();
    await redis?.quit();
    parentPort!.close();
  });
  parentPort!.postMessage(LISTENING);
}

await runHttpThread(workerData as HttpThreadData);
