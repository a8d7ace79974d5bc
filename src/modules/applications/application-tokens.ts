import { type CommandRunner, defineCommand } from '../../audit/command-runner.ts';
import { sha256 } from '../../crypto/secrets.ts';
import type { ApplicationClaims, TokenService } from '../../crypto/tokens.ts';
import type { DbOrTx } from '../../db/database.ts';
import { Refusal } from '../../http/messages.ts';
import { findLiveChain, findLiveChainBySecretHash } from './applications.repository.ts';
import type { ApplicationSelf, ApplicationToken, IssueApplicationTokenBody } from './applications.schemas.ts';

/**
 * Exchanging an application secret for a short-lived application token (spec §Authentication
 * 6, 13). Every refusal (unknown, revoked or expired secret; deleted application or scope) is
 * the same 401 with the same body, so the answer reveals nothing about what exists.
 *
 * The command writes nothing but its audit entry, so it has no `execute`: the credential and its
 * scope's permissions are read before the transaction, which on SQLite holds the one write lock
 * that every other writer of the process waits for, and which here holds the audit entry alone. A revoke that commits between the read and the entry is ordered after the
 * exchange, as it would be on PostgreSQL, where the two run in one read-committed transaction
 * that takes no lock on the credential; the token it yields fails its next live check. The
 * token is signed once the entry has committed: signing reads nothing either.
 */
export const issueApplicationToken = defineCommand<IssueApplicationTokenBody, ApplicationClaims>({
  name: 'IssueApplicationTokenCommand',
  async prepare(context, body) {
    // The secret has 256 bits of entropy, so its SHA-256 can be looked up directly: the index
    // lookup by hash does not leak the secret through timing the way a comparison of the secret
    // itself could.
    const chain = await findLiveChainBySecretHash(context.db, sha256(body.secret), context.now);
    if (chain === undefined) throw new Refusal('The application secret was not accepted.');
    context.setTarget(chain.applicationId);
    const permissions = chain.claimedPermissions;
    return {
      sub: chain.applicationId,
      scopeId: chain.scopeId,
      cid: chain.credentialId,
      ...(permissions.length === 0 ? {} : { permissions }),
    };
  },
});

export async function exchangeSecret(
  commands: CommandRunner,
  tokens: TokenService,
  body: IssueApplicationTokenBody,
): Promise<ApplicationToken> {
  const issued = tokens.issueApplicationToken(await commands.run(issueApplicationToken, body, null));
  return { token: issued.token, expiresAt: issued.expiresAt.toISOString() };
}

const NOT_ACCEPTED = 'The application token was not accepted.' as const;
const BEARER = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i;

/**
 * GET /api/applications/self: the live check consumers call on every request. The token must be
 * an application token (signature, issuer, its own audience, zero-skew lifetime), and its
 * credential, application and scope must all be live now, read in one indexed query, so a
 * revoke or delete is seen at once. Every failure is the same 401.
 */
export async function checkApplicationToken(
  db: DbOrTx,
  tokens: TokenService,
  authorization: string | undefined,
  now: string,
): Promise<ApplicationSelf> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  const claims = token === undefined ? null : tokens.readApplicationToken(token);
  if (claims === null) throw new Refusal(NOT_ACCEPTED);
  const chain = await findLiveChain(
    db,
    { credentialId: claims.cid, applicationId: claims.sub, scopeId: claims.scopeId },
    now,
  );
  if (chain === undefined) throw new Refusal(NOT_ACCEPTED);
  return {
    application: {
      id: chain.applicationId,
      name: chain.applicationName,
      scopeId: chain.scopeId,
      ownerId: chain.ownerId,
    },
    scope: { id: chain.scopeId, name: chain.scopeName },
    credential: { id: chain.credentialId, expiresAt: chain.credentialExpiresAt },
  };
}
