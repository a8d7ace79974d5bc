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

/** A page of entries, newest first, as stored (a cleared actor or target is null). */
export async function listAuditEntries(
  db: DbOrTx,
  filter: AuditFilter,
  page: PageRequest,
): Promise<{ rows: AuditEntryRow[]; total: number }> {
  const base = db
    .selectFrom('audit_entries')
    .$if(filter.from !== null, (query) => query.where('recorded_at', '>=', filter.from!))
    .$if(filter.to !== null, (query) => query.where('recorded_at', '<=', filter.to!))
    .$if(filter.actorId !== null, (query) => query.where('actor_id', '=', filter.actorId!))
    .$if(filter.action !== null, (query) => query.where('action', '=', filter.action!))
    .$if(filter.targetId !== null, (query) => query.where('target_id', '=', filter.targetId!))
    .$if(filter.succeeded !== null, (query) =>
      query.where('succeeded', '=', (filter.succeeded ? 1 : 0) as Flag),
    );
  const [rows, count] = await Promise.all([
    base
      .selectAll()
      .orderBy('recorded_at', 'desc')
      .orderBy('id', 'desc')
      .limit(page.pageSize)
      .offset(page.offset)
      .execute(),
    base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.total) };
}
