import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * Every SERVICE_* setting, parsed once at start-up into a frozen object. Nothing else in the
 * code reads process.env. Refusals name the variable and never its value, because a value may
 * be a secret; warnings about unusable numbers may quote the value (numbers are not secrets).
 */

export type Environment = 'development' | 'production';

export interface BootstrapAdmin {
  readonly name: string;
  readonly email: string;
  /** null in development when no password was configured: one is generated and printed once. */
  readonly password: string | null;
}

export interface Config {
  readonly environment: Environment;
  readonly host: string;
  readonly port: number;
  readonly logLevel: string;
  readonly databaseUrl: string;
  /** Threads serving HTTP on the one port (the first is the main thread): SERVICE_HTTP_THREADS. */
  readonly httpThreads: number;
  readonly redisUrl: string | null;
  readonly auth: {
    readonly tokenSecret: string;
    readonly previousTokenSecret: string | null;
    readonly issuer: string;
    readonly audience: string;
    readonly challengeAudience: string;
    readonly subjectRightsAudience: string;
    readonly applicationAudience: string;
    readonly tokenLifetimeSeconds: number;
    readonly applicationTokenLifetimeSeconds: number;
  };
  readonly network: {
    readonly trustedProxies: BlockList;
    readonly trustedCallerKeys: readonly string[];
    readonly corsAllowedOrigins: readonly string[];
  };
  /** true only when SERVICE_ALLOW_SENSITIVE_DIAGNOSTICS=true and the instance listens on loopback. */
  readonly exposeDiagnostics: boolean;
  readonly accountEmailCooldownSeconds: number;
  readonly retentionPurgeBatchSize: number;
  readonly bootstrapAdmin: BootstrapAdmin | null;
  readonly email: {
    readonly smtpUrl: string | null;
    readonly from: string;
    readonly verificationUrl: string | null;
    readonly passwordResetUrl: string | null;
  };
  readonly extidp: {
    readonly issuer: string | null;
    readonly clientIds: readonly string[];
    readonly jwksUrl: string | null;
  };
  readonly dataEncryptionKey: string | null;
}

/** Start-up refusal. The message names the variable, never the value. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export type Env = Readonly<Record<string, string | undefined>>;
export type WarningSink = (message: string) => void;

export const DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  databaseUrl: 'sqlite:./data/identity.db',
  tokenLifetimeSeconds: 3600,
  applicationTokenLifetimeSeconds: 600,
  accountEmailCooldownSeconds: 300,
  retentionPurgeBatchSize: 500,
  developmentIssuer: 'portcullis',
  developmentAudience: 'portcullis-api',
  developmentApplicationAudience: 'portcullis-applications',
  developmentAdminEmail: 'admin@localhost',
  emailFrom: 'Portcullis <no-reply@localhost>',
});

export const MINIMUM_SECRET_BYTES = 32;
export const MINIMUM_CALLER_KEY_CHARACTERS = 32;
const MAXIMUM_CALLER_KEYS = 2;
const DEVELOPMENT_SECRET_FILE = 'token-secret';
const MINIMUM_PASSWORD_CHARACTERS = 8;
const MAXIMUM_PASSWORD_CHARACTERS = 256;
const MAXIMUM_EMAIL_CHARACTERS = 320;
/** Longest lifetime or cooldown a seconds setting may name: one year. */
export const MAXIMUM_SECONDS_SETTING = 365 * 24 * 60 * 60;

