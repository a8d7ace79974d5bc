import { type Expression, type SqlBool, sql } from 'kysely';
import { newId, newSecurityStamp } from '../../crypto/secrets.ts';
import {
  type DbOrTx,
  type IsoTime,
  type NewPerson,
  type PersonRow,
  type PersonUpdate,
  Role,
  type Tx,
} from '../../db/database.ts';
import { preparedQuery } from '../../db/prepared-query.ts';
import { containsNormalized, isPostgres } from '../../db/query-helpers.ts';
import type { PageRequest } from '../../http/pagination.ts';
import { twoFactorActiveColumn } from '../two-factor/two-factor.repository.ts';
import { ADMINISTRATOR_ROLES } from './person-rules.ts';

/** What authentication needs of a person on every request: one primary-key read. */
export interface PersonAuthState {
  readonly id: string;
  readonly role: Role;
  readonly scopeId: string | null;
  readonly securityStamp: string;
  /** Logically deleted or anonymised (an anonymised person is also logically deleted). */
  readonly gone: boolean;
  /** Suspended by an erasure request, awaiting the retention pass. */
  readonly erasurePending: boolean;
  readonly restricted: boolean;
}

const selectPersonAuthState = preparedQuery(1, (db, id: string) =>
  db
    .selectFrom('persons')
    .select([
      'id',
      'role',
      'scope_id',
      'security_stamp',
      'deleted_at',
      'erasure_requested_at',
      'anonymised_at',
      'restricted_at',
    ])
    .where('id', '=', id),
);

/** Read on every authenticated request, so its SQL is compiled once (see preparedQuery). */
export async function findPersonAuthState(db: DbOrTx, id: string): Promise<PersonAuthState | null> {
  const [row] = await selectPersonAuthState(db, id);
  if (row === undefined) return null;
  return {
    id: row.id,
    role: row.role,
    scopeId: row.scope_id,
    securityStamp: row.security_stamp,
    gone: row.deleted_at !== null || row.anonymised_at !== null,
    erasurePending: row.erasure_requested_at !== null,
    restricted: row.restricted_at !== null,
  };
}

export async function findPersonByEmailForSignIn(
  db: DbOrTx,
  emailNormalized: string,
  scopeId: string | null,
): Promise<PersonRow | undefined> {
  const [row] =
    scopeId === null
      ? await selectUnscopedPersonByEmail(db, emailNormalized)
      : await selectScopedPersonByEmail(db, emailNormalized, scopeId);
  return row;
}

// Every sign-in reads the person by email and, if the password was right, again by id inside
// its transaction: prepared (see preparedQuery), as the reads of every authenticated request are.
const selectUnscopedPersonByEmail = preparedQuery(1, (db, emailNormalized: string) =>
  db
    .selectFrom('persons')
    .selectAll()
    .where('email_normalized', '=', emailNormalized)
    .where('scope_id', 'is', null)
    .where('deleted_at', 'is', null),
);

const selectScopedPersonByEmail = preparedQuery(2, (db, emailNormalized: string, scopeId: string) =>
  db
    .selectFrom('persons')
    .selectAll()
    .where('email_normalized', '=', emailNormalized)
    .where('scope_id', '=', scopeId)
    .where('deleted_at', 'is', null),
);

/**
 * The person's row if a correct password may sign them in now: live, not suspended for erasure,
 * not locked out. Read inside the sign-in's transaction; on PostgreSQL the row is locked
 * (SELECT … FOR UPDATE), so a lock-out or deletion committed while the password was checked
 * wins, as it would over an UPDATE with these conditions. SQLite runs its write transactions one
 * at a time, so a plain read inside one is as good.
 */
export async function findPersonAllowedPasswordSignIn(
  tx: Tx,
  id: string,
  now: IsoTime,
): Promise<PersonRow | undefined> {
  const [row] = await selectPersonAllowedPasswordSignIn(tx, id, now);
  return row;
}

// Compiled once per dialect: the row lock is PostgreSQL's alone.
const selectPersonAllowedPasswordSignIn = preparedQuery(2, (db, id: string, now: IsoTime) =>
  db
    .selectFrom('persons')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('erasure_requested_at', 'is', null)
    .where((eb) => eb.or([eb('locked_out_until', 'is', null), eb('locked_out_until', '<=', now)]))
    .$if(isPostgres(db), (query) => query.forUpdate()),
);

/**
 * A successful password sign-in: the failed-attempt count and an expired lock are cleared, and
 * a fresh hash (`rehash`, when the stored one used older parameters) replaces the stored one.
 */
