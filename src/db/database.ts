import type { Generated, Insertable, Kysely, Selectable, Transaction, Updateable } from 'kysely';

/**
 * Row types of every table. Both dialects store the same shapes:
 * - ids are GUID strings (the public id is the primary key; nothing else is ever exposed);
 * - times are ISO-8601 UTC strings (`2026-01-01T00:00:00.000Z`), fixed width, so they sort and
 *   compare correctly as text in SQLite and PostgreSQL alike;
 * - flags are integers 0/1, because SQLite has no boolean and one migration set serves both.
 */

export type IsoTime = string;
export type Flag = 0 | 1;

export const Role = { SystemAdmin: 1, ScopeAdmin: 2, User: 3 } as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface PersonsTable {
  id: string;
  name: string;
  email: string;
  /** Trimmed and lower-cased: the key of the case-insensitive uniqueness rules. */
  email_normalized: string;
  role: Role;
  /** Set for Users only; administrators have no scope. */
  scope_id: string | null;
  password_hash: string | null;
  security_stamp: string;
  email_verified: Flag;
  failed_login_attempts: Generated<number>;
  locked_out_until: IsoTime | null;
  restricted_at: IsoTime | null;
  restriction_ground: string | null;
  erasure_requested_at: IsoTime | null;
  deleted_at: IsoTime | null;
  anonymised_at: IsoTime | null;
  created_at: IsoTime;
  updated_at: IsoTime;
  /** Re-authentication budget (modules/auth/reauthentication.ts): failures in the current window… */
  reauthentication_failures: Generated<number>;
  /** …the window's start (its first failure)… */
  reauthentication_window_started_at: Generated<IsoTime | null>;
  /** …and, once five failures fell in one window, the time until which every check fails. */
  reauthentication_paused_until: Generated<IsoTime | null>;
}

export interface ScopesTable {
  id: string;
  name: string;
  /** Trimmed and lower-cased: scope names are unique case-insensitively among live scopes. */
  name_normalized: string;
  description: string;
  extidp_signin_enabled: Flag;
  self_registration_enabled: Flag;
  email_verification_url: string | null;
  password_reset_url: string | null;
  deleted_at: IsoTime | null;
  created_at: IsoTime;
  updated_at: IsoTime;
}

export interface ScopeOwnersTable {
  scope_id: string;
  person_id: string;
  created_at: IsoTime;
}

export interface AuditEntriesTable {
  id: string;
  actor_id: string | null;
  target_id: string | null;
  action: string;
  succeeded: Flag;
  failure_reason: string | null;
  recorded_at: IsoTime;
}

export interface ApplicationsTable {
  id: string;
  scope_id: string;
  owner_id: string;
  name: string;
  name_normalized: string;
  deleted_at: IsoTime | null;
  created_at: IsoTime;
  updated_at: IsoTime;
}

export interface ApplicationCredentialsTable {
  id: string;
  application_id: string;
  /** SHA-256 (hex) of the secret: the secret itself is never stored. */
  secret_hash: string;
  /** null: no expiry. */
  expires_at: IsoTime | null;
  revoked_at: IsoTime | null;
  created_at: IsoTime;
}

export interface ScopePermissionsTable {
  id: string;
  scope_id: string;
  name: string;
  /** Trimmed and lower-cased: live names are unique per scope, case-insensitively. */
  name_normalized: string;
  description: string;
  include_as_jwt_claim: Flag;
  deleted_at: IsoTime | null;
  created_at: IsoTime;
  updated_at: IsoTime;
}

export type EmailLinkKind = 'verification' | 'password-reset';

/** A verification or reset link: issued, then spent, expired or retired (spec §States). */
export interface EmailLinksTable {
  id: string;
  person_id: string;
  kind: EmailLinkKind;
  /** SHA-256 (hex) of the token; the token itself is only ever in the mail. */
  token_hash: string;
  email_normalized: string;
  created_at: IsoTime;
  expires_at: IsoTime;
  spent_at: IsoTime | null;
  retired_at: IsoTime | null;
}

/** The shared account-email budget of a person (cooldown and day-long window, spec §Limits). */
export interface AccountEmailBudgetsTable {
  person_id: string;
  last_sent_at: IsoTime;
  window_started_at: IsoTime;
  window_count: number;
}

export interface ExtidpUsersTable {
  id: string;
  scope_id: string;
  /** The provider's issuer and its subject identifier: together they name the external account. */
  issuer: string;
  subject: string;
  name: string;
  email: string;
  /** Trimmed and lower-cased: compared with the scope's Users' addresses (DECISIONS §6). */
  email_normalized: string;
  email_verified: Flag;
  picture_url: string | null;
  last_signed_in_at: IsoTime | null;
  last_signed_out_at: IsoTime | null;
  restricted_at: IsoTime | null;
  restriction_ground: string | null;
  erasure_requested_at: IsoTime | null;
  deleted_at: IsoTime | null;
  anonymised_at: IsoTime | null;
  created_at: IsoTime;
  updated_at: IsoTime;
}

export type TwoFactorStatus = 'pending' | 'active';

