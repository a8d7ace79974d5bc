import { randomUUID } from 'node:crypto';
import type { ExtidpUserRow } from '../../src/db/database.ts';
import type { TestApp, TestResponse } from './app.ts';
import type { IdTokenOptions, TestIdentityProvider } from './identity-provider.ts';

let addressCounter = 0;

/**
 * A client address of its own for each sign-in, so the anonymous authentication budget
 * (10 a minute per address) is not what a test about something else runs into.
 */
export function freshClientAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

/** An ID token issued by the provider at the service's current (test) time. */
export function idTokenNow(test: TestApp, provider: TestIdentityProvider, options: IdTokenOptions = {}) {
  return provider.idToken({ issuedAt: test.clock.now(), ...options });
}

export function signInWithExtidp(
  test: TestApp,
  body: { idToken: string; scopeId: string; nonce?: string | null },
): Promise<TestResponse> {
  return test.request({
    method: 'POST',
    url: '/api/auth/extidp',
    body,
    remoteAddress: freshClientAddress(),
  });
}

export async function extidpUsersOfScope(test: TestApp, scopeId: string): Promise<ExtidpUserRow[]> {
  return test.services.db
    .selectFrom('extidp_users')
    .selectAll()
    .where('scope_id', '=', scopeId)
    .orderBy('id')
    .execute();
}

export async function extidpUserBySubject(test: TestApp, scopeId: string, subject: string) {
  return test.services.db
    .selectFrom('extidp_users')
    .selectAll()
    .where('scope_id', '=', scopeId)
    .where('subject', '=', subject)
    .executeTakeFirst();
}

export async function allExtidpUsers(test: TestApp): Promise<ExtidpUserRow[]> {
  return test.services.db.selectFrom('extidp_users').selectAll().orderBy('id').execute();
}

/** The body of a refused request: data null, the one message, success false. */
export const refusal = (message: string) => ({ data: null, messages: [], errors: [message], success: false });

/**
 * An external-provider user written straight into the table (no provider round trip), for
 * tests about what happens to such a user afterwards; `changes` sets any column.
 */
export async function insertExtidpUser(
  test: TestApp,
  scopeId: string,
  changes: Partial<ExtidpUserRow> = {},
): Promise<string> {
  const now = test.clock.now().toISOString();
  const id = randomUUID();
  await test.services.db
    .insertInto('extidp_users')
    .values({
      id,
      scope_id: scopeId,
      issuer: 'https://idp.example.test',
      subject: `subject-${id}`,
      name: 'External User',
      email: `external-${id}@example.test`,
      email_normalized: `external-${id}@example.test`,
      email_verified: 1,
      picture_url: null,
      last_signed_in_at: now,
      last_signed_out_at: null,
      restricted_at: null,
      restriction_ground: null,
      erasure_requested_at: null,
      deleted_at: null,
      anonymised_at: null,
      created_at: now,
      updated_at: now,
      ...changes,
    })
    .execute();
  return id;
}