export async function recordPasswordSignIn(tx: Tx, id: string, rehash: string | null): Promise<PersonRow> {
  return tx
    .updateTable('persons')
    .set({
      failed_login_attempts: 0,
      locked_out_until: null,
      ...(rehash === null ? {} : { password_hash: rehash }),
    })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** One more consecutive wrong password, counted in the database; the new count. */
export async function countFailedPasswordSignIn(tx: Tx, id: string): Promise<number | undefined> {
  const row = await tx
    .updateTable('persons')
    .set((eb) => ({ failed_login_attempts: eb('failed_login_attempts', '+', 1) }))
    .where('id', '=', id)
    .returning('failed_login_attempts')
    .executeTakeFirst();
  return row?.failed_login_attempts;
}

/**
 * The end of the person's latest re-authentication pause (in the past once it is over), or null
 * when none was set (auth/reauthentication.ts).
 */
export async function findReauthenticationPausedUntil(db: DbOrTx, id: string): Promise<IsoTime | null> {
  const row = await db
    .selectFrom('persons')
    .select('reauthentication_paused_until')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.reauthentication_paused_until ?? null;
}

/**
 * Counts one failed re-authentication in one conditional write, so parallel failures are all
 * counted: a window that started at or before `windowExpiredAt` (or none) starts over at this
 * failure, at `now`. The count after it; undefined when the person has no row.
 */
export async function countReauthenticationFailure(
  tx: Tx,
  id: string,
  now: IsoTime,
  windowExpiredAt: IsoTime,
): Promise<number | undefined> {
  const row = await tx
    .updateTable('persons')
    .set((eb) => {
      const windowExpired = eb.or([
        eb('reauthentication_window_started_at', 'is', null),
        eb('reauthentication_window_started_at', '<=', windowExpiredAt),
      ]);
      return {
        reauthentication_failures: eb
          .case()
          .when(windowExpired)
          .then(1)
          .else(eb('reauthentication_failures', '+', 1))
          .end(),
        reauthentication_window_started_at: eb
          .case()
          .when(windowExpired)
          .then(now)
          .else(eb.ref('reauthentication_window_started_at'))
          .end(),
      };
    })
    .where('id', '=', id)
    .returning('reauthentication_failures')
    .executeTakeFirst();
  return row?.reauthentication_failures;
}

const selectLiveAdministrator = preparedQuery(1, (db, id: string) =>
  db
    .selectFrom('persons')
    .select('id')
    .where('id', '=', id)
    .where('role', 'in', ADMINISTRATOR_ROLES)
    .where('deleted_at', 'is', null)
    .where('erasure_requested_at', 'is', null),
);

/**
 * Whether the person is a live System Admin or Scope Admin, not awaiting erasure: checked for
 * every owner of a new scope or application. Compiled once (see preparedQuery).
 */
export async function isLiveAdministrator(db: DbOrTx, id: string): Promise<boolean> {
  return (await selectLiveAdministrator(db, id)).length > 0;
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

/** A new account as every creation path writes it: live, unlocked, nothing spent or restricted. */
export function newPersonRow(account: {
  readonly name: string;
  readonly email: string;
  readonly emailNormalized: string;
  readonly role: Role;
  readonly scopeId: string | null;
  readonly passwordHash: string | null;
  readonly emailVerified: boolean;
  readonly now: IsoTime;
}): PersonRow {
  return {
    id: newId(),
    name: account.name,
    email: account.email,
    email_normalized: account.emailNormalized,
    role: account.role,
    scope_id: account.scopeId,
    password_hash: account.passwordHash,
    security_stamp: newSecurityStamp(),
    email_verified: account.emailVerified ? 1 : 0,
    failed_login_attempts: 0,
    locked_out_until: null,
    restricted_at: null,
    restriction_ground: null,
    erasure_requested_at: null,
    deleted_at: null,
    anonymised_at: null,
    created_at: account.now,
    updated_at: account.now,
    reauthentication_failures: 0,
    reauthentication_window_started_at: null,
    reauthentication_paused_until: null,
  };
}

export async function insertPerson(tx: Tx, row: NewPerson): Promise<void> {
  await tx.insertInto('persons').values(row).execute();
}

/** One person; logically deleted ones only when asked for (a prepared query per shape). */
const personById = (includeDeleted: boolean) =>
  preparedQuery(1, (db, id: string) =>
    db
      .selectFrom('persons')
      .selectAll()
      .where('id', '=', id)
      .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null)),
  );
const selectLivePerson = personById(false);
const selectPersonIncludingDeleted = personById(true);

export async function findPerson(
  db: DbOrTx,
  id: string,
  includeDeleted = false,
): Promise<PersonRow | undefined> {
  const [row] = await (includeDeleted ? selectPersonIncludingDeleted : selectLivePerson)(db, id);
  return row;
}

/** A person with whether their two-factor authentication is active (the answer's flag). */
export interface PersonWithTwoFactor {
  readonly row: PersonRow;
  readonly twoFactorEnabled: boolean;
}

// GET /api/persons/{id} answers a person with their two-factor flag: one statement for both.
const personWithTwoFactorById = (includeDeleted: boolean) =>
  preparedQuery(1, (db, id: string) =>
    db
      .selectFrom('persons')
      .selectAll('persons')
      .select(twoFactorActiveColumn)
      .where('id', '=', id)
      .$if(!includeDeleted, (query) => query.where('deleted_at', 'is', null)),
  );
