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
