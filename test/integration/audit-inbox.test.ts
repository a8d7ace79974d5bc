import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditInbox } from '../../src/audit/audit-inbox.ts';
import { insertAuditEntry, moveAuditInbox } from '../../src/audit/audit.repository.ts';
import { newId } from '../../src/crypto/secrets.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';

for (const dialect of DIALECTS) {
  describe(`audit inbox (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const idsIn = async (table: 'audit_entries' | 'audit_inbox', action: string) =>
      (await test.services.db.selectFrom(table).select('id').where('action', '=', action).execute()).map(
        (row) => row.id,
      );
    const createScope = async (name: string) => {
      const created = await test.request({
        method: 'POST',
        url: '/api/scopes',
        token: admin.token,
        body: { name, ownerIds: [admin.id] },
      });
      expect(created.status).toBe(200);
      return String(created.body.data.id);
    };

    const appendOne = async (action: string, recordedAt = test.clock.now().toISOString()) =>
      test.services.database.writes.run((tx) =>
        insertAuditEntry(tx, {
          actorId: null,
          targetId: null,
          action,
          succeeded: true,
          failureReason: null,
          recordedAt,
        }),
      );
    const waitUntil = async (check: () => Promise<boolean>, ms: number) => {
      const deadline = Date.now() + ms;
      while (!(await check())) {
        if (Date.now() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return true;
    };

    /** Whether no row of the action is left in the inbox. */
    const inboxEmptyOf = (action: string) => async () => (await idsIn('audit_inbox', action)).length === 0;
    /** An inbox of the test's own, beside the app's, with its own triggers. */
    const ownInbox = (triggers: { moveRows: number; moveDelayMs: number }) =>
      new AuditInbox(test.services.database.writes, test.services.log, triggers);

    it('appends on SQLite and writes the trail itself on PostgreSQL', async () => {
      const action = `InboxTable${newId().replaceAll('-', '')}`;
      await appendOne(action);
      expect(await idsIn(dialect === 'sqlite' ? 'audit_inbox' : 'audit_entries', action)).toHaveLength(1);
      expect(await idsIn(dialect === 'sqlite' ? 'audit_entries' : 'audit_inbox', action)).toEqual([]);
    });

    it('answers the audit log with the entries still in the inbox', async () => {
      const action = `InboxRead${newId().replaceAll('-', '')}`;
      await appendOne(action);
      const listed = await test.request({
        method: 'GET',
        url: `/api/audit-log?Action=${action}`,
        token: admin.token,
      });
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([expect.objectContaining({ action, succeeded: true })]);
      expect(await idsIn('audit_inbox', action)).toEqual([]);
    });

    it('moves a command’s entry into the trail without a reader asking', async () => {
      const scopeId = await createScope('Audit inbox scope');
      const inTrail = async () =>
        (
          await test.services.db
            .selectFrom('audit_entries')
            .select('id')
            .where('action', '=', 'CreateScopeCommand')
            .where('target_id', '=', scopeId)
            .execute()
        ).length === 1;
      expect(await waitUntil(inTrail, 5_000)).toBe(true);
    });

    it('moves every row, in the order appended, once', async () => {
      const action = `InboxOrder${newId().replaceAll('-', '')}`;
      await test.services.database.writes.run(async (tx) => {
        for (const second of [3, 1, 2]) {
          await insertAuditEntry(tx, {
            actorId: null,
            targetId: null,
            action,
            succeeded: true,
            failureReason: null,
            recordedAt: `2031-01-01T00:00:0${second}.000Z`,
          });
        }
      });
      const ids = await idsIn(dialect === 'sqlite' ? 'audit_inbox' : 'audit_entries', action);
      expect(ids).toHaveLength(3);
      await test.services.database.writes.run(moveAuditInbox);
      expect(await idsIn('audit_inbox', action)).toEqual([]);
      const moved = await test.services.db
        .selectFrom('audit_entries')
        .select(['id', 'recorded_at'])
        .where('action', '=', action)
        // SQLite: the order the rows were stored in, which the move keeps from the inbox.
        .$if(dialect === 'sqlite', (query) => query.orderBy(sql`rowid`))
        .execute();
      const recorded = moved.map((row) => row.recorded_at);
      if (dialect === 'sqlite') {
        expect(recorded).toEqual([
          '2031-01-01T00:00:03.000Z',
          '2031-01-01T00:00:01.000Z',
          '2031-01-01T00:00:02.000Z',
        ]);
      }
      expect(recorded.sort()).toEqual([
        '2031-01-01T00:00:01.000Z',
        '2031-01-01T00:00:02.000Z',
        '2031-01-01T00:00:03.000Z',
      ]);
      expect(moved.map((row) => row.id).sort()).toEqual([...ids].sort());
      // Nothing is left to move twice.
      expect(await test.services.database.writes.run(moveAuditInbox)).toBe(0);
    });

    if (dialect === 'sqlite') {
      it('moves by itself once a thread has appended enough rows', async () => {
        const inbox = ownInbox({ moveRows: 3, moveDelayMs: 60_000 });
        const action = `InboxCount${newId().replaceAll('-', '')}`;
        const inboxEmpty = inboxEmptyOf(action);
        for (let row = 1; row <= 2; row++) {
          await appendOne(action);
          inbox.appended();
        }
        expect(await waitUntil(inboxEmpty, 100)).toBe(false);
        await appendOne(action);
        inbox.appended();
        expect(await waitUntil(inboxEmpty, 5_000)).toBe(true);
        expect(await idsIn('audit_entries', action)).toHaveLength(3);
        await inbox.close();
      });

      it('moves the rows appended while a move waited for the write lock, once it has run', async () => {
        const inbox = ownInbox({ moveRows: 1_000, moveDelayMs: 20 });
        const action = `InboxDuringMove${newId().replaceAll('-', '')}`;
        await appendOne(action);
        inbox.appended();
        // Another write holds the lock, so the move the timer starts has to wait for it.
        let releaseLock = () => {};
        const holder = test.services.database.writes.run(
          () => new Promise<void>((resolve) => (releaseLock = resolve)),
        );
        await new Promise((resolve) => setTimeout(resolve, 60));
        // A row appended meanwhile, counted while the move waits, past the move's own delay.
        const second = appendOne(action);
        inbox.appended();
        await new Promise((resolve) => setTimeout(resolve, 60));
        releaseLock();
        await Promise.all([holder, second]);
        expect(await waitUntil(inboxEmptyOf(action), 5_000)).toBe(true);
        expect(await idsIn('audit_entries', action)).toHaveLength(2);
        await inbox.close();
      });

      it('moves the rows of a failed move again later, with no new row to prompt it', async () => {
        // The app's own inbox is settled first, so no timer of its moves this test's row.
        await test.services.auditInbox.settle();
        const inbox = ownInbox({ moveRows: 1_000, moveDelayMs: 50 });
        const action = `InboxRetry${newId().replaceAll('-', '')}`;
        // The trail refuses this action's rows for a while, as a full disk would refuse them all.
        const refusal = `refuse_${action}`;
        await sql
          .raw(
            `create temp trigger ${refusal} before insert on audit_entries when new.action = '${action}' ` +
              `begin select raise(abort, 'refused by the test'); end`,
          )
          .execute(test.services.db);
        await appendOne(action);
        inbox.appended();
        // The move the timer starts fails, and the row stays in the inbox.
        await new Promise((resolve) => setTimeout(resolve, 250));
        expect(await idsIn('audit_inbox', action)).toHaveLength(1);
        await sql.raw(`drop trigger ${refusal}`).execute(test.services.db);
        expect(await waitUntil(inboxEmptyOf(action), 5_000)).toBe(true);
        expect(await idsIn('audit_entries', action)).toHaveLength(1);
        await inbox.close();
      });

      it('moves by itself a while after a thread’s first row', async () => {
        const inbox = ownInbox({ moveRows: 1_000, moveDelayMs: 50 });
        const action = `InboxDelay${newId().replaceAll('-', '')}`;
        await appendOne(action);
        inbox.appended();
        expect(await waitUntil(inboxEmptyOf(action), 5_000)).toBe(true);
        expect(await idsIn('audit_entries', action)).toHaveLength(1);
        await inbox.close();
      });
    }
  });
}
