import type { FastifyListenOptions, FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { hostname } from 'node:os';
import { threadId } from 'node:worker_threads';
import type { Config } from '../config/config.ts';

/** What every HTTP thread of the service shares: how it logs, listens and reaches Redis. */

export function serviceLogger(config: Config): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    // Which of the process's HTTP threads wrote the line (0: the main thread).
    base: { pid: process.pid, hostname: hostname(), thread: threadId },
    // Never log credentials: tokens, keys and cookies stay out of request logs.
    redact: ['req.headers.authorization', 'req.headers["x-service-caller-key"]', 'req.headers.cookie'],
  };
}

/**
 * The client is imported only when Redis is configured: each HTTP thread holds its own copy.
 * Without a connection its commands fail at once rather than queue for the next reconnect: in an
 * outage a sign-in is then served (docs/decisions.md) without waiting out the reconnect
 * attempts first, which grow to two seconds apart.
 */
export async function connectRedis(config: Config): Promise<Redis | null> {
  if (config.redisUrl === null) return null;
  const { Redis: Client } = await import('ioredis');
  return new Client(config.redisUrl, {
    lazyConnect: false,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: false,
  });
}

/**
 * Every HTTP thread binds the same address with SO_REUSEPORT; the kernel spreads new
 * connections across them, so no thread hands sockets to another.
 */
export function listenOptions(config: Config, port: number): FastifyListenOptions {
  return { host: config.host, port, ...(config.httpThreads > 1 ? { reusePort: true } : {}) };
}
