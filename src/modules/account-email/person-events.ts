import type { PersonEvents } from '../persons/person-events.ts';
import { chargeAccountEmail } from './account-email.budget.ts';
import {
  type AccountEmailDependencies,
  issueVerificationLink,
  retireLinksAfterEmailChange,
} from './account-email.links.ts';

/**
 * The account mails the persons commands trigger (spec §Events):
 * - a new person gets a verification link (not charged to their budget, DECISIONS §10);
 * - an email change retires every outstanding link and mails a notice to the previous
 *   address; the person's own change is charged to the account-email budget (spec PUT
 *   /api/persons/{id}), after the password was checked, so a refused charge (429) rolls the
 *   change back.
 */
export function accountEmailPersonEvents(dependencies: AccountEmailDependencies): PersonEvents {
  return {
    personCreated: (context, person) => issueVerificationLink(context, dependencies, person),
    emailChanged: async (context, { person, previousEmail, byOwner }) => {
      if (byOwner)
        await chargeAccountEmail(context, person.id, dependencies.config.accountEmailCooldownSeconds);
      await retireLinksAfterEmailChange(context, dependencies, {
        id: person.id,
        name: person.name,
        previousEmail,
      });
    },
  };
}
