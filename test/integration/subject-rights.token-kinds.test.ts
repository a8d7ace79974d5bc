import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type RequestOptions, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { refusal } from '../helpers/extidp.ts';
import { createSystemAdmin, PASSWORD } from '../helpers/factories.ts';
import { signIn } from '../helpers/subject-rights.ts';

/**
 * Which token kinds each operation honours (spec §Authentication 8, §States): walks every
 * operation of the OpenAPI document that takes a person token, so operations added later are
 * covered without being listed here.
 */
const SUBJECT_RIGHTS_OPERATIONS = new Set([
  'POST /api/auth/data-export',
  'POST /api/auth/erasure-request',
  'POST /api/auth/processing-restriction',
  'POST /api/auth/processing-restriction/lift',
]);
const FORBIDDEN = 'You do not have permission to access this resource.';
const NO_LONGER_VALID = 'This token is no longer valid. Sign in again.';

interface Operation {
  readonly method: RequestOptions['method'];
  readonly path: string;
  readonly key: string;
}

async function personOperations(test: TestApp): Promise<Operation[]> {
  const document = (await test.request({ method: 'GET', url: '/openapi.json' })).body as {
    paths: Record<string, Record<string, { security?: Array<Record<string, unknown>> }>>;
  };
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
      if (!schemes.includes('bearer')) continue;
      const upper = method.toUpperCase() as Operation['method'];
      operations.push({ method: upper, path, key: `${upper} ${path}` });
    }
  }
  return operations;
}

/** The operation's address with every path parameter filled by a fresh GUID. */
const urlOf = (operation: Operation): string => operation.path.replace(/\{[^}]+\}/g, () => randomUUID());

for (const dialect of DIALECTS) {
  describe(`token kinds at every operation (${dialect})`, () => {
    let test: TestApp;
    let operations: Operation[];

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      operations = await personOperations(test);
    });
    afterAll(() => test.close());

    const call = (operation: Operation, token: string) =>
      test.request({
        method: operation.method,
        url: urlOf(operation),
        token,
        remoteAddress: `10.200.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
      });

    it('covers the four subject-rights operations and the rest of the document', () => {
      const keys = operations.map((operation) => operation.key);
      for (const key of SUBJECT_RIGHTS_OPERATIONS) expect(keys).toContain(key);
      expect(keys.length).toBeGreaterThan(SUBJECT_RIGHTS_OPERATIONS.size + 30);
    });

    it('refuses a subject-rights token with 403 everywhere but the four, even after the restriction is lifted', async () => {
      const restrictedAt = test.clock.now().toISOString();
      const person = await createSystemAdmin(test, { restricted_at: restrictedAt });
      const signedIn = await signIn(test, { email: person.email, password: PASSWORD });
      const rightsToken = signedIn.body.data.token as string;
      expect(signedIn.body.data.processingRestricted).toBe(true);

      const lift = await test.request({
        method: 'POST',
        url: '/api/auth/processing-restriction/lift',
        token: rightsToken,
        body: {},
      });
      expect(lift.status).toBe(200);

      for (const operation of operations) {
        const response = await call(operation, rightsToken);
        if (SUBJECT_RIGHTS_OPERATIONS.has(operation.key)) {
          expect([401, 403], operation.key).not.toContain(response.status);
        } else {
          expect(response.status, operation.key).toBe(403);
          expect(response.body, operation.key).toEqual(refusal(FORBIDDEN));
        }
      }
      // The person's full token, issued directly, works again now the restriction is lifted.
      expect(
        (await test.request({ method: 'GET', url: `/api/persons/${person.id}`, token: person.token })).status,
      ).toBe(200);
    });

    it('refuses a full token of a restricted or erasure-pending identity with 401 everywhere but the four', async () => {
      const restricted = await createSystemAdmin(test, { restricted_at: test.clock.now().toISOString() });
      const pending = await createSystemAdmin(test);
      await test.services.db
        .updateTable('persons')
        .set({ erasure_requested_at: test.clock.now().toISOString() })
        .where('id', '=', pending.id)
        .execute();
      for (const person of [restricted, pending]) {
        for (const operation of operations) {
          const response = await call(operation, person.token);
          if (SUBJECT_RIGHTS_OPERATIONS.has(operation.key)) {
            expect([401, 403], operation.key).not.toContain(response.status);
          } else {
            expect(response.status, operation.key).toBe(401);
            expect(response.body, operation.key).toEqual(refusal(NO_LONGER_VALID));
          }
        }
      }
    });

    it('refuses a full token of a logically deleted, not yet anonymised identity with 401 everywhere', async () => {
      const deleted = await createSystemAdmin(test, { deleted_at: test.clock.now().toISOString() });
      for (const operation of operations) {
        const response = await call(operation, deleted.token);
        expect(response.status, operation.key).toBe(401);
        expect(response.body, operation.key).toEqual(refusal(NO_LONGER_VALID));
      }
    });
  });
}
