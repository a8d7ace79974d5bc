import { newId, sha256 } from '../../src/crypto/secrets.ts';
import type { ApplicationRow, ScopePermissionRow } from '../../src/db/database.ts';
import type { TestApp } from '../helpers/app.ts';

/** Test data of the applications and permissions module, written straight to the database. */

export async function createApplication(
  test: TestApp,
  scopeId: string,
  ownerId: string,
  options: { name?: string; deleted?: boolean } = {},
): Promise<ApplicationRow> {
  const now = test.clock.now().toISOString();
  const name = options.name ?? `App ${newId().slice(0, 8)}`;
  const row: ApplicationRow = {
    id: newId(),
    scope_id: scopeId,
    owner_id: ownerId,
    name,
    name_normalized: name.toLowerCase(),
    deleted_at: options.deleted === true ? now : null,
    created_at: now,
    updated_at: now,
  };
  await test.services.db.insertInto('applications').values(row).execute();
  return row;
}

/** A credential with a known secret (the service itself only ever stores the hash). */
export async function createCredential(
  test: TestApp,
  applicationId: string,
  options: { expiresAt?: string | null; revoked?: boolean } = {},
): Promise<{ id: string; secret: string }> {
  const now = test.clock.now().toISOString();
  const secret = `pcs_fixture_${newId()}`;
  const id = newId();
  await test.services.db
    .insertInto('application_credentials')
    .values({
      id,
      application_id: applicationId,
      secret_hash: sha256(secret),
      expires_at: options.expiresAt ?? null,
      revoked_at: options.revoked === true ? now : null,
      created_at: now,
    })
    .execute();
  return { id, secret };
}

export async function createPermission(
  test: TestApp,
  scopeId: string,
  options: { name?: string; includeAsJwtClaim?: boolean; deleted?: boolean } = {},
): Promise<ScopePermissionRow> {
  const now = test.clock.now().toISOString();
  const name = options.name ?? `perm:${newId().slice(0, 8)}`;
  const row: ScopePermissionRow = {
    id: newId(),
    scope_id: scopeId,
    name,
    name_normalized: name.toLowerCase(),
    description: '',
    include_as_jwt_claim: options.includeAsJwtClaim === true ? 1 : 0,
    deleted_at: options.deleted === true ? now : null,
    created_at: now,
    updated_at: now,
  };
  await test.services.db.insertInto('scope_permissions').values(row).execute();
  return row;
}

export async function applicationRow(test: TestApp, id: string): Promise<ApplicationRow | undefined> {
  return test.services.db.selectFrom('applications').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countRows(
  test: TestApp,
  table: 'applications' | 'application_credentials' | 'scope_permissions',
): Promise<number> {
  const row = await test.services.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('total'))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}
