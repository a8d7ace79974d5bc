import { newId } from '../crypto/secrets.ts';
import type { DbOrTx, Flag } from '../db/database.ts';
import { preparedQuery } from '../db/prepared-query.ts';

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
    db.insertInto('audit_entries').values({
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
 * The only writer of audit rows (the command runner calls it, once per command); the table is
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
