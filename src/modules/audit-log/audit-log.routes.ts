import type { AuditEntryRow } from '../../db/database.ts';
import { SYSTEM_ADMIN } from '../../http/access.ts';
import { okPage } from '../../http/envelope.ts';
import { InvalidField } from '../../http/messages.ts';
import { pageRequest } from '../../http/pagination.ts';
import { AUTHENTICATED_ERRORS, responses } from '../../http/route-schema.ts';
import { MALFORMED } from '../../http/validation.ts';
import type { App, Services } from '../../services.ts';
import { listAuditEntries } from './audit-log.repository.ts';
import { type AuditEntry, AuditLogPageOutput, AuditLogQuery } from './audit-log.schemas.ts';

/** An entry as answered: shared by the reader and the data export. */
export const toAuditEntry = (row: AuditEntryRow): AuditEntry => ({
  id: row.id,
  actorId: row.actor_id,
  targetId: row.target_id,
  action: row.action,
  succeeded: row.succeeded === 1,
  failureReason: row.failure_reason,
  recordedAt: row.recorded_at,
});

/** Stored times are toISOString() text; a filter is brought to the same form so text compares right. */
function asStoredTime(value: string | null | undefined): string | null {
  if (value == null) return null;
  const time = new Date(value);
  // The format check admits shapes such as February 30th that name no instant.
  if (Number.isNaN(time.getTime())) throw new InvalidField(MALFORMED);
  return time.toISOString();
}

/**
 * The audit trail, for System Admins only. Reading it is not itself audited: it changes nothing
 * (moving the audit inbox only completes the trail it reads).
 */
export function auditLogRoutes(app: App, { db, auditInbox }: Services): void {
  app.get(
    '/api/audit-log',
    {
      config: { access: SYSTEM_ADMIN },
      schema: {
        tags: ['Audit'],
        security: [{ bearer: [] }],
        operationId: 'Audit_List',
        summary: 'Audit entries, newest first, with combinable filters',
        querystring: AuditLogQuery,
        response: responses(AuditLogPageOutput, AUTHENTICATED_ERRORS),
      },
    },
    async (request) => {
      const { query } = request;
      const page = pageRequest(query);
      const filter = {
        from: asStoredTime(query.From),
        to: asStoredTime(query.To),
        actorId: query.ActorId ?? null,
        action: query.Action ?? null,
        targetId: query.TargetId ?? null,
        succeeded: query.Succeeded ?? null,
      };
      // The entries of the last moments may still be in the audit inbox (SQLite): moved first.
      await auditInbox.settle();
      const { rows, total } = await listAuditEntries(db, filter, page);
      return okPage(
        {
          items: rows.map(toAuditEntry),
          pageNumber: page.pageNumber,
          pageSize: page.pageSize,
          totalRecords: total,
        },
        'Audit entries retrieved successfully.',
      );
    },
  );
}
