import { sql } from 'kysely';
import { newId } from '../crypto/secrets.ts';
import type { DbOrTx, Flag, Tx } from '../db/database.ts';
import { preparedQuery } from '../db/prepared-query.ts';
import { isPostgres } from '../db/query-helpers.ts';

export interface AuditRecord {
  readonly actorId: string | null;
  readonly targetId: string | null;
  readonly action: string;
  readonly succeeded: boolean;
  readonly failureReason: string | null;
  readonly recordedAt: string;
}

const insertAuditRow = preparedQuery(
  7,
  (
    db,
    id: string,
    actorId: string | null,
    targetId: string | null,
    action: string,
    succeeded: Flag,
    failureReason: string | null,
    recordedAt: string,
  ) =>
    db.insertInto(auditTableWrittenBy(db)).values({
      id,
      actor_id: actorId,
      target_id: targetId,
      action,
      succeeded,
      failure_reason: failureReason,
      recorded_at: recordedAt,
    }),
);

/**
 * Where a command's audit row goes: on SQLite the inbox, moved into `audit_entries` in bulk by
 * `moveAuditInbox` (audit-inbox.ts says why); on PostgreSQL `audit_entries` itself.
 */
function auditTableWrittenBy(db: DbOrTx): 'audit_entries' | 'audit_inbox' {
  return isPostgres(db) ? 'audit_entries' : 'audit_inbox';
}

/**
 * The only writer of audit rows (the command runner calls it, once per command); the trail is
 * append-only. Its SQL is compiled once (see preparedQuery).
 */
export async function insertAuditEntry(db: DbOrTx, record: AuditRecord): Promise<void> {
  await insertAuditRow(
    db,
    newId(),
    record.actorId,
    record.targetId,
    record.action,
    record.succeeded ? 1 : 0,
    record.failureReason,
    record.recordedAt,
  );
}

const AUDIT_COLUMNS = sql.join(
  ['id', 'actor_id', 'target_id', 'action', 'succeeded', 'failure_reason', 'recorded_at'].map((name) =>
    sql.ref(name),
  ),
);

/**
 * Moves every row of the audit inbox into `audit_entries`, in the order they were appended, and
 * answers how many moved. Whoever reads or changes `audit_entries` calls it first, in the same
 * transaction, so the trail it sees is whole. The transaction holds SQLite's write lock, so no
 * row can join the inbox between the copy and the delete. PostgreSQL has no inbox: nothing moves.
 */
export async function moveAuditInbox(tx: Tx): Promise<number> {
  if (isPostgres(tx)) return 0;
  const moved = await sql`insert into audit_entries (${AUDIT_COLUMNS})
    select ${AUDIT_COLUMNS} from audit_inbox order by rowid`.execute(tx);
  if (moved.numAffectedRows === 0n) return 0;
  await tx.deleteFrom('audit_inbox').execute();
  return Number(moved.numAffectedRows);
}
