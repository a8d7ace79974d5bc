import type { ExecuteContext } from '../../audit/command-runner.ts';
import type { Config } from '../../config/config.ts';
import { newId, randomToken, sha256 } from '../../crypto/secrets.ts';
import {
  type DbOrTx,
  type EmailLinkKind,
  type EmailLinkRow,
  type PersonRow,
  Role,
} from '../../db/database.ts';
import type { Mailer } from '../../email/mailer.ts';
import {
  emailChangedMail,
  type LinkOrToken,
  linkWithToken,
  passwordResetMail,
  verificationMail,
} from '../../email/templates.ts';
import { Refusal } from '../../http/messages.ts';
import { normalizeEmail } from '../persons/person-rules.ts';
import {
  findEmailLinkByTokenHash,
  findScopeLinkSettings,
  insertEmailLink,
  retireOutstandingLinks,
} from './account-email.repository.ts';
import { findPerson } from '../persons/persons.repository.ts';

/** Link lifetimes (DECISIONS §7): verification 24 hours, password reset 1 hour. */
export const LINK_LIFETIME_SECONDS: Readonly<Record<EmailLinkKind, number>> = {
  verification: 24 * 60 * 60,
  'password-reset': 60 * 60,
};

/** What issuing and mailing a link needs from the service. */
export interface AccountEmailDependencies {
  readonly config: Pick<Config, 'email' | 'accountEmailCooldownSeconds'>;
  readonly mailer: Mailer;
}

type LinkContext = Pick<ExecuteContext, 'tx' | 'now' | 'afterCommit'>;
type Addressee = Pick<PersonRow, 'id' | 'name' | 'email' | 'scope_id'>;

/**
 * Issues a verification link to the person's current address and mails it after commit.
 * Outstanding verification links are retired first: only the newest link works.
 * The persons commands call this when a person is created with a password (not charged to
 * the account-email budget, DECISIONS §10).
 */
export async function issueVerificationLink(
  context: LinkContext,
  dependencies: AccountEmailDependencies,
  person: Addressee,
): Promise<void> {
  await issueLink(context, dependencies, person, 'verification');
}

/** Issues a password-reset link (retiring outstanding ones) and mails it after commit. */
export async function issuePasswordResetLink(
  context: LinkContext,
  dependencies: AccountEmailDependencies,
  person: Addressee,
): Promise<void> {
  await issueLink(context, dependencies, person, 'password-reset');
}

/**
 * After an email change (own or by an administrator): retires every outstanding verification
 * and reset link, so a link mailed to the old address can never act on the account, and mails
 * a notice to the previous address — with no new address and no link in it (spec §Endpoints).
 * The caller changes the address, resets emailVerified and replaces the security stamp.
 */
export async function retireLinksAfterEmailChange(
  context: LinkContext,
  dependencies: AccountEmailDependencies,
  person: { readonly id: string; readonly name: string; readonly previousEmail: string },
): Promise<void> {
  await retireOutstandingLinks(context.tx, person.id, ['verification', 'password-reset'], context.now);
  const notice = emailChangedMail({ name: person.name, email: person.previousEmail });
  context.afterCommit(() => dependencies.mailer.send(notice));
}

async function issueLink(
  context: LinkContext,
  dependencies: AccountEmailDependencies,
  person: Addressee,
  kind: EmailLinkKind,
): Promise<void> {
  const { tx, now } = context;
  await retireOutstandingLinks(tx, person.id, [kind], now);
  // 256 random bits; only the SHA-256 is stored (DECISIONS §7).
  const token = randomToken();
  const lifetime = LINK_LIFETIME_SECONDS[kind];
  await insertEmailLink(tx, {
    id: newId(),
    person_id: person.id,
    kind,
    token_hash: sha256(token),
    email_normalized: normalizeEmail(person.email),
    created_at: now,
    expires_at: new Date(Date.parse(now) + lifetime * 1000).toISOString(),
    spent_at: null,
    retired_at: null,
  });
  const base = await linkBase(tx, dependencies.config.email, person.scope_id, kind);
  const target: LinkOrToken = base === null ? { token } : { url: linkWithToken(base, token) };
  const recipient = { name: person.name, email: person.email };
  const hours = lifetime / 3600;
  const mail =
    kind === 'verification'
      ? verificationMail(recipient, target, hours)
      : passwordResetMail(recipient, target, hours);
  context.afterCommit(() => dependencies.mailer.send(mail));
}

/** A scope's own link base replaces the global one for that scope's Users (DECISIONS §8). */
export async function linkBase(
  db: DbOrTx,
  email: Config['email'],
  scopeId: string | null,
  kind: EmailLinkKind,
): Promise<string | null> {
  const global = kind === 'verification' ? email.verificationUrl : email.passwordResetUrl;
  if (scopeId === null) return global;
  const scope = await findScopeLinkSettings(db, scopeId);
  const own = kind === 'verification' ? scope?.verificationUrl : scope?.passwordResetUrl;
  return own ?? global;
}

/**
 * Whether the person may still act through a link or be mailed one: not deleted, anonymised,
 * suspended for erasure or restricted, and (for a User) in a live scope, i.e. able to sign in.
 */
export async function mayUseAccountLinks(db: DbOrTx, person: PersonRow): Promise<boolean> {
  if (
    person.deleted_at !== null ||
    person.anonymised_at !== null ||
    person.erasure_requested_at !== null ||
    person.restricted_at !== null
  ) {
    return false;
  }
  if (person.role !== Role.User) return true;
  if (person.scope_id === null) return false;
  return (await findScopeLinkSettings(db, person.scope_id))?.live === true;
}

export interface FollowedLink {
  readonly link: EmailLinkRow;
  readonly person: PersonRow;
}

/**
 * Reads the link a token names and the person it acts on, refusing by the link's state
 * (DECISIONS §10): unknown (or of the other kind) → `Invalid token.`; spent or retired →
 * `Token already used.`; expired → `Token expired.`; a person who can no longer use it →
 * `Invalid token.`. Returns null for an unknown token so verify-email can look further.
 */
export async function readLink(
  db: DbOrTx,
  token: string,
  kind: EmailLinkKind,
  now: string,
): Promise<FollowedLink | null> {
  const link = await findEmailLinkByTokenHash(db, sha256(token));
  if (link === undefined || link.kind !== kind) return null;
  if (link.spent_at !== null || link.retired_at !== null) throw new Refusal('Token already used.');
  if (link.expires_at <= now) throw new Refusal('Token expired.');
  const person = await findPerson(db, link.person_id, true);
  if (person === undefined || !(await mayUseAccountLinks(db, person))) throw new Refusal('Invalid token.');
  // Defence in depth: links are retired on an address change, and a link never acts on an
  // address it was not mailed to.
  if (normalizeEmail(person.email) !== link.email_normalized) throw new Refusal('Token already used.');
  return { link, person };
}
