import { Redis } from 'ioredis';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config/config.ts';
import { migrateToLatest } from './db/migrate.ts';
import { RETENTION_PASS_INTERVAL_MS } from './jobs/retention-pass.ts';
import { openDatabase } from './db/open-database.ts';
import { ensureBootstrapAdmin } from './modules/persons/bootstrap-admin.ts';
import { assertNodeVersion } from './runtime.ts';

/** Process entry: config → database → migrate → app → listen; graceful close on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  assertNodeVersion();
  const warnings: string[] = [];
  const config = loadConfig(process.env, (warning) => warnings.push(warning));
  const database = openDatabase(config.databaseUrl);
  await migrateToLatest(database.db);
  const redis =
    config.redisUrl === null
      ? null
      : new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 });
  const app = await buildApp({
    config,
    database,
    redis,
    // DECISIONS §7: hourly; stopped (and a running pass finished) by app.close() on SIGTERM.
    retentionSchedule: { intervalMs: RETENTION_PASS_INTERVAL_MS },
    logger: {
      level: config.logLevel,
      // Never log credentials: tokens, keys and cookies stay out of request logs.
      redact: ['req.headers.authorization', 'req.headers["x-service-caller-key"]', 'req.headers.cookie'],
    },
  });
  for (const warning of warnings) app.log.warn(warning);
  app.log.info(
    {
      environment: config.environment,
      database: database.dialect,
      rateLimitStore: redis === null ? 'memory' : 'redis',
    },
    'starting',
  );
  await ensureBootstrapAdmin(app.services);
  await app.services.passwords.prepareDecoy();

  let closing = false;
  const close = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    try {
      await app.close();
      await database.close();
      await redis?.quit();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'error while shutting down');
      process.exit(1);
    }
  };
  process.once('SIGTERM', () => void close('SIGTERM'));
  process.once('SIGINT', () => void close('SIGINT'));

  await app.listen({ host: config.host, port: config.port });
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
