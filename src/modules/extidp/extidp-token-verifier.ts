import type { FastifyBaseLogger } from 'fastify';
import { createRemoteJWKSet, errors, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { Clock } from '../../clock.ts';
import { type Config, isAbsoluteHttpUrl } from '../../config/config.ts';

/** What the service keeps of a verified ID token. */
export interface VerifiedIdToken {
  readonly issuer: string;
  readonly subject: string;
  /** Trimmed; null when the token carries no usable address. */
  readonly email: string | null;
  readonly emailVerified: boolean;
  readonly name: string | null;
  readonly pictureUrl: string | null;
  /** The token's nonce claim, compared by the sign-in command with the one the client sent. */
  readonly nonce: string | null;
}

/** How long a provider may take to answer a discovery or key-set request. */
const PROVIDER_TIMEOUT_MILLISECONDS = 5_000;
/** Keys are re-read after this long even when no unknown key id has been seen. */
const KEY_SET_MAXIMUM_AGE_MILLISECONDS = 10 * 60 * 1000;
/**
 * An unknown key id triggers a re-read of the key set at most this often: a caller presenting
 * made-up key ids must not be able to make the service hammer the provider.
 */
const KEY_SET_REFRESH_COOLDOWN_MILLISECONDS = 30_000;

const MAXIMUM_SUBJECT_LENGTH = 255;
const MAXIMUM_EMAIL_LENGTH = 320;
const MAXIMUM_NAME_LENGTH = 200;
const MAXIMUM_PICTURE_URL_LENGTH = 2048;

/**
 * Verifies ID tokens of the configured OpenID Connect provider (spec §Endpoints, extidp):
 * RS256 signature against the provider's published key set, issuer, audience (one of the
 * configured client ids) and expiry, checked against the service clock. Keys are fetched once,
 * cached, and re-read when a token names an unknown key id (provider key rotation).
 *
 * This is network I/O: call it outside any database transaction (a command's prepare step).
 */
export class ExtidpTokenVerifier {
  readonly #settings: Config['extidp'];
  readonly #clock: Clock;
  readonly #log: FastifyBaseLogger;
  #keySet: JWTVerifyGetKey | null = null;
  #keySetPending: Promise<JWTVerifyGetKey> | null = null;

  constructor(settings: Config['extidp'], clock: Clock, log: FastifyBaseLogger) {
    this.#settings = settings;
    this.#clock = clock;
    this.#log = log;
  }

  /**
   * The verified token, or null when it is not acceptable for any reason (the reason is logged,
   * never the token). `maxAgeSeconds` also requires an `iat` no older than that: a re-authenticating
   * caller must present a token issued just now, not one kept from an earlier sign-in.
   */
  async verify(idToken: string, options: { maxAgeSeconds?: number } = {}): Promise<VerifiedIdToken | null> {
    const { issuer, clientIds } = this.#settings;
    // No configured client id means no audience could ever match: every token is refused,
    // without asking the provider anything.
    if (issuer === null || clientIds.length === 0) return null;
    let keySet: JWTVerifyGetKey;
    try {
      keySet = await this.#loadKeySet(issuer);
    } catch (error) {
      this.#log.warn({ reason: describe(error) }, 'extidp key set unavailable');
      return null;
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(idToken, keySet, {
        issuer,
        audience: [...clientIds],
        // Only the provider's RSA keys: no "none", no HMAC keyed with a public key.
        algorithms: ['RS256'],
        requiredClaims: ['iss', 'aud', 'exp', 'sub'],
        currentDate: this.#clock.now(),
        ...(options.maxAgeSeconds === undefined ? {} : { maxTokenAge: options.maxAgeSeconds }),
      }));
    } catch (error) {
      if (!(error instanceof errors.JOSEError)) {
        // A network failure while re-reading the key set, not a fault of the token itself.
        this.#log.warn({ reason: describe(error) }, 'extidp key set unavailable');
      } else {
        this.#log.info({ reason: error.code }, 'extidp token refused');
      }
      return null;
    }
    return readClaims(issuer, payload);
  }

  /** The key set: configured, or discovered from the issuer once and then reused. */
  async #loadKeySet(issuer: string): Promise<JWTVerifyGetKey> {
    if (this.#keySet !== null) return this.#keySet;
    // Concurrent first sign-ins share one discovery request; a failed one is retried next time.
    this.#keySetPending ??= this.#createKeySet(issuer).finally(() => {
      this.#keySetPending = null;
    });
    this.#keySet = await this.#keySetPending;
    return this.#keySet;
  }

  async #createKeySet(issuer: string): Promise<JWTVerifyGetKey> {
    const url = this.#settings.jwksUrl ?? (await discoverKeySetUrl(issuer));
    return createRemoteJWKSet(new URL(url), {
      timeoutDuration: PROVIDER_TIMEOUT_MILLISECONDS,
      cacheMaxAge: KEY_SET_MAXIMUM_AGE_MILLISECONDS,
      cooldownDuration: KEY_SET_REFRESH_COOLDOWN_MILLISECONDS,
    });
  }
}

/**
 * OpenID Connect Discovery 1.0: the key set's address is `jwks_uri` of the issuer's
 * configuration document, and that document must name the same issuer (§4.3), so a
 * misconfigured or impersonated provider is not trusted.
 */
async function discoverKeySetUrl(issuer: string): Promise<string> {
  const address = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
  const response = await fetch(address, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MILLISECONDS),
  });
  if (response.status !== 200) throw new Error(`discovery answered ${response.status}`);
  const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
  if (document.issuer !== issuer) throw new Error('discovery document names another issuer');
  if (typeof document.jwks_uri !== 'string' || !isAbsoluteHttpUrl(document.jwks_uri)) {
    throw new Error('discovery document has no usable jwks_uri');
  }
  return document.jwks_uri;
}

function readClaims(issuer: string, payload: JWTPayload): VerifiedIdToken | null {
  const subject = payload.sub;
  if (typeof subject !== 'string' || subject === '' || subject.length > MAXIMUM_SUBJECT_LENGTH) return null;
  const email = boundedText(payload.email, MAXIMUM_EMAIL_LENGTH);
  const picture = boundedText(payload.picture, MAXIMUM_PICTURE_URL_LENGTH);
  return {
    issuer,
    subject,
    email,
    // Some providers (AWS Cognito among them) send the flag as the string "true".
    emailVerified: payload.email_verified === true || payload.email_verified === 'true',
    name: nameOf(payload),
    pictureUrl: picture !== null && isAbsoluteHttpUrl(picture) ? picture : null,
    nonce: typeof payload.nonce === 'string' ? payload.nonce : null,
  };
}

function nameOf(payload: JWTPayload): string | null {
  const full = boundedText(payload.name, Number.POSITIVE_INFINITY);
  const parts = [payload.given_name, payload.family_name]
    .map((part) => boundedText(part, Number.POSITIVE_INFINITY))
    .filter((part): part is string => part !== null);
  const name = full ?? (parts.length > 0 ? parts.join(' ') : null);
  return name === null ? null : name.slice(0, MAXIMUM_NAME_LENGTH);
}

/** A non-blank string claim, trimmed; null when absent, blank, of another type or too long. */
function boundedText(value: unknown, maximumLength: number): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return trimmed === '' || trimmed.length > maximumLength ? null : trimmed;
}

/** A failure's kind for the log: never the token, never a provider's answer body. */
function describe(error: unknown): string {
  if (error instanceof errors.JOSEError) return error.code;
  if (error instanceof Error) return error.name === 'Error' ? error.message : error.name;
  return 'unknown';
}
