import { defineCommand } from '../../audit/command-runner.ts';
import { newId } from '../../crypto/secrets.ts';
import type { ApplicationRow, Tx } from '../../db/database.ts';
import { normalizeText } from '../../db/query-helpers.ts';
import { type Caller, isSystemAdmin } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { isLiveAdministrator } from '../persons/persons.repository.ts';
import { requireManageableScope } from '../scopes/scope-access.ts';
import { findScope, isScopeOwner } from '../scopes/scopes.repository.ts';
import { requireManageableApplication } from './application-access.ts';
import { deleteApplicationRow, insertApplication, updateApplicationRow } from './applications.repository.ts';
import type { ApplicationBody } from './applications.schemas.ts';

/**
 * Spec §What the service does 5: an application's owner is a live Scope Admin or System Admin
 * who owns the application's scope. A User can never own one.
 */
async function requireEligibleOwner(tx: Tx, scopeId: string, ownerId: string): Promise<void> {
  const eligible = (await isLiveAdministrator(tx, ownerId)) && (await isScopeOwner(tx, scopeId, ownerId));
  if (!eligible) throw new Refusal('Owner must be a Scope Admin or System Admin who owns the scope.');
}

interface ScopedInput {
  readonly caller: Caller;
  readonly scopeId: string;
}

type ApplicationInput = ScopedInput & { readonly id: string };

export const createApplication = defineCommand({
  name: 'CreateApplicationCommand',
  async execute(context, input: ScopedInput & { body: ApplicationBody }): Promise<ApplicationRow> {
    const { tx, now } = context;
    const scope = await requireManageableScope(tx, input.caller, input.scopeId);
    // A Scope Admin may register applications for themselves only: naming someone else would
    // create an application they could not manage.
    if (!isSystemAdmin(input.caller) && input.body.ownerId !== input.caller.id) {
      throw new Refusal('You are not allowed to manage this application.');
    }
    await requireEligibleOwner(tx, scope.id, input.body.ownerId);
    const row: ApplicationRow = {
      id: newId(),
      scope_id: scope.id,
      owner_id: input.body.ownerId,
      name: input.body.name.trim(),
      name_normalized: normalizeText(input.body.name),
      deleted_at: null,
      created_at: now,
      updated_at: now,
    };
    context.setTarget(row.id);
    await insertApplication(tx, row);
    return row;
  },
});

export const updateApplication = defineCommand({
  name: 'UpdateApplicationCommand',
  async execute(context, input: ApplicationInput & { body: ApplicationBody }): Promise<ApplicationRow> {
    const { tx, now } = context;
    context.setTarget(input.id);
    const { scope, application } = await requireManageableApplication(
      tx,
      input.caller,
      input.scopeId,
      input.id,
    );
    // Only a changed owner is checked (spec): the current owner keeps the application even if
    // they would no longer qualify as a new one.
    if (input.body.ownerId !== application.owner_id) {
      await requireEligibleOwner(tx, scope.id, input.body.ownerId);
    }
    const changes = {
      name: input.body.name.trim(),
      name_normalized: normalizeText(input.body.name),
      owner_id: input.body.ownerId,
      updated_at: now,
    };
    await updateApplicationRow(tx, application.id, changes);
    return { ...application, ...changes };
  },
});

/**
 * Logical delete; repeating it answers alreadyDeleted. From then on its secrets are not
 * exchanged and its tokens fail the live check.
 */
export const deleteApplication = defineCommand({
  name: 'DeleteApplicationCommand',
  async execute(context, input: ApplicationInput): Promise<{ id: string; alreadyDeleted: boolean }> {
    const { tx, now } = context;
    context.setTarget(input.id);
    const { application } = await requireManageableApplication(
      tx,
      input.caller,
      input.scopeId,
      input.id,
      true,
    );
    if (application.deleted_at !== null) return { id: application.id, alreadyDeleted: true };
    await updateApplicationRow(tx, application.id, { deleted_at: now, updated_at: now });
    return { id: application.id, alreadyDeleted: false };
  },
});

/**
 * Permanent delete (System Admin only, by the route's gate) in any deletion state of the
 * application or its scope. Credentials go by the foreign key's cascade; scope and owner stay.
 * A repeat finds nothing: 404.
 */
export const hardDeleteApplication = defineCommand({
  name: 'HardDeleteApplicationCommand',
  async execute(context, input: ScopedInput & { id: string }): Promise<{ id: string } | Refusal> {
    const { tx } = context;
    context.setTarget(input.id);
    if ((await findScope(tx, input.scopeId, true)) === undefined) return new Refusal('Scope not found.');
    if (!(await deleteApplicationRow(tx, input.scopeId, input.id)))
      return new Refusal('Application not found.');
    return { id: input.id };
  },
});
