import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForAuditEntries } from '../helpers/account-email.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { freshClientAddress } from '../helpers/extidp.ts';
import {
  createScope,
  createSystemAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
} from '../helpers/factories.ts';
import { cellsContaining, postAs } from '../helpers/subject-rights.ts';
import { activateTwoFactor, freshToken } from '../helpers/two-factor.ts';

/**
 * The data-subject rights reach what the two-factor and registration modules keep: the export
 * shows the two-factor state (never a secret), and the erasure pass removes the two-factor
 * rows and the self-registrations kept under the person's address.
 */
for (const dialect of DIALECTS) {
  describe(`subject rights over two-factor data and registrations (${dialect})`, () => {
    let test: TestApp;
    let admin: PersonFixture;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      admin = await createSystemAdmin(test);
    });
    afterAll(() => test.close());

    const rowsOf = async (
      table: 'two_factor_configs' | 'two_factor_recovery_codes' | 'two_factor_locks',
      personId: string,
    ) => test.services.db.selectFrom(table).selectAll().where('person_id', '=', personId).execute();

    it('exports the two-factor state, then erasure removes it and the registrations under the address', async () => {
      const home = await createScope(test, [admin.id]);
      const elsewhere = await createScope(test, [admin.id], { self_registration_enabled: 1 });
      const subject = await createUser(test, home.id);
      const active = await activateTwoFactor(test, subject, { app: true });

      const exported = await postAs(test, '/api/auth/data-export', active.token, undefined);
      expect(exported.status).toBe(200);
      expect(exported.body.data.twoFactor).toEqual({
        isActive: true,
        isPending: false,
        appEnabled: true,
        emailEnabled: false,
        remainingRecoveryCodes: 10,
      });
      const [config] = await rowsOf('two_factor_configs', subject.id);
      expect(JSON.stringify(exported.body)).not.toContain(String(config!.totp_secret_sealed));
      expect(JSON.stringify(exported.body)).not.toContain(active.sharedKey);

      // The same address registers itself in another scope: a pending registration and a
      // notice-budget-free address row exist under it.
      const registered = await test.request({
        method: 'POST',
        url: '/api/auth/register',
        remoteAddress: freshClientAddress(),
        body: {
          name: 'Second Me',
          email: subject.email,
          password: 'another long passphrase',
          scopeId: elsewhere.id,
        },
      });
      expect(registered.status).toBe(202);
      await waitForAuditEntries(test, 'RegisterCommand', 1);
      const pendingOf = () =>
        test.services.db
          .selectFrom('pending_registrations')
          .select('id')
          .where('email_normalized', '=', subject.email.toLowerCase())
          .execute();
      expect(await pendingOf()).toHaveLength(1);

      const erased = await postAs(test, '/api/auth/erasure-request', active.token, {
        currentPassword: PASSWORD,
      });
      expect(erased.status).toBe(200);
      const reconciled = await test.request({
        method: 'POST',
        url: '/api/auth/erasure-reconciliation',
        token: admin.token,
      });
      expect(reconciled.body.data).toEqual({ anonymised: 1, remaining: 0 });

      expect(await rowsOf('two_factor_configs', subject.id)).toEqual([]);
      expect(await rowsOf('two_factor_recovery_codes', subject.id)).toEqual([]);
      expect(await rowsOf('two_factor_locks', subject.id)).toEqual([]);
      expect(await pendingOf()).toEqual([]);
      expect(await cellsContaining(test, [subject.email, 'Second Me'])).toEqual([]);
    });

    it('keeps a registration made since under a deleted account’s address when the pass anonymises that account', async () => {
      const home = await createScope(test, [admin.id]);
      const elsewhere = await createScope(test, [admin.id], { self_registration_enabled: 1 });
      const former = await createUser(test, home.id);
      const deleted = await test.request({
        method: 'DELETE',
        url: `/api/persons/${former.id}`,
        token: admin.token,
      });
      expect(deleted.status).toBe(200);

      // A month later the address registers itself in another scope; then the pass runs.
      test.clock.advanceSeconds(31 * 24 * 60 * 60);
      const registered = await test.request({
        method: 'POST',
        url: '/api/auth/register',
        remoteAddress: freshClientAddress(),
        body: {
          name: 'New Start',
          email: former.email,
          password: 'another long passphrase',
          scopeId: elsewhere.id,
        },
      });
      expect(registered.status).toBe(202);
      await waitForAuditEntries(test, 'RegisterCommand', 2);
      const reconciled = await test.request({
        method: 'POST',
        url: '/api/auth/erasure-reconciliation',
        // The administrator's earlier token expired during the month.
        token: await freshToken(test, admin.id),
      });
      expect(reconciled.status).toBe(200);
      const formerRow = await test.services.db
        .selectFrom('persons')
        .select(['anonymised_at', 'email'])
        .where('id', '=', former.id)
        .executeTakeFirstOrThrow();
      expect(formerRow.anonymised_at).not.toBeNull();
      expect(formerRow.email).not.toBe(former.email);
      const kept = await test.services.db
        .selectFrom('pending_registrations')
        .select('name')
        .where('email_normalized', '=', former.email.toLowerCase())
        .execute();
      expect(kept).toEqual([{ name: 'New Start' }]);
    });
  });
}
