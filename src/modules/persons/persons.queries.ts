import { type DbOrTx, type PersonRow, Role } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import type { Page } from '../../http/envelope.ts';
import { Refusal } from '../../http/messages.ts';
import { type PageRequest, pageRequest } from '../../http/pagination.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { ADMINISTRATOR_ROLES } from './person-rules.ts';
import { findPersonWithTwoFactor, listPersons, type PersonFilter } from './persons.repository.ts';
import type {
  ListOwnersQuery,
  ListScopeAdminsQuery,
  ListScopePersonsQuery,
  ListSystemAdminsQuery,
  Person,
  PersonSummary,
} from './persons.schemas.ts';
import { ownedScopeIdsOf, sharesOwnedScope } from './scope-ownership.repository.ts';
import { personsWithActiveTwoFactor } from '../two-factor/two-factor.repository.ts';

export function toPerson(
  row: PersonRow,
  ownedScopeIds: readonly string[],
  twoFactorEnabled: boolean,
): Person {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    role: row.role,
    scopeId: row.scope_id,
    emailVerified: row.email_verified === 1,
    // Active only: a pending setup does not yet protect the sign-in.
    twoFactorEnabled,
    ownedScopeIds: [...ownedScopeIds],
    isDeleted: row.deleted_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

const toSummary = (row: PersonRow): PersonSummary => ({ id: row.id, name: row.name, email: row.email });

/**
 * Persons as the viewer may see them (spec §Person ownedScopeIds): a System Admin, and a person
 * reading themselves, see every scope owned; a Scope Admin reading another person only the scopes
 * they own too, so a list does not reveal which other tenants a co-owner serves.
 */
export async function presentPersons(
  db: DbOrTx,
  rows: readonly PersonRow[],
  viewer: Caller,
): Promise<Person[]> {
  const twoFactor = await personsWithActiveTwoFactor(
    db,
    rows.map((row) => row.id),
  );
  return presentWithTwoFactor(db, rows, viewer, twoFactor);
}

export async function presentPerson(db: DbOrTx, row: PersonRow, viewer: Caller): Promise<Person> {
  const [person] = await presentPersons(db, [row], viewer);
  return person as Person;
}

/** `presentPersons`, for rows whose two-factor flags were read with them. */
async function presentWithTwoFactor(
  db: DbOrTx,
  rows: readonly PersonRow[],
  viewer: Caller,
  twoFactor: ReadonlySet<string>,
): Promise<Person[]> {
  // Only administrators own scopes (a User who becomes an owner is promoted to Scope Admin), so
  // a page of Users (or a User reading themselves) needs no ownership read at all.
  const administrators = rows.filter((row) => row.role !== Role.User).map((row) => row.id);
  const owned = await ownedScopeIdsOf(
    db,
    isSystemAdmin(viewer) || administrators.length === 0 ? administrators : [...administrators, viewer.id],
  );
  const visible = new Set(owned.get(viewer.id) ?? []);
  return rows.map((row) => {
    const scopes = owned.get(row.id) ?? [];
    const seesAll = isSystemAdmin(viewer) || row.id === viewer.id;
    return toPerson(
      row,
      seesAll ? scopes : scopes.filter((scopeId) => visible.has(scopeId)),
      twoFactor.has(row.id),
    );
  });
}

/**
 * GET /api/persons/{id} (DECISIONS §9): themselves; a System Admin anyone (deleted ones with
 * includeDeleted); a Scope Admin the Users and co-owners of scopes they own. Others get 403
 * before anything about the person, so the answer does not reveal who exists.
 */
export async function getPersonFor(
  db: DbOrTx,
  caller: Caller,
  id: string,
  includeDeleted: boolean,
): Promise<Person> {
  const allowed =
    id === caller.id ||
    isSystemAdmin(caller) ||
    (caller.role === Role.ScopeAdmin && (await sharesOwnedScope(db, caller.id, id)));
  if (!allowed) throw new Refusal('You are not allowed to view this person.');
  const found = await findPersonWithTwoFactor(db, id, includeDeleted && isSystemAdmin(caller));
  if (found === undefined) throw new Refusal('Person not found.');
  const { row, twoFactorEnabled } = found;
  const [person] = await presentWithTwoFactor(db, [row], caller, new Set(twoFactorEnabled ? [row.id] : []));
  return person as Person;
}

async function personPage(
  db: DbOrTx,
  caller: Caller,
  filter: PersonFilter,
  page: PageRequest,
): Promise<Page<Person>> {
  const { rows, total } = await listPersons(db, filter, page);
  return {
    items: await presentPersons(db, rows, caller),
    pageNumber: page.pageNumber,
    pageSize: page.pageSize,
    totalRecords: total,
  };
}

/** GET /api/scopes/{scopeId}/persons: the scope's Users; restricted ones are withheld. */
export async function listScopeUsersFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListScopePersonsQuery,
): Promise<Page<Person>> {
  // Paging is checked first: binding failures (400) come before data-dependent refusals.
  const page = pageRequest(query);
  await requireManageableScope(db, caller, scopeId);
  return personPage(
    db,
    caller,
    {
      usersOf: scopeId,
      name: query.Name,
      email: query.Email,
      includeDeleted: query.IncludeDeleted ?? false,
      withholdRestricted: true,
    },
    page,
  );
}

/** GET /api/scopes/{scopeId}/owners: the scope's owners; restricted ones are withheld. */
export async function listScopeOwnersFor(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  query: ListOwnersQuery,
): Promise<Page<Person>> {
  // Paging is checked first: binding failures (400) come before data-dependent refusals.
  const page = pageRequest(query);
  await requireManageableScope(db, caller, scopeId);
  return personPage(
    db,
    caller,
    { ownersOf: scopeId, name: query.Name, email: query.Email, withholdRestricted: true },
    page,
  );
}

/**
 * GET /api/persons/scope-admins: who may become an owner. Scope Admins, plus System Admins when a
 * System Admin asks; never deleted, restricted or erasure-pending persons (they cannot become
 * owners). Excluding a scope's owners reveals who owns it, so that scope must be manageable.
 */
export async function listScopeAdminsFor(
  db: DbOrTx,
  caller: Caller,
  query: ListScopeAdminsQuery,
): Promise<Page<PersonSummary>> {
  const page = pageRequest(query);
  const excludeOwnersOf = query.ExcludeOwnersOf ?? null;
  if (excludeOwnersOf !== null) await requireManageableScope(db, caller, excludeOwnersOf);
  const { rows, total } = await listPersons(
    db,
    {
      roles: isSystemAdmin(caller) ? ADMINISTRATOR_ROLES : [Role.ScopeAdmin],
      excludeOwnersOf,
      name: query.Name,
      email: query.Email,
      withholdRestricted: true,
    },
    page,
  );
  return { items: rows.map(toSummary), ...pageNumbers(page), totalRecords: total };
}

/** GET /api/persons/system-admins: live, unrestricted System Admins by name. */
export async function listSystemAdmins(
  db: DbOrTx,
  query: ListSystemAdminsQuery,
): Promise<Page<PersonSummary>> {
  const page = pageRequest(query);
  const { rows, total } = await listPersons(
    db,
    { roles: [Role.SystemAdmin], name: query.Name, email: query.Email, withholdRestricted: true },
    page,
  );
  return { items: rows.map(toSummary), ...pageNumbers(page), totalRecords: total };
}

const pageNumbers = (page: { pageNumber: number; pageSize: number }) => ({
  pageNumber: page.pageNumber,
  pageSize: page.pageSize,
});
