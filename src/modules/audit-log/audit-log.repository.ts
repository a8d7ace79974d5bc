import { sql } from 'kysely';
import type { AuditEntryRow, DbOrTx, Flag } from '../../db/database.ts';
import type { PageRequest } from '../../http/pagination.ts';

export interface AuditFilter {
  readonly from: string | null;
  readonly to: string | null;
  readonly actorId: string | null;
  readonly action: string | null;
  readonly targetId: string | null;
  readonly succeeded: boolean | null;
}

/**
 * The entries that pass the filter. The outcome is written into the SQL as a literal, not bound:
 * refusals have an index of their own (migration 0011), which a plan may use only where the
 * query says `succeeded = 0` itself. The SQLite dialect marks every parameter (`+?`), so SQLite
 * plans without looking at its value, and PostgreSQL's generic plans do not look at values either.
 */
function filteredEntries(db: DbOrTx, filter: AuditFilter) {
  return db
    .selectFrom('audit_entries')
    .$if(filter.from !== null, (query) => query.where('recorded_at', '>=', filter.from!))
    .$if(filter.to !== null, (query) => query.where('recorded_at', '<=', filter.to!))
    .$if(filter.actorId !== null, (query) => query.where('actor_id', '=', filter.actorId!))
    .$if(filter.action !== null, (query) => query.where('action', '=', filter.action!))
    .$if(filter.targetId !== null, (query) => query.where('target_id', '=', filter.targetId!))
    .$if(filter.succeeded !== null, (query) =>
      query.where('succeeded', '=', sql.lit<Flag>(filter.succeeded ? 1 : 0)),
    );
}

/** One page of the filtered entries, newest first. */
export function auditPageQuery(db: DbOrTx, filter: AuditFilter, page: PageRequest) {
  return filteredEntries(db, filter)
    .selectAll()
    .orderBy('recorded_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.pageSize)
    .offset(page.offset);
}

/** A page of entries, newest first, as stored (a cleared actor or target is null). */
export async function listAuditEntries(
  db: DbOrTx,
  filter: AuditFilter,
  page: PageRequest,
): Promise<{ rows: AuditEntryRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    auditPageQuery(db, filter, page).execute(),
    filteredEntries(db, filter)
      .select((eb) => eb.fn.countAll<number>().as('total'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}
