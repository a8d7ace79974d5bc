import type { ExecuteContext } from '../../audit/command-runner.ts';
import type { PersonRow } from '../../db/database.ts';

/**
 * What other modules do when a person's account changes, called by the persons commands inside
 * their transaction, after the row is written (so links issued here commit with it, and mail
 * goes out through `context.afterCommit`, never holding the transaction). A hook may throw a
 * Refusal (for example the account-email budget's 429), which rolls the whole change back.
 *
 * The email module wires in (the lead's step, see app.ts):
 * - `personCreated`: spec §Events "verification email — person creation" (not charged to the
 *   person's budget, DECISIONS §10);
 * - `emailChanged`: retire outstanding verification and reset links, mail the notice (no new
 *   address, no link) to `previousEmail`, and, when `byOwner`, charge the account-email budget.
 */
export interface PersonEvents {
  personCreated(context: ExecuteContext, person: PersonRow): Promise<void>;
  emailChanged(
    context: ExecuteContext,
    change: { readonly person: PersonRow; readonly previousEmail: string; readonly byOwner: boolean },
  ): Promise<void>;
}

/** Until the email module is wired in: nothing is mailed. */
export const NO_PERSON_EVENTS: PersonEvents = {
  personCreated: async () => {},
  emailChanged: async () => {},
};
