import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_MAXIMUM_HTTP_THREADS,
  DEFAULTS,
  type Env,
  loadConfig,
} from '../../src/config/config.ts';

const SECRET = 'configured-secret-value-with-enough-bytes-0123';
const PREVIOUS_SECRET = 'previous-secret-value-with-enough-bytes-45678';

/** A complete production environment: each test breaks one thing. */
const PRODUCTION: Env = {
  SERVICE_ENVIRONMENT: 'production',
  SERVICE_DATABASE_URL: 'postgres://portcullis@db.internal/identity',
  SERVICE_AUTH_TOKEN_SECRET: SECRET,
  SERVICE_AUTH_TOKEN_ISSUER: 'https://id.example.com',
  SERVICE_AUTH_TOKEN_AUDIENCE: 'example-api',
  SERVICE_APPLICATION_TOKEN_AUDIENCE: 'example-applications',
};

/** A development environment that needs no file system (in-memory SQLite, secret given). */
const DEVELOPMENT: Env = {
  SERVICE_DATABASE_URL: 'sqlite::memory:',
  SERVICE_AUTH_TOKEN_SECRET: SECRET,
};

function load(env: Env): { config: ReturnType<typeof loadConfig>; warnings: string[] } {
  const warnings: string[] = [];
  const config = loadConfig(env, (warning) => warnings.push(warning));
  return { config, warnings };
}

