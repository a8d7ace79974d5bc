import { connect } from 'node:net';
import { expect, vi } from 'vitest';
import { PasswordHasher, type PasswordVerdict } from '../../src/crypto/passwords.ts';
import type { TestApp } from './app.ts';

/** A real Argon2 hasher that counts its checks and hashes, so tests can see the decoy being spent. */
export class CountingPasswordHasher extends PasswordHasher {
  /** Checks asked for (counted when asked, before the bound). */
  verifications = 0;
  decoyVerifications = 0;
  /** New passwords asked to be hashed (counted when asked, before the bound). */
  hashes = 0;
  /** Checks that ran in a slot of the bound. */
  checksRun = 0;

  /** Runs while a password is being checked: lets a test change the account meanwhile. */
  duringVerification: (() => Promise<unknown>) | null = null;

  override async verify(
    storedHash: string,
    password: string,
    stillWanted?: () => boolean,
  ): Promise<PasswordVerdict> {
    this.verifications += 1;
    const verdict = await super.verify(storedHash, password, stillWanted);
    await this.duringVerification?.();
    return verdict;
  }

  override hash(password: string, stillWanted?: () => boolean): Promise<string> {
    this.hashes += 1;
    return super.hash(password, stillWanted);
  }

  override async verifyDecoy(password: string, stillWanted?: () => boolean): Promise<void> {
    this.decoyVerifications += 1;
    return super.verifyDecoy(password, stillWanted);
  }

  /** Runs once a check has run in its slot, before its caller goes on (then cleared). */
  afterNextCheck: (() => Promise<unknown>) | null = null;

  override async runBounded<T>(work: () => Promise<T>, stillWanted?: () => boolean): Promise<T> {
    const result = await super.runBounded(() => {
      this.checksRun += 1;
      return work();
    }, stillWanted);
    const afterCheck = this.afterNextCheck;
    this.afterNextCheck = null;
    await afterCheck?.();
    return result;
  }

  /** Holds `count` slots of the bound until `released` settles; not counted as checks. */
  async holdSlots(count: number, released: Promise<void>): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => super.runBounded(() => released)));
  }
}

/** The connections the app's server has open (inject() opens none). */
const openConnections = (test: TestApp) =>
  new Promise<number>((resolve, reject) =>
    test.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );

export interface AbandonedRequest {
  readonly method: 'POST' | 'PUT';
  readonly url: string;
  readonly body: unknown;
  readonly token?: string;
}

/**
 * Sends `request` over a real connection while every slot of the hasher's bound (`slots` of
 * them) is held, waits until its password check (or the hash of its new password) is queued,
 * closes the connection as a client that gives up would, and only then frees the slots. The app
 * must be listening (`listen`).
 * Resolves once the slots are back; the request's own outcome is for the caller to read (its
 * audit entry, say).
 */
export async function abandonWhileQueued(
  test: TestApp,
  hasher: CountingPasswordHasher,
  request: AbandonedRequest,
  slots = 2,
): Promise<void> {
  let releaseSlots!: () => void;
  const slotsHeld = new Promise<void>((resolve) => (releaseSlots = resolve));
  const holding = hasher.holdSlots(slots, slotsHeld);
  const asked = () => hasher.verifications + hasher.decoyVerifications + hasher.hashes;
  const askedBefore = asked();

  const body = JSON.stringify(request.body);
  const client = connect(listeningPort(test), '127.0.0.1');
  client.on('error', () => undefined);
  client.write(
    `${request.method} ${request.url} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      (request.token === undefined ? '' : `Authorization: Bearer ${request.token}\r\n`) +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await vi.waitFor(() => expect(asked()).toBe(askedBefore + 1));
  // The client gives up; once the server has seen its connection close, the slots free up.
  client.destroy();
  await vi.waitFor(async () => expect(await openConnections(test)).toBe(0));
  releaseSlots();
  await holding;
}

/** The port the app listens on (`test.app.listen`). */
function listeningPort(test: TestApp): number {
  const address = test.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the app is not listening on TCP');
  return address.port;
}
