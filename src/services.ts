import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { Redis } from 'ioredis';
import type { AuditInbox } from './audit/audit-inbox.ts';
import type { CommandRunner } from './audit/command-runner.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config/config.ts';
import type { PasswordHasher } from './crypto/passwords.ts';
import type { TokenService } from './crypto/tokens.ts';
import type { Db } from './db/database.ts';
import type { DatabaseHandle } from './db/open-database.ts';
import type { Mailer } from './email/mailer.ts';
import type { ExtidpTokenVerifier } from './modules/extidp/extidp-token-verifier.ts';

/** The Fastify instance type every module registers its routes on (TypeBox-typed requests). */
export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** What modules get to do their work: built once by buildApp from its dependencies. */
export interface Services {
  readonly config: Config;
  readonly db: Db;
  readonly database: DatabaseHandle;
  readonly clock: Clock;
  readonly tokens: TokenService;
  readonly passwords: PasswordHasher;
  readonly commands: CommandRunner;
  /** SQLite: moves the audit rows appended since into `audit_entries` (readers settle it first). */
  readonly auditInbox: AuditInbox;
  readonly redis: Redis | null;
  readonly log: FastifyBaseLogger;
  /** Queued mail delivery (SMTP, or the logging fallback). */
  readonly mailer: Mailer;
  /** The external provider's ID-token verifier: one per app, so its key cache is shared. */
  readonly extidpTokens: ExtidpTokenVerifier;
}
