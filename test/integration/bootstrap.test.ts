import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, type Env } from '../../src/config/config.ts';
import { Role } from '../../src/db/database.ts';
import { ensureBootstrapAdmin } from '../../src/modules/persons/bootstrap-admin.ts';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { auditEntries, createScopeAdmin, createSystemAdmin } from '../helpers/factories.ts';

const CONFIGURED_PASSWORD = 'a configured bootstrap password';

for (const dialect of DIALECTS) {
  describe(`bootstrap System Admin (${dialect})`, () => {
    let test: TestApp | null = null;
    afterEach(async () => {
      vi.restoreAllMocks();
      await test?.close();
      test = null;
    });

    const start = async (env: Env = {}): Promise<TestApp> => {
      test = await buildTestApp(dialect, { env });
      return test;
    };
    const systemAdmins = (app: TestApp) =>
      app.services.db.selectFrom('persons').selectAll().where('role', '=', Role.SystemAdmin).execute();
    const signIn = (app: TestApp, email: string, password: string) =>
      app.request({ method: 'POST', url: '/api/auth/login', body: { email, password } });

    /** Everything written to stdout while `work` runs (the generated password is printed there). */
    const captureStdout = async (work: () => Promise<void>): Promise<string> => {
      const written: string[] = [];
      vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(chunk.toString());
        return true;
      });
      try {
        await work();
      } finally {
        vi.restoreAllMocks();
      }
      return written.join('');
    };

    it('creates one verified System Admin with a generated password in development, printed once, audited', async () => {
      const app = await start();
      const printed = await captureStdout(() => ensureBootstrapAdmin(app.services));

      const admins = await systemAdmins(app);
      expect(admins).toHaveLength(1);
      const [admin] = admins;
      expect(admin).toMatchObject({
        email: 'admin@localhost',
        email_normalized: 'admin@localhost',
        role: Role.SystemAdmin,
        scope_id: null,
        email_verified: 1,
        deleted_at: null,
      });
      const password = /Generated password \(shown once\): (\S+)/.exec(printed)?.[1];
      expect(password).toBeDefined();
      expect(admin!.password_hash).not.toContain(password!);

      const response = await signIn(app, 'admin@localhost', password!);
      expect(response.status).toBe(200);
      expect(response.body.data.emailVerified).toBe(true);

      expect(await auditEntries(app, 'CreateBootstrapAdminCommand')).toEqual([
        expect.objectContaining({ actor_id: null, target_id: admin!.id, succeeded: 1, failure_reason: null }),
      ]);
    });

    it('creates none on a second start, and prints nothing', async () => {
      const app = await start({
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: CONFIGURED_PASSWORD,
      });
      await ensureBootstrapAdmin(app.services);
      const first = await systemAdmins(app);
      const printed = await captureStdout(() => ensureBootstrapAdmin(app.services));
      expect(printed).toBe('');
      expect(await systemAdmins(app)).toEqual(first);
      expect(await auditEntries(app, 'CreateBootstrapAdminCommand')).toHaveLength(1);
    });

    it('signs in with SERVICE_BOOTSTRAP_ADMIN_PASSWORD, uses the configured name, and prints no password', async () => {
      const app = await start({
        SERVICE_BOOTSTRAP_ADMIN_NAME: 'Root Operator',
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: ' Root@Example.Test ',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: CONFIGURED_PASSWORD,
      });
      const printed = await captureStdout(() => ensureBootstrapAdmin(app.services));
      expect(printed).not.toContain(CONFIGURED_PASSWORD);
      expect(printed).not.toContain('Generated password');
      const [admin] = await systemAdmins(app);
      expect(admin).toMatchObject({ name: 'Root Operator', email: 'Root@Example.Test', email_verified: 1 });

      expect((await signIn(app, 'root@example.test', CONFIGURED_PASSWORD)).status).toBe(200);
      expect((await signIn(app, 'root@example.test', 'not the configured password')).status).toBe(401);
    });

    it('creates none in production when no bootstrap setting is given', async () => {
      const app = await start({ SERVICE_ENVIRONMENT: 'production' });
      const printed = await captureStdout(() => ensureBootstrapAdmin(app.services));
      expect(printed).toBe('');
      expect(await systemAdmins(app)).toEqual([]);
      expect(await auditEntries(app, 'CreateBootstrapAdminCommand')).toEqual([]);
    });

    it('creates one in production from the configured settings', async () => {
      const app = await start({
        SERVICE_ENVIRONMENT: 'production',
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: CONFIGURED_PASSWORD,
      });
      await ensureBootstrapAdmin(app.services);
      expect(await systemAdmins(app)).toHaveLength(1);
      expect((await signIn(app, 'root@example.test', CONFIGURED_PASSWORD)).status).toBe(200);
    });

    it('creates none while a live System Admin exists, and one when the only System Admin is deleted', async () => {
      const app = await start();
      const existing = await createSystemAdmin(app);
      await ensureBootstrapAdmin(app.services);
      expect((await systemAdmins(app)).map((admin) => admin.id)).toEqual([existing.id]);

      await app.services.db
        .updateTable('persons')
        .set({ deleted_at: app.clock.now().toISOString() })
        .where('id', '=', existing.id)
        .execute();
      await captureStdout(() => ensureBootstrapAdmin(app.services));
      const live = (await systemAdmins(app)).filter((admin) => admin.deleted_at === null);
      expect(live).toHaveLength(1);
      expect(live[0]!.email).toBe('admin@localhost');
    });

    it('two starts at the same moment create one admin', async () => {
      const app = await start({
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'root@example.test',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: CONFIGURED_PASSWORD,
      });
      await Promise.all([ensureBootstrapAdmin(app.services), ensureBootstrapAdmin(app.services)]);
      expect(await systemAdmins(app)).toHaveLength(1);
    });

    it('refuses to start when a live Scope Admin holds the bootstrap address, naming the variable', async () => {
      const app = await start({
        SERVICE_BOOTSTRAP_ADMIN_EMAIL: 'taken@example.test',
        SERVICE_BOOTSTRAP_ADMIN_PASSWORD: CONFIGURED_PASSWORD,
      });
      await createScopeAdmin(app, { email: 'taken@example.test' });
      const failure = await ensureBootstrapAdmin(app.services).then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ConfigError);
      expect((failure as Error).message).toContain('SERVICE_BOOTSTRAP_ADMIN_EMAIL');
      expect(await systemAdmins(app)).toEqual([]);
    });
  });
}
