import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Redis } from 'ioredis';
import { Refusal } from './messages.ts';
import { ProcessRateLimitCounters } from './process-rate-limits.ts';

/**
 * The named budgets of spec §Limits. A route names the budgets it is charged to in
 * `config.rateLimits`; routes naming the same budget share its counters (so login,
 * password-recovery and 2fa/enable all draw on one "authentication" budget per address).
 * Counters live in memory (shared by the process's HTTP threads), or in Redis when configured,
 * so several instances share them.
 */
export const RATE_LIMIT_BUDGETS = {
  /** Anonymous authentication endpoints and the credential-checking authenticated ones. */
  authentication: { max: 10, windowMs: 60_000, per: 'address' },
  /** Creating a person with a password: per acting administrator… */
  personCreationByActor: { max: 30, windowMs: 60_000, per: 'actor' },
  /** …and per address (only administrators' requests reach it: it runs after the role gate). */
  personCreationByAddress: { max: 30, windowMs: 60_000, per: 'address' },
} as const satisfies Record<string, { max: number; windowMs: number; per: 'address' | 'actor' }>;

export type RateLimitBudget = keyof typeof RATE_LIMIT_BUDGETS;

export interface RateLimitOptions {
  readonly redis: Redis | null;
  /**
   * Without Redis: the counters to charge (server.ts shares one table between its HTTP threads,
   * process-rate-limits.ts); unset, a table of this app's own.
   */
  readonly counters?: ProcessRateLimitCounters | undefined;
  /** Key prefix in Redis (tests give each app its own). */
  readonly namespace: string;
}

type Limiter = (request: FastifyRequest) => Promise<{ isExceeded?: boolean; ttlInSeconds?: number }>;

/** Redis when configured; else the given counters; else counters of this app's own. */
function counterStore(options: RateLimitOptions) {
  if (options.redis !== null) return { redis: options.redis };
  return { store: (options.counters ?? new ProcessRateLimitCounters()).store() };
}

/**
 * Registers the store and returns the hook that charges a request to its route's budgets.
 * The counters are our shared-memory table (process-rate-limits.ts) or @fastify/rate-limit's
 * atomic Lua script in Redis; the hook is ours because one route may be charged to two budgets
 * at once.
 */
export async function registerRateLimits(app: FastifyInstance, options: RateLimitOptions) {
  await app.register(rateLimit, {
    global: false,
    ...counterStore(options),
    nameSpace: options.namespace,
    // If the shared store is unreachable, serve the request (and log) rather than lock
    // everyone out of signing in; the detailed health check reports the store as unhealthy.
    skipOnError: true,
  });
  const limiters = new Map<RateLimitBudget, Limiter>();
  for (const [name, budget] of Object.entries(RATE_LIMIT_BUDGETS) as Array<
    [RateLimitBudget, (typeof RATE_LIMIT_BUDGETS)[RateLimitBudget]]
  >) {
    limiters.set(
      name,
      app.createRateLimit({
        max: budget.max,
        timeWindow: budget.windowMs,
        keyGenerator: (request: FastifyRequest) =>
          `${name}:${budget.per === 'actor' ? `actor:${request.caller?.id ?? 'anonymous'}` : request.clientAddress.bucket}`,
      }) as Limiter,
    );
  }

  return async function chargeRateLimits(request: FastifyRequest): Promise<void> {
    const budgets = request.routeOptions.config.rateLimits;
    if (budgets === undefined) return;
    let retryAfter = 0;
    for (const name of budgets) {
      const outcome = await limiters.get(name)!(request);
      if (outcome.isExceeded === true) retryAfter = Math.max(retryAfter, outcome.ttlInSeconds ?? 1);
    }
    if (retryAfter > 0)
      throw new Refusal('Too many requests.', { 'retry-after': String(Math.max(1, retryAfter)) });
  };
}
