import './http/fastify-augment.ts';
import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyServerOptions } from 'fastify';
import type { Redis } from 'ioredis';
import { AuditInbox } from './audit/audit-inbox.ts';
import { CommandRunner } from './audit/command-runner.ts';
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config/config.ts';
import { PasswordHasher } from './crypto/passwords.ts';
import { TokenService } from './crypto/tokens.ts';
import type { DatabaseHandle } from './db/open-database.ts';
import { createMailer, type Mailer } from './email/mailer.ts';
import { ANONYMOUS } from './http/access.ts';
import { createAuthenticator, type IdentityResolvers } from './http/authentication.ts';
import { type ClientAddress, resolveClientAddress } from './http/client-address.ts';
import { installErrorHandling } from './http/errors.ts';
import { RetentionSchedule } from './jobs/retention-pass.ts';
import { registerOpenApi } from './http/openapi.ts';
import type { ProcessRateLimitCounters } from './http/process-rate-limits.ts';
import { registerRateLimits } from './http/rate-limits.ts';
import { addCaseInsensitiveKeys, validatorCompiler } from './http/validation.ts';
import { auditLogRoutes } from './modules/audit-log/audit-log.routes.ts';
import { applicationTokenRoutes } from './modules/applications/application-tokens.routes.ts';
import { applicationRoutes } from './modules/applications/applications.routes.ts';
import { credentialRoutes } from './modules/applications/credentials.routes.ts';
import { accountEmailRoutes } from './modules/account-email/account-email.routes.ts';
import { accountEmailPersonEvents } from './modules/account-email/person-events.ts';
import { authRoutes } from './modules/auth/auth.routes.ts';
import { findExtidpUserAuthState } from './modules/extidp/extidp.repository.ts';
import { ExtidpTokenVerifier } from './modules/extidp/extidp-token-verifier.ts';
import { extidpRoutes } from './modules/extidp/extidp.routes.ts';
import { healthRoutes } from './modules/health/health.routes.ts';
import { permissionRoutes } from './modules/permissions/permissions.routes.ts';
import { privacyRoutes } from './modules/privacy/privacy.routes.ts';
import { findPersonAuthState } from './modules/persons/persons.repository.ts';
import { personRoutes } from './modules/persons/persons.routes.ts';
import { registrationRoutes } from './modules/registration/registration.routes.ts';
import { scopeRoutes } from './modules/scopes/scopes.routes.ts';
import { twoFactorRoutes } from './modules/two-factor/two-factor.routes.ts';
import type { App, Services } from './services.ts';

export interface AppDependencies {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly clock?: Clock;
  readonly redis?: Redis | null;
  readonly passwords?: PasswordHasher;
  /** Fastify's logger option: pino options, or false (tests). */
  readonly logger?: FastifyServerOptions['logger'];
  /** Without Redis: the process's shared rate-limit counters (server.ts); default, the app's own. */
  readonly rateLimitCounters?: ProcessRateLimitCounters;
  /** Prefix of the shared rate-limit counters (tests give each app its own). */
  readonly rateLimitNamespace?: string;
  /** Mail delivery; default: SMTP when SERVICE_SMTP_URL is set, else the logging fallback. */
  readonly mailer?: Mailer;
  /**
   * Run the retention pass on a schedule while the app is up (server.ts: hourly). Off unless
   * given, so tests run the pass when they choose.
   */
  readonly retentionSchedule?: { readonly intervalMs: number } | null;
}

const CLIENT_ADDRESS = Symbol('clientAddress');
const JSON_MEDIA_TYPES = ['text/json', /^application\/[\w.+-]+\+json$/] as const;
/** Bodies are small JSON documents; anything larger is refused before parsing (400). */
const BODY_LIMIT_BYTES = 64 * 1024;

