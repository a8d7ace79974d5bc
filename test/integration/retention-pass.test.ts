import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.ts';
import { openDatabase } from '../../src/db/open-database.ts';
import { RetentionSchedule } from '../../src/jobs/retention-pass.ts';
import { RETENTION_LOCK_CLASS } from '../../src/modules/privacy/retention.repository.ts';
import type { App } from '../../src/services.ts';
import { buildTestApp, newRateLimitNamespace, type TestApp } from '../helpers/app.ts';
import { DIALECTS, TEST_DATABASE_URL } from '../helpers/dialects.ts';
import { insertExtidpUser } from '../helpers/extidp.ts';
import {
  auditEntries,
  createScope,
  createSystemAdmin,
  createUser,
  type PersonFixture,
  personRow,
  tokenFor,
} from '../helpers/factories.ts';

const DAY_SECONDS = 24 * 60 * 60;

async function requestErasureDirectly(test: TestApp, id: string): Promise<void> {
  await test.services.db
    .updateTable('persons')
    .set({ erasure_requested_at: test.clock.now().toISOString() })
    .where('id', '=', id)
    .execute();
}

const anonymisedAt = async (test: TestApp, id: string) => (await personRow(test, id))?.anonymised_at ?? null;

/** The retention pass (DECISIONS §7): what is due, the batch size, purges, the schedule. */
for (const dialect of DIALECTS) {
  describe(`retention pass (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect, { env: { SERVICE_RETENTION_PURGE_BATCH_SIZE: '2' } });
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const reconcile = async () => {
      // A token of the test's current time: tests move the clock by days.
      const token = tokenFor(test, admin.row);
      const response = await test.request({ method: 'POST', url: '/api/auth/erasure-reconciliation', token });
      expect(response.status).toBe(200);
      return response.body.data as { anonymised: number; remaining: number };
    };

    it('anonymises at most SERVICE_RETENTION_PURGE_BATCH_SIZE identities per run, erasure requests first; deletions only after 30 days', async () => {
      const scope = await createScope(test, [admin.id]);
      const live = await createUser(test, scope.id);
      const deletedLongAgo = await createUser(test, scope.id, {
        deleted_at: new Date(test.clock.now().getTime() - 31 * DAY_SECONDS * 1000).toISOString(),
      });
      const extidpDeletedLongAgo = await insertExtidpUser(test, scope.id, {
        deleted_at: new Date(test.clock.now().getTime() - 31 * DAY_SECONDS * 1000).toISOString(),
      });
      const erasures: PersonFixture[] = [];
      for (let index = 0; index < 3; index += 1) {
        const person = await createUser(test, scope.id);
        await requestErasureDirectly(test, person.id);
        erasures.push(person);
        test.clock.advanceSeconds(1);
      }
      // Deleted through the API now: not due for 30 days.
      const deletedNow = await createUser(test, scope.id);
      expect(
        (await test.request({ method: 'DELETE', url: `/api/persons/${deletedNow.id}`, token: admin.token }))
          .status,
      ).toBe(200);

      expect(await reconcile()).toEqual({ anonymised: 2, remaining: 3 });
      // The two oldest erasure requests went first.
      expect(await anonymisedAt(test, erasures[0]!.id)).not.toBeNull();
      expect(await anonymisedAt(test, erasures[1]!.id)).not.toBeNull();
      expect(await anonymisedAt(test, erasures[2]!.id)).toBeNull();
      expect(await anonymisedAt(test, deletedLongAgo.id)).toBeNull();

      expect(await reconcile()).toEqual({ anonymised: 2, remaining: 1 });
      expect(await anonymisedAt(test, erasures[2]!.id)).not.toBeNull();
      expect(await anonymisedAt(test, deletedLongAgo.id)).not.toBeNull();
      expect(await reconcile()).toEqual({ anonymised: 1, remaining: 0 });
      const extidp = await test.services.db
        .selectFrom('extidp_users')
        .selectAll()
        .where('id', '=', extidpDeletedLongAgo)
        .executeTakeFirstOrThrow();
      expect(extidp.anonymised_at).not.toBeNull();
      expect(extidp.email).not.toContain('retention-');
      expect(await reconcile()).toEqual({ anonymised: 0, remaining: 0 });
      expect(await anonymisedAt(test, deletedNow.id)).toBeNull();
      expect(await anonymisedAt(test, live.id)).toBeNull();

      // 30 days after its deletion, the person deleted through the API is due.
      test.clock.advanceSeconds(30 * DAY_SECONDS);
      expect(await reconcile()).toEqual({ anonymised: 1, remaining: 0 });
      expect(await anonymisedAt(test, deletedNow.id)).not.toBeNull();
      expect(await anonymisedAt(test, live.id)).toBeNull();
      expect(await personRow(test, live.id)).toMatchObject({ name: live.row.name, email: live.email });
    });

    it('counts an identity that is both deleted and erasure-pending once', async () => {
      const scope = await createScope(test, [admin.id]);
      const both = await createUser(test, scope.id, {
        deleted_at: new Date(test.clock.now().getTime() - 40 * DAY_SECONDS * 1000).toISOString(),
      });
      await requestErasureDirectly(test, both.id);
      expect(await reconcile()).toEqual({ anonymised: 1, remaining: 0 });
      expect(await anonymisedAt(test, both.id)).not.toBeNull();
    });

    it('purges links expired more than 7 days ago, in batches, and keeps younger ones', async () => {
      const scope = await createScope(test, [admin.id]);
      const person = await createUser(test, scope.id);
      const at = (days: number) =>
        new Date(test.clock.now().getTime() + days * DAY_SECONDS * 1000).toISOString();
      const link = (expiresAt: string) => ({
        id: randomUUID(),
        person_id: person.id,
        kind: 'verification' as const,
        token_hash: randomUUID(),
        email_normalized: person.email,
        created_at: at(-30),
        expires_at: expiresAt,
        spent_at: null,
        retired_at: null,
      });
      const old = [link(at(-8)), link(at(-9)), link(at(-10))];
      const young = link(at(-6));
      await test.services.db
        .insertInto('email_links')
        .values([...old, young])
        .execute();
      const remainingLinks = async () =>
        (
          await test.services.db
            .selectFrom('email_links')
            .select('id')
            .where('person_id', '=', person.id)
            .execute()
        )
          .map((row) => row.id)
          .sort();

      await reconcile();
      // Batch size 2: the two that expired first went.
      expect(await remainingLinks()).toEqual([old[0]!.id, young.id].sort());
      await reconcile();
      expect(await remainingLinks()).toEqual([young.id]);
    });

    it('records each run as one audit entry: the reconciliation under the administrator', async () => {
      const before = (await auditEntries(test, 'ErasureReconciliationCommand')).length;
      await reconcile();
      const entries = await auditEntries(test, 'ErasureReconciliationCommand');
      expect(entries).toHaveLength(before + 1);
      expect(entries.filter((entry) => entry.actor_id === admin.id)).toHaveLength(before + 1);
    });
  });

  describe(`retention pass on its schedule (${dialect})`, () => {
    it('runs by itself while the app is up, as the system (actor null), and stops on close', async () => {
      const test = await buildTestApp(dialect, { retentionSchedule: { intervalMs: 25 } });
      try {
        const admin = await createSystemAdmin(test);
        const scope = await createScope(test, [admin.id]);
        const person = await createUser(test, scope.id);
        await requestErasureDirectly(test, person.id);
        const deadline = Date.now() + 5_000;
        while ((await anonymisedAt(test, person.id)) === null && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(await anonymisedAt(test, person.id)).not.toBeNull();
        const runs = await auditEntries(test, 'RetentionPassCommand');
        expect(runs.length).toBeGreaterThan(0);
        expect(runs.every((entry) => entry.actor_id === null && entry.succeeded === 1)).toBe(true);
      } finally {
        await test.close();
      }
    });
  });
}

/** Two instances sharing one PostgreSQL database: only one runs the pass at a time. */
if (DIALECTS.includes('postgres')) {
  describe('retention pass with two instances on PostgreSQL', () => {
    let test: TestApp;
    let second: { app: App; schedule: RetentionSchedule; close: () => Promise<void> } | undefined;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp('postgres', { env: { SERVICE_RETENTION_PURGE_BATCH_SIZE: '500' } });
      const handle = openDatabase(TEST_DATABASE_URL, {
        postgresSchema: test.database.schema!,
        postgresPoolSize: 3,
      });
      const app = await buildApp({
        config: test.config,
        database: handle,
        clock: test.clock,
        rateLimitNamespace: newRateLimitNamespace(),
      });
      await app.ready();
      second = {
        app,
        // The second instance's scheduled run, driven by the test (never started on a timer).
        schedule: new RetentionSchedule(app.services.commands, app.log, {
          dialect: 'postgres',
          batchSize: 500,
          intervalMs: 60 * 60 * 1000,
        }),
        close: async () => {
          await app.close();
          await handle.close();
        },
      };
      admin = await createSystemAdmin(test);
    });
    afterAll(async () => {
      await second?.close();
      await test.close();
    });

    async function dueErasures(count: number): Promise<string[]> {
      const scope = await createScope(test, [admin.id]);
      const ids: string[] = [];
      for (let index = 0; index < count; index += 1) {
        const person = await createUser(test, scope.id);
        await requestErasureDirectly(test, person.id);
        ids.push(person.id);
      }
      return ids;
    }

    it('skips a scheduled run while another instance holds the lock; an administrator’s run waits for it', async () => {
      const ids = await dueErasures(3);
      const holder = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await holder.connect();
      try {
        await holder.query('begin');
        await holder.query('set search_path to ' + test.database.schema!);
        await holder.query('select pg_advisory_xact_lock($1::integer, hashtext(current_schema()))', [
          RETENTION_LOCK_CLASS,
        ]);
        const skipped = await second!.schedule.runOnce();
        expect(skipped).toEqual({ ran: false, anonymised: 0, purged: 0, remaining: 0 });
        for (const id of ids) expect(await anonymisedAt(test, id)).toBeNull();

        let settled = false;
        const waiting = test
          .request({ method: 'POST', url: '/api/auth/erasure-reconciliation', token: admin.token })
          .finally(() => {
            settled = true;
          });
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(settled).toBe(false);
        for (const id of ids) expect(await anonymisedAt(test, id)).toBeNull();
        await holder.query('commit');
        const answered = await waiting;
        expect(answered.status).toBe(200);
        expect(answered.body.data).toEqual({ anonymised: 3, remaining: 0 });
      } finally {
        await holder.end();
      }
    });

    it('anonymises each identity once when both instances run the pass at the same moment', async () => {
      const ids = await dueErasures(20);
      const scheduledFirst = await test.request({
        method: 'GET',
        url: '/api/auth/erasure-requests',
        token: admin.token,
      });
      expect(scheduledFirst.body.totalRecords).toBe(20);
      const results = await Promise.all([
        second!.schedule.runOnce(),
        test.request({ method: 'POST', url: '/api/auth/erasure-reconciliation', token: admin.token }),
      ]);
      const scheduled = results[0]!;
      const reconciled = results[1].body.data as { anonymised: number };
      // Either the scheduled run held the lock (and the administrator's waited and found
      // nothing), or it found the lock taken and skipped: never both at work on the same rows.
      expect(scheduled.anonymised + reconciled.anonymised).toBe(20);
      expect([scheduled.anonymised, reconciled.anonymised].sort((a, b) => a - b)).toEqual([0, 20]);
      for (const id of ids) expect(await anonymisedAt(test, id)).not.toBeNull();
    });
  });
}
