import type { DbOrTx, IsoTime, PendingRegistrationRow } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { pageRequest } from '../../http/pagination.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { listLivePendingRegistrations } from './registration.repository.ts';
import type { ListPendingRegistrationsQuery, PendingRegistration } from './registration.schemas.ts';

/** The output of a pending registration: never its password hash (with its salt) or token hash. */
export function toPendingRegistration(row: PendingRegistrationRow): PendingRegistration {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    expiresAt: row.expires_at,
    guessesLeft: row.guesses_left,
    createdAt: row.created_at,
  };
}

/**
 * GET /api/scopes/{id}/pending-registrations: the scope's registrations awaiting confirmation
 * (expired ones are no longer awaiting anything), newest first, for a System Admin or an owner.
 */
export async function listPendingRegistrationsFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListPendingRegistrationsQuery,
  now: IsoTime,
): Promise<Page<PendingRegistration>> {
  const page = pageRequest(query);
  await requireManageableScope(db, caller, scopeId);
  const { rows, total } = await listLivePendingRegistrations(db, scopeId, now, page);
  return {
    items: rows.map(toPendingRegistration),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}
