import { newId } from '../crypto/secrets.ts';
import type { DbOrTx, Flag } from '../db/database.ts';

export interface AuditRecord {
  readonly actorId: string | null;
  readonly targetId: string | null;
  readonly action: string;
  readonly succeeded: boolean;
  readonly failureReason: string | null;
  readonly recordedAt: string;
}

/** The only writer of audit rows (the command runner calls it); the table is append-only. */
export async function insertAuditEntry(db: DbOrTx, record: AuditRecord): Promise<void> {
  await db
    .insertInto('audit_entries')
    .values({
      id: newId(),
      actor_id: record.actorId,
      target_id: record.targetId,
      action: record.action,
      succeeded: (record.succeeded ? 1 : 0) as Flag,
      failure_reason: record.failureReason,
      recorded_at: record.recordedAt,
    })
    .execute();
}
