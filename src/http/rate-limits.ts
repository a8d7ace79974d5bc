import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
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

/** The counter a request is charged to under a budget: its address's, or its caller's. */
function counterKey(name: RateLimitBudget, request: FastifyRequest): string {
  const per =
    RATE_LIMIT_BUDGETS[name].per === 'actor'
      ? `actor:${request.caller?.id ?? 'anonymous'}`
      : request.clientAddress.bucket;
  return `${name}:${per}`;
}

/** What charging one budget found. */
interface Outcome {
  readonly exceeded: boolean;
  readonly retryAfterSeconds: number;
}

/** The 429 when any budget is exceeded, its Retry-After the longest of their waits (≥ 1 s). */
function refusalFor(outcomes: readonly Outcome[]): Refusal | undefined {
  const exceeded = outcomes.filter((outcome) => outcome.exceeded);
  if (exceeded.length === 0) return undefined;
  const retryAfter = Math.max(1, ...exceeded.map((outcome) => outcome.retryAfterSeconds));
  return new Refusal('Too many requests.', { 'retry-after': String(retryAfter) });
}

/**
 * Returns the onRequest hook that charges a request to its route's budgets (app.ts adds it to
 * the routes that name any). Ours rather than @fastify/rate-limit's own hook, because one route
 * may be charged to two budgets at once.
 *
 * - Without Redis, the counters are our shared-memory table (process-rate-limits.ts), charged
 *   synchronously: no promise per budget, as a secret exchange or a sign-in pays it on every
 *   request.
 * - With Redis, @fastify/rate-limit's atomic Lua script counts. Should Redis be unreachable,
 *   the request is served, and the failure logged, rather than everyone locked out of signing
 *   in (docs/decisions.md); the detailed health check reports the store as unhealthy.
 */
export async function registerRateLimits(
  app: FastifyInstance,
  options: RateLimitOptions,
): Promise<onRequestHookHandler> {
  const budgetsOf = (request: FastifyRequest) => request.routeOptions.config.rateLimits ?? [];
  if (options.redis === null) {
    const counters = options.counters ?? new ProcessRateLimitCounters();
    const charge = (name: RateLimitBudget, request: FastifyRequest): Outcome => {
      const budget = RATE_LIMIT_BUDGETS[name];
      const count = counters.charge(counterKey(name, request), budget.windowMs);
      return { exceeded: count.current > budget.max, retryAfterSeconds: Math.ceil(count.ttl / 1000) };
    };
    return function chargeRateLimits(request, _reply, done) {
      done(refusalFor(budgetsOf(request).map((name) => charge(name, request))));
    };
  }

  await app.register(rateLimit, {
    global: false,
    redis: options.redis,
    nameSpace: options.namespace,
    // Its own skipping would serve the request without a word: the hook below logs the failure.
    skipOnError: false,
  });
  type Limiter = (request: FastifyRequest) => Promise<{ isExceeded?: boolean; ttlInSeconds?: number }>;
  const limiters = new Map<RateLimitBudget, Limiter>();
  for (const name of Object.keys(RATE_LIMIT_BUDGETS) as RateLimitBudget[]) {
    const budget = RATE_LIMIT_BUDGETS[name];
    limiters.set(
      name,
      app.createRateLimit({
        max: budget.max,
        timeWindow: budget.windowMs,
        keyGenerator: (request: FastifyRequest) => counterKey(name, request),
      }) as Limiter,
    );
  }
  return async function chargeRateLimits(request: FastifyRequest): Promise<void> {
    const outcomes: Outcome[] = [];
    for (const name of budgetsOf(request)) {
      let outcome: Awaited<ReturnType<Limiter>>;
      try {
        outcome = await limiters.get(name)!(request);
      } catch (error) {
        request.log.warn(
          { err: error, budget: name },
          'rate-limit store unreachable: request served unlimited',
        );
        continue;
      }
      outcomes.push({ exceeded: outcome.isExceeded === true, retryAfterSeconds: outcome.ttlInSeconds ?? 1 });
    }
    const refusal = refusalFor(outcomes);
    if (refusal !== undefined) throw refusal;
  };
}
