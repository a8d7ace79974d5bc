import { expect } from 'vitest';
import type { TestApp, TestResponse } from './app.ts';

let addressCounter = 0;

/**
 * A client address no other request of the run used: the anonymous endpoints share a budget of
 * ten requests per minute per address, and these tests are not about that limit.
 */
export function freshAddress(): string {
  addressCounter += 1;
  return `10.${(addressCounter >> 16) & 255}.${(addressCounter >> 8) & 255}.${addressCounter & 255}`;
}

export function post(test: TestApp, url: string, body?: unknown, token?: string): Promise<TestResponse> {
  return test.request({
    method: 'POST',
    url,
    remoteAddress: freshAddress(),
    ...(body === undefined ? {} : { body }),
    ...(token === undefined ? {} : { token }),
  });
}

/** Expects the failure envelope with exactly this message and status. */
export function expectRefusal(response: TestResponse, status: number, message: string): void {
  expect({ status: response.status, body: response.body }).toEqual({
    status,
    body: { data: null, messages: [], errors: [message], success: false },
  });
}

/** Waits until `count` audit entries of an action exist (background work has run). */
export async function waitForAuditEntries(test: TestApp, action: string, count: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    await test.services.auditInbox.settle();
    const row = await test.services.db
      .selectFrom('audit_entries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('action', '=', action)
      .executeTakeFirstOrThrow();
    if (Number(row.n) >= count) return;
    if (Date.now() > deadline) throw new Error(`fewer than ${count} ${action} entries after 5 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function personRow(test: TestApp, id: string) {
  return test.services.db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

export async function linksOf(test: TestApp, personId: string) {
  return test.services.db
    .selectFrom('email_links')
    .selectAll()
    .where('person_id', '=', personId)
    .orderBy('created_at')
    .execute();
}
