import type { RetentionSchedule } from '../jobs/retention-pass.ts';
import type { Services } from '../services.ts';
import type { Access, Caller } from './access.ts';
import type { ClientAddress } from './client-address.ts';
import type { RateLimitBudget } from './rate-limits.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The services the app was built from (tests and the bootstrap step use them). */
    readonly services: Services;
    /** The scheduled retention pass, when the app runs one (server.ts); null in tests by default. */
    readonly retentionSchedule: RetentionSchedule | null;
  }
  interface FastifyContextConfig {
    /** Who may call the route; every route of the service declares it. */
    access?: Access;
    /** The rate-limit budgets the route is charged to. */
    rateLimits?: readonly RateLimitBudget[];
  }
  interface FastifyRequest {
    /** Set by authentication for every non-anonymous route. */
    caller: Caller | null;
    /** Resolved on first use (see client-address.ts). */
    readonly clientAddress: ClientAddress;
  }
}
