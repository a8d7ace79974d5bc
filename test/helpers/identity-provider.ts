import { generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, type JWK, type JWTPayload, SignJWT } from 'jose';

/**
 * A real OpenID Connect provider for tests, in the test process: an HTTP server on a loopback
 * port that serves a discovery document and a JSON Web Key Set, and signs RS256 ID tokens with
 * the private halves of the keys it publishes. Keys can be rotated, added and withheld, and
 * every request it receives is counted, so tests can see the service's key cache at work.
 */

export interface ProviderKey {
  readonly kid: string;
  /** A Node key object, so one key can also sign with other RSA algorithms (for refusal tests). */
  readonly privateKey: KeyObject;
  readonly publicJwk: JWK;
}

export interface IdTokenOptions {
  /** Claims to add or override (sub, email, email_verified, name, picture, nonce, ...). */
  readonly claims?: JWTPayload;
  /** Claims to leave out of the defaults. */
  readonly omit?: readonly string[];
  /** Sign with this key (published or not); default the provider's current key. */
  readonly key?: ProviderKey;
  /** The kid header; default the signing key's. */
  readonly kid?: string;
  readonly issuer?: string;
  readonly audience?: string | string[];
  /** Issue time (default now); the token lives lifetimeSeconds (default 600) from then. */
  readonly issuedAt?: Date;
  readonly lifetimeSeconds?: number;
  readonly algorithm?: 'RS256' | 'RS384' | 'PS256';
}

export const CLIENT_ID = 'portcullis-test-client';
export const OTHER_CLIENT_ID = 'portcullis-other-client';

export class TestIdentityProvider {
  readonly #server: Server;
  #published: ProviderKey[] = [];
  #current: ProviderKey;
  #requests: string[] = [];
  #discoveryIssuer: string | null = null;
  baseUrl = '';

  private constructor(server: Server, key: ProviderKey) {
    this.#server = server;
    this.#current = key;
    this.#published = [key];
  }

  static async start(): Promise<TestIdentityProvider> {
    const server = createServer();
    const provider = new TestIdentityProvider(server, await createProviderKey());
    server.on('request', (request, response) => {
      const path = new URL(request.url ?? '/', 'http://localhost').pathname;
      provider.#requests.push(path);
      let body: unknown;
      if (path === '/.well-known/openid-configuration') {
        body = {
          issuer: provider.#discoveryIssuer ?? provider.issuer,
          jwks_uri: provider.jwksUrl,
          id_token_signing_alg_values_supported: ['RS256'],
        };
      } else if (path === '/jwks') {
        body = { keys: provider.#published.map((key) => key.publicJwk) };
      } else {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    provider.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return provider;
  }

  /** The issuer the provider puts in its tokens: its own address, as real providers do. */
  get issuer(): string {
    return this.baseUrl;
  }

  get jwksUrl(): string {
    return `${this.baseUrl}/jwks`;
  }

  get currentKey(): ProviderKey {
    return this.#current;
  }

  /** The environment that points the service at this provider (key set found by discovery). */
  environment(clientIds: readonly string[] = [CLIENT_ID, OTHER_CLIENT_ID]): Record<string, string> {
    return { SERVICE_EXTIDP_ISSUER: this.issuer, SERVICE_EXTIDP_CLIENT_IDS: clientIds.join(',') };
  }

  /** How many times a path was requested since the start (or the last reset). */
  requestsTo(path: '/jwks' | '/.well-known/openid-configuration'): number {
    return this.#requests.filter((requested) => requested === path).length;
  }

  /** Makes the discovery document name another issuer (an impersonation the service must refuse). */
  announceIssuer(issuer: string | null): void {
    this.#discoveryIssuer = issuer;
  }

  /** Publishes a new key and signs with it from now on; the old one stays published unless dropped. */
  async rotateKey(options: { dropOld?: boolean } = {}): Promise<ProviderKey> {
    const key = await createProviderKey();
    this.#published = options.dropOld === true ? [key] : [...this.#published, key];
    this.#current = key;
    return key;
  }

  /**
   * Publishes an extra key without making it the signing key. `announceAlgorithm: false`
   * leaves `alg` out of its JWK, as some providers do, so only the verifier's own algorithm
   * list stands between it and a token of another RSA algorithm.
   */
  async publishKey(options: { announceAlgorithm?: boolean } = {}): Promise<ProviderKey> {
    const key = await createProviderKey();
    const { alg: _alg, ...withoutAlgorithm } = key.publicJwk;
    const published = options.announceAlgorithm === false ? { ...key, publicJwk: withoutAlgorithm } : key;
    this.#published = [...this.#published, published];
    return published;
  }

  async idToken(options: IdTokenOptions = {}): Promise<string> {
    const key = options.key ?? this.#current;
    const issuedAt = Math.floor((options.issuedAt ?? new Date()).getTime() / 1000);
    const defaults: JWTPayload = {
      sub: `subject-${randomBytes(6).toString('hex')}`,
      email: `extidp-${randomBytes(4).toString('hex')}@example.test`,
      email_verified: true,
      name: 'Extidp Person',
      picture: 'https://pictures.example.test/me.png',
    };
    const claims: JWTPayload = { ...defaults, ...options.claims };
    for (const name of options.omit ?? []) delete claims[name];
    return new SignJWT(claims)
      .setProtectedHeader({ alg: options.algorithm ?? 'RS256', kid: options.kid ?? key.kid, typ: 'JWT' })
      .setIssuer(options.issuer ?? this.issuer)
      .setAudience(options.audience ?? CLIENT_ID)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + (options.lifetimeSeconds ?? 600))
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve, reject) =>
      this.#server.close((error) => (error === undefined ? resolve() : reject(error))),
    );
  }
}

/** A fresh RS256 key pair; `kid` may be given to make a second key under the same id. */
export async function createProviderKey(kid = `key-${randomBytes(6).toString('hex')}`): Promise<ProviderKey> {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicJwk };
}