/** A person's two-factor configuration (modules/two-factor): pending until confirmed, then active. */
export interface TwoFactorConfigsTable {
  person_id: string;
  status: TwoFactorStatus;
  app_enabled: Flag;
  email_enabled: Flag;
  /** The TOTP shared key, sealed with AES-256-GCM (crypto/secrets.ts SecretBox); null without App. */
  totp_secret_sealed: string | null;
  /** The last accepted TOTP time step: a step is never accepted twice. */
  totp_last_step: number | null;
  /** SHA-256 of the code mailed by 2fa/enable with Email, and its expiry. */
  setup_email_code_hash: string | null;
  setup_email_code_expires_at: IsoTime | null;
  created_at: IsoTime;
  activated_at: IsoTime | null;
  updated_at: IsoTime;
}

export interface TwoFactorRecoveryCodesTable {
  id: string;
  person_id: string;
  /** SHA-256 (hex) of the normalised code; the code itself is shown once and never stored. */
  code_hash: string;
  created_at: IsoTime;
  used_at: IsoTime | null;
}

/** A sign-in challenge (spec §States, two-factor challenge). */
export interface TwoFactorChallengesTable {
  id: string;
  person_id: string;
  created_at: IsoTime;
  expires_at: IsoTime;
  /** Wrong app or recovery codes presented against this challenge; the fifth retires it. */
  wrong_guesses: Generated<number>;
  redeemed_at: IsoTime | null;
  /** Retired by the fifth wrong guess, or replaced by a newer login. */
  retired_at: IsoTime | null;
  email_code_hash: string | null;
  email_code_expires_at: IsoTime | null;
  email_code_reissues: Generated<number>;
}

/** The second-factor lock of an account, counted across challenges (spec §States). */
export interface TwoFactorLocksTable {
  person_id: string;
  /** Failed second factors since the last success or lock. */
  failures: number;
  /** Locks since the last success: each doubles the next lock's length. */
  lock_count: number;
  locked_until: IsoTime | null;
  updated_at: IsoTime;
}

/**
 * A self-registration awaiting its mailed link (spec §States). Confirming, discarding or
 * exhausting its guesses removes the row, so its token then names nothing (`Invalid token.`).
 */
export interface PendingRegistrationsTable {
  id: string;
  scope_id: string;
  name: string;
  email: string;
  /** Trimmed and lower-cased: the key of the per-address limits. */
  email_normalized: string;
  /** Argon2id PHC string (salt included); never returned, logged or audited. */
  password_hash: string;
  /** SHA-256 (hex) of the link token; the token itself is only ever in the mail. */
  token_hash: string;
  /** Wrong passwords still allowed at verify-email; the tenth wrong one discards the row. */
  guesses_left: number;
  created_at: IsoTime;
  expires_at: IsoTime;
}

/** Attempt notices sent to the holder of an address (three per day-long window, across scopes). */
export interface RegistrationNoticeBudgetsTable {
  email_normalized: string;
  window_started_at: IsoTime;
  window_count: number;
}

/** Row counts kept by triggers (migration 0010): `scopes.all`, `scopes.live`. */
export interface RowCountsTable {
  name: string;
  value: number;
}

export interface Database {
  persons: PersonsTable;
  scopes: ScopesTable;
  scope_owners: ScopeOwnersTable;
  audit_entries: AuditEntriesTable;
  /** SQLite's audit rows until they are moved into audit_entries (src/audit/audit-inbox.ts). */
  audit_inbox: AuditEntriesTable;
  applications: ApplicationsTable;
  application_credentials: ApplicationCredentialsTable;
  scope_permissions: ScopePermissionsTable;
  email_links: EmailLinksTable;
  account_email_budgets: AccountEmailBudgetsTable;
  extidp_users: ExtidpUsersTable;
  two_factor_configs: TwoFactorConfigsTable;
  two_factor_recovery_codes: TwoFactorRecoveryCodesTable;
  two_factor_challenges: TwoFactorChallengesTable;
  two_factor_locks: TwoFactorLocksTable;
  pending_registrations: PendingRegistrationsTable;
  registration_notice_budgets: RegistrationNoticeBudgetsTable;
  row_counts: RowCountsTable;
}

export type Db = Kysely<Database>;
/** A function that must run inside a transaction takes this, so its type says so. */
export type Tx = Transaction<Database>;
/** Either: repositories that do not care take this. */
export type DbOrTx = Kysely<Database> | Transaction<Database>;

export type PersonRow = Selectable<PersonsTable>;
export type NewPerson = Insertable<PersonsTable>;
export type PersonUpdate = Updateable<PersonsTable>;
export type ScopeRow = Selectable<ScopesTable>;
export type AuditEntryRow = Selectable<AuditEntriesTable>;
export type ApplicationRow = Selectable<ApplicationsTable>;
export type ApplicationCredentialRow = Selectable<ApplicationCredentialsTable>;
export type ScopePermissionRow = Selectable<ScopePermissionsTable>;
export type EmailLinkRow = Selectable<EmailLinksTable>;
export type ExtidpUserRow = Selectable<ExtidpUsersTable>;
export type TwoFactorConfigRow = Selectable<TwoFactorConfigsTable>;
export type TwoFactorChallengeRow = Selectable<TwoFactorChallengesTable>;
export type TwoFactorLockRow = Selectable<TwoFactorLocksTable>;
export type PendingRegistrationRow = Selectable<PendingRegistrationsTable>;

export const toFlag = (value: boolean): Flag => (value ? 1 : 0);
