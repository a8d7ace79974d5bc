import { randomBytes } from 'node:crypto';
import { hashSync } from '@node-rs/argon2';
import { PASSWORD_HASH_PARAMETERS } from '../../src/crypto/passwords.ts';
import { newId, newSecurityStamp } from '../../src/crypto/secrets.ts';
import { type PersonRow, Role, type ScopeRow } from '../../src/db/database.ts';
import type { TestApp } from './app.ts';

/** The password of every person a factory makes; hashed once per test process. */
export const PASSWORD = 'correct horse battery staple';
let passwordHash: string | null = null;
const hashedPassword = (): string => {
  passwordHash ??= hashSync(PASSWORD, PASSWORD_HASH_PARAMETERS);
  return passwordHash;
};

const unique = (): string => randomBytes(4).toString('hex');

export interface PersonFixture {
  readonly row: PersonRow;
  readonly id: string;
  readonly email: string;
  /** A full person token for this person, issued directly (no sign-in round trip). */
  readonly token: string;
}

export async function createPerson(
  test: TestApp,
  options: Partial<
    Pick<
      PersonRow,
      'name' | 'email' | 'role' | 'scope_id' | 'email_verified' | 'restricted_at' | 'deleted_at'
    >
  > = {},
): Promise<PersonFixture> {
  const now = test.clock.now().toISOString();
  const email = options.email ?? `person-${unique()}@example.test`;
  const row: PersonRow = {
    id: newId(),
    name: options.name ?? `Person ${unique()}`,
    email,
    email_normalized: email.trim().toLowerCase(),
    role: options.role ?? Role.User,
    scope_id: options.scope_id ?? null,
    password_hash: hashedPassword(),
    security_stamp: newSecurityStamp(),
    email_verified: options.email_verified ?? 1,
    failed_login_attempts: 0,
    locked_out_until: null,
    restricted_at: options.restricted_at ?? null,
    restriction_ground: null,
    erasure_requested_at: null,
    deleted_at: options.deleted_at ?? null,
    anonymised_at: null,
    created_at: now,
    updated_at: now,
    reauthentication_failures: 0,
    reauthentication_window_started_at: null,
    reauthentication_paused_until: null,
  };
  await test.services.db.insertInto('persons').values(row).execute();
  return { row, id: row.id, email, token: tokenFor(test, row) };
}

export function tokenFor(test: TestApp, person: PersonRow): string {
  return test.services.tokens.issueFullToken({
    sub: person.id,
    role: person.role,
    kind: 'person',
    sst: person.security_stamp,
    ...(person.scope_id === null ? {} : { scopeId: person.scope_id }),
  }).token;
}

type PersonOptions = Partial<Pick<PersonRow, 'name' | 'email' | 'restricted_at' | 'deleted_at'>>;

export const createSystemAdmin = (test: TestApp, options: PersonOptions = {}) =>
  createPerson(test, { role: Role.SystemAdmin, ...options });
export const createScopeAdmin = (test: TestApp, options: PersonOptions = {}) =>
  createPerson(test, { role: Role.ScopeAdmin, ...options });

/** A live scope owned by the given administrators. */
export async function createScope(
  test: TestApp,
  ownerIds: readonly string[],
  options: Partial<Pick<ScopeRow, 'name' | 'self_registration_enabled' | 'extidp_signin_enabled'>> = {},
): Promise<ScopeRow> {
  const now = test.clock.now().toISOString();
  const name = options.name ?? `Scope ${unique()}`;
  const row: ScopeRow = {
    id: newId(),
    name,
    name_normalized: name.toLowerCase(),
    description: '',
    extidp_signin_enabled: options.extidp_signin_enabled ?? 0,
    self_registration_enabled: options.self_registration_enabled ?? 0,
    email_verification_url: null,
    password_reset_url: null,
    deleted_at: null,
    created_at: now,
    updated_at: now,
  };
  await test.services.db.insertInto('scopes').values(row).execute();
  if (ownerIds.length > 0) {
    await test.services.db
      .insertInto('scope_owners')
      .values(ownerIds.map((personId) => ({ scope_id: row.id, person_id: personId, created_at: now })))
      .execute();
  }
  return row;
}

export const createUser = (test: TestApp, scopeId: string, options: PersonOptions = {}) =>
  createPerson(test, { role: Role.User, scope_id: scopeId, ...options });

/** The audit entries of one action, oldest first (the audit inbox moved first). */
export async function auditEntries(test: TestApp, action: string) {
  await test.services.auditInbox.settle();
  return test.services.db
    .selectFrom('audit_entries')
    .selectAll()
    .where('action', '=', action)
    .orderBy('recorded_at')
    .execute();
}

/** A person's stored row as it is now (undefined once hard-deleted). */
export const personRow = (test: TestApp, id: string) =>
  test.services.db.selectFrom('persons').selectAll().where('id', '=', id).executeTakeFirst();

/** The ids of a scope's owners, sorted. */
export async function ownerIdsOf(test: TestApp, scopeId: string): Promise<string[]> {
  const rows = await test.services.db
    .selectFrom('scope_owners')
    .select('person_id')
    .where('scope_id', '=', scopeId)
    .execute();
  return rows.map((row) => row.person_id).sort();
}

export async function personCount(test: TestApp): Promise<number> {
  const row = await test.services.db
    .selectFrom('persons')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
