import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.ts';
import { DIALECTS } from '../helpers/dialects.ts';

/** The published contract (spec §Versioning 1; DECISIONS §1). */

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  responses?: Record<
    string,
    { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }
  >;
}
interface Document {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
}

const HTTP_METHODS = new Set(['get', 'post', 'put', 'delete', 'patch']);

function operationsOf(document: Document): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.has(method))
      .map(([method, operation]) => ({ method, path, operation })),
  );
}

for (const dialect of DIALECTS) {
  describe(`OpenAPI (${dialect})`, () => {
    let test: TestApp;
    let document: Document;

    beforeAll(async () => {
      test = await buildTestApp(dialect);
      const response = await test.request({ method: 'GET', url: '/openapi.json' });
      expect(response.status).toBe(200);
      document = response.body as Document;
    });
    afterAll(() => test.close());

    it('is OpenAPI 3.1 with the contract version v1', () => {
      expect(document.openapi).toMatch(/^3\.1\./);
      expect(document.info.version).toBe('v1');
    });

    it('is served anonymously', async () => {
      const response = await test.request({ method: 'GET', url: '/openapi.json' });
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toContain('application/json');
    });

    it('lists only /api operations: no root health aliases, no explorer or document routes', () => {
      const paths = Object.keys(document.paths);
      expect(paths.length).toBeGreaterThan(0);
      for (const path of paths) expect(path.startsWith('/api/')).toBe(true);
      expect(paths).not.toContain('/healthcheck');
      expect(paths).not.toContain('/healthcheck/detailed');
      expect(paths).toContain('/api/healthcheck');
      expect(paths).toContain('/api/healthcheck/detailed');
    });

    it('gives every operation a unique operationId and a tag', () => {
      const operations = operationsOf(document);
      const ids = operations.map(({ operation }) => operation.operationId);
      for (const { method, path, operation } of operations) {
        expect(operation.operationId, `${method} ${path}`).toMatch(/^[A-Z][A-Za-z]*_[A-Z][A-Za-z]*$/);
        expect(operation.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
      }
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('documents the error statuses of every operation with the failure envelope', () => {
      for (const { method, path, operation } of operationsOf(document)) {
        const statuses = Object.keys(operation.responses ?? {});
        const expected = ['500'];
        // Every route that takes a person token can refuse it (401) and the role (403); the
        // application live check takes an application token and has no roles to refuse.
        const schemes = (operation.security ?? []).flatMap((requirement) =>
          Object.keys(requirement as object),
        );
        if (schemes.includes('bearer')) expected.push('401', '403');
        if (schemes.includes('applicationBearer')) expected.push('401');
        for (const status of expected) {
          expect(statuses, `${method} ${path} ${status}`).toContain(status);
          const schema = operation.responses?.[status]?.content?.['application/json']?.schema;
          expect(Object.keys(schema?.properties ?? {}), `${method} ${path} ${status}`).toEqual(
            expect.arrayContaining(['data', 'messages', 'errors', 'success']),
          );
        }
      }
    });

    it('lists the data-subject rights and the audit-trail operations (spec §Endpoints)', () => {
      const ids = operationsOf(document).map(
        ({ method, path, operation }) => `${method.toUpperCase()} ${path} ${operation.operationId}`,
      );
      expect(ids).toEqual(
        expect.arrayContaining([
          'POST /api/auth/data-export Auth_DataExport',
          'POST /api/auth/erasure-request Auth_ErasureRequest',
          'POST /api/auth/processing-restriction Auth_RestrictProcessing',
          'POST /api/auth/processing-restriction/lift Auth_LiftProcessingRestriction',
          'GET /api/auth/erasure-requests Auth_ErasureRequests',
          'POST /api/auth/erasure-reconciliation Auth_ErasureReconciliation',
          'GET /api/audit-log Audit_List',
        ]),
      );
    });

    it('lists every operation built so far', () => {
      // DECISIONS §1: 72 once every module is in. This branch has 62: two-factor (7 operations)
      // and self-registration (3) arrive with their branches, each raising this count.
      expect(operationsOf(document)).toHaveLength(72);
    });

    it('documents the rate-limit answer of the login operation', () => {
      expect(Object.keys(document.paths['/api/auth/login']?.post?.responses ?? {})).toEqual(
        expect.arrayContaining(['200', '400', '401', '429', '500']),
      );
    });

    it('lists the two-factor operations: anonymous verify and resend, the rest under a bearer token', () => {
      const twoFactor = operationsOf(document)
        .filter(({ path }) => path.startsWith('/api/auth/2fa'))
        .map(({ method, path, operation }) => [method, path, operation.operationId, operation.security ?? []])
        .sort((a, b) => String(a[1]).localeCompare(String(b[1])));
      const bearer = [{ bearer: [] }];
      expect(twoFactor).toEqual([
        ['get', '/api/auth/2fa', 'Auth_TwoFactorStatus', bearer],
        ['post', '/api/auth/2fa/challenge/resend', 'Auth_ResendTwoFactorCode', []],
        ['post', '/api/auth/2fa/confirm', 'Auth_ConfirmTwoFactor', bearer],
        ['post', '/api/auth/2fa/disable', 'Auth_DisableTwoFactor', bearer],
        ['post', '/api/auth/2fa/enable', 'Auth_EnableTwoFactor', bearer],
        ['post', '/api/auth/2fa/recovery-codes/regenerate', 'Auth_RegenerateRecoveryCodes', bearer],
        ['post', '/api/auth/2fa/verify', 'Auth_VerifyTwoFactor', []],
      ]);
      for (const path of ['/api/auth/2fa/verify', '/api/auth/2fa/enable', '/api/auth/2fa/challenge/resend']) {
        expect(Object.keys(document.paths[path]?.post?.responses ?? {}), path).toContain('429');
      }
    });

    it('lists the self-registration operations with their statuses', () => {
      const register = document.paths['/api/auth/register']?.post;
      expect(register?.operationId).toBe('Auth_Register');
      expect(register?.security ?? []).toEqual([]);
      expect(Object.keys(register?.responses ?? {}).sort()).toEqual(['202', '400', '403', '429', '500']);
      const list = document.paths['/api/scopes/{id}/pending-registrations']?.get;
      expect(list?.operationId).toBe('PendingRegistration_List');
      const item = list?.responses?.['200']?.content?.['application/json']?.schema?.properties?.data as {
        items?: { properties?: Record<string, unknown> };
      };
      // Never the password hash, its salt or the token (spec §Resources).
      expect(Object.keys(item.items?.properties ?? {}).sort()).toEqual([
        'createdAt',
        'email',
        'expiresAt',
        'guessesLeft',
        'id',
        'name',
      ]);
      const discard = document.paths['/api/scopes/{id}/pending-registrations/{registrationId}']?.delete;
      expect(discard?.operationId).toBe('PendingRegistration_Discard');
      expect(Object.keys(document.paths['/api/auth/verify-email']?.post?.responses ?? {})).toEqual(
        expect.arrayContaining(['200', '400', '401', '409', '422', '429']),
      );
    });

    it('documents the detailed health route’s 503', () => {
      expect(Object.keys(document.paths['/api/healthcheck/detailed']?.get?.responses ?? {})).toContain('503');
    });

    it('declares bearer security on authenticated operations and none on anonymous ones', () => {
      expect(document.paths['/api/scopes']?.post?.security).toEqual([{ bearer: [] }]);
      expect(document.paths['/api/auth/login']?.post?.security ?? []).toEqual([]);
      expect(document.paths['/api/healthcheck']?.get?.security ?? []).toEqual([]);
    });

    it('keeps internal schema keywords out of the document', () => {
      expect(JSON.stringify(document)).not.toContain('errorMessage');
    });

    it('serves the interactive explorer at /swagger', async () => {
      const response = await test.request({ method: 'GET', url: '/swagger' });
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toContain('text/html');
      expect(String(response.body)).toContain('Swagger UI');
    });
  });
}
