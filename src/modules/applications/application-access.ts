import type { ApplicationRow, DbOrTx, ScopeRow } from '../../db/database.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { findApplication } from './applications.repository.ts';

export interface ManageableApplication {
  readonly scope: ScopeRow;
  readonly application: ApplicationRow;
}

/**
 * The handler half of "SysAdmin+ScopeAdmin" for applications and their credentials: a System
 * Admin may act on any application; a Scope Admin only on an application they own in a scope
 * they still own. The application is always resolved inside the addressed scope, so another
 * scope's application is not found.
 */
export async function requireManageableApplication(
  db: DbOrTx,
  caller: Caller,
  scopeId: string,
  applicationId: string,
  includeDeleted = false,
): Promise<ManageableApplication> {
  const scope = await requireManageableScope(db, caller, scopeId);
  const application = await findApplication(db, scope.id, applicationId, includeDeleted);
  if (application === undefined) throw new Refusal('Application not found.');
  if (!isSystemAdmin(caller) && application.owner_id !== caller.id) {
    throw new Refusal('You are not allowed to manage this application.');
  }
  return { scope, application };
}
