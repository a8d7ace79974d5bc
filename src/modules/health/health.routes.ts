import { type Static, Type } from 'typebox';
import { ANONYMOUS, SYSTEM_ADMIN_HEALTH_REPORT } from '../../http/access.ts';
import { responses } from '../../http/route-schema.ts';
import type { App, Services } from '../../services.ts';

const Status = Type.Union([Type.Literal('Healthy'), Type.Literal('Unhealthy')]);
const LivenessReport = Type.Object({ status: Status });
const DependencyCheck = Type.Object({ name: Type.String(), status: Status, durationMs: Type.Number() });
const DetailedReport = Type.Object({ status: Status, checks: Type.Array(DependencyCheck) });
type DependencyCheck = Static<typeof DependencyCheck>;

/** A dependency whose answer is slower than this counts as down. */
const CHECK_TIMEOUT_MS = 2_000;

/**
 * Liveness (no database read: it answers while the process can serve) and the detailed report
 * (System Admins; every dependency checked, 503 when one is down). Served under /api and, for
 * older probes, at the root addresses, which stay out of the OpenAPI document.
 */
export function healthRoutes(app: App, services: Services): void {
  const dependencyChecks: Array<[string, () => Promise<unknown>]> = [
    ['database', () => services.database.ping()],
  ];
  if (services.redis !== null) dependencyChecks.push(['rateLimitStore', () => services.redis!.ping()]);

  for (const prefix of ['/api', '']) {
    const hide = prefix === '';
    app.get(
      `${prefix}/healthcheck`,
      {
        config: { access: ANONYMOUS },
        schema: {
          hide,
          tags: ['Health'],
          operationId: 'Health_Live',
          summary: 'Liveness',
          // Any route can fail unexpectedly; its 500 is the failure envelope, like everywhere else.
          response: responses(LivenessReport, []),
        },
      },
      async () => ({ status: 'Healthy' as const }),
    );
    app.get(
      `${prefix}/healthcheck/detailed`,
      {
        config: { access: SYSTEM_ADMIN_HEALTH_REPORT },
        schema: {
          hide,
          tags: ['Health'],
          operationId: 'Health_Detailed',
          summary: 'Status of every dependency (503 when one is down)',
          security: [{ bearer: [] }],
          response: { ...responses(DetailedReport, [401, 403]), 503: DetailedReport },
        },
      },
      async (_request, reply) => {
        const checks = await Promise.all(dependencyChecks.map(([name, check]) => runCheck(name, check)));
        const healthy = checks.every((check) => check.status === 'Healthy');
        if (!healthy) reply.code(503);
        return { status: healthy ? ('Healthy' as const) : ('Unhealthy' as const), checks };
      },
    );
  }
}

async function runCheck(name: string, check: () => Promise<unknown>): Promise<DependencyCheck> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([check(), timeout]);
    return { name, status: 'Healthy', durationMs: Math.round(performance.now() - started) };
  } catch {
    return { name, status: 'Unhealthy', durationMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}
