import type { FastifyRequest } from 'fastify';
import type { CallerState } from '../audit/command-runner.ts';
import type { IdentityKind } from '../crypto/tokens.ts';
import { Role } from '../db/database.ts';
import { Refusal } from './messages.ts';

/**
 * Who may call a route (spec §Endpoints "Who"). Declared on each route as `config.access`:
 * - `anonymous`: no token read;
 * - `{ roles }`: a full person token whose (current) role is listed; no roles = any role;
 * - `subjectRights: true`: one of the four subject-rights endpoints, which also admit a
 *   subject-rights-only token and a restricted identity.
 * Ownership of the addressed scope or application is data, so handlers confirm it.
 */
export type Access =
  | 'anonymous'
  | {
      readonly roles?: readonly Role[];
      readonly subjectRights?: boolean;
      /**
       * Only for a report whose purpose is to say that storage is down (the detailed health
       * check): when the identity cannot be read, admit a full token on the role it was signed
       * with instead of failing with 500. Revocation and deletion cannot be checked then.
       */
      readonly signedRoleWhenStorageIsDown?: boolean;
    };

export const ANONYMOUS: Access = 'anonymous';
export const ANY_AUTHENTICATED: Access = {};
export const SYSTEM_ADMIN: Access = { roles: [Role.SystemAdmin] };
export const ADMINISTRATORS: Access = { roles: [Role.SystemAdmin, Role.ScopeAdmin] };
export const SUBJECT_RIGHTS: Access = { subjectRights: true };
/** The detailed health report: System Admins, and still answerable while the database is down. */
export const SYSTEM_ADMIN_HEALTH_REPORT: Access = {
  roles: [Role.SystemAdmin],
  signedRoleWhenStorageIsDown: true,
};

/** The authenticated identity of a request, read from its token and confirmed against storage. */
export interface Caller {
  readonly id: string;
  readonly kind: IdentityKind;
  /** The current role from storage, not the role in the token. */
  readonly role: Role;
  readonly scopeId: string | null;
  readonly tokenKind: 'full' | 'subjectRights';
  readonly restricted: boolean;
  /** Suspended by an erasure request: like a restricted caller, limited to their own rights. */
  readonly erasurePending: boolean;
}

/** The caller of a route that requires authentication (the hook guarantees one). */
export function callerOf(request: FastifyRequest): Caller {
  if (request.caller === null) throw new Refusal('Invalid token');
  return request.caller;
}

/**
 * Whether the client still awaits the answer, for commands that check a password: a client that
 * gives up (a timeout, a closed tab) closes its connection, and its check, still queued for the
 * bound, is then dropped instead of costing a hash.
 */
export function connectionOf(request: FastifyRequest): CallerState {
  return { callerConnected: () => !request.raw.socket.destroyed };
}

export const isSystemAdmin = (caller: Caller): boolean => caller.role === Role.SystemAdmin;
