import type { DbOrTx } from '../../db/database.ts';
import type { Caller } from '../../http/access.ts';
import { Refusal } from '../../http/messages.ts';
import { readTwoFactorState } from './two-factor.repository.ts';
import type { TwoFactorStatusResult } from './two-factor.schemas.ts';

/** GET /api/auth/2fa: the caller's own status; external-provider users have none (403). */
export async function twoFactorStatusOf(db: DbOrTx, caller: Caller): Promise<TwoFactorStatusResult> {
  if (caller.kind !== 'person') {
    throw new Refusal('Two-factor authentication is not available to external-provider users.');
  }
  const state = await readTwoFactorState(db, caller.id);
  return {
    isActive: state.status === 'active',
    isPending: state.status === 'pending',
    appEnabled: state.appEnabled,
    emailEnabled: state.emailEnabled,
    remainingRecoveryCodes: state.remainingRecoveryCodes,
  };
}