/** Builds the service from its dependencies. Never listens: server.ts does, tests inject. */
export async function buildApp(dependencies: AppDependencies): Promise<App> {
  const { config, database } = dependencies;
  const clock = dependencies.clock ?? systemClock;
  const app = Fastify({
    logger: dependencies.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    // Error answers are shaped by our handler; Fastify must not add its own fields.
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>() as App;
  app.setValidatorCompiler(validatorCompiler);

  const auditInbox = new AuditInbox(database.dialect === 'sqlite' ? database.writes : null, app.log);
  const services: Services = {
    config,
    db: database.db,
    database,
    clock,
    tokens: new TokenService(config.auth, clock),
    passwords: dependencies.passwords ?? new PasswordHasher(),
    commands: new CommandRunner(database.db, database.writes, clock, app.log, auditInbox),
    auditInbox,
    redis: dependencies.redis ?? null,
    log: app.log,
    mailer: dependencies.mailer ?? createMailer(config.email, app.log),
    extidpTokens: new ExtidpTokenVerifier(config.extidp, clock, app.log),
  };
  const retention =
    dependencies.retentionSchedule === undefined || dependencies.retentionSchedule === null
      ? null
      : new RetentionSchedule(services.commands, app.log, {
          dialect: database.dialect,
          batchSize: config.retentionPurgeBatchSize,
          intervalMs: dependencies.retentionSchedule.intervalMs,
        });
  app.decorate('retentionSchedule', retention);
  if (retention !== null) app.addHook('onReady', () => retention.start());
  // A running retention pass finishes (its transaction commits) before the database closes;
  // mail already queued is still delivered on a graceful close.
  app.addHook('onClose', async () => {
    await retention?.stop();
    await auditInbox.close();
    await services.mailer.close();
  });

  // The spec accepts text/json and application/*+json as JSON too.
  for (const mediaType of JSON_MEDIA_TYPES) {
    app.addContentTypeParser(mediaType, { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));
  }

  // ioredis reports each failed connection attempt as an event; unheard, it would print them to
  // stderr, past the service's log.
  services.redis?.on('error', (error: unknown) =>
    app.log.warn({ err: error }, 'rate-limit store connection failed'),
  );
  app.decorate('services', services);
  app.decorateRequest('caller', null);
  app.decorateRequest('clientAddress', {
    getter(this: {
      [CLIENT_ADDRESS]?: ClientAddress;
      raw: { socket: { remoteAddress?: string; encrypted?: boolean } };
      headers: Record<string, string | string[] | undefined>;
    }) {
      this[CLIENT_ADDRESS] ??= resolveClientAddress(
        {
          remoteAddress: this.raw.socket.remoteAddress,
          encrypted: this.raw.socket.encrypted === true,
          headers: this.headers,
        },
        config.network,
      );
      return this[CLIENT_ADDRESS];
    },
  });

  installErrorHandling(app, config.exposeDiagnostics);
  await app.register(cors, {
    origin: config.network.corsAllowedOrigins.length === 0 ? false : [...config.network.corsAllowedOrigins],
    // @fastify/cors allows only GET, HEAD and POST by default; the API also updates with PUT and
    // deletes with DELETE, which browsers would otherwise refuse after the preflight.
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    exposedHeaders: ['Retry-After'],
  });
  await registerOpenApi(app);

  const identityResolvers: IdentityResolvers = {
    person: async (db, id) => findPersonAuthState(db, id),
    // External-provider users carry no security stamp: deletion and restriction still apply.
    extidpUser: async (db, id) => findExtidpUserAuthState(db, id),
  };
  const authenticate = createAuthenticator(services.tokens, services.db, identityResolvers);
  const chargeRateLimits = await registerRateLimits(app, {
    redis: services.redis,
    counters: dependencies.rateLimitCounters,
    namespace: dependencies.rateLimitNamespace ?? 'portcullis:rate-limit:',
  });
  app.addHook('onRoute', (route) => {
    const access = route.config?.access;
    if (access === undefined && !route.url.startsWith('/swagger')) {
      throw new Error(`Route ${route.method} ${route.url} does not declare who may call it (config.access).`);
    }
    // Order of spec §Endpoints rule 2: authentication and role checks first, then limits, then
    // parsing and binding (400), then the handler's data-dependent refusals. Each route gets only
    // the steps it has: an anonymous route's requests skip authentication, and a route with no
    // budget the limits (a hook costs every request that passes it).
    const steps = [
      ...(access === undefined || access === ANONYMOUS ? [] : [authenticate]),
      ...((route.config?.rateLimits ?? []).length === 0 ? [] : [chargeRateLimits]),
    ];
    if (steps.length > 0) route.onRequest = [...steps, ...[route.onRequest ?? []].flat()];
    addCaseInsensitiveKeys(route);
  });

  await app.register(async (scoped) => {
    const api = scoped as unknown as App;
    healthRoutes(api, services);
    authRoutes(api, services);
    scopeRoutes(api, services);
    auditLogRoutes(api, services);
    applicationRoutes(api, services);
    credentialRoutes(api, services);
    applicationTokenRoutes(api, services);
    permissionRoutes(api, services);
    accountEmailRoutes(api, services);
    personRoutes(api, services, accountEmailPersonEvents(services));
    extidpRoutes(api, services);
    twoFactorRoutes(api, services);
    registrationRoutes(api, services);
    privacyRoutes(api, services);
  });
  return app;
}