/** The refusal of a configuration: it must be a ConfigError naming the variable. */
function refusalOf(env: Env): string {
  try {
    loadConfig(env, () => {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).message;
  }
  throw new Error('the configuration was accepted');
}

describe('loadConfig: signing secrets (spec §Authentication 7, §Limits)', () => {
  const shortSecret = 'short-secret-31-bytes-long-abcd';
  const nonAsciiSecret = 'secret-with-umlaut-ü-and-more-than-32-bytes';

  it.each([
    ['SERVICE_AUTH_TOKEN_SECRET', shortSecret, 'at least 32 bytes'],
    ['SERVICE_AUTH_TOKEN_SECRET', nonAsciiSecret, 'ASCII'],
    ['SERVICE_AUTH_TOKEN_SECRET_PREVIOUS', shortSecret, 'at least 32 bytes'],
    ['SERVICE_AUTH_TOKEN_SECRET_PREVIOUS', nonAsciiSecret, 'ASCII'],
  ])(
    'refuses %s = a value that is not usable (%#), naming the variable and never the value',
    (variable, value, reason) => {
      const message = refusalOf({ ...DEVELOPMENT, [variable]: value });
      expect(message).toContain(variable);
      expect(message).toContain(reason);
      expect(message).not.toContain(value);
    },
  );

  it('refuses a 32-character secret whose non-ASCII character makes it long enough in bytes', () => {
    // 31 ASCII characters plus one two-byte character: 33 UTF-8 bytes, still refused.
    const value = `${'a'.repeat(31)}é`;
    const message = refusalOf({ ...DEVELOPMENT, SERVICE_AUTH_TOKEN_SECRET: value });
    expect(message).toBe('SERVICE_AUTH_TOKEN_SECRET must contain ASCII characters only.');
  });

  it('accepts a secret of exactly 32 ASCII bytes, used exactly as configured', () => {
    const value = ' 0123456789abcdef0123456789abcd ';
    expect(value).toHaveLength(32);
    expect(load({ ...DEVELOPMENT, SERVICE_AUTH_TOKEN_SECRET: value }).config.auth.tokenSecret).toBe(value);
  });

  it.each([
    ['unset', undefined],
    ['empty', ''],
    ['blank', '   '],
    ['an empty double-quoted value', '""'],
    ['an empty single-quoted value', "''"],
  ])('treats a previous secret that is %s as none', (_label, value) => {
    const { config } = load({ ...DEVELOPMENT, SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: value });
    expect(config.auth.previousTokenSecret).toBeNull();
  });

  it('keeps a usable previous secret for validation during rotation', () => {
    const { config } = load({ ...DEVELOPMENT, SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET });
    expect(config.auth.previousTokenSecret).toBe(PREVIOUS_SECRET);
    expect(config.auth.tokenSecret).toBe(SECRET);
  });
});

describe('loadConfig: audiences (spec §Authentication 2)', () => {
  it('derives the challenge and subject-rights audiences from the person audience', () => {
    const { config } = load(PRODUCTION);
    expect(config.auth.audience).toBe('example-api');
    expect(config.auth.challengeAudience).toBe('example-api.2fa-challenge');
    expect(config.auth.subjectRightsAudience).toBe('example-api.subject-rights');
    expect(config.auth.applicationAudience).toBe('example-applications');
  });

  it.each(['example-api', 'example-api.2fa-challenge', 'example-api.subject-rights'])(
    'refuses an application audience equal to %s (an application token would pass as a person token)',
    (applicationAudience) => {
      const message = refusalOf({ ...PRODUCTION, SERVICE_APPLICATION_TOKEN_AUDIENCE: applicationAudience });
      expect(message).toContain('SERVICE_APPLICATION_TOKEN_AUDIENCE');
      expect(message).toContain('SERVICE_AUTH_TOKEN_AUDIENCE');
    },
  );
});

describe('loadConfig: trusted callers and proxies (spec §Authentication 14)', () => {
  const longKey = (seed: string) => `${seed}-caller-key-of-at-least-32-characters`;

  it('refuses a trusted caller key under 32 characters, naming the variable and not the key', () => {
    const shortKey = 'caller-key-of-31-characters-abc';
    expect(shortKey).toHaveLength(31);
    const message = refusalOf({
      ...DEVELOPMENT,
      SERVICE_TRUSTED_CALLER_KEYS: `${longKey('first')},${shortKey}`,
    });
    expect(message).toBe('SERVICE_TRUSTED_CALLER_KEYS: key 2 must be at least 32 characters long.');
    expect(message).not.toContain(shortKey);
  });

  it('refuses more than two trusted caller keys', () => {
    const keys = [longKey('one'), longKey('two'), longKey('three')];
    const message = refusalOf({ ...DEVELOPMENT, SERVICE_TRUSTED_CALLER_KEYS: keys.join(',') });
    expect(message).toContain('SERVICE_TRUSTED_CALLER_KEYS');
    for (const key of keys) expect(message).not.toContain(key);
  });

  it('accepts two keys (current and next) of 32 characters or more', () => {
    const keys = [longKey('current'), longKey('next')];
    const { config } = load({ ...DEVELOPMENT, SERVICE_TRUSTED_CALLER_KEYS: ` ${keys[0]} , ${keys[1]} ` });
    expect(config.network.trustedCallerKeys).toEqual(keys);
  });

  it.each([
    'not-an-address',
    '10.0.0.1/33',
    '10.0.0.1/',
    '10.0.0.0/8/1',
    '::1/129',
    '10.0.0.0/x',
    '300.1.1.1',
  ])('refuses the proxy entry %s, naming the variable and the entry number', (entry) => {
    const message = refusalOf({ ...DEVELOPMENT, SERVICE_TRUSTED_PROXIES: `192.0.2.1, ${entry}` });
    expect(message).toBe('SERVICE_TRUSTED_PROXIES: entry 2 is not an IP address or CIDR network.');
  });

  it('trusts exactly the listed addresses and networks', () => {
    const { config } = load({
      ...DEVELOPMENT,
      SERVICE_TRUSTED_PROXIES: '192.0.2.1, 10.0.0.0/8, 2001:db8::/32',
    });
    const proxies = config.network.trustedProxies;
    expect(proxies.check('192.0.2.1', 'ipv4')).toBe(true);
    expect(proxies.check('192.0.2.2', 'ipv4')).toBe(false);
    expect(proxies.check('10.200.3.4', 'ipv4')).toBe(true);
    expect(proxies.check('11.0.0.1', 'ipv4')).toBe(false);
    expect(proxies.check('2001:db8:1::1', 'ipv6')).toBe(true);
    expect(proxies.check('2001:db9::1', 'ipv6')).toBe(false);
  });

  it('trusts no proxy when the setting is unset', () => {
    const { config } = load(DEVELOPMENT);
    expect(config.network.trustedProxies.check('127.0.0.1', 'ipv4')).toBe(false);
  });
});

describe('loadConfig: production requirements (DECISIONS §8)', () => {
  it('accepts a complete production environment without warnings', () => {
    const { config, warnings } = load(PRODUCTION);
    expect(config.environment).toBe('production');
    expect(config.auth.tokenSecret).toBe(SECRET);
    expect(config.auth.issuer).toBe('https://id.example.com');
    expect(config.bootstrapAdmin).toBeNull();
    expect(warnings).toEqual([]);
    expect(Object.isFrozen(config.auth)).toBe(true);
  });

  it.each([
    'SERVICE_AUTH_TOKEN_SECRET',
    'SERVICE_AUTH_TOKEN_ISSUER',
    'SERVICE_AUTH_TOKEN_AUDIENCE',
    'SERVICE_APPLICATION_TOKEN_AUDIENCE',
  ])('refuses production without %s', (variable) => {
    expect(refusalOf({ ...PRODUCTION, [variable]: undefined })).toBe(
      `${variable} is required in production.`,
    );
    expect(refusalOf({ ...PRODUCTION, [variable]: '  ' })).toBe(`${variable} is required in production.`);
  });

  it('refuses production with a SQLite database but no secret: no generated secret in production', () => {
    const message = refusalOf({
      ...PRODUCTION,
      SERVICE_DATABASE_URL: 'sqlite:/var/lib/portcullis/identity.db',
      SERVICE_AUTH_TOKEN_SECRET: undefined,
    });
    expect(message).toBe('SERVICE_AUTH_TOKEN_SECRET is required in production.');
  });

  it('refuses PostgreSQL without a secret even in development (instances must share one)', () => {
    const message = refusalOf({ SERVICE_DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/test' });
    expect(message).toBe('SERVICE_AUTH_TOKEN_SECRET is required with a PostgreSQL database.');
  });

  it('refuses an unknown log level by name, and accepts a known one in any case', () => {
    expect(refusalOf({ ...DEVELOPMENT, SERVICE_LOG_LEVEL: 'verbose' })).toBe(
      'SERVICE_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent.',
    );
    expect(load({ ...DEVELOPMENT, SERVICE_LOG_LEVEL: 'DEBUG' }).config.logLevel).toBe('debug');
  });

  it('refuses an unknown environment name and an unknown database scheme', () => {
    expect(refusalOf({ ...DEVELOPMENT, SERVICE_ENVIRONMENT: 'staging' })).toContain('SERVICE_ENVIRONMENT');
    expect(refusalOf({ ...DEVELOPMENT, SERVICE_DATABASE_URL: 'mysql://secret-host/db' })).toBe(
      'SERVICE_DATABASE_URL must start with sqlite: or postgres://.',
    );
  });

  it('refuses production bootstrap settings without a password, and a password outside the rules', () => {
    const withEmail = { ...PRODUCTION, SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'root@example.com' };
    expect(refusalOf(withEmail)).toBe('SERVICE_BOOTSTRAP_ADMIN_PASSWORD is required in production.');
    const shortPassword = 'seven77';
    const message = refusalOf({ ...withEmail, SERVICE_BOOTSTRAP_ADMIN_PASSWORD: shortPassword });
    expect(message).toBe('SERVICE_BOOTSTRAP_ADMIN_PASSWORD must be 8 to 256 characters long.');
    expect(message).not.toContain(shortPassword);
    expect(refusalOf({ ...PRODUCTION, SERVICE_BOOTSTRAP_ADMIN_PASSWORD: 'a good long password' })).toBe(
      'SERVICE_BOOTSTRAP_ADMIN_EMAIL is required with the other bootstrap settings.',
    );
    expect(
      refusalOf({
        ...withEmail,
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'not an address',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: 'long enough',
      }),
    ).toBe('SERVICE_BOOTSTRAP_ADMIN_EMAIL must be an email address.');
  });

  it('gives development a bootstrap admin with a generated password, and uses configured ones as given', () => {
    expect(load(DEVELOPMENT).config.bootstrapAdmin).toEqual({
      name: 'Administrator',
      email: DEFAULTS.developmentAdminEmail,
      password: null,
    });
    const configured = load({
      ...PRODUCTION,
      SERVICE_BOOTSTRAP_ADMIN_NAME: 'Root',
      SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'root@example.com',
      SERVICE_BOOTSTRAP_ADMIN_PASSWORD: ' spaces count too ',
    }).config.bootstrapAdmin;
    expect(configured).toEqual({ name: 'Root', email: 'root@example.com', password: ' spaces count too ' });
  });
});

describe('loadConfig: lifetimes and cooldown fall back with a warning (spec §Authentication 6, §Versioning)', () => {
  const settings = [
    [
      'SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS',
      3600,
      (config: ReturnType<typeof loadConfig>) => config.auth.tokenLifetimeSeconds,
    ],
    [
      'SERVICE_APPLICATION_TOKEN_EXPIRATION_IN_SECONDS',
      600,
      (config: ReturnType<typeof loadConfig>) => config.auth.applicationTokenLifetimeSeconds,
    ],
  ] as const;

  for (const [variable, fallback, read] of settings) {
    it.each(['0', '-5', 'Infinity', 'NaN', 'ten minutes', '1.5', '1e300'])(
      `${variable} = %s falls back to ${fallback} and warns naming the variable, the value and the default`,
      (value) => {
        const { config, warnings } = load({ ...DEVELOPMENT, [variable]: value });
        expect(read(config)).toBe(fallback);
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toContain(variable);
        expect(warnings[0]).toContain(JSON.stringify(value));
        expect(warnings[0]).toContain(`using the default ${fallback}`);
      },
    );

    it(`${variable} accepts a usable whole number without a warning`, () => {
      const { config, warnings } = load({ ...DEVELOPMENT, [variable]: ' 120 ' });
      expect(read(config)).toBe(120);
      expect(warnings).toEqual([]);
    });
  }

  it.each(['-1', 'soon', 'Infinity', '0.5'])(
    'SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS = %s falls back to 300 with a warning',
    (value) => {
      const { config, warnings } = load({ ...DEVELOPMENT, SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS: value });
      expect(config.accountEmailCooldownSeconds).toBe(300);
      expect(warnings).toEqual([
        `SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS: the value ${JSON.stringify(value)} is not usable (whole seconds from 0 to 31536000); using the default 300.`,
      ]);
    },
  );

  it('accepts a cooldown of 0, which turns the cooldown off, without a warning', () => {
    const { config, warnings } = load({ ...DEVELOPMENT, SERVICE_ADMIN_EMAIL_COOLDOWN_IN_SECONDS: '0' });
    expect(config.accountEmailCooldownSeconds).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('uses the defaults silently when the settings are unset', () => {
    const { config, warnings } = load(DEVELOPMENT);
    expect(config.auth.tokenLifetimeSeconds).toBe(3600);
    expect(config.auth.applicationTokenLifetimeSeconds).toBe(600);
    expect(config.accountEmailCooldownSeconds).toBe(300);
    expect(warnings).toEqual([]);
  });
});

describe('loadConfig: the development secret (DECISIONS §8)', () => {
  let directory: string | null = null;
  afterEach(() => {
    if (directory !== null) rmSync(directory, { recursive: true, force: true });
    directory = null;
  });

  it('is generated once beside the SQLite file, readable by the owner only, and reused on the next load', () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-config-'));
    const env: Env = { SERVICE_DATABASE_URL: `sqlite:${join(directory, 'nested', 'identity.db')}` };
    const first = load(env).config;
    const secretFile = join(directory, 'nested', 'token-secret');
    const stored = readFileSync(secretFile, 'ascii');
    expect(first.auth.tokenSecret).toBe(stored);
    expect(Buffer.byteLength(stored, 'ascii')).toBeGreaterThanOrEqual(32);
    expect(statSync(secretFile).mode & 0o777).toBe(0o600);
    expect(first.auth.issuer).toBe(DEFAULTS.developmentIssuer);
    expect(first.auth.audience).toBe(DEFAULTS.developmentAudience);

    const second = load(env).config;
    expect(second.auth.tokenSecret).toBe(first.auth.tokenSecret);
  });

  it('refuses a damaged development secret file without showing its content', () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-config-'));
    writeFileSync(join(directory, 'token-secret'), 'too-short-content', { mode: 0o600 });
    const message = refusalOf({ SERVICE_DATABASE_URL: `sqlite:${join(directory, 'identity.db')}` });
    expect(message).toContain('SERVICE_AUTH_TOKEN_SECRET');
    expect(message).not.toContain('too-short-content');
  });

  it('is never written when a secret is configured', () => {
    directory = mkdtempSync(join(tmpdir(), 'portcullis-config-'));
    load({
      SERVICE_DATABASE_URL: `sqlite:${join(directory, 'identity.db')}`,
      SERVICE_AUTH_TOKEN_SECRET: SECRET,
    });
    expect(() => statSync(join(directory!, 'token-secret'))).toThrow();
  });
});

describe('loadConfig: HTTP threads (docs/performance.md)', () => {
  it('defaults to one thread per core, at most the default maximum, and to one for an in-memory database', () => {
    const expected = Math.min(availableParallelism(), DEFAULT_MAXIMUM_HTTP_THREADS);
    expect(load(PRODUCTION).config.httpThreads).toBe(expected);
    expect(load(DEVELOPMENT).config.httpThreads).toBe(1);
  });

  it('uses a configured count as given', () => {
    expect(load({ ...PRODUCTION, SERVICE_HTTP_THREADS: '3' }).config.httpThreads).toBe(3);
    expect(load({ ...DEVELOPMENT, SERVICE_HTTP_THREADS: '1' }).config.httpThreads).toBe(1);
  });

  it('refuses a count that is not a whole number from 1 to 64, and several threads on an in-memory database', () => {
    for (const value of ['0', '65', '1.5', 'two', '-1']) {
      expect(refusalOf({ ...PRODUCTION, SERVICE_HTTP_THREADS: value })).toBe(
        'SERVICE_HTTP_THREADS must be an integer from 1 to 64.',
      );
    }
    expect(refusalOf({ ...DEVELOPMENT, SERVICE_HTTP_THREADS: '2' })).toBe(
      'SERVICE_HTTP_THREADS must be 1 with an in-memory SQLite database.',
    );
  });
});