const selectLivePersonWithTwoFactor = personWithTwoFactorById(false);
const selectPersonWithTwoFactorIncludingDeleted = personWithTwoFactorById(true);

/** `findPerson`, with the person's two-factor flag read in the same statement. */
export async function findPersonWithTwoFactor(
  db: DbOrTx,
  id: string,
  includeDeleted = false,
): Promise<PersonWithTwoFactor | undefined> {
  const [found] = await (
    includeDeleted ? selectPersonWithTwoFactorIncludingDeleted : selectLivePersonWithTwoFactor
  )(db, id);
  if (found === undefined) return undefined;
  const { two_factor_active: twoFactorActive, ...row } = found;
  return { row, twoFactorEnabled: twoFactorActive === 1 };
}

export async function updatePerson(tx: Tx, id: string, changes: PersonUpdate): Promise<void> {
  await tx.updateTable('persons').set(changes).where('id', '=', id).execute();
}

export async function deletePersonRow(tx: Tx, id: string): Promise<boolean> {
  const deleted = await tx.deleteFrom('persons').where('id', '=', id).executeTakeFirst();
  return deleted.numDeletedRows > 0n;
}

/**
 * Whether a live person already holds the address where it must be unique (DECISIONS §6): a
 * User's among the live Users of the same scope, an administrator's among live administrators.
 */
export async function isEmailTaken(
  db: DbOrTx,
  emailNormalized: string,
  scopeId: string | null,
  exceptId: string | null,
): Promise<boolean> {
  const row = await db
    .selectFrom('persons')
    .select('id')
    .where('email_normalized', '=', emailNormalized)
    .where((eb) => (scopeId === null ? eb('scope_id', 'is', null) : eb('scope_id', '=', scopeId)))
    .where('deleted_at', 'is', null)
    .$if(exceptId !== null, (query) => query.where('id', '!=', exceptId ?? ''))
    .executeTakeFirst();
  return row !== undefined;
}

/** A case-insensitive substring match on a column that holds mixed-case text. */
function containsIgnoringCase(column: 'name', filter: string): Expression<SqlBool> {
  const escaped = filter
    .trim()
    .toLowerCase()
    .replace(/[\\%_]/g, (character) => `\\${character}`);
  return sql<SqlBool>`lower(${sql.ref(column)}) like ${`%${escaped}%`} escape '\\'`;
}

export interface PersonFilter {
  /** Only the Users of this scope. */
  readonly usersOf?: string;
  /** Only the owners of this scope. */
  readonly ownersOf?: string;
  /** Only these roles. */
  readonly roles?: readonly Role[];
  /** Leave out the owners of this scope. */
  readonly excludeOwnersOf?: string | null;
  readonly name?: string | null;
  readonly email?: string | null;
  readonly includeDeleted?: boolean;
  /** Leave out restricted persons and those awaiting erasure (listed nowhere while so). */
  readonly withholdRestricted?: boolean;
}

const isBlank = (value: string | null | undefined): value is null | undefined =>
  value === null || value === undefined || value.trim() === '';

/** A page of persons ordered by name, then id, and the size of the whole result. */
export async function listPersons(
  db: DbOrTx,
  filter: PersonFilter,
  page: PageRequest,
): Promise<{ rows: PersonRow[]; total: number }> {
  const base = db
    .selectFrom('persons')
    .$if(filter.includeDeleted !== true, (query) => query.where('deleted_at', 'is', null))
    .$if(filter.withholdRestricted === true, (query) =>
      query.where('restricted_at', 'is', null).where('erasure_requested_at', 'is', null),
    )
    .$if(filter.usersOf !== undefined, (query) =>
      query.where('scope_id', '=', filter.usersOf ?? '').where('role', '=', Role.User),
    )
    .$if(filter.ownersOf !== undefined, (query) =>
      query.where('id', 'in', (eb) =>
        eb
          .selectFrom('scope_owners')
          .select('person_id')
          .where('scope_id', '=', filter.ownersOf ?? ''),
      ),
    )
    .$if(filter.roles !== undefined, (query) => query.where('role', 'in', [...(filter.roles ?? [])]))
    .$if(!isBlank(filter.excludeOwnersOf), (query) =>
      query.where('id', 'not in', (eb) =>
        eb
          .selectFrom('scope_owners')
          .select('person_id')
          .where('scope_id', '=', filter.excludeOwnersOf ?? ''),
      ),
    )
    .$if(!isBlank(filter.name), (query) => query.where(containsIgnoringCase('name', filter.name ?? '')))
    .$if(!isBlank(filter.email), (query) =>
      query.where(containsNormalized('email_normalized', filter.email ?? '')),
    );
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('name').orderBy('id').limit(page.pageSize).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}