export function loadConfig(env: Env, warn: WarningSink): Config {
  const environment = parseEnvironment(env);
  const production = environment === 'production';
  const host = text(env, 'SERVICE_HOST') ?? DEFAULTS.host;
  const databaseUrl = text(env, 'SERVICE_DATABASE_URL') ?? DEFAULTS.databaseUrl;
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('SERVICE_DATABASE_URL must start with sqlite: or postgres://.');
  }

  const tokenSecret = resolveTokenSecret(env, production, databaseUrl);
  const previousTokenSecret = optionalSecret(env, 'SERVICE_AUTH_TOKEN_SECRET_PREVIOUS');
  const issuer = requiredInProduction(
    env,
    'SERVICE_AUTH_TOKEN_ISSUER',
    production,
    DEFAULTS.developmentIssuer,
  );
  const audience = requiredInProduction(
    env,
    'SERVICE_AUTH_TOKEN_AUDIENCE',
    production,
    DEFAULTS.developmentAudience,
  );
  const challengeAudience = `${audience}.2fa-challenge`;
  const subjectRightsAudience = `${audience}.subject-rights`;
  const applicationAudience = requiredInProduction(
    env,
    'SERVICE_APPLICATION_TOKEN_AUDIENCE',
    production,
    DEFAULTS.developmentApplicationAudience,
  );
  // A shared audience would let an application token pass as a person token (or the reverse).
  if ([audience, challengeAudience, subjectRightsAudience].includes(applicationAudience)) {
    throw new ConfigError(
      'SERVICE_APPLICATION_TOKEN_AUDIENCE must differ from SERVICE_AUTH_TOKEN_AUDIENCE and from its .2fa-challenge and .subject-rights audiences.',
    );
  }

  const allowSensitiveDiagnostics = flag(env, 'SERVICE_ALLOW_SENSITIVE_DIAGNOSTICS', false);

  const config: Config = {
    environment,
    host,
    port: port(env),
    logLevel: logLevel(env),
    databaseUrl,
    httpThreads: httpThreads(env, databaseUrl),
    redisUrl: text(env, 'SERVICE_REDIS_URL'),
    auth: {
      tokenSecret,
      previousTokenSecret,
      issuer,
      audience,
      challengeAudience,
      subjectRightsAudience,
      applicationAudience,
      tokenLifetimeSeconds: lifetimeSeconds(
        env,
        'SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS',
        DEFAULTS.tokenLifetimeSeconds,
        warn,
      ),
      applicationTokenLifetimeSeconds: lifetimeSeconds(
        env,
        'SERVICE_APPLICATION_TOKEN_EXPIRATION_IN_SECONDS',
        DEFAULTS.applicationTokenLifetimeSeconds,
        warn,
      ),
    },
    network: {
      trustedProxies: trustedProxies(env),
      trustedCallerKeys: trustedCallerKeys(env),
      corsAllowedOrigins: corsOrigins(env),
    },
    // Diagnostics (exception text in 500 answers) only ever reach a caller on this machine.
    exposeDiagnostics: allowSensitiveDiagnostics && isLoopbackHost(host),
    accountEmailCooldownSeconds: cooldownSeconds(env, warn),
    retentionPurgeBatchSize: positiveInteger(
      env,
      'SERVICE_RETENTION_PURGE_BATCH_SIZE',
      DEFAULTS.retentionPurgeBatchSize,
      warn,
    ),
    bootstrapAdmin: bootstrapAdmin(env, production),
    email: {
      smtpUrl: smtpUrl(env),
      from: text(env, 'SERVICE_EMAIL_FROM') ?? DEFAULTS.emailFrom,
      verificationUrl: linkBase(env, 'SERVICE_EMAIL_VERIFICATION_URL'),
      passwordResetUrl: linkBase(env, 'SERVICE_PASSWORD_RESET_URL'),
    },
    extidp: {
      issuer: text(env, 'SERVICE_EXTIDP_ISSUER'),
      clientIds: list(env, 'SERVICE_EXTIDP_CLIENT_IDS'),
      jwksUrl: linkBase(env, 'SERVICE_EXTIDP_JWKS_URL'),
    },
    dataEncryptionKey: optionalSecret(env, 'SERVICE_DATA_ENCRYPTION_KEY'),
  };
  return deepFreeze(config);
}

/** The SQLite file path of a `sqlite:` URL, or null for PostgreSQL and in-memory databases. */
export function sqliteFilePath(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('sqlite:')) return null;
  const path = databaseUrl.slice('sqlite:'.length);
  return path === '' || path === ':memory:' ? null : path;
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

function parseEnvironment(env: Env): Environment {
  const value = text(env, 'SERVICE_ENVIRONMENT')?.toLowerCase() ?? 'development';
  if (value !== 'development' && value !== 'production') {
    throw new ConfigError('SERVICE_ENVIRONMENT must be development or production.');
  }
  return value;
}

