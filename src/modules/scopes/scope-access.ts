import type { DbOrTx, ScopeRow } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { findScope, isScopeOwner } from './scopes.repository.ts';

/**
 * The handler half of "SysAdmin+ScopeAdmin" (spec §Endpoints): a System Admin may act on any
 * scope; a Scope Admin only on a scope they own. A Scope Admin is told 403 before anything
 * about the scope's existence, so the answer does not reveal which scopes exist.
 */
export async function requireManageableScope(db: DbOrTx, caller: Caller, scopeId: string): Promise<ScopeRow> {
  if (!isSystemAdmin(caller) && !(await isScopeOwner(db, scopeId, caller.id))) {
    throw new Refusal('You are not an owner of the target scope.');
  }
  const scope = await findScope(db, scopeId);
  if (scope === undefined) throw new Refusal('Scope not found.');
  return scope;
}
