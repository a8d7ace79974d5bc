import type { AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config/config.ts';
import { ConcurrencyBound } from './crypto/concurrency.ts';
import { PasswordHasher } from './crypto/passwords.ts';
import { migrateToLatest } from './db/migrate.ts';
import { openDatabase } from './db/open-database.ts';
import { ProcessRateLimitCounters } from './http/process-rate-limits.ts';
import { RETENTION_PASS_INTERVAL_MS } from './jobs/retention-pass.ts';
import { ensureBootstrapAdmin } from './modules/persons/bootstrap-admin.ts';
import { assertNodeVersion } from './runtime.ts';
import { type HttpThreads, startHttpThreads } from './threads/http-threads.ts';
import {
  lowerThreadPoolPriority,
  sizeThreadPool,
  THREAD_POOL_NICENESS_OFFSET,
} from './threads/thread-pool.ts';
import { connectRedis, listenOptions, serviceLogger } from './threads/instance.ts';

/**
 * Process entry: config → database → migrate → app → listen → the other HTTP threads; graceful
 * close on SIGTERM/SIGINT. The main thread serves HTTP too, and alone runs what must happen once
 * per process: migrations, the bootstrap admin, checkpoints and the retention pass. It also creates
 * the bound on credential checks and (without Redis) the rate-limit counters, which every thread
 * uses in shared memory.
 */
async function main(): Promise<void> {
  assertNodeVersion();
  // Spec §Authentication 10, DECISIONS §7: one bound on the credential checks running at once, one
  // per CPU, for the process and every thread's; libuv's pool, where they run, gets a thread for
  // each, sized before its first use (thread-pool.ts).
  const credentialChecksAtOnce = availableParallelism();
  sizeThreadPool(credentialChecksAtOnce);
  const warnings: string[] = [];
  const config = loadConfig(process.env, (warning) => warnings.push(warning));
  const database = openDatabase(config.databaseUrl);
  await migrateToLatest(database.db);
  const redis = await connectRedis(config);
  const counters = redis === null ? new ProcessRateLimitCounters() : null;
  const credentialChecks = new ConcurrencyBound(credentialChecksAtOnce, config.httpThreads);
  const app = await buildApp({
    config,
    database,
    redis,
    ...(counters === null ? {} : { rateLimitCounters: counters }),
    passwords: new PasswordHasher(credentialChecks),
    // DECISIONS §7: hourly; stopped (and a running pass finished) by app.close() on SIGTERM.
    retentionSchedule: { intervalMs: RETENTION_PASS_INTERVAL_MS },
    logger: serviceLogger(config),
  });
  for (const warning of warnings) app.log.warn(warning);
  app.log.info(
    {
      environment: config.environment,
      database: database.dialect,
      rateLimitStore: redis === null ? 'memory' : 'redis',
      httpThreads: config.httpThreads,
    },
    'starting',
  );
  await ensureBootstrapAdmin(app.services);
  await app.services.passwords.prepareDecoy();
  // libuv started its thread pool for the decoy hash: from now on its hashes take the cores the
  // HTTP threads leave (thread-pool.ts).
  const poolThreads = lowerThreadPoolPriority();
  app.log.info(
    { threads: poolThreads, nicenessOffset: THREAD_POOL_NICENESS_OFFSET },
    'thread pool below the HTTP threads',
  );

  // Shutdown waits for threads still starting: a process that exits while a thread loads its
  // native modules aborts (better-sqlite3's registration, seen on a loaded machine).
  let threads: Promise<HttpThreads | null> = Promise.resolve(null);
  let closing = false;
  const close = async (reason: string, exitCode: number) => {
    if (closing) return;
    closing = true;
    app.log.info({ reason }, 'shutting down');
    try {
      await (await threads)?.close();
      await app.close();
      await database.close();
      await redis?.quit();
      process.exit(exitCode);
    } catch (error) {
      app.log.error({ err: error }, 'error while shutting down');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void close('SIGTERM', 0));
  process.once('SIGINT', () => void close('SIGINT', 0));

  await app.listen(listenOptions(config, config.port));
  threads = startHttpThreads(config.httpThreads - 1, {
    config,
    // The port actually bound: SERVICE_PORT=0 asks the OS for any free one.
    port: (app.server.address() as AddressInfo).port,
    counters,
    sqliteWriteLock: database.sqliteWriteLock,
    credentialChecks,
    log: app.log,
    onExit: (code) => {
      app.log.fatal({ code }, 'an HTTP thread exited unexpectedly');
      void close('HTTP thread exit', 1);
    },
  });
  await threads;
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    // A refusal names the variable, never its value.
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(78);
  }
  process.stderr.write(
    `Start-up failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