/** A set, non-blank value; unset, blank and an empty quoted value ("" or '') all mean unset. */
function text(env: Env, name: string): string | null {
  const raw = env[name];
  if (raw === undefined) return null;
  const trimmed = raw.trim();
  if (trimmed === '' || trimmed === '""' || trimmed === "''") return null;
  return trimmed;
}

function requiredInProduction(env: Env, name: string, production: boolean, fallback: string): string {
  const value = text(env, name);
  if (value !== null) return value;
  if (production) throw new ConfigError(`${name} is required in production.`);
  return fallback;
}

function checkSecret(name: string, value: string): string {
  // ASCII only: the HMAC key is the secret's bytes exactly as configured, so consumers can
  // reproduce it in any JWT library without agreeing on an encoding.
  if (![...value].every((character) => character.charCodeAt(0) <= 0x7f))
    throw new ConfigError(`${name} must contain ASCII characters only.`);
  if (Buffer.byteLength(value, 'ascii') < MINIMUM_SECRET_BYTES) {
    throw new ConfigError(`${name} must be at least ${MINIMUM_SECRET_BYTES} bytes long.`);
  }
  return value;
}

function optionalSecret(env: Env, name: string): string | null {
  // Unset, blank and an empty quoted value mean "none" (spec §Authentication 7). A set value is
  // used exactly as configured, surrounding spaces included, because it is the HMAC key.
  if (text(env, name) === null) return null;
  return checkSecret(name, env[name] as string);
}

