import type { FastifyRequest } from 'fastify';
import type { IdentityKind, TokenService } from '../crypto/tokens.ts';
import type { Db, Role } from '../db/database.ts';
import type { Caller } from './access.ts';
import { Refusal } from './messages.ts';

/** What authentication needs to know of an identity named by a token, read fresh per request. */
export interface IdentityState {
  readonly id: string;
  readonly role: Role;
  readonly scopeId: string | null;
  /** null for identities that carry no stamp (external-provider users). */
  readonly securityStamp: string | null;
  /** Logically deleted or anonymised: refused everywhere. */
  readonly gone: boolean;
  /**
   * Suspended pending erasure: refused everywhere except the subject-rights endpoints, where the
   * subject may still take a copy of their data and a repeated request is answered 409.
   */
  readonly erasurePending: boolean;
  readonly restricted: boolean;
}

export type IdentityResolvers = Readonly<
  Record<IdentityKind, (db: Db, id: string) => Promise<IdentityState | null>>
>;

const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * The onRequest step of every route that is not anonymous: token → identity → role gate
 * (spec §Authentication 1–8; runs before body parsing and binding, as §Endpoints requires).
 * The identity is one primary-key read per request: the stamp, deletion and restriction must
 * be current, so a revoked token stops working at once on every instance.
 */
export function createAuthenticator(tokens: TokenService, db: Db, resolvers: IdentityResolvers) {
  return async function authenticate(request: FastifyRequest): Promise<void> {
    const access = request.routeOptions.config.access;
    if (access === undefined || access === 'anonymous') return;

    const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const bearer = token === undefined ? null : tokens.readBearer(token);
    // A challenge token is never a bearer credential (spec §Authentication 5).
    if (bearer === null || bearer.kind === 'challenge') throw new Refusal('Invalid token');
    // A subject-rights token is honoured only at the four subject-rights endpoints, whatever
    // the state of the restriction now (spec §Authentication 8).
    if (bearer.kind === 'subjectRights' && access.subjectRights !== true) {
      throw new Refusal('You do not have permission to access this resource.');
    }

    const { claims } = bearer;
    let identity: IdentityState | null;
    try {
      identity = await resolvers[claims.kind](db, claims.sub);
    } catch (error) {
      // The detailed health report must be able to say "the database is down", which is exactly
      // when the identity cannot be read. There alone, a token whose signature, issuer, audience
      // and lifetime were verified is admitted on its signed role; what it reveals is only which
      // dependencies are down. Everywhere else a storage failure stays a 500.
      if (access.signedRoleWhenStorageIsDown !== true || bearer.kind !== 'full') throw error;
      if (access.roles !== undefined && !access.roles.includes(claims.role)) {
        throw new Refusal('You do not have permission to access this resource.');
      }
      request.log.warn(
        { err: error },
        'identity unreadable; admitted on the signed role for the health report',
      );
      request.caller = {
        id: claims.sub,
        kind: claims.kind,
        role: claims.role,
        scopeId: claims.scopeId ?? null,
        tokenKind: 'full',
        restricted: false,
        erasurePending: false,
      } satisfies Caller;
      return;
    }
    if (identity === null) throw new Refusal('This token is no longer valid. Sign in again.');
    // A missing or outdated stamp means the token predates a password reset, an email change
    // or a two-factor change: refused everywhere (spec §Authentication 4).
    if (identity.securityStamp !== null && claims.sst !== identity.securityStamp) {
      throw new Refusal('This token has been revoked. Sign in again.');
    }
    // Restricted and erasure-pending identities keep only their data-subject rights (spec
    // §States); elsewhere even their full tokens are refused.
    const limitedToSubjectRights = identity.restricted || identity.erasurePending;
    if (identity.gone || (limitedToSubjectRights && access.subjectRights !== true)) {
      throw new Refusal('This token is no longer valid. Sign in again.');
    }
    if (access.roles !== undefined && !access.roles.includes(identity.role)) {
      throw new Refusal('You do not have permission to access this resource.');
    }

    request.caller = {
      id: identity.id,
      kind: claims.kind,
      role: identity.role,
      scopeId: identity.scopeId,
      tokenKind: bearer.kind,
      restricted: identity.restricted,
      erasurePending: identity.erasurePending,
    } satisfies Caller;
  };
}
