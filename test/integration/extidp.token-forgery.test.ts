import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { allExtidpUsers, idTokenNow, refusal, signInWithExtidp } from '../helpers/extidp.ts';
import { createScope, createSystemAdmin } from '../helpers/factories.ts';
import {
  CLIENT_ID,
  createProviderKey,
  type IdTokenOptions,
  TestIdentityProvider,
} from '../helpers/identity-provider.ts';

const FAILED = 'Extidp authentication failed.';

/**
 * Threat: someone presents an ID token the provider did not issue for us, or not now, or not
 * for this sign-in attempt. Every such token is refused with the one 401, and creates nothing.
 */
for (const dialect of DIALECTS) {
  describe(`extidp token forgery and replay (${dialect})`, () => {
    let provider: TestIdentityProvider;
    let test: TestApp;
    let scopeId: string;

    beforeAll(async () => {
      provider = await TestIdentityProvider.start();
      test = await buildTestApp(dialect, { env: provider.environment() });
      const admin = await createSystemAdmin(test);
      scopeId = (await createScope(test, [admin.id], { extidp_signin_enabled: 1 })).id;
    });
    afterAll(async () => {
      await test.close();
      await provider.close();
    });

    const token = (options: IdTokenOptions = {}) => idTokenNow(test, provider, options);

    async function expectRefused(idToken: string, nonce?: string | null): Promise<void> {
      const before = await allExtidpUsers(test);
      const response = await signInWithExtidp(test, {
        idToken,
        scopeId,
        ...(nonce === undefined ? {} : { nonce }),
      });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(refusal(FAILED));
      expect(await allExtidpUsers(test)).toEqual(before);
    }

    it('accepts the genuine token (the baseline the refusals below differ from)', async () => {
      const response = await signInWithExtidp(test, { idToken: await token(), scopeId });
      expect(response.status).toBe(200);
    });

    it('refuses an expired token', async () => {
      const expired = await token({ lifetimeSeconds: 60 });
      test.clock.advanceSeconds(61);
      await expectRefused(expired);
    });

    it('refuses a token issued for another client (wrong audience)', async () => {
      await expectRefused(await token({ audience: 'another-relying-party' }));
    });

    it('refuses a token naming another issuer, even when signed with the provider’s key', async () => {
      await expectRefused(await token({ issuer: 'https://impostor.example.test' }));
    });

    it('refuses a token signed with a key the provider does not publish (unknown key id)', async () => {
      await expectRefused(await token({ key: await createProviderKey() }));
    });

    it('refuses a token signed by another key under the published key id (bad signature)', async () => {
      const impostor = await createProviderKey(provider.currentKey.kid);
      await expectRefused(await token({ key: impostor }));
    });

    it('refuses a genuine token whose claims were altered after signing', async () => {
      const [header, payload, signature] = (await token()).split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      claims.sub = 'someone-else';
      const tampered = Buffer.from(JSON.stringify(claims)).toString('base64url');
      await expectRefused(`${header}.${tampered}.${signature}`);
    });

    it('refuses algorithm confusion: an HS256 token keyed with the public key, and an unsigned one', async () => {
      const now = Math.floor(test.clock.now().getTime() / 1000);
      const publicKeyAsSecret = new TextEncoder().encode(JSON.stringify(provider.currentKey.publicJwk));
      const hmac = await new SignJWT({ sub: 'x', email: 'x@example.test', email_verified: true })
        .setProtectedHeader({ alg: 'HS256', kid: provider.currentKey.kid })
        .setIssuer(provider.issuer)
        .setAudience(CLIENT_ID)
        .setIssuedAt(now)
        .setExpirationTime(now + 600)
        .sign(publicKeyAsSecret);
      await expectRefused(hmac);
      const [, payload] = hmac.split('.') as [string, string];
      const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`;
      await expectRefused(unsigned);
    });

    it('refuses an RSA token of another algorithm than RS256', async () => {
      await expectRefused(await token({ algorithm: 'PS256' }));
    });

    describe('nonce (replay of a token obtained for another sign-in attempt)', () => {
      it('accepts a nonce equal to the token’s claim', async () => {
        const response = await signInWithExtidp(test, {
          idToken: await token({ claims: { nonce: 'n-0S6_WzA2Mj' } }),
          scopeId,
          nonce: 'n-0S6_WzA2Mj',
        });
        expect(response.status).toBe(200);
      });

      it('refuses a different nonce, one differing only in case, and one the token does not carry', async () => {
        await expectRefused(await token({ claims: { nonce: 'n-0S6_WzA2Mj' } }), 'n-other');
        await expectRefused(await token({ claims: { nonce: 'n-0S6_WzA2Mj' } }), 'N-0S6_WZA2MJ');
        await expectRefused(await token(), 'n-0S6_WzA2Mj');
      });

      it('compares nothing when the nonce is absent, null or empty', async () => {
        for (const nonce of [undefined, null, '']) {
          const response = await signInWithExtidp(test, {
            idToken: await token({ claims: { nonce: 'n-any' } }),
            scopeId,
            ...(nonce === undefined ? {} : { nonce }),
          });
          expect(response.status).toBe(200);
        }
      });
    });
  });

  describe(`extidp provider keys (${dialect})`, () => {
    let provider: TestIdentityProvider;
    // Each test configures its own app; one at a time, closed after the test.
    let current: TestApp | null = null;

    beforeAll(async () => {
      provider = await TestIdentityProvider.start();
    });
    afterEach(async () => {
      vi.useRealTimers();
      provider.announceIssuer(null);
      await current?.close();
      current = null;
    });
    afterAll(async () => {
      await provider.close();
    });

    async function appWith(env: Record<string, string>): Promise<{ test: TestApp; scopeId: string }> {
      const test = await buildTestApp(dialect, { env });
      current = test;
      const admin = await createSystemAdmin(test);
      const scope = await createScope(test, [admin.id], { extidp_signin_enabled: 1 });
      return { test, scopeId: scope.id };
    }

    it('discovers the key set, caches it, and re-reads it for an unknown key id only after the cool-down', async () => {
      const { test, scopeId } = await appWith(provider.environment());
      const jwksBefore = provider.requestsTo('/jwks');
      const discoveryBefore = provider.requestsTo('/.well-known/openid-configuration');
      const signIn = async (options: IdTokenOptions = {}) =>
        signInWithExtidp(test, { idToken: await idTokenNow(test, provider, options), scopeId });

      expect((await signIn()).status).toBe(200);
      expect((await signIn()).status).toBe(200);
      expect(provider.requestsTo('/.well-known/openid-configuration') - discoveryBefore).toBe(1);
      expect(provider.requestsTo('/jwks') - jwksBefore).toBe(1);

      // A made-up key id right after a read does not make the service ask the provider again.
      expect((await signIn({ key: await createProviderKey() })).status).toBe(401);
      expect(provider.requestsTo('/jwks') - jwksBefore).toBe(1);

      // The provider rotates its key; once the cool-down has passed, the new key id is fetched.
      vi.useFakeTimers({ toFake: ['Date'] });
      vi.setSystemTime(Date.now() + 31_000);
      await provider.rotateKey({ dropOld: true });
      expect((await signIn()).status).toBe(200);
      expect(provider.requestsTo('/jwks') - jwksBefore).toBe(2);
    });

    it('accepts only RS256, even from a published key whose JWK names no algorithm', async () => {
      const bareKey = await provider.publishKey({ announceAlgorithm: false });
      const { test, scopeId } = await appWith(provider.environment());
      const genuine = await signInWithExtidp(test, {
        idToken: await idTokenNow(test, provider, { key: bareKey }),
        scopeId,
      });
      expect(genuine.status).toBe(200);
      for (const algorithm of ['PS256', 'RS384'] as const) {
        const response = await signInWithExtidp(test, {
          idToken: await idTokenNow(test, provider, { key: bareKey, algorithm }),
          scopeId,
        });
        expect(response.status).toBe(401);
        expect(response.body).toEqual(refusal(FAILED));
      }
    });

    it('uses SERVICE_EXTIDP_JWKS_URL when set, without discovery', async () => {
      const { test, scopeId } = await appWith({
        ...provider.environment(),
        SERVICE_EXTIDP_JWKS_URL: provider.jwksUrl,
      });
      const discoveryBefore = provider.requestsTo('/.well-known/openid-configuration');
      const response = await signInWithExtidp(test, { idToken: await idTokenNow(test, provider), scopeId });
      expect(response.status).toBe(200);
      expect(provider.requestsTo('/.well-known/openid-configuration')).toBe(discoveryBefore);
    });

    it('refuses every token when no client id is configured, without asking the provider', async () => {
      const { test, scopeId } = await appWith({ SERVICE_EXTIDP_ISSUER: provider.issuer });
      const before = provider.requestsTo('/jwks') + provider.requestsTo('/.well-known/openid-configuration');
      const response = await signInWithExtidp(test, { idToken: await idTokenNow(test, provider), scopeId });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(refusal(FAILED));
      expect(provider.requestsTo('/jwks') + provider.requestsTo('/.well-known/openid-configuration')).toBe(
        before,
      );
      expect(await allExtidpUsers(test)).toEqual([]);
    });

    it('does not trust a discovery document that names another issuer (impersonated configuration)', async () => {
      const { test, scopeId } = await appWith(provider.environment());
      provider.announceIssuer('https://impostor.example.test');
      const response = await signInWithExtidp(test, { idToken: await idTokenNow(test, provider), scopeId });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(refusal(FAILED));
      // Discovery is retried on the next request, so a corrected provider works without a restart.
      provider.announceIssuer(null);
      const retried = await signInWithExtidp(test, { idToken: await idTokenNow(test, provider), scopeId });
      expect(retried.status).toBe(200);
    });

    it('answers 401, never 500, when the provider cannot be reached', async () => {
      const { test, scopeId } = await appWith({
        SERVICE_EXTIDP_ISSUER: provider.issuer,
        SERVICE_EXTIDP_CLIENT_IDS: CLIENT_ID,
        // A loopback port nothing listens on.
        SERVICE_EXTIDP_JWKS_URL: 'http://127.0.0.1:9/jwks',
      });
      const response = await signInWithExtidp(test, { idToken: await idTokenNow(test, provider), scopeId });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(refusal(FAILED));
    });
  });
}
