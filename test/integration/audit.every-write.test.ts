import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../../src/db/database.ts';
import { buildTestApp, type RequestOptions, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';
import { freshClientAddress } from '../helpers/extidp.ts';
import {
  createPerson,
  createScope,
  createScopeAdmin,
  createSystemAdmin,
  createUser,
  PASSWORD,
  type PersonFixture,
} from '../helpers/factories.ts';

/**
 * Spec What the service does 11, §Events: every write operation records exactly one audit entry,
 * under its command type name. The test walks the OpenAPI document's write operations, so an
 * operation added later (two-factor, self-registration) fails here until it is given a fixture
 * below: how to call it, and the action its entry must carry. A refused call is as good as a
 * successful one where it is simpler: the point is one entry with the right action.
 */

interface World {
  readonly test: TestApp;
  readonly admin: PersonFixture;
  scope(): Promise<string>;
  application(scopeId: string): Promise<string>;
}

interface Call {
  readonly action: string;
  readonly request: Omit<RequestOptions, 'method' | 'url'> & { readonly url: string };
}

type Fixture = (world: World) => Promise<Call>;

const unique = () => randomUUID().slice(0, 8);
const person = () => ({
  name: `Audited ${unique()}`,
  email: `audited-${unique()}@example.test`,
  password: 'a long enough passphrase',
});

/** operationId → how to call it. Every write operation of the document must be listed. */
const FIXTURES: Record<string, Fixture> = {
  Auth_Login: async () => ({
    action: 'LoginCommand',
    request: {
      url: '/api/auth/login',
      body: { email: `nobody-${unique()}@example.test`, password: 'wrong password' },
    },
  }),
  Auth_PasswordRecovery: async () => ({
    action: 'PasswordRecoveryCommand',
    request: { url: '/api/auth/password-recovery', body: { email: `nobody-${unique()}@example.test` } },
  }),
  Auth_PasswordReset: async () => ({
    action: 'ResetPasswordCommand',
    request: {
      url: '/api/auth/password-reset',
      body: { token: 'unknown-token', newPassword: 'a long enough passphrase' },
    },
  }),
  Auth_VerifyEmail: async () => ({
    action: 'VerifyEmailCommand',
    request: { url: '/api/auth/verify-email', body: { token: 'unknown-token' } },
  }),
  Auth_ResendVerification: async ({ test }) => {
    const unverified = await createPerson(test, { role: Role.ScopeAdmin, email_verified: 0 });
    return {
      action: 'ResendVerificationCommand',
      request: { url: '/api/auth/resend-verification', token: unverified.token },
    };
  },
  Auth_ExtidpSignIn: async (world) => ({
    action: 'ExtidpSignInCommand',
    request: { url: '/api/auth/extidp', body: { idToken: 'not-a-token', scopeId: await world.scope() } },
  }),
  Auth_ExtidpSignOut: async ({ admin }) => ({
    action: 'ExtidpSignOutCommand',
    request: { url: '/api/auth/extidp/sign-out', token: admin.token },
  }),
  Auth_DataExport: async ({ admin }) => ({
    action: 'ExportPersonalDataCommand',
    request: { url: '/api/auth/data-export', token: admin.token },
  }),
  Auth_ErasureRequest: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'RequestErasureCommand',
      request: { url: '/api/auth/erasure-request', token: user.token, body: { currentPassword: PASSWORD } },
    };
  },
  Auth_RestrictProcessing: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'RestrictProcessingCommand',
      request: { url: '/api/auth/processing-restriction', token: user.token, body: { ground: 'audited' } },
    };
  },
  Auth_LiftProcessingRestriction: async (world) => {
    const user = await createUser(world.test, await world.scope(), {
      restricted_at: world.test.clock.now().toISOString(),
    });
    return {
      action: 'LiftProcessingRestrictionCommand',
      request: {
        url: '/api/auth/processing-restriction/lift',
        token: world.admin.token,
        body: { personId: user.id },
      },
    };
  },
  Auth_ErasureReconciliation: async ({ admin }) => ({
    action: 'ErasureReconciliationCommand',
    request: { url: '/api/auth/erasure-reconciliation', token: admin.token },
  }),
  Scope_Create: async ({ admin }) => ({
    action: 'CreateScopeCommand',
    request: {
      url: '/api/scopes',
      token: admin.token,
      body: { name: `Scope ${unique()}`, ownerIds: [admin.id] },
    },
  }),
  Scope_Update: async (world) => ({
    action: 'UpdateScopeCommand',
    request: {
      url: `/api/scopes/${await world.scope()}`,
      token: world.admin.token,
      body: { name: `Renamed ${unique()}` },
    },
  }),
  Scope_Delete: async (world) => ({
    action: 'DeleteScopeCommand',
    request: { url: `/api/scopes/${await world.scope()}`, token: world.admin.token },
  }),
  Scope_HardDelete: async (world) => ({
    action: 'HardDeleteScopeCommand',
    request: { url: `/api/scopes/${await world.scope()}/hard`, token: world.admin.token },
  }),
  Scope_SetExtidpSignIn: async (world) => ({
    action: 'SetExtidpSignInCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/extidp-signin`,
      token: world.admin.token,
      body: { enabled: true },
    },
  }),
  Scope_SetSelfRegistration: async (world) => ({
    action: 'SetSelfRegistrationCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/self-registration`,
      token: world.admin.token,
      body: { enabled: true },
    },
  }),
  Scope_SetEmailLinks: async (world) => ({
    action: 'SetEmailLinksCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/email-links`,
      token: world.admin.token,
      body: { emailVerificationUrl: null, passwordResetUrl: null },
    },
  }),
  Application_Create: async (world) => ({
    action: 'CreateApplicationCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/applications`,
      token: world.admin.token,
      body: { name: `App ${unique()}`, ownerId: world.admin.id },
    },
  }),
  Application_Update: async (world) => {
    const scopeId = await world.scope();
    return {
      action: 'UpdateApplicationCommand',
      request: {
        url: `/api/scopes/${scopeId}/applications/${await world.application(scopeId)}`,
        token: world.admin.token,
        body: { name: `Renamed ${unique()}`, ownerId: world.admin.id },
      },
    };
  },
  Application_Delete: async (world) => {
    const scopeId = await world.scope();
    return {
      action: 'DeleteApplicationCommand',
      request: {
        url: `/api/scopes/${scopeId}/applications/${await world.application(scopeId)}`,
        token: world.admin.token,
      },
    };
  },
  Application_HardDelete: async (world) => {
    const scopeId = await world.scope();
    return {
      action: 'HardDeleteApplicationCommand',
      request: {
        url: `/api/scopes/${scopeId}/applications/${await world.application(scopeId)}/hard`,
        token: world.admin.token,
      },
    };
  },
  ApplicationCredential_Issue: async (world) => {
    const scopeId = await world.scope();
    return {
      action: 'IssueApplicationCredentialCommand',
      request: {
        url: `/api/scopes/${scopeId}/applications/${await world.application(scopeId)}/credentials`,
        token: world.admin.token,
        body: {},
      },
    };
  },
  ApplicationCredential_Revoke: async (world) => {
    const scopeId = await world.scope();
    const applicationId = await world.application(scopeId);
    return {
      action: 'RevokeApplicationCredentialCommand',
      request: {
        url: `/api/scopes/${scopeId}/applications/${applicationId}/credentials/${randomUUID()}`,
        token: world.admin.token,
      },
    };
  },
  ApplicationToken_Issue: async () => ({
    action: 'IssueApplicationTokenCommand',
    request: { url: '/api/applications/token', body: { secret: 'not-a-secret' } },
  }),
  ScopePermission_Create: async (world) => ({
    action: 'CreateScopePermissionCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/permissions`,
      token: world.admin.token,
      body: { name: `perm-${unique()}` },
    },
  }),
  ScopePermission_Update: async (world) => ({
    action: 'UpdateScopePermissionCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/permissions/${randomUUID()}`,
      token: world.admin.token,
      body: { name: 'renamed' },
    },
  }),
  ScopePermission_Delete: async (world) => ({
    action: 'DeleteScopePermissionCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/permissions/${randomUUID()}`,
      token: world.admin.token,
    },
  }),
  ScopePermission_HardDelete: async (world) => ({
    action: 'HardDeleteScopePermissionCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/permissions/${randomUUID()}/hard`,
      token: world.admin.token,
    },
  }),
  Person_Create: async ({ admin }) => ({
    action: 'CreatePersonCommand',
    request: { url: '/api/persons', token: admin.token, body: { ...person(), role: 'ScopeAdmin' } },
  }),
  Person_CreateScopeUser: async (world) => ({
    action: 'CreateScopeUserCommand',
    request: { url: `/api/scopes/${await world.scope()}/persons`, token: world.admin.token, body: person() },
  }),
  Person_CreateScopeOwner: async (world) => ({
    action: 'CreateScopeOwnerCommand',
    request: { url: `/api/scopes/${await world.scope()}/owners`, token: world.admin.token, body: person() },
  }),
  Person_AddScopeOwner: async (world) => {
    const candidate = await createScopeAdmin(world.test);
    return {
      action: 'AddScopeOwnerCommand',
      request: { url: `/api/scopes/${await world.scope()}/owners/${candidate.id}`, token: world.admin.token },
    };
  },
  Person_RemoveScopeOwner: async (world) => {
    const coOwner = await createScopeAdmin(world.test);
    const scope = await createScope(world.test, [world.admin.id, coOwner.id]);
    return {
      action: 'RemoveScopeOwnerCommand',
      request: { url: `/api/scopes/${scope.id}/owners/${coOwner.id}`, token: world.admin.token },
    };
  },
  Person_PromoteScopeUser: async (world) => {
    const scopeId = await world.scope();
    const user = await createUser(world.test, scopeId);
    return {
      action: 'PromoteScopeUserCommand',
      request: { url: `/api/scopes/${scopeId}/users/${user.id}/promote`, token: world.admin.token },
    };
  },
  Person_Update: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'UpdatePersonCommand',
      request: {
        url: `/api/persons/${user.id}`,
        token: world.admin.token,
        body: { name: 'Renamed', email: user.email },
      },
    };
  },
  Person_Delete: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'DeletePersonCommand',
      request: { url: `/api/persons/${user.id}`, token: world.admin.token },
    };
  },
  Person_HardDelete: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'HardDeletePersonCommand',
      request: { url: `/api/persons/${user.id}/hard`, token: world.admin.token },
    };
  },
  Person_SendVerificationEmail: async (world) => {
    const user = await createPerson(world.test, {
      role: Role.User,
      scope_id: await world.scope(),
      email_verified: 0,
    });
    return {
      action: 'SendVerificationEmailCommand',
      request: { url: `/api/persons/${user.id}/verification-email`, token: world.admin.token },
    };
  },
  Person_SendPasswordReset: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'SendPasswordResetEmailCommand',
      request: { url: `/api/persons/${user.id}/password-reset`, token: world.admin.token },
    };
  },
  Auth_EnableTwoFactor: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'EnableTwoFactorCommand',
      request: {
        url: '/api/auth/2fa/enable',
        token: user.token,
        body: { currentPassword: PASSWORD, appEnabled: true, emailEnabled: false },
      },
    };
  },
  Auth_ConfirmTwoFactor: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'ConfirmTwoFactorCommand',
      request: { url: '/api/auth/2fa/confirm', token: user.token, body: { appCode: '000000' } },
    };
  },
  Auth_VerifyTwoFactor: async () => ({
    action: 'VerifyTwoFactorCommand',
    request: { url: '/api/auth/2fa/verify', body: { challengeToken: 'not-a-challenge', code: '000000' } },
  }),
  Auth_ResendTwoFactorCode: async () => ({
    action: 'ResendChallengeCodeCommand',
    request: { url: '/api/auth/2fa/challenge/resend', body: { challengeToken: 'not-a-challenge' } },
  }),
  Auth_DisableTwoFactor: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'DisableTwoFactorCommand',
      request: { url: '/api/auth/2fa/disable', token: user.token, body: { currentPassword: PASSWORD } },
    };
  },
  Auth_RegenerateRecoveryCodes: async (world) => {
    const user = await createUser(world.test, await world.scope());
    return {
      action: 'RegenerateRecoveryCodesCommand',
      request: {
        url: '/api/auth/2fa/recovery-codes/regenerate',
        token: user.token,
        body: { currentPassword: PASSWORD },
      },
    };
  },
  Auth_Register: async (world) => {
    const open = await createScope(world.test, [world.admin.id], { self_registration_enabled: 1 });
    return {
      action: 'RegisterCommand',
      request: { url: '/api/auth/register', body: { ...person(), scopeId: open.id } },
    };
  },
  PendingRegistration_Discard: async (world) => ({
    action: 'DiscardPendingRegistrationCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/pending-registrations/${randomUUID()}`,
      token: world.admin.token,
    },
  }),
  ExtidpUser_Delete: async (world) => ({
    action: 'DeleteExtidpUserCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/extidp-users/${randomUUID()}`,
      token: world.admin.token,
    },
  }),
  ExtidpUser_HardDelete: async (world) => ({
    action: 'HardDeleteExtidpUserCommand',
    request: {
      url: `/api/scopes/${await world.scope()}/extidp-users/${randomUUID()}/hard`,
      token: world.admin.token,
    },
  }),
};

