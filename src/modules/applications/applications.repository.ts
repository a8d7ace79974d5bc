import { type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type {
  ApplicationCredentialRow,
  ApplicationRow,
  Database,
  DbOrTx,
  IsoTime,
  Tx,
} from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { containsNormalized, deleteRowOfScope, isPostgres } from '../../db/query-helpers.ts';
import type { PageRequest } from '../../http/pagination.ts';
import { claimedPermissionsOf, joinClaimedPermissions } from '../permissions/permissions.repository.ts';

// ---------------------------------------------------------------------------------------------
// Applications

/** An application of the scope; another scope's application is not found. */
export async function findApplication(
  db: DbOrTx,
  scopeId: string,
  id: string,
  includeDeleted = false,
): Promise<ApplicationRow | undefined> {
  return db
    .selectFrom('applications')
    .selectAll()
    .where('id', '=', id)
    .where('scope_id', '=', scopeId)
    .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .executeTakeFirst();
}

/**
 * Locks the application's row until the transaction ends, so writes that count its rows (the
 * two-live-credentials limit) run one at a time. PostgreSQL: SELECT ... FOR UPDATE. SQLite
 * has one writer and our driver runs one transaction at a time on its single connection, so
 * transactions are already serialized; a plain read suffices there.
 */
export async function lockApplication(tx: Tx, id: string): Promise<void> {
  await tx
    .selectFrom('applications')
    .select('id')
    .where('id', '=', id)
    .$if(isPostgres(tx), (query) => query.forUpdate())
    .execute();
}

export async function insertApplication(tx: Tx, row: ApplicationRow): Promise<void> {
  await tx.insertInto('applications').values(row).execute();
}

export async function updateApplicationRow(
  tx: Tx,
  id: string,
  changes: Partial<Omit<ApplicationRow, 'id' | 'scope_id' | 'created_at'>>,
): Promise<void> {
  await tx.updateTable('applications').set(changes).where('id', '=', id).execute();
}

/** Deletes the application of the scope for good (its credentials cascade); false when none was there. */
export async function deleteApplicationRow(tx: Tx, scopeId: string, id: string): Promise<boolean> {
  return deleteRowOfScope(tx, 'applications', scopeId, id);
}

export interface ApplicationFilter {
  readonly name: string | null;
  readonly ownerId: string | null;
  readonly includeDeleted: boolean;
}

export async function listApplications(
  db: DbOrTx,
  scopeId: string,
  filter: ApplicationFilter,
  page: PageRequest,
): Promise<{ rows: ApplicationRow[]; total: number }> {
  const base = db
    .selectFrom('applications')
    .where('scope_id', '=', scopeId)
    .$if(!filter.includeDeleted, (query) => query.where('deleted_at', 'is', null))
    .$if(filter.ownerId !== null, (query) => query.where('owner_id', '=', filter.ownerId ?? ''))
    .$if(filter.name !== null && filter.name.trim() !== '', (query) =>
      query.where(containsNormalized('name_normalized', filter.name ?? '')),
    );
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

// ---------------------------------------------------------------------------------------------
// Credentials

/** Live: not revoked, and no expiry or an expiry still ahead (zero skew: at expiresAt it is over). */
function isLiveCredential(now: IsoTime) {
  return (eb: ExpressionBuilder<Database, 'application_credentials'>): Expression<SqlBool> =>
    eb.and([
      eb('application_credentials.revoked_at', 'is', null),
      eb.or([
        eb('application_credentials.expires_at', 'is', null),
        eb('application_credentials.expires_at', '>', now),
      ]),
    ]);
}

export async function countLiveCredentials(db: DbOrTx, applicationId: string, now: IsoTime): Promise<number> {
  const row = await db
    .selectFrom('application_credentials')
    .select((eb) => eb.fn.countAll<number>().as('total'))
    .where('application_id', '=', applicationId)
    .where(isLiveCredential(now))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function insertCredential(tx: Tx, row: ApplicationCredentialRow): Promise<void> {
  await tx.insertInto('application_credentials').values(row).execute();
}

export async function markCredentialRevoked(tx: Tx, id: string, now: IsoTime): Promise<void> {
  await tx.updateTable('application_credentials').set({ revoked_at: now }).where('id', '=', id).execute();
}

export async function findCredential(
  db: DbOrTx,
  applicationId: string,
  id: string,
): Promise<ApplicationCredentialRow | undefined> {
  return db
    .selectFrom('application_credentials')
    .selectAll()
    .where('id', '=', id)
    .where('application_id', '=', applicationId)
    .executeTakeFirst();
}

/** Newest first (spec §Application credentials). */
export async function listCredentials(
  db: DbOrTx,
  applicationId: string,
  page: PageRequest,
): Promise<{ rows: ApplicationCredentialRow[]; total: number }> {
  const base = db.selectFrom('application_credentials').where('application_id', '=', applicationId);
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}

// ---------------------------------------------------------------------------------------------
// Application tokens

/** What the secret exchange and the live check need: credential, application and scope together. */
export interface LiveCredentialChain {
  readonly credentialId: string;
  readonly credentialExpiresAt: IsoTime | null;
  readonly applicationId: string;
  readonly applicationName: string;
  readonly ownerId: string;
  readonly scopeId: string;
  readonly scopeName: string;
}

function liveChain(db: DbOrTx, now: IsoTime) {
  return db
    .selectFrom('application_credentials')
    .innerJoin('applications', 'applications.id', 'application_credentials.application_id')
    .innerJoin('scopes', 'scopes.id', 'applications.scope_id')
    .select([
      'application_credentials.id as credentialId',
      'application_credentials.expires_at as credentialExpiresAt',
      'applications.id as applicationId',
      'applications.name as applicationName',
      'applications.owner_id as ownerId',
      'scopes.id as scopeId',
      'scopes.name as scopeName',
    ])
    .where(isLiveCredential(now))
    .where('applications.deleted_at', 'is', null)
    .where('scopes.deleted_at', 'is', null);
}

/** A live chain with the permissions its scope places in the `permissions` claim. */
export interface LiveCredentialChainWithClaims extends LiveCredentialChain {
  readonly claimedPermissions: readonly string[];
}

const selectLiveChainBySecretHash = preparedQuery(2, (db, secretHash: string, now: IsoTime) =>
  joinClaimedPermissions(liveChain(db, now).where('application_credentials.secret_hash', '=', secretHash)),
);

/**
 * The live credential whose secret hashes to this value (a unique-index lookup), with its chain
 * and its scope's claimed permissions, in one statement (see `joinClaimedPermissions`).
 */
export async function findLiveChainBySecretHash(
  db: DbOrTx,
  secretHash: string,
  now: IsoTime,
): Promise<LiveCredentialChainWithClaims | undefined> {
  const rows = await selectLiveChainBySecretHash(db, secretHash, now);
  const [first] = rows;
  if (first === undefined) return undefined;
  const { claimedPermission: _, ...chain } = first;
  return { ...chain, claimedPermissions: claimedPermissionsOf(rows) };
}

const selectLiveChain = preparedQuery(
  4,
  (db, credentialId: string, applicationId: string, scopeId: string, now: IsoTime) =>
    liveChain(db, now)
      .where('application_credentials.id', '=', credentialId)
      .where('applications.id', '=', applicationId)
      .where('scopes.id', '=', scopeId),
);

/**
 * The live check of an application token: one query over three primary keys, compiled once
 * (consumers call it on every request). The token's application and scope claims must match
 * the credential's own, so a token can never be answered for a chain it was not issued from.
 */
export async function findLiveChain(
  db: DbOrTx,
  claims: { credentialId: string; applicationId: string; scopeId: string },
  now: IsoTime,
): Promise<LiveCredentialChain | undefined> {
  const [chain] = await selectLiveChain(db, claims.credentialId, claims.applicationId, claims.scopeId, now);
  return chain;
}
