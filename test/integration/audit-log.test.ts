import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/crypto/secrets.ts';
import { type AuditFilter, auditPageQuery } from '../../src/modules/audit-log/audit-log.repository.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { createScopeAdmin, createSystemAdmin, type PersonFixture } from '../helpers/factories.ts';

for (const dialect of DIALECTS) {
  describe(`audit log reader (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;
    const actorA = newId();
    const actorB = newId();
    const target = newId();

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
      // Entries written as the runner writes them, at known times, so each filter has a known answer.
      const rows = [
        {
          actor_id: actorA,
          target_id: target,
          action: 'CreateScopeCommand',
          succeeded: 1,
          at: '2030-01-01T10:00:00.000Z',
        },
        {
          actor_id: actorA,
          target_id: null,
          action: 'UpdateScopeCommand',
          succeeded: 0,
          at: '2030-01-01T11:00:00.000Z',
        },
        {
          actor_id: actorB,
          target_id: target,
          action: 'CreateScopeCommand',
          succeeded: 0,
          at: '2030-01-02T09:00:00.000Z',
        },
        {
          actor_id: null,
          target_id: null,
          action: 'LoginCommand',
          succeeded: 1,
          at: '2030-01-03T00:00:00.000Z',
        },
      ] as const;
      await test.services.db
        .insertInto('audit_entries')
        .values(
          rows.map((row) => ({
            id: newId(),
            actor_id: row.actor_id,
            target_id: row.target_id,
            action: row.action,
            succeeded: row.succeeded,
            failure_reason: row.succeeded === 1 ? null : 'Scope not found.',
            recorded_at: row.at,
          })),
        )
        .execute();
    });
    afterAll(() => test.close());

    const read = (query: string, token = admin.token) =>
      test.request({ method: 'GET', url: `/api/audit-log?${query}`, token });

    it('lists newest first with paging', async () => {
      const response = await read('From=2030-01-01T00:00:00Z&PageSize=2');
      expect(response.status).toBe(200);
      expect(response.body.totalRecords).toBe(4);
      expect(response.body.data.map((entry: { recordedAt: string }) => entry.recordedAt)).toEqual([
        '2030-01-03T00:00:00.000Z',
        '2030-01-02T09:00:00.000Z',
      ]);
      expect(response.body.data[0]).toEqual({
        id: expect.any(String),
        actorId: null,
        targetId: null,
        action: 'LoginCommand',
        succeeded: true,
        failureReason: null,
        recordedAt: '2030-01-03T00:00:00.000Z',
      });
    });

    it('combines filters; From and To are inclusive', async () => {
      const cases: Array<[string, number]> = [
        [`ActorId=${actorA}`, 2],
        [`ActorId=${actorA}&Succeeded=false`, 1],
        [`TargetId=${target}`, 2],
        ['Action=CreateScopeCommand&From=2030-01-01T00:00:00Z', 2],
        ['Action=createscopecommand&From=2030-01-01T00:00:00Z', 0],
        ['From=2030-01-01T11:00:00Z&To=2030-01-02T09:00:00Z', 2],
        ['Succeeded=false&From=2030-01-01T00:00:00Z', 2],
        [`ActorId=${actorB}&TargetId=${target}&Action=CreateScopeCommand&Succeeded=false`, 1],
      ];
      for (const [query, expected] of cases) {
        const response = await read(query);
        expect(response.status, query).toBe(200);
        expect(response.body.totalRecords, query).toBe(expected);
      }
    });

    it('refuses Scope Admins (403) and anonymous callers (401)', async () => {
      const scopeAdmin = await createScopeAdmin(test);
      expect((await read('', scopeAdmin.token)).status).toBe(403);
      expect((await test.request({ method: 'GET', url: '/api/audit-log' })).status).toBe(401);
    });

    it('answers malformed filters with 400', async () => {
      for (const query of ['ActorId=nope', 'Succeeded=1', 'From=yesterday', 'From=2030-02-30T00:00:00Z']) {
        const response = await read(query);
        expect(response.status, query).toBe(400);
        expect(response.body.errors, query).toEqual(['The request is malformed.']);
      }
    });

    it('finds refusals through an index that successful entries never enter', async () => {
      const definitions =
        dialect === 'sqlite'
          ? await sql<{ definition: string }>`
              select sql as definition from sqlite_master
              where type = 'index' and tbl_name = 'audit_entries' and sql is not null`.execute(
              test.services.db,
            )
          : await sql<{ definition: string }>`
              select indexdef as definition from pg_indexes
              where schemaname = current_schema() and tablename = 'audit_entries'`.execute(test.services.db);
      const indexes = definitions.rows.map((row) => row.definition.replaceAll('"', '').toLowerCase());
      // No index has the outcome among its columns: every success would update it.
      const keyColumns = indexes.map((definition) => definition.split(' where ')[0]!);
      expect(keyColumns.filter((columns) => /\(succeeded\b/.test(columns))).toEqual([]);
      expect(indexes.filter((definition) => /audit_entries_refusals_recorded/.test(definition))).toEqual([
        expect.stringMatching(/\(recorded_at, id\).*where \(?succeeded = 0\)?$/),
      ]);

      if (dialect === 'sqlite') {
        // The reader's own query, as it runs: its outcome must be a literal the index can match.
        const refusals: AuditFilter = {
          from: null,
          to: null,
          actorId: null,
          action: null,
          targetId: null,
          succeeded: false,
        };
        const page = auditPageQuery(test.services.db, refusals, {
          pageNumber: 1,
          pageSize: 25,
          offset: 0,
        }).compile();
        const plan = await test.services.db.executeQuery<{ detail: string }>(
          CompiledQuery.raw(`explain query plan ${page.sql}`, [...page.parameters]),
        );
        expect(plan.rows.map((row) => row.detail).join('\n')).toContain('audit_entries_refusals_recorded');
      }
    });

    it('is not itself audited', async () => {
      // Both tables: the read moves the audit inbox's rows into the trail, and adds none.
      const countIn = async (table: 'audit_entries' | 'audit_inbox') =>
        Number(
          (
            await test.services.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const count = async () => (await countIn('audit_entries')) + (await countIn('audit_inbox'));
      const before = await count();
      await read('');
      expect(await count()).toBe(before);
    });
  });
}
