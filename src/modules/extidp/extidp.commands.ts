import { defineCommand, type ExecuteContext } from '../../audit/command-runner.ts';
import { newId } from '../../crypto/secrets.ts';
import type { IdentityClaims, TokenService } from '../../crypto/tokens.ts';
import { type ExtidpUserRow, Role, toFlag, type Tx } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import type { SignInResult } from '../auth/auth.schemas.ts';
import { normalizeEmail } from '../persons/person-rules.ts';
import { findPersonByEmailForSignIn } from '../persons/persons.repository.ts';
import { claimedPermissionNames } from '../permissions/permissions.repository.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { findScope } from '../scopes/scopes.repository.ts';
import type { ExtidpTokenVerifier, VerifiedIdToken } from './extidp-token-verifier.ts';
import {
  findExtidpUserByAccount,
  findExtidpUserInScope,
  insertExtidpUserIfAbsent,
  isGone,
  markExtidpUserDeleted,
  recordSignOut,
  removeExtidpUser,
  updateExtidpUser,
} from './extidp.repository.ts';
import type {
  ExtidpSignInBody,
  ExtidpUserDeleteAnswer,
  ExtidpUserHardDeleteAnswer,
  SignOutAnswer,
} from './extidp.schemas.ts';

const AUTHENTICATION_FAILED = 'Extidp authentication failed.' as const;
const SCOPE_UNAVAILABLE = 'Extidp sign-in is not available for this scope.' as const;
const UNVERIFIED_EMAIL = 'Extidp sign-up requires a verified email address.' as const;
const ADDRESS_TAKEN = 'A person with this email already exists.' as const;
const NOT_FOUND = 'External-provider user not found.' as const;

interface VerifiedSignIn {
  readonly scopeId: string;
  readonly token: VerifiedIdToken;
}

/**
 * POST /api/auth/extidp. The ID token is verified first (prepare: network I/O, never inside a
 * transaction), so a caller without a valid provider token learns nothing about which scopes
 * exist. Then: the scope must be live with extidp sign-in on; the external account (issuer +
 * subject) in that scope is signed in, or on its first visit becomes a new external-provider
 * user. Accounts are never linked by email to password accounts: a clash is a 409.
 */
export function extidpSignInCommand(verifier: ExtidpTokenVerifier, tokens: TokenService) {
  return defineCommand<ExtidpSignInBody, SignInResult, VerifiedSignIn>({
    name: 'ExtidpSignInCommand',
    async prepare(_context, body): Promise<VerifiedSignIn> {
      const token = await verifier.verify(body.idToken);
      if (token === null) throw new Refusal(AUTHENTICATION_FAILED);
      // The nonce binds the token to the client's own sign-in attempt, so a token captured
      // elsewhere cannot be replayed here. Absent or empty: the client did not use one.
      const expectedNonce = body.nonce ?? '';
      if (expectedNonce !== '' && token.nonce !== expectedNonce) throw new Refusal(AUTHENTICATION_FAILED);
      return { scopeId: body.scopeId, token };
    },
    async execute(context, { scopeId, token }): Promise<SignInResult | Refusal> {
      const { tx } = context;
      const scope = await findScope(tx, scopeId);
      if (scope === undefined || scope.extidp_signin_enabled !== 1) return new Refusal(SCOPE_UNAVAILABLE);

      const account = { scopeId, issuer: token.issuer, subject: token.subject };
      let user = await findExtidpUserByAccount(tx, account);
      if (user === undefined) {
        // Sign-up: the address becomes this person's identity in the scope, so only an address
        // the provider has verified is accepted (checked before any address comparison).
        if (!token.emailVerified || token.email === null) return new Refusal(UNVERIFIED_EMAIL);
        if (await addressTaken(context, scopeId, token.email)) return new Refusal(ADDRESS_TAKEN);
        const created = newUserRow(context, scopeId, token, token.email);
        if (await insertExtidpUserIfAbsent(tx, created)) {
          context.setTarget(created.id);
          return signInAnswer(tx, tokens, created);
        }
        // Another first sign-in of the same account won the race: sign in to its row.
        user = await findExtidpUserByAccount(tx, account);
        if (user === undefined) return new Refusal(AUTHENTICATION_FAILED);
      }
      return signInExisting(context, tokens, user, token);
    },
  });
}

async function signInExisting(
  context: ExecuteContext,
  tokens: TokenService,
  user: ExtidpUserRow,
  token: VerifiedIdToken,
): Promise<SignInResult | Refusal> {
  context.setTarget(user.id);
  // A deleted, erased or suspended account stays bound to its external account and is refused
  // with the same answer as a bad token (spec: "account gone").
  if (isGone(user)) return new Refusal(AUTHENTICATION_FAILED);
  const email = token.email ?? user.email;
  const emailChanged = normalizeEmail(email) !== user.email_normalized;
  // A changed address must still not equal a live User's of the scope; an unchanged one is not
  // re-checked, so a password account created later cannot lock this person out.
  if (emailChanged && (await addressTaken(context, user.scope_id, email))) return new Refusal(ADDRESS_TAKEN);
  const refreshed: ExtidpUserRow = {
    ...user,
    name: token.name ?? user.name,
    email,
    email_normalized: normalizeEmail(email),
    // An existing user signs in whatever the claim says; the stored flag follows the claim
    // for the address the token carries.
    email_verified: token.email === null ? user.email_verified : toFlag(token.emailVerified),
    picture_url: token.pictureUrl ?? user.picture_url,
    last_signed_in_at: context.now,
    updated_at: context.now,
  };
  await updateExtidpUser(context.tx, user.id, {
    name: refreshed.name,
    email: refreshed.email,
    email_normalized: refreshed.email_normalized,
    email_verified: refreshed.email_verified,
    picture_url: refreshed.picture_url,
    last_signed_in_at: refreshed.last_signed_in_at,
    updated_at: refreshed.updated_at,
  });
  return signInAnswer(context.tx, tokens, refreshed);
}

