import { sql } from 'kysely';
import type { AuditEntryRow, DbOrTx, ExtidpUserRow, IsoTime, PersonRow, Tx } from '../../db/database.ts';
import { moveAuditInbox } from '../../audit/audit.repository.ts';
import type { PageRequest } from '../../http/pagination.ts';

/** SQL of the data-subject rights (privacy) module: restriction, erasure, export reads. Kysely only. */

export type SubjectKind = 'person' | 'extidpUser';

/** The stored row of a data subject: a person or an external-provider user. */
export type SubjectRow =
  | { readonly kind: 'person'; readonly row: PersonRow }
  | { readonly kind: 'extidpUser'; readonly row: ExtidpUserRow };

const TABLE = { person: 'persons', extidpUser: 'extidp_users' } as const;

/** A subject that is neither logically deleted nor anonymised. */
export async function findLiveSubject(
  db: DbOrTx,
  kind: SubjectKind,
  id: string,
): Promise<SubjectRow | undefined> {
  if (kind === 'person') {
    const row = await db
      .selectFrom('persons')
      .selectAll()
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .where('anonymised_at', 'is', null)
      .executeTakeFirst();
    return row === undefined ? undefined : { kind, row };
  }
  const row = await db
    .selectFrom('extidp_users')
    .selectAll()
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('anonymised_at', 'is', null)
    .executeTakeFirst();
  return row === undefined ? undefined : { kind, row };
}

/** A live subject by id alone: a person id, else an external-provider user id (ids are GUIDs). */
export async function findLiveSubjectById(db: DbOrTx, id: string): Promise<SubjectRow | undefined> {
  return (await findLiveSubject(db, 'person', id)) ?? (await findLiveSubject(db, 'extidpUser', id));
}

/**
 * Restricts processing in one conditional write: false when the subject is already restricted,
 * awaiting erasure or gone (two racing requests cannot both restrict).
 */
export async function markRestricted(
  tx: Tx,
  kind: SubjectKind,
  id: string,
  change: { ground: string; now: IsoTime },
): Promise<boolean> {
  const result = await tx
    .updateTable(TABLE[kind])
    .set({ restricted_at: change.now, restriction_ground: change.ground, updated_at: change.now })
    .where('id', '=', id)
    .where('restricted_at', 'is', null)
    .where('erasure_requested_at', 'is', null)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Lifts a restriction in one conditional write: false when there was none to lift. */
export async function markRestrictionLifted(
  tx: Tx,
  kind: SubjectKind,
  id: string,
  now: IsoTime,
): Promise<boolean> {
  const result = await tx
    .updateTable(TABLE[kind])
    .set({ restricted_at: null, restriction_ground: null, updated_at: now })
    .where('id', '=', id)
    .where('restricted_at', 'is not', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Records an erasure request (suspending the identity) and lifts its restriction, in one
 * conditional write: false when erasure was already requested or the subject is gone.
 */
export async function markErasureRequested(
  tx: Tx,
  kind: SubjectKind,
  id: string,
  now: IsoTime,
): Promise<boolean> {
  const result = await tx
    .updateTable(TABLE[kind])
    .set({ erasure_requested_at: now, restricted_at: null, restriction_ground: null, updated_at: now })
    .where('id', '=', id)
    .where('erasure_requested_at', 'is', null)
    .where('deleted_at', 'is', null)
    .where('anonymised_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export interface ErasureRequestRow {
  readonly subject_id: string;
  readonly subject_kind: SubjectKind;
  readonly requested_at: IsoTime;
}

/**
 * Outstanding erasure requests of persons and external-provider users, oldest request (so
 * soonest deadline: every deadline is the request plus the same period) first.
 */
export async function listErasureRequests(
  db: DbOrTx,
  page: PageRequest,
): Promise<{ rows: ErasureRequestRow[]; total: number }> {
  const requests = db
    .selectFrom('persons')
    .select([
      'id as subject_id',
      sql<SubjectKind>`'person'`.as('subject_kind'),
      'erasure_requested_at as requested_at',
    ])
    .where('erasure_requested_at', 'is not', null)
    .where('anonymised_at', 'is', null)
    .unionAll(
      db
        .selectFrom('extidp_users')
        .select([
          'id as subject_id',
          sql<SubjectKind>`'extidpUser'`.as('subject_kind'),
          'erasure_requested_at as requested_at',
        ])
        .where('erasure_requested_at', 'is not', null)
        .where('anonymised_at', 'is', null),
    );
  const base = db.selectFrom(requests.as('requests'));
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('requested_at')
      .orderBy('subject_id')
      .limit(page.pageSize)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows: rows as ErasureRequestRow[], total: Number(count.total) };
}

// ── Reads of the data export ──────────────────────────────────────────────────────────────

export interface MembershipRow {
  readonly scope_id: string;
  readonly scope_name: string;
  readonly relation: 'member' | 'owner';
  readonly since: IsoTime;
}

/** The scope the subject belongs to (Users, external-provider users) and the scopes they own. */
export async function membershipsOf(db: DbOrTx, subject: SubjectRow): Promise<MembershipRow[]> {
  const memberships: MembershipRow[] = [];
  const scopeId = subject.row.scope_id;
  if (scopeId !== null) {
    const scope = await db.selectFrom('scopes').select('name').where('id', '=', scopeId).executeTakeFirst();
    if (scope !== undefined) {
      memberships.push({
        scope_id: scopeId,
        scope_name: scope.name,
        relation: 'member',
        since: subject.row.created_at,
      });
    }
  }
  if (subject.kind === 'person') {
    const owned = await db
      .selectFrom('scope_owners')
      .innerJoin('scopes', 'scopes.id', 'scope_owners.scope_id')
      .select(['scope_owners.scope_id', 'scopes.name', 'scope_owners.created_at'])
      .where('scope_owners.person_id', '=', subject.row.id)
      .orderBy('scopes.name')
      .orderBy('scope_owners.scope_id')
      .execute();
    for (const row of owned) {
      memberships.push({
        scope_id: row.scope_id,
        scope_name: row.name,
        relation: 'owner',
        since: row.created_at,
      });
    }
  }
  return memberships;
}

export async function applicationsOwnedBy(db: DbOrTx, personId: string) {
  return db
    .selectFrom('applications')
    .select(['id', 'name', 'scope_id', 'deleted_at', 'created_at'])
    .where('owner_id', '=', personId)
    .orderBy('name')
    .orderBy('id')
    .execute();
}

/**
 * Every audit entry naming the subject as actor or target, oldest first: the audit inbox is
 * moved first, so the entries of the last moments are there too.
 */
export async function auditEntriesNaming(tx: Tx, id: string): Promise<AuditEntryRow[]> {
  await moveAuditInbox(tx);
  return tx
    .selectFrom('audit_entries')
    .selectAll()
    .where((eb) => eb.or([eb('actor_id', '=', id), eb('target_id', '=', id)]))
    .orderBy('recorded_at')
    .orderBy('id')
    .execute();
}
