import { defineCommand } from '../../audit/command-runner.ts';
import { newId, randomToken, sha256 } from '../../crypto/secrets.ts';
import type { ApplicationCredentialRow } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { requireManageableApplication } from './application-access.ts';
import {
  countLiveCredentials,
  findCredential,
  insertCredential,
  lockApplication,
  markCredentialRevoked,
} from './applications.repository.ts';

/** Spec §Limits: an application has at most two live credentials (one in use, one rotating in). */
export const MAXIMUM_LIVE_CREDENTIALS = 2;

/**
 * A fixed, recognisable prefix lets secret scanners (and people) spot a leaked application
 * secret; the rest is 256 bits from the system's CSPRNG (DECISIONS §7).
 */
export const APPLICATION_SECRET_PREFIX = 'pcs_';
const newApplicationSecret = (): string => `${APPLICATION_SECRET_PREFIX}${randomToken(32)}`;

interface ApplicationInput {
  readonly caller: Caller;
  readonly scopeId: string;
  readonly applicationId: string;
}

export const issueCredential = defineCommand({
  name: 'IssueApplicationCredentialCommand',
  async execute(
    context,
    input: ApplicationInput & { expiresAt: string | null },
  ): Promise<{ row: ApplicationCredentialRow; secret: string }> {
    const { tx, now } = context;
    context.setTarget(input.applicationId);
    const { application } = await requireManageableApplication(
      tx,
      input.caller,
      input.scopeId,
      input.applicationId,
    );
    // A credential that is dead on arrival is almost certainly a client mistake (a clock or
    // time-zone error), so it is refused rather than silently stored.
    const expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt).toISOString();
    if (expiresAt !== null && expiresAt <= now) throw new Refusal('ExpiresAt must be in the future.');
    // Serialize issues for this application before counting, so two parallel requests can
    // never both see one live credential and each add a second (a third live in total).
    await lockApplication(tx, application.id);
    if ((await countLiveCredentials(tx, application.id, now)) >= MAXIMUM_LIVE_CREDENTIALS) {
      throw new Refusal('An application may have at most two live credentials.');
    }
    const secret = newApplicationSecret();
    const row: ApplicationCredentialRow = {
      id: newId(),
      application_id: application.id,
      // Only the hash is kept: a database leak does not leak usable secrets.
      secret_hash: sha256(secret),
      expires_at: expiresAt,
      revoked_at: null,
      created_at: now,
    };
    await insertCredential(tx, row);
    return { row, secret };
  },
});

/**
 * Revoke: the secret is no longer exchanged, and tokens issued from it fail the next live
 * check. Revoking a revoked credential changes nothing and answers it as it is.
 */
export const revokeCredential = defineCommand({
  name: 'RevokeApplicationCredentialCommand',
  async execute(
    context,
    input: ApplicationInput & { credentialId: string },
  ): Promise<ApplicationCredentialRow> {
    const { tx, now } = context;
    context.setTarget(input.applicationId);
    const { application } = await requireManageableApplication(
      tx,
      input.caller,
      input.scopeId,
      input.applicationId,
    );
    const credential = await findCredential(tx, application.id, input.credentialId);
    if (credential === undefined) throw new Refusal('Credential not found.');
    if (credential.revoked_at !== null) return credential;
    await markCredentialRevoked(tx, credential.id, now);
    return { ...credential, revoked_at: now };
  },
});
