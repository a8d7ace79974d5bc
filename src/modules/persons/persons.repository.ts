import type { DbOrTx, PersonRow, Role } from '../../db/database.ts';

/** What authentication needs of a person on every request: one primary-key read. */
export interface PersonAuthState {
  readonly id: string;
  readonly role: Role;
  readonly scopeId: string | null;
  readonly securityStamp: string;
  /** Logically deleted, anonymised, or suspended by an erasure request. */
  readonly gone: boolean;
  readonly restricted: boolean;
}

export async function findPersonAuthState(db: DbOrTx, id: string): Promise<PersonAuthState | null> {
  const row = await db
    .selectFrom('persons')
    .select([
      'id',
      'role',
      'scope_id',
      'security_stamp',
      'deleted_at',
      'erasure_requested_at',
      'restricted_at',
    ])
    .where('id', '=', id)
    .executeTakeFirst();
  if (row === undefined) return null;
  return {
    id: row.id,
    role: row.role,
    scopeId: row.scope_id,
    securityStamp: row.security_stamp,
    gone: row.deleted_at !== null || row.erasure_requested_at !== null,
    restricted: row.restricted_at !== null,
  };
}

export async function findPersonByEmailForSignIn(
  db: DbOrTx,
  emailNormalized: string,
  scopeId: string | null,
): Promise<PersonRow | undefined> {
  return db
    .selectFrom('persons')
    .selectAll()
    .where('email_normalized', '=', emailNormalized)
    .where((eb) => (scopeId === null ? eb('scope_id', 'is', null) : eb('scope_id', '=', scopeId)))
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function isLivePersonWithRole(db: DbOrTx, id: string, roles: readonly Role[]): Promise<boolean> {
  const row = await db
    .selectFrom('persons')
    .select('id')
    .where('id', '=', id)
    .where('role', 'in', roles)
    .where('deleted_at', 'is', null)
    .where('erasure_requested_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

export async function hasLiveSystemAdmin(db: DbOrTx): Promise<boolean> {
  const row = await db
    .selectFrom('persons')
    .select('id')
    .where('role', '=', 1)
    .where('deleted_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}
