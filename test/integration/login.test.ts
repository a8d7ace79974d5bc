import { randomBytes } from 'node:crypto';
import { hashSync, parseOptions } from '@node-rs/argon2';
import { jwtVerify } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config/config.ts';
import { ConcurrencyBound } from '../../src/crypto/concurrency.ts';
import { CALLER_GONE, PASSWORD_HASH_PARAMETERS } from '../../src/crypto/passwords.ts';
import { Role } from '../../src/db/database.ts';
import type { Dialect } from '../../src/db/open-database.ts';
import { LOCKOUT_SECONDS, LOCKOUT_THRESHOLD } from '../../src/modules/auth/login.command.ts';
import { TEST_ENV, TEST_SECRET, type TestApp } from '../helpers/app.ts';
import { TestClock } from '../helpers/clock.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import {
  auditEntries,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
} from '../helpers/factories.ts';
import { abandonWhileQueued, CountingPasswordHasher } from '../helpers/password-checks.ts';

const TOKEN_LIFETIME_SECONDS = 1234;
const INVALID_CREDENTIALS_BODY = JSON.stringify({
  data: null,
  messages: [],
  errors: ['Invalid credentials.'],
  success: false,
});

interface LoginHarness {
  readonly test: TestApp;
  readonly hasher: CountingPasswordHasher;
  /** POST /api/auth/login from a fresh client address (the rate limit is tested elsewhere). */
  login(body: unknown): Promise<{ status: number; raw: string; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any -- answers are read field by field.
  close(): Promise<void>;
}

let addressCounter = 0;
const freshAddress = (): string => {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
};

/** The whole app, as buildTestApp makes it, but with the counting hasher passed to buildApp. */
async function buildLoginHarness(dialect: Dialect): Promise<LoginHarness> {
  const config = loadConfig(
    { ...TEST_ENV, SERVICE_AUTH_TOKEN_EXPIRATION_IN_SECONDS: String(TOKEN_LIFETIME_SECONDS) },
    () => {},
  );
  const database = await createTestDatabase(dialect);
  const clock = new TestClock();
  const hasher = new CountingPasswordHasher(new ConcurrencyBound(2));
  const app = await buildApp({ config, database: database.handle, clock, passwords: hasher });
  await app.ready();
  const test: TestApp = {
    app,
    services: app.services,
    config,
    clock,
    database,
    dialect,
    request: () => {
      throw new Error('use login()');
    },
    close: async () => {},
  };
  return {
    test,
    hasher,
    login: async (body) => {
      const response = await app.inject({
        method: 'POST',
        url: '/api/auth/login',
        payload: body as object,
        remoteAddress: freshAddress(),
      });
      return { status: response.statusCode, raw: response.body, body: response.json() };
    },
    close: async () => {
      await app.close();
      await database.drop();
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`POST /api/auth/login (${dialect})`, () => {
    let harness: LoginHarness;
    let test: TestApp;

    beforeAll(async () => {
      harness = await buildLoginHarness(dialect);
      test = harness.test;
    });
    afterAll(() => harness.close());

    const personRow = (id: string) =>
      test.services.db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const setPerson = (id: string, values: Record<string, unknown>) =>
      test.services.db.updateTable('persons').set(values).where('id', '=', id).execute();
    const loginAuditsOf = async (personId: string) =>
      (await auditEntries(test, 'LoginCommand')).filter((entry) => entry.target_id === personId);

    /** Counts the UPDATEs of each person's row from now on, through a trigger (`stop` removes it). */
    const countPersonUpdates = async () => {
      const db = test.services.db;
      await sql`create table person_update_probe (person_id text not null)`.execute(db);
      if (dialect === 'postgres') {
        await sql`create function person_update_probe() returns trigger language plpgsql as $$
          begin insert into person_update_probe values (new.id); return new; end $$`.execute(db);
        await sql`create trigger person_update_probe after update on persons
          for each row execute function person_update_probe()`.execute(db);
      } else {
        await sql`create trigger person_update_probe after update on persons
          begin insert into person_update_probe values (new.id); end`.execute(db);
      }
      return {
        of: async (personId: string) =>
          (
            await sql<{
              person_id: string;
            }>`select person_id from person_update_probe where person_id = ${personId}`.execute(db)
          ).rows.length,
        stop: async () => {
          await sql`drop trigger person_update_probe ${sql.raw(dialect === 'postgres' ? 'on persons' : '')}`.execute(
            db,
          );
          if (dialect === 'postgres') await sql`drop function person_update_probe()`.execute(db);
          await sql`drop table person_update_probe`.execute(db);
        },
      };
    };

    /** Verified by an independent JWT library with the secret's ASCII bytes as the HMAC key. */
    const verifyWithJose = async (token: string, audience: string) =>
      (
        await jwtVerify(token, new TextEncoder().encode(TEST_SECRET), {
          algorithms: ['HS256'],
          issuer: test.config.auth.issuer,
          audience,
          currentDate: test.clock.now(),
        })
      ).payload;

    describe('successful sign-in', () => {
      it('signs a System Admin in with email and password; the token carries the claims of DECISIONS §7', async () => {
        const admin = await createSystemAdmin(test);
        const response = await harness.login({ email: admin.email, password: PASSWORD });
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({
          success: true,
          errors: [],
          messages: ['Signed in successfully.'],
          data: {
            emailVerified: true,
            requiresTwoFactor: false,
            challengeToken: null,
            challengeExpiresAt: null,
            availableMethods: null,
            processingRestricted: false,
          },
        });
        const { token, expiresAt } = response.body.data;
        const claims = await verifyWithJose(token, test.config.auth.audience);
        expect(claims).toEqual({
          sub: admin.id,
          role: Role.SystemAdmin,
          kind: 'person',
          sst: admin.row.security_stamp,
          iss: test.config.auth.issuer,
          aud: test.config.auth.audience,
          iat: expect.any(Number),
          nbf: expect.any(Number),
          exp: expect.any(Number),
          jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
        });
        expect(claims.iat).toBe(Math.floor(test.clock.now().getTime() / 1000));
        expect(claims.nbf).toBe(claims.iat);
        expect(claims.exp).toBe(claims.iat! + TOKEN_LIFETIME_SECONDS);
        expect(expiresAt).toBe(new Date(claims.exp! * 1000).toISOString());

        // The token is a working bearer credential of the service.
        const scopes = await test.app.inject({
          method: 'GET',
          url: '/api/scopes',
          headers: { authorization: `Bearer ${token}` },
        });
        expect(scopes.statusCode).toBe(200);

        const [entry] = await loginAuditsOf(admin.id);
        expect(entry).toMatchObject({ actor_id: null, succeeded: 1, failure_reason: null });
      });

      it('gives every sign-in a fresh jti', async () => {
        const admin = await createSystemAdmin(test);
        const first = await harness.login({ email: admin.email, password: PASSWORD });
        const second = await harness.login({ email: admin.email, password: PASSWORD });
        const [a, b] = await Promise.all([
          verifyWithJose(first.body.data.token, test.config.auth.audience),
          verifyWithJose(second.body.data.token, test.config.auth.audience),
        ]);
        expect(a.jti).not.toBe(b.jti);
      });

      it('signs a Scope Admin in without a scope claim', async () => {
        const scopeAdmin = await createScopeAdmin(test);
        await createScope(test, [scopeAdmin.id]);
        const response = await harness.login({ email: scopeAdmin.email, password: PASSWORD });
        expect(response.status).toBe(200);
        const claims = await verifyWithJose(response.body.data.token, test.config.auth.audience);
        expect(claims.role).toBe(Role.ScopeAdmin);
        expect(claims).not.toHaveProperty('scopeId');
      });

      it('signs a User in with the scope id (any case, case-insensitive keys) and puts scopeId in the token', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        const response = await harness.login({
          Email: user.email,
          PASSWORD: PASSWORD,
          ScopeId: scope.id.toUpperCase(),
        });
        expect(response.status).toBe(200);
        const claims = await verifyWithJose(response.body.data.token, test.config.auth.audience);
        expect(claims).toMatchObject({ sub: user.id, role: Role.User, scopeId: scope.id, kind: 'person' });
      });

      it('matches the email case-insensitively and trimmed', async () => {
        const admin = await createSystemAdmin(test, {
          email: `Mixed.Case-${randomBytes(3).toString('hex')}@Example.Test`,
        });
        const response = await harness.login({
          email: `  ${admin.email.toUpperCase()}\t`,
          password: PASSWORD,
        });
        expect(response.status).toBe(200);
        expect((await verifyWithJose(response.body.data.token, test.config.auth.audience)).sub).toBe(
          admin.id,
        );
      });

      it('answers a restricted person 200 with processingRestricted and a subject-rights token without scope', async () => {
        const owner = await createScopeAdmin(test);
        const scope = await createScope(test, [owner.id]);
        const user = await createUser(test, scope.id);
        await setPerson(user.id, {
          restricted_at: test.clock.now().toISOString(),
          restriction_ground: 'ground',
        });
        const response = await harness.login({ email: user.email, password: PASSWORD, scopeId: scope.id });
        expect(response.status).toBe(200);
        expect(response.body.data.processingRestricted).toBe(true);
        const { token } = response.body.data;
        const claims = await verifyWithJose(token, test.config.auth.subjectRightsAudience);
        expect(claims).toMatchObject({
          sub: user.id,
          role: Role.User,
          kind: 'person',
          sst: user.row.security_stamp,
        });
        expect(claims).not.toHaveProperty('scopeId');
        // Not a full token: the person audience refuses it, and so do ordinary endpoints.
        await expect(verifyWithJose(token, test.config.auth.audience)).rejects.toThrow();
        const scopeRead = await test.app.inject({
          method: 'GET',
          url: `/api/scopes/${scope.id}`,
          headers: { authorization: `Bearer ${token}` },
        });
        expect(scopeRead.statusCode).toBe(403);
      });

      it('rehashes a stored hash made with older Argon2 parameters on a successful sign-in', async () => {
        const admin = await createSystemAdmin(test);
        const olderHash = hashSync(PASSWORD, { algorithm: 2, memoryCost: 4096, timeCost: 3, parallelism: 1 });
        await setPerson(admin.id, { password_hash: olderHash });

        const response = await harness.login({ email: admin.email, password: PASSWORD });
        expect(response.status).toBe(200);
        const stored = (await personRow(admin.id)).password_hash!;
        expect(stored).not.toBe(olderHash);
        expect(parseOptions(stored)).toMatchObject({
          memoryCost: PASSWORD_HASH_PARAMETERS.memoryCost,
          timeCost: PASSWORD_HASH_PARAMETERS.timeCost,
          parallelism: PASSWORD_HASH_PARAMETERS.parallelism,
          saltLen: 16,
        });
        expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
      });

      it('keeps a current hash as it is', async () => {
        const admin = await createSystemAdmin(test);
        expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
        expect((await personRow(admin.id)).password_hash).toBe(admin.row.password_hash);
      });

      it('does not rehash on a wrong password, even when the stored hash is old', async () => {
        const admin = await createSystemAdmin(test);
        const olderHash = hashSync(PASSWORD, { algorithm: 2, memoryCost: 4096, timeCost: 3, parallelism: 1 });
        await setPerson(admin.id, { password_hash: olderHash });
        expect((await harness.login({ email: admin.email, password: 'wrong password' })).status).toBe(401);
        expect((await personRow(admin.id)).password_hash).toBe(olderHash);
      });
    });

    describe('uniform rejection: every cause answers the same 401 body (user enumeration)', () => {
      let owner: PersonFixture;
      let scopeId: string;
      let otherScopeId: string;

      beforeAll(async () => {
        owner = await createScopeAdmin(test);
        scopeId = (await createScope(test, [owner.id])).id;
        otherScopeId = (await createScope(test, [owner.id])).id;
      });

      /** Each case makes its person (or none) and returns the body to send and whom it names. */
      const cases: Array<[string, () => Promise<{ body: object; personId: string | null }>]> = [
        [
          'unknown email',
          async () => ({
            body: { email: `nobody-${randomBytes(4).toString('hex')}@example.test`, password: PASSWORD },
            personId: null,
          }),
        ],
        [
          'wrong password',
          async () => {
            const admin = await createSystemAdmin(test);
            return { body: { email: admin.email, password: `${PASSWORD}!` }, personId: admin.id };
          },
        ],
        [
          'deleted person',
          async () => {
            const admin = await createSystemAdmin(test);
            await setPerson(admin.id, { deleted_at: test.clock.now().toISOString() });
            return { body: { email: admin.email, password: PASSWORD }, personId: admin.id };
          },
        ],
        [
          'erasure-pending person',
          async () => {
            const admin = await createScopeAdmin(test);
            await setPerson(admin.id, { erasure_requested_at: test.clock.now().toISOString() });
            return { body: { email: admin.email, password: PASSWORD }, personId: admin.id };
          },
        ],
        [
          'User whose scope is deleted',
          async () => {
            const scope = await createScope(test, [owner.id]);
            const user = await createUser(test, scope.id);
            await test.services.db
              .updateTable('scopes')
              .set({ deleted_at: test.clock.now().toISOString() })
              .where('id', '=', scope.id)
              .execute();
            return { body: { email: user.email, password: PASSWORD, scopeId: scope.id }, personId: user.id };
          },
        ],
        [
          'User without scopeId',
          async () => {
            const user = await createUser(test, scopeId);
            return { body: { email: user.email, password: PASSWORD }, personId: user.id };
          },
        ],
        [
          'User with the id of another scope',
          async () => {
            const user = await createUser(test, scopeId);
            return {
              body: { email: user.email, password: PASSWORD, scopeId: otherScopeId },
              personId: user.id,
            };
          },
        ],
        [
          'administrator who names a scope',
          async () => {
            const admin = await createSystemAdmin(test);
            return { body: { email: admin.email, password: PASSWORD, scopeId }, personId: admin.id };
          },
        ],
        [
          'locked person with the correct password',
          async () => {
            const admin = await createSystemAdmin(test);
            const until = new Date(test.clock.now().getTime() + 60_000).toISOString();
            await setPerson(admin.id, { locked_out_until: until });
            return { body: { email: admin.email, password: PASSWORD }, personId: admin.id };
          },
        ],
      ];

      const TARGETED_CAUSES = new Set(['wrong password', 'locked person with the correct password']);

      for (const [cause, arrange] of cases) {
        it(`${cause}: 401 Invalid credentials., no token, a failed LoginCommand entry`, async () => {
          const { body, personId } = await arrange();
          const before = personId === null ? null : await personRow(personId);
          const auditsBefore = new Set((await auditEntries(test, 'LoginCommand')).map((entry) => entry.id));

          const response = await harness.login(body);
          expect(response.status).toBe(401);
          expect(response.raw).toBe(INVALID_CREDENTIALS_BODY);

          if (personId !== null) {
            const after = await personRow(personId);
            // Only a wrong password against a live account counts towards the lock-out.
            const counted = cause === 'wrong password' ? 1 : 0;
            expect(after).toEqual({
              ...before,
              failed_login_attempts: before!.failed_login_attempts + counted,
            });
          }
          const newAudits = (await auditEntries(test, 'LoginCommand')).filter(
            (entry) => !auditsBefore.has(entry.id),
          );
          expect(newAudits).toEqual([
            expect.objectContaining({
              actor_id: null,
              // The account is named only when the email and scope found a live person.
              target_id: TARGETED_CAUSES.has(cause) ? personId : null,
              succeeded: 0,
              failure_reason: 'Invalid credentials.',
            }),
          ]);
        });
      }
    });

    describe('lock-out after consecutive wrong passwords (brute force)', () => {
      const wrong = (email: string) => harness.login({ email, password: 'not the password' });

      it(`the ${LOCKOUT_THRESHOLD}th consecutive wrong password locks sign-in for 15 minutes, even with the right password`, async () => {
        const admin = await createSystemAdmin(test);
        for (let attempt = 1; attempt < LOCKOUT_THRESHOLD; attempt += 1) {
          expect((await wrong(admin.email)).status).toBe(401);
        }
        expect(await personRow(admin.id)).toMatchObject({
          failed_login_attempts: LOCKOUT_THRESHOLD - 1,
          locked_out_until: null,
        });

        const lockingAttempt = await wrong(admin.email);
        expect(lockingAttempt.raw).toBe(INVALID_CREDENTIALS_BODY);
        const lockedAt = test.clock.now().getTime();
        expect((await personRow(admin.id)).locked_out_until).toBe(
          new Date(lockedAt + LOCKOUT_SECONDS * 1000).toISOString(),
        );

        const whileLocked = await harness.login({ email: admin.email, password: PASSWORD });
        expect(whileLocked.status).toBe(401);
        expect(whileLocked.raw).toBe(INVALID_CREDENTIALS_BODY);

        test.clock.advanceSeconds(LOCKOUT_SECONDS - 1);
        expect((await harness.login({ email: admin.email, password: PASSWORD })).raw).toBe(
          INVALID_CREDENTIALS_BODY,
        );

        test.clock.advanceSeconds(1);
        const afterLock = await harness.login({ email: admin.email, password: PASSWORD });
        expect(afterLock.status).toBe(200);
        expect(await personRow(admin.id)).toMatchObject({ failed_login_attempts: 0, locked_out_until: null });
      });

      it('a correct sign-in resets the count, so wrong passwords must be consecutive', async () => {
        const admin = await createSystemAdmin(test);
        for (let attempt = 1; attempt < LOCKOUT_THRESHOLD; attempt += 1) await wrong(admin.email);
        expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
        expect((await personRow(admin.id)).failed_login_attempts).toBe(0);
        for (let attempt = 1; attempt < LOCKOUT_THRESHOLD; attempt += 1) await wrong(admin.email);
        expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
      });

      it('a sign-in with nothing to clear writes nothing to the person; one after a wrong password clears it', async () => {
        const admin = await createSystemAdmin(test);
        const updates = await countPersonUpdates();
        try {
          expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
          expect(await updates.of(admin.id)).toBe(0);

          await wrong(admin.email);
          expect(await updates.of(admin.id)).toBe(1);
          expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(200);
          expect(await updates.of(admin.id)).toBe(2);
          expect((await personRow(admin.id)).failed_login_attempts).toBe(0);
        } finally {
          await updates.stop();
        }
        expect(await loginAuditsOf(admin.id)).toHaveLength(3);
      });

      it('wrong passwords while locked neither extend the lock nor count', async () => {
        const admin = await createSystemAdmin(test);
        for (let attempt = 1; attempt <= LOCKOUT_THRESHOLD; attempt += 1) await wrong(admin.email);
        const locked = await personRow(admin.id);
        test.clock.advanceSeconds(60);
        for (let attempt = 1; attempt <= 3; attempt += 1) await wrong(admin.email);
        expect(await personRow(admin.id)).toEqual(locked);
      });

      it('a lock set by other guesses while the right password was being checked still refuses it (race)', async () => {
        const admin = await createSystemAdmin(test);
        const until = new Date(test.clock.now().getTime() + LOCKOUT_SECONDS * 1000).toISOString();
        harness.hasher.duringVerification = () => setPerson(admin.id, { locked_out_until: until });
        try {
          const response = await harness.login({ email: admin.email, password: PASSWORD });
          expect(response.raw).toBe(INVALID_CREDENTIALS_BODY);
        } finally {
          harness.hasher.duringVerification = null;
        }
        expect((await personRow(admin.id)).locked_out_until).toBe(until);
      });

      // SQLite runs write transactions one at a time, so only PostgreSQL can have a lock-out
      // written but not yet committed when the sign-in's transaction reads the row.
      if (dialect === 'postgres')
        it('a lock-out still committing when the right password was checked wins over it (race, row lock)', async () => {
          const admin = await createSystemAdmin(test);
          const until = new Date(test.clock.now().getTime() + LOCKOUT_SECONDS * 1000).toISOString();
          let lockCommitted: Promise<void> = Promise.resolve();
          harness.hasher.duringVerification = () =>
            new Promise<void>((lockWritten) => {
              lockCommitted = test.services.db.transaction().execute(async (trx) => {
                await trx
                  .updateTable('persons')
                  .set({ locked_out_until: until })
                  .where('id', '=', admin.id)
                  .execute();
                lockWritten();
                await new Promise((resolve) => setTimeout(resolve, 200));
              });
            });
          try {
            const response = await harness.login({ email: admin.email, password: PASSWORD });
            expect(response.raw).toBe(INVALID_CREDENTIALS_BODY);
          } finally {
            harness.hasher.duringVerification = null;
            await lockCommitted;
          }
          expect((await personRow(admin.id)).locked_out_until).toBe(until);
        });

      it('a deletion while the right password was being checked refuses the sign-in (race)', async () => {
        const admin = await createSystemAdmin(test);
        harness.hasher.duringVerification = () =>
          setPerson(admin.id, { deleted_at: test.clock.now().toISOString() });
        try {
          expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(401);
        } finally {
          harness.hasher.duringVerification = null;
        }
      });

      it('parallel wrong guesses cannot slip past the threshold', async () => {
        const admin = await createSystemAdmin(test);
        await Promise.all(Array.from({ length: LOCKOUT_THRESHOLD }, () => wrong(admin.email)));
        expect((await personRow(admin.id)).locked_out_until).not.toBeNull();
        expect((await harness.login({ email: admin.email, password: PASSWORD })).status).toBe(401);
      });
    });

    describe('timing: refused accounts still spend one Argon2 verification (account enumeration by timing)', () => {
      beforeEach(() => {
        harness.hasher.verifications = 0;
        harness.hasher.decoyVerifications = 0;
      });

      it('an unknown email spends one decoy verification', async () => {
        await harness.login({ email: 'unknown-person@example.test', password: PASSWORD });
        expect(harness.hasher.decoyVerifications).toBe(1);
        expect(harness.hasher.verifications).toBe(0);
      });

      it('a locked account spends one decoy verification, not one against its own hash', async () => {
        const admin = await createSystemAdmin(test);
        await setPerson(admin.id, {
          locked_out_until: new Date(test.clock.now().getTime() + 60_000).toISOString(),
        });
        await harness.login({ email: admin.email, password: PASSWORD });
        expect(harness.hasher.decoyVerifications).toBe(1);
        expect(harness.hasher.verifications).toBe(0);
      });

      it('a deleted account spends one decoy verification', async () => {
        const admin = await createSystemAdmin(test);
        await setPerson(admin.id, { deleted_at: test.clock.now().toISOString() });
        await harness.login({ email: admin.email, password: PASSWORD });
        expect(harness.hasher.decoyVerifications).toBe(1);
        expect(harness.hasher.verifications).toBe(0);
      });

      it('a known account spends one verification against its own hash and no decoy', async () => {
        const admin = await createSystemAdmin(test);
        await harness.login({ email: admin.email, password: 'wrong password' });
        expect(harness.hasher.verifications).toBe(1);
        expect(harness.hasher.decoyVerifications).toBe(0);
      });
    });

    describe('a client that gives up waiting for its password check', () => {
      it('is dropped before its check: no hash spent, no wrong guess counted, a failed entry naming why', async () => {
        const admin = await createSystemAdmin(test);
        await test.app.listen({ port: 0, host: '127.0.0.1' });
        const checksBefore = harness.hasher.checksRun;

        await abandonWhileQueued(test, harness.hasher, {
          method: 'POST',
          url: '/api/auth/login',
          body: { email: admin.email, password: 'not the password' },
        });

        await vi.waitFor(async () => expect(await loginAuditsOf(admin.id)).toHaveLength(1));
        const [entry] = await loginAuditsOf(admin.id);
        expect(entry).toMatchObject({ succeeded: 0, failure_reason: CALLER_GONE });
        expect(harness.hasher.checksRun).toBe(checksBefore);
        expect((await personRow(admin.id)).failed_login_attempts).toBe(0);
      });
    });

    describe('rate limit (password spraying from one address)', () => {
      it('answers the 11th attempt in a minute from one address 429 with Retry-After, without checking a password', async () => {
        const admin = await createSystemAdmin(test);
        const address = '192.0.2.77';
        const attempt = () =>
          test.app.inject({
            method: 'POST',
            url: '/api/auth/login',
            payload: { email: admin.email, password: 'a wrong guess' },
            remoteAddress: address,
          });
        for (let count = 1; count <= 10; count += 1) expect((await attempt()).statusCode).toBe(401);
        harness.hasher.verifications = 0;
        harness.hasher.decoyVerifications = 0;
        const before = await personRow(admin.id);
        const limited = await attempt();
        expect(limited.statusCode).toBe(429);
        expect(limited.json().errors).toEqual(['Too many requests.']);
        expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
        expect(harness.hasher.verifications + harness.hasher.decoyVerifications).toBe(0);
        expect(await personRow(admin.id)).toEqual(before);
      });
    });

    describe('binding', () => {
      it('answers a missing password 400 with the field named, and checks nothing', async () => {
        harness.hasher.decoyVerifications = 0;
        const response = await harness.login({ email: 'someone@example.test' });
        expect(response.status).toBe(400);
        expect(harness.hasher.decoyVerifications).toBe(0);
        expect(response.body.errors).toEqual(['Password is required.']);
      });

      it('answers a scopeId that is not a GUID 400, before any password check', async () => {
        harness.hasher.verifications = 0;
        harness.hasher.decoyVerifications = 0;
        const response = await harness.login({
          email: 'someone@example.test',
          password: PASSWORD,
          scopeId: 'nope',
        });
        expect(response.status).toBe(400);
        expect(response.body.success).toBe(false);
        expect(harness.hasher.verifications + harness.hasher.decoyVerifications).toBe(0);
      });
    });
  });
}