function resolveTokenSecret(env: Env, production: boolean, databaseUrl: string): string {
  const configured = optionalSecret(env, 'SERVICE_AUTH_TOKEN_SECRET');
  if (configured !== null) return configured;
  if (production) throw new ConfigError('SERVICE_AUTH_TOKEN_SECRET is required in production.');
  // Development convenience: a secret generated once and kept beside the SQLite file, so tokens
  // survive restarts. Never for PostgreSQL: several instances must share a configured secret.
  const databaseFile = sqliteFilePath(databaseUrl);
  if (databaseUrl.startsWith('postgres')) {
    throw new ConfigError('SERVICE_AUTH_TOKEN_SECRET is required with a PostgreSQL database.');
  }
  if (databaseFile === null) return randomBytes(32).toString('base64url');
  const secretFile = join(dirname(resolve(databaseFile)), DEVELOPMENT_SECRET_FILE);
  if (existsSync(secretFile)) return readDevelopmentSecret(secretFile);
  mkdirSync(dirname(secretFile), { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  try {
    // Readable by the owner only: anyone who can read it can mint tokens. 'wx' never replaces a
    // secret another instance wrote a moment ago (its tokens would stop validating).
    writeFileSync(secretFile, secret, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readDevelopmentSecret(secretFile);
    throw error;
  }
  chmodSync(secretFile, 0o600);
  return secret;
}

function readDevelopmentSecret(secretFile: string): string {
  const secret = readFileSync(secretFile, 'ascii').trim();
  // The refusal names the file, never its content.
  if (secret.length < MINIMUM_SECRET_BYTES || !/^[\x21-\x7e]+$/.test(secret)) {
    throw new ConfigError(
      `The generated development secret in ${secretFile} is unusable; delete the file or set SERVICE_AUTH_TOKEN_SECRET.`,
    );
  }
  return secret;
}

function port(env: Env): number {
  const raw = text(env, 'SERVICE_PORT');
  if (raw === null) return DEFAULTS.port;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new ConfigError('SERVICE_PORT must be an integer from 0 to 65535.');
  }
  return value;
}

/** The default thread count follows the cores, up to this many (each thread holds its own heap). */
export const DEFAULT_MAXIMUM_HTTP_THREADS = 8;
const MAXIMUM_HTTP_THREADS = 64;

/**
 * How many threads serve HTTP. Default: one per core, at most DEFAULT_MAXIMUM_HTTP_THREADS. An
 * in-memory SQLite database lives inside one connection, so it is served by one thread only.
 */
function httpThreads(env: Env, databaseUrl: string): number {
  const inMemory = databaseUrl.startsWith('sqlite:') && sqliteFilePath(databaseUrl) === null;
  const raw = text(env, 'SERVICE_HTTP_THREADS');
  if (raw === null) return inMemory ? 1 : Math.min(availableParallelism(), DEFAULT_MAXIMUM_HTTP_THREADS);
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAXIMUM_HTTP_THREADS) {
    throw new ConfigError(`SERVICE_HTTP_THREADS must be an integer from 1 to ${MAXIMUM_HTTP_THREADS}.`);
  }
  if (inMemory && value > 1) {
    throw new ConfigError('SERVICE_HTTP_THREADS must be 1 with an in-memory SQLite database.');
  }
  return value;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: Env): string {
  const value = text(env, 'SERVICE_LOG_LEVEL')?.toLowerCase() ?? 'info';
  // Checked here so a typo is a named refusal, not a logger crash with a stack trace.
  if (!LOG_LEVELS.includes(value)) {
    throw new ConfigError(`SERVICE_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}.`);
  }
  return value;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name} must be true or false.`);
}

function positiveNumber(env: Env, name: string, fallback: number, warn: WarningSink): number {
  const raw = text(env, name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    warn(
      `${name}: the value ${JSON.stringify(raw)} is not a positive number; using the default ${fallback}.`,
    );
    return fallback;
  }
  return value;
}

/**
 * A token lifetime in whole seconds. Zero, negative, non-finite, fractional and text values
 * fall back to the default with a warning (spec §Authentication 6), and so do lifetimes beyond
 * a year: such a token would outlive every revocation plan (and far beyond, expiry dates that
 * JavaScript cannot represent would fail every sign-in).
 */
function lifetimeSeconds(env: Env, name: string, fallback: number, warn: WarningSink): number {
  return wholeSeconds(env, name, fallback, 1, warn);
}

function wholeSeconds(env: Env, name: string, fallback: number, minimum: 0 | 1, warn: WarningSink): number {
  const raw = text(env, name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum || value > MAXIMUM_SECONDS_SETTING) {
    warn(
      `${name}: the value ${JSON.stringify(raw)} is not usable (whole seconds from ${minimum} to ${MAXIMUM_SECONDS_SETTING}); using the default ${fallback}.`,
    );
    return fallback;
  }
  return value;
}

function positiveInteger(env: Env, name: string, fallback: number, warn: WarningSink): number {
  const value = positiveNumber(env, name, fallback, warn);
  if (!Number.isInteger(value)) {
    warn(
      `${name}: the value ${JSON.stringify(String(value))} is not a whole number; using the default ${fallback}.`,
    );
    return fallback;
  }
  return value;
}

function cooldownSeconds(env: Env, warn: WarningSink): number {
  // 0 is meaningful here: it turns the cooldown off.
  return wholeSeconds(
    env,
    'SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS',
    DEFAULTS.accountEmailCooldownSeconds,
    0,
    warn,
  );
}

function list(env: Env, name: string): string[] {
  const raw = text(env, name);
  if (raw === null) return [];
  return raw
    .split(/[,\s]+/)
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function trustedProxies(env: Env): BlockList {
  const name = 'SERVICE_TRUSTED_PROXIES';
  const proxies = new BlockList();
  for (const [index, entry] of list(env, name).entries()) {
    const [address, prefixText, ...rest] = entry.split('/');
    const family = address === undefined ? 0 : isIP(address);
    // Digits only: Number('') is 0, and an entry such as "10.0.0.1/" must not trust everyone.
    if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) {
      throw new ConfigError(`${name}: entry ${index + 1} is not an IP address or CIDR network.`);
    }
    const prefix = prefixText === undefined ? null : Number(prefixText);
    const maximumPrefix = family === 6 ? 128 : 32;
    const prefixValid =
      prefix === null || (Number.isInteger(prefix) && prefix >= 0 && prefix <= maximumPrefix);
    if (family === 0 || rest.length > 0 || !prefixValid || address === undefined) {
      throw new ConfigError(`${name}: entry ${index + 1} is not an IP address or CIDR network.`);
    }
    const type = family === 6 ? 'ipv6' : 'ipv4';
    if (prefix === null) proxies.addAddress(address, type);
    else proxies.addSubnet(address, prefix, type);
  }
  return proxies;
}

function trustedCallerKeys(env: Env): string[] {
  const name = 'SERVICE_TRUSTED_CALLER_KEYS';
  const keys = list(env, name);
  if (keys.length > MAXIMUM_CALLER_KEYS) {
    throw new ConfigError(
      `${name} lists at most ${MAXIMUM_CALLER_KEYS} keys (current and next, for rotation).`,
    );
  }
  for (const [index, key] of keys.entries()) {
    if (key.length < MINIMUM_CALLER_KEY_CHARACTERS) {
      throw new ConfigError(
        `${name}: key ${index + 1} must be at least ${MINIMUM_CALLER_KEY_CHARACTERS} characters long.`,
      );
    }
  }
  return keys;
}

function corsOrigins(env: Env): string[] {
  const name = 'SERVICE_CORS_ALLOWED_ORIGINS';
  return list(env, name).map((origin, index) => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new ConfigError(`${name}: entry ${index + 1} is not an origin such as https://app.example.com.`);
    }
    if (!['http:', 'https:'].includes(url.protocol) || url.origin !== origin.replace(/\/$/, '')) {
      throw new ConfigError(`${name}: entry ${index + 1} is not an origin such as https://app.example.com.`);
    }
    return url.origin;
  });
}