/** DECISIONS §6: an external-provider user's address may not equal a live User's of the scope. */
async function addressTaken(context: ExecuteContext, scopeId: string, email: string): Promise<boolean> {
  return (await findPersonByEmailForSignIn(context.tx, normalizeEmail(email), scopeId)) !== undefined;
}

function newUserRow(
  context: ExecuteContext,
  scopeId: string,
  token: VerifiedIdToken,
  email: string,
): ExtidpUserRow {
  return {
    id: newId(),
    scope_id: scopeId,
    issuer: token.issuer,
    subject: token.subject,
    name: token.name ?? email,
    email,
    email_normalized: normalizeEmail(email),
    email_verified: 1,
    picture_url: token.pictureUrl,
    last_signed_in_at: context.now,
    last_signed_out_at: null,
    restricted_at: null,
    restriction_ground: null,
    erasure_requested_at: null,
    deleted_at: null,
    anonymised_at: null,
    created_at: context.now,
    updated_at: context.now,
  };
}

async function signInAnswer(tx: Tx, tokens: TokenService, user: ExtidpUserRow): Promise<SignInResult> {
  // The flagged permissions of the scope travel in the token (spec What the service does 7).
  const permissions = await claimedPermissionNames(tx, user.scope_id);
  // No security stamp: external-provider user tokens carry none (spec §Authentication 4).
  const identity: IdentityClaims = {
    sub: user.id,
    role: Role.User,
    kind: 'extidpUser',
    scopeId: user.scope_id,
    ...(permissions.length > 0 ? { permissions } : {}),
  };
  const restricted = user.restricted_at !== null;
  // A restricted user still signs in, but only to exercise their rights (spec §States).
  const issued = restricted ? tokens.issueSubjectRightsToken(identity) : tokens.issueFullToken(identity);
  return {
    token: issued.token,
    expiresAt: issued.expiresAt.toISOString(),
    emailVerified: user.email_verified === 1,
    requiresTwoFactor: false,
    challengeToken: null,
    challengeExpiresAt: null,
    availableMethods: null,
    processingRestricted: restricted,
  };
}

/**
 * POST /api/auth/extidp/sign-out. Our tokens are stateless and external-provider users carry
 * no security stamp, so a sign-out cannot invalidate a token already issued: it records the
 * time (kept with the account, and in the audit trail) and the client discards its token,
 * which expires at its `exp`. Every refusal is 401.
 */
export const signOutExtidpUser = defineCommand({
  name: 'ExtidpSignOutCommand',
  async execute(context, caller: Caller): Promise<SignOutAnswer | Refusal> {
    context.setTarget(caller.id);
    // Only external-provider users sign out here; a person's token is the wrong kind.
    if (caller.kind !== 'extidpUser') return new Refusal('Invalid token');
    if (!(await recordSignOut(context.tx, caller.id, context.now))) {
      return new Refusal('This token is no longer valid. Sign in again.');
    }
    return { signedOutAt: context.now };
  },
});

type UserAddress = { scopeId: string; id: string; caller: Caller };

/** Logical delete; repeating it answers alreadyDeleted. A user of another scope is not found. */
export const deleteExtidpUser = defineCommand({
  name: 'DeleteExtidpUserCommand',
  async execute(context, input: UserAddress): Promise<ExtidpUserDeleteAnswer | Refusal> {
    context.setTarget(input.id);
    await requireManageableScope(context.tx, input.caller, input.scopeId);
    const user = await findExtidpUserInScope(context.tx, input.scopeId, input.id, true);
    if (user === undefined) return new Refusal(NOT_FOUND);
    if (user.deleted_at !== null) return { id: user.id, alreadyDeleted: true };
    await markExtidpUserDeleted(context.tx, user.id, context.now);
    return { id: user.id, alreadyDeleted: false };
  },
});

/** Permanent delete (System Admin), in any state; a repeat, or another scope's user, is 404. */
export const hardDeleteExtidpUser = defineCommand({
  name: 'HardDeleteExtidpUserCommand',
  async execute(context, input: UserAddress): Promise<ExtidpUserHardDeleteAnswer | Refusal> {
    context.setTarget(input.id);
    if (!(await removeExtidpUser(context.tx, input.scopeId, input.id))) return new Refusal(NOT_FOUND);
    return { id: input.id };
  },
});
