import { randomUUID } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.ts';
import { rememberingAccepted, TokenService } from '../../src/crypto/tokens.ts';
import { Role } from '../../src/db/database.ts';
import { TEST_ENV, TEST_SECRET } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';

/** TokenService: the claims of every token kind (DECISIONS §7) and how tokens are read back. */

const PREVIOUS_SECRET = 'the-previous-secret-also-at-least-32-bytes!!';
const ISSUER = TEST_ENV.SERVICE_AUTH_TOKEN_ISSUER!;
const AUDIENCE = TEST_ENV.SERVICE_AUTH_TOKEN_AUDIENCE!;
const APPLICATION_AUDIENCE = TEST_ENV.SERVICE_APPLICATION_TOKEN_AUDIENCE!;

function tokenService(env: Record<string, string> = {}) {
  const config = loadConfig({ ...TEST_ENV, ...env }, () => {});
  const clock = new TestClock(new Date('2026-03-01T12:00:00.000Z'));
  return { tokens: new TokenService(config.auth, clock), clock };
}

/** The payload, after an independent library checks the signature with the secret's ASCII bytes. */
async function verifiedPayload(token: string, secret = TEST_SECRET) {
  const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), {
    algorithms: ['HS256'],
    issuer: ISSUER,
    currentDate: new Date('2026-03-01T12:00:30.000Z'),
  });
  return payload;
}

const person = { sub: randomUUID(), role: Role.User, kind: 'person' as const, sst: 'stamp-1' };

function sign(claims: Record<string, unknown>, key = TEST_SECRET): string {
  const now = Math.floor(new Date('2026-03-01T12:00:00.000Z').getTime() / 1000);
  return createSigner({ key, algorithm: 'HS256' })({
    iss: ISSUER,
    aud: AUDIENCE,
    iat: now,
    nbf: now,
    exp: now + 3600,
    jti: randomUUID(),
    ...person,
    ...claims,
  });
}