function linkBase(env: Env, name: string): string | null {
  const raw = text(env, name);
  if (raw === null) return null;
  if (!isAbsoluteHttpUrl(raw)) throw new ConfigError(`${name} must be an absolute http or https URL.`);
  return raw;
}

export function isAbsoluteHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function smtpUrl(env: Env): string | null {
  const raw = text(env, 'SERVICE_SMTP_URL');
  if (raw === null) return null;
  let protocol: string;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    throw new ConfigError('SERVICE_SMTP_URL must be an smtp:// or smtps:// URL.');
  }
  if (protocol !== 'smtp:' && protocol !== 'smtps:') {
    throw new ConfigError('SERVICE_SMTP_URL must be an smtp:// or smtps:// URL.');
  }
  return raw;
}

function bootstrapAdmin(env: Env, production: boolean): BootstrapAdmin | null {
  const name = text(env, 'SERVICE_BOOTSTRAP_ADMIN_NAME');
  const email = text(env, 'SERVICE_BOOTSTRAP_ADMIN_EMAIL');
  // The password is taken exactly as configured (spaces are legal in passwords).
  const password =
    text(env, 'SERVICE_BOOTSTRAP_ADMIN_PASSWORD') === null ? null : env.SERVICE_BOOTSTRAP_ADMIN_PASSWORD!;
  if (email === null && password === null && name === null) {
    // Production never prints a generated password; development gets a ready admin.
    return production
      ? null
      : { name: 'Administrator', email: DEFAULTS.developmentAdminEmail, password: null };
  }
  if (email === null)
    throw new ConfigError('SERVICE_BOOTSTRAP_ADMIN_EMAIL is required with the other bootstrap settings.');
  if (!/^[^@\s]+@[^@\s]+$/.test(email) || email.length > MAXIMUM_EMAIL_CHARACTERS) {
    throw new ConfigError('SERVICE_BOOTSTRAP_ADMIN_EMAIL must be an email address.');
  }
  if (password === null) {
    if (production) throw new ConfigError('SERVICE_BOOTSTRAP_ADMIN_PASSWORD is required in production.');
    return { name: name ?? 'Administrator', email, password: null };
  }
  // The same length rule as every other password (DECISIONS §7), so the admin can sign in.
  const length = [...password].length;
  if (length < MINIMUM_PASSWORD_CHARACTERS || length > MAXIMUM_PASSWORD_CHARACTERS) {
    throw new ConfigError(
      `SERVICE_BOOTSTRAP_ADMIN_PASSWORD must be ${MINIMUM_PASSWORD_CHARACTERS} to ${MAXIMUM_PASSWORD_CHARACTERS} characters long.`,
    );
  }
  return { name: name ?? 'Administrator', email, password };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !(value instanceof BlockList)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
