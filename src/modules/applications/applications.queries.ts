import type { ApplicationCredentialRow, ApplicationRow, DbOrTx } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { pageRequest } from '../../http/pagination.ts';
import type { PageQuery } from '../../http/pagination.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { requireManageableApplication } from './application-access.ts';
import { listApplications, listCredentials } from './applications.repository.ts';
import type { Application, Credential, ListApplicationsQuery } from './applications.schemas.ts';

export function toApplication(row: ApplicationRow): Application {
  return {
    id: row.id,
    name: row.name,
    scopeId: row.scope_id,
    ownerId: row.owner_id,
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toCredential(row: ApplicationCredentialRow, now: string): Credential {
  return {
    id: row.id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    isLive: row.revoked_at === null && (row.expires_at === null || row.expires_at > now),
  };
}

/** A System Admin sees every application of the scope; a Scope Admin only those they own. */
export async function listApplicationsFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListApplicationsQuery,
): Promise<Page<Application>> {
  const page = pageRequest(query);
  const scope = await requireManageableScope(db, caller, scopeId);
  const ownerFilter = query.OwnerId ?? null;
  // A Scope Admin's list is cut to their own applications, whatever OwnerId asks for.
  const ownerId = isSystemAdmin(caller)
    ? ownerFilter
    : ownerFilter === null || ownerFilter === caller.id
      ? caller.id
      : null;
  if (!isSystemAdmin(caller) && ownerId === null) {
    return { items: [], pageNumber: page.pageNumber, pageSize: page.pageSize, totalRecords: 0 };
  }
  const { rows, total } = await listApplications(
    db,
    scope.id,
    { name: query.Name ?? null, ownerId, includeDeleted: query.IncludeDeleted ?? false },
    page,
  );
  return {
    items: rows.map(toApplication),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}

export async function getApplicationFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  id: string,
  includeDeleted: boolean,
): Promise<Application> {
  const { application } = await requireManageableApplication(db, caller, scopeId, id, includeDeleted);
  return toApplication(application);
}

export async function listCredentialsFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  applicationId: string,
  query: PageQuery,
  now: string,
): Promise<Page<Credential>> {
  const page = pageRequest(query);
  const { application } = await requireManageableApplication(db, caller, scopeId, applicationId);
  const { rows, total } = await listCredentials(db, application.id, page);
  return {
    items: rows.map((row) => toCredential(row, now)),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}