describe('TokenService', () => {
  describe('full person tokens', () => {
    it('carry the identity and registered claims, HS256-signed with the secret as configured', async () => {
      const { tokens } = tokenService();
      const scopeId = randomUUID();
      const issued = tokens.issueFullToken({ ...person, scopeId, permissions: ['reports.read'] });
      expect(decodeProtectedHeader(issued.token).alg).toBe('HS256');
      const payload = await verifiedPayload(issued.token);
      const issuedAt = Date.parse('2026-03-01T12:00:00.000Z') / 1000;
      expect(payload).toEqual({
        sub: person.sub,
        role: Role.User,
        kind: 'person',
        sst: 'stamp-1',
        scopeId,
        permissions: ['reports.read'],
        iss: ISSUER,
        aud: AUDIENCE,
        iat: issuedAt,
        nbf: issuedAt,
        exp: issuedAt + 3600,
        jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });
      expect(issued.expiresAt.toISOString()).toBe('2026-03-01T13:00:00.000Z');
    });

    it('omit scopeId for administrators and an empty permissions list', async () => {
      const { tokens } = tokenService();
      const payload = await verifiedPayload(
        tokens.issueFullToken({
          sub: randomUUID(),
          role: Role.SystemAdmin,
          kind: 'person',
          sst: 's',
          permissions: [],
        }).token,
      );
      expect(payload).not.toHaveProperty('scopeId');
      expect(payload).not.toHaveProperty('permissions');
    });

    it('get a fresh jti each time', () => {
      const { tokens } = tokenService();
      const first = tokens.readBearer(tokens.issueFullToken(person).token);
      const second = tokens.readBearer(tokens.issueFullToken(person).token);
      expect(first?.claims.jti).not.toBe(second?.claims.jti);
    });

    it('last SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS', async () => {
      const { tokens } = tokenService({ SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS: '120' });
      const payload = await verifiedPayload(tokens.issueFullToken(person).token);
      expect(payload.exp! - payload.iat!).toBe(120);
    });

    it('are read back as full bearer tokens, valid from nbf up to (not including) exp', () => {
      const { tokens, clock } = tokenService();
      const { token } = tokens.issueFullToken(person);
      expect(tokens.readBearer(token)).toMatchObject({
        kind: 'full',
        claims: { sub: person.sub, sst: 'stamp-1' },
      });
      clock.advanceSeconds(3599);
      expect(tokens.readBearer(token)?.kind).toBe('full');
      clock.advanceSeconds(1);
      expect(tokens.readBearer(token)).toBeNull();
    });

    it('are not read before nbf', () => {
      const { tokens, clock } = tokenService();
      const now = Math.floor(clock.now().getTime() / 1000);
      const token = sign({ nbf: now + 30 });
      expect(tokens.readBearer(token)).toBeNull();
      clock.advanceSeconds(30);
      expect(tokens.readBearer(token)?.kind).toBe('full');
    });

    it('are not application tokens', () => {
      const { tokens } = tokenService();
      expect(tokens.readApplicationToken(tokens.issueFullToken(person).token)).toBeNull();
    });
  });

  describe('subject-rights tokens', () => {
    it('carry the subject-rights audience, and no scope or permissions', async () => {
      const { tokens } = tokenService();
      const { token } = tokens.issueSubjectRightsToken({
        ...person,
        scopeId: randomUUID(),
        permissions: ['x'],
      });
      const payload = await verifiedPayload(token);
      expect(payload.aud).toBe(`${AUDIENCE}.subject-rights`);
      expect(payload).not.toHaveProperty('scopeId');
      expect(payload).not.toHaveProperty('permissions');
      expect(payload).toMatchObject({ sub: person.sub, role: Role.User, kind: 'person', sst: 'stamp-1' });
      expect(tokens.readBearer(token)?.kind).toBe('subjectRights');
    });
  });

  describe('two-factor challenge tokens', () => {
    it('carry the challenge audience and are read as challenges, never as full tokens', async () => {
      const { tokens } = tokenService();
      const cid = randomUUID();
      const { token, expiresAt } = tokens.issueChallengeToken({ sub: person.sub, cid, sst: 'stamp-1' }, 600);
      const payload = await verifiedPayload(token);
      expect(payload.aud).toBe(`${AUDIENCE}.2fa-challenge`);
      expect(payload).not.toHaveProperty('role');
      expect(expiresAt.toISOString()).toBe('2026-03-01T12:10:00.000Z');
      expect(tokens.readBearer(token)).toMatchObject({ kind: 'challenge', claims: { cid } });
    });
  });

  describe('application tokens', () => {
    it('carry their own audience, the application, scope and credential, and no role or stamp', async () => {
      const { tokens } = tokenService();
      const application = { sub: randomUUID(), scopeId: randomUUID(), cid: randomUUID(), permissions: ['a'] };
      const { token, expiresAt } = tokens.issueApplicationToken(application);
      const payload = await verifiedPayload(token);
      expect(payload).toMatchObject({ ...application, aud: APPLICATION_AUDIENCE, iss: ISSUER });
      expect(payload).not.toHaveProperty('role');
      expect(payload).not.toHaveProperty('sst');
      expect(payload.exp! - payload.iat!).toBe(600);
      expect(expiresAt.toISOString()).toBe('2026-03-01T12:10:00.000Z');
    });

    it('are read back only as application tokens, with zero clock skew', () => {
      const { tokens, clock } = tokenService();
      const { token } = tokens.issueApplicationToken({
        sub: randomUUID(),
        scopeId: randomUUID(),
        cid: randomUUID(),
      });
      expect(tokens.readBearer(token)).toBeNull();
      clock.advanceSeconds(599);
      expect(tokens.readApplicationToken(token)).not.toBeNull();
      clock.advanceSeconds(1);
      expect(tokens.readApplicationToken(token)).toBeNull();
    });

    it('last SERVICE_APPLICATION_TOKEN_EXPIRATION_IN_SECONDS', async () => {
      const { tokens } = tokenService({ SERVICE_APPLICATION_TOKEN_EXPIRATION_IN_SECONDS: '60' });
      const { token } = tokens.issueApplicationToken({
        sub: randomUUID(),
        scopeId: randomUUID(),
        cid: randomUUID(),
      });
      const payload = await verifiedPayload(token);
      expect(payload.exp! - payload.iat!).toBe(60);
    });
  });

  describe('exactly one audience', () => {
    it('accepts a single audience written as a one-element list', () => {
      const { tokens } = tokenService();
      expect(tokens.readBearer(sign({ aud: [AUDIENCE] }))?.kind).toBe('full');
    });

    it.each([
      ['person and subject-rights', [AUDIENCE, `${AUDIENCE}.subject-rights`]],
      ['person and challenge', [AUDIENCE, `${AUDIENCE}.2fa-challenge`]],
      ['person and application', [AUDIENCE, APPLICATION_AUDIENCE]],
      ['person twice', [AUDIENCE, AUDIENCE]],
      ['none', []],
    ])('refuses a token whose audiences are %s, as a bearer and as an application token', (_name, aud) => {
      const { tokens } = tokenService();
      const token = sign({ aud, cid: randomUUID(), scopeId: randomUUID() });
      expect(tokens.readBearer(token)).toBeNull();
      expect(tokens.readApplicationToken(token)).toBeNull();
    });

    it('refuses an application token that also names the person audience', () => {
      const { tokens } = tokenService();
      const token = sign({ aud: [APPLICATION_AUDIENCE, AUDIENCE], cid: randomUUID(), scopeId: randomUUID() });
      expect(tokens.readApplicationToken(token)).toBeNull();
    });
  });

  describe('refusals', () => {
    it.each([
      ['another issuer', { iss: 'https://elsewhere.test' }],
      ['no issuer', { iss: undefined }],
      ['another audience', { aud: 'someone-else' }],
      ['no expiry', { exp: undefined }],
      ['no subject', { sub: undefined }],
      ['an unknown role', { role: 4 }],
      ['an unknown identity kind', { kind: 'robot' }],
    ])('refuses a token with %s', (_name, claims) => {
      const { tokens } = tokenService();
      expect(tokens.readBearer(sign(claims))).toBeNull();
    });

    it('refuses HS384 and HS512 under the right secret', () => {
      const { tokens } = tokenService();
      for (const algorithm of ['HS384', 'HS512'] as const) {
        const now = Math.floor(Date.parse('2026-03-01T12:00:00.000Z') / 1000);
        const token = createSigner({ key: TEST_SECRET, algorithm })({
          ...person,
          iss: ISSUER,
          aud: AUDIENCE,
          iat: now,
          nbf: now,
          exp: now + 60,
        });
        expect(tokens.readBearer(token)).toBeNull();
      }
    });

    it('refuses a challenge token without its challenge id', () => {
      const { tokens } = tokenService();
      expect(tokens.readBearer(sign({ aud: `${AUDIENCE}.2fa-challenge` }))).toBeNull();
    });
  });

  describe('secret rotation', () => {
    it('reads tokens signed with the previous secret only while it is configured', () => {
      const token = sign({}, PREVIOUS_SECRET);
      expect(
        tokenService({ SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET }).tokens.readBearer(token)?.kind,
      ).toBe('full');
      expect(tokenService().tokens.readBearer(token)).toBeNull();
    });

    it('reads application tokens signed with the previous secret while it is configured', () => {
      const token = sign(
        { aud: APPLICATION_AUDIENCE, cid: randomUUID(), scopeId: randomUUID() },
        PREVIOUS_SECRET,
      );
      const rotating = tokenService({ SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET }).tokens;
      expect(rotating.readApplicationToken(token)).not.toBeNull();
      expect(tokenService().tokens.readApplicationToken(token)).toBeNull();
    });

    it('always signs with the current secret', async () => {
      const { tokens } = tokenService({ SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET });
      const { token } = tokens.issueFullToken(person);
      await expect(verifiedPayload(token)).resolves.toMatchObject({ sub: person.sub });
      await expect(verifiedPayload(token, PREVIOUS_SECRET)).rejects.toThrow();
    });

    it('does not read an expired token signed with the previous secret', () => {
      const { tokens, clock } = tokenService({ SERVICE_AUTH_TOKEN_SECRET_PREVIOUS: PREVIOUS_SECRET });
      const token = sign({}, PREVIOUS_SECRET);
      clock.advanceSeconds(3600);
      expect(tokens.readBearer(token)).toBeNull();
    });
  });

  describe('remembered tokens', () => {
    /** A verifier that accepts tokens starting with "good" and counts its checks. */
    function countingVerifier() {
      const checked: string[] = [];
      const verify = (token: string) => {
        checked.push(token);
        if (!token.startsWith('good')) throw new Error('refused');
        return { sub: token };
      };
      return { verify, checked };
    }

    it('checks an accepted token once, and a refused token every time it is presented', () => {
      const { verify, checked } = countingVerifier();
      const remembering = rememberingAccepted([verify]);
      expect(remembering('good-1')).toEqual({ sub: 'good-1' });
      expect(remembering('good-1')).toEqual({ sub: 'good-1' });
      expect(() => remembering('bad-1')).toThrow('refused');
      expect(() => remembering('bad-1')).toThrow('refused');
      expect(checked).toEqual(['good-1', 'bad-1', 'bad-1']);
    });

    it('forgets the least recently presented token past its capacity', () => {
      const { verify, checked } = countingVerifier();
      const remembering = rememberingAccepted([verify], 2);
      remembering('good-1');
      remembering('good-2');
      remembering('good-1');
      remembering('good-3'); // forgets good-2, presented longest ago
      remembering('good-1');
      remembering('good-2');
      expect(checked).toEqual(['good-1', 'good-2', 'good-3', 'good-2']);
    });

    it('remember a token the previous key accepted without checking it under the current key again', () => {
      const current = countingVerifier(); // accepts only tokens starting with "good"
      const previous = countingVerifier();
      const previousAccepts = (token: string) => previous.verify(`good-${token}`);
      const remembering = rememberingAccepted([current.verify, previousAccepts]);
      expect(remembering('old-1')).toEqual({ sub: 'good-old-1' });
      expect(remembering('old-1')).toEqual({ sub: 'good-old-1' });
      expect(current.checked).toEqual(['old-1']);
      expect(previous.checked).toEqual(['good-old-1']);
    });

    it("refuses with the last key's refusal when no key accepts", () => {
      const refusing = (message: string) => () => {
        throw new Error(message);
      };
      const remembering = rememberingAccepted([refusing('current'), refusing('previous')]);
      expect(() => remembering('any')).toThrow('previous');
    });

    it('do not make a bearer token read before an application token, nor a tampered copy valid', () => {
      const { tokens } = tokenService();
      const { token } = tokens.issueFullToken(person);
      expect(tokens.readBearer(token)?.kind).toBe('full');
      expect(tokens.readApplicationToken(token)).toBeNull();
      // The signature's first character (its last carries unused bits that decoders may ignore).
      const signatureStart = token.lastIndexOf('.') + 1;
      const changed = token[signatureStart] === 'A' ? 'B' : 'A';
      const tampered = token.slice(0, signatureStart) + changed + token.slice(signatureStart + 1);
      expect(tokens.readBearer(tampered)).toBeNull();
      expect(tokens.readBearer(token)?.kind).toBe('full');
    });
  });
});