const WRITE_METHODS = new Set(['post', 'put', 'delete', 'patch']);

interface WriteOperation {
  readonly method: RequestOptions['method'];
  readonly path: string;
  readonly operationId: string;
}

for (const dialect of DIALECTS) {
  describe(`every write operation records exactly one audit entry (${dialect})`, () => {
    let test: TestApp;
    let world: World;
    let operations: WriteOperation[];

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      const admin = await createSystemAdmin(test);
      world = {
        test,
        admin,
        scope: async () => (await createScope(test, [admin.id])).id,
        application: async (scopeId) => {
          const created = await test.request({
            method: 'POST',
            url: `/api/scopes/${scopeId}/applications`,
            token: admin.token,
            body: { name: `App ${unique()}`, ownerId: admin.id },
          });
          expect(created.status).toBe(200);
          return created.body.data.id as string;
        },
      };
      const document = (await test.request({ method: 'GET', url: '/openapi.json' })).body as {
        paths: Record<string, Record<string, { operationId: string }>>;
      };
      operations = Object.entries(document.paths).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => WRITE_METHODS.has(method))
          .map(([method, operation]) => ({
            method: method.toUpperCase() as RequestOptions['method'],
            path,
            operationId: operation.operationId,
          })),
      );
    });
    afterAll(() => test.close());

    it('has a fixture for every write operation of the document, and none for operations that are gone', () => {
      const ids = operations.map((operation) => operation.operationId);
      expect(
        ids.filter((id) => FIXTURES[id] === undefined),
        'write operations without a fixture',
      ).toEqual([]);
      expect(
        Object.keys(FIXTURES).filter((id) => !ids.includes(id)),
        'fixtures of unknown operations',
      ).toEqual([]);
    });

    it('records one entry, with the command type name, per call of each write operation', async () => {
      const entryIds = async () => {
        await test.services.auditInbox.settle();
        return new Set(
          (await test.services.db.selectFrom('audit_entries').select('id').execute()).map((row) => row.id),
        );
      };
      const failures: string[] = [];
      for (const operation of operations) {
        const fixture = FIXTURES[operation.operationId];
        if (fixture === undefined) continue;
        const call = await fixture(world);
        const before = await entryIds();
        const response = await test.request({
          method: operation.method,
          remoteAddress: freshClientAddress(),
          ...call.request,
        });
        if (response.status >= 500) failures.push(`${operation.operationId}: answered ${response.status}`);
        // Some writes happen after the answer (the password-recovery worker): wait for the entry.
        const deadline = Date.now() + 3_000;
        let added = [...(await entryIds())].filter((id) => !before.has(id));
        while (added.length === 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          added = [...(await entryIds())].filter((id) => !before.has(id));
        }
        await test.services.mailer.idle();
        added = [...(await entryIds())].filter((id) => !before.has(id));
        const entries =
          added.length === 0
            ? []
            : await test.services.db
                .selectFrom('audit_entries')
                .select('action')
                .where('id', 'in', added)
                .execute();
        const actions = entries.map((entry) => entry.action);
        if (actions.length !== 1 || actions[0] !== call.action) {
          failures.push(
            `${operation.operationId} (${response.status}): expected [${call.action}], got [${actions.join(', ')}]`,
          );
        }
      }
      expect(failures).toEqual([]);
    });
  });
}
