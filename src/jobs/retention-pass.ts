import type { FastifyBaseLogger } from 'fastify';
import { type Actor, type CommandRunner, defineCommand } from '../audit/command-runner.ts';
import type { IsoTime, Tx } from '../db/database.ts';
import type { Dialect } from '../db/open-database.ts';
import {
  anonymiseExtidpUser,
  anonymisePerson,
  clearAuditReferences,
  countDueIdentities,
  type DueIdentity,
  findDueIdentities,
  purgeExpiredEmailLinks,
  takeRetentionLock,
} from '../modules/privacy/retention.repository.ts';
import {
  purgeExpiredPendingRegistrations,
  removeRegistrationsOfAddress,
} from '../modules/registration/registration.repository.ts';
import {
  purgeExpiredTwoFactorArtifacts,
  removeTwoFactorData,
} from '../modules/two-factor/two-factor.repository.ts';

/**
 * The retention pass (DECISIONS §7): anonymises identities whose erasure was requested, and
 * logically deleted ones 30 days after deletion; purges expired links, two-factor challenges
 * and codes, and pending registrations 7 days after expiry. At most
 * SERVICE_RETENTION_PURGE_BATCH_SIZE identities, and as many rows per purge step, per run.
 *
 * One run is one command (one transaction, one audit entry, actor null when scheduled), under
 * a lock that only one instance sharing the database can hold at a time.
 */

export const DELETED_RETENTION_DAYS = 30;
export const ERASURE_DEADLINE_DAYS = 30;
export const EXPIRED_ROW_RETENTION_DAYS = 7;
/** DECISIONS §7: the pass runs hourly. */
export const RETENTION_PASS_INTERVAL_MS = 60 * 60 * 1000;

const daysBefore = (now: IsoTime, days: number): IsoTime =>
  new Date(Date.parse(now) - days * 24 * 60 * 60 * 1000).toISOString();
export const erasureDueAt = (requestedAt: IsoTime): IsoTime =>
  new Date(Date.parse(requestedAt) + ERASURE_DEADLINE_DAYS * 24 * 60 * 60 * 1000).toISOString();

/**
 * Removes what another module keeps about an identity being anonymised (its rows, not the
 * identity's own columns, which the pass replaces). Two-factor data and tokens plug in here.
 */
export type ErasureStep = (tx: Tx, identity: DueIdentity, now: IsoTime) => Promise<void>;

/**
 * Deletes up to `limit` rows that expired at least EXPIRED_ROW_RETENTION_DAYS before `now`;
 * answers how many went.
 */
export type PurgeStep = (tx: Tx, now: IsoTime, limit: number) => Promise<number>;

export const ERASURE_STEPS: readonly ErasureStep[] = [
  (tx, identity) => clearAuditReferences(tx, identity.id),
  // External-provider users never have two-factor data.
  (tx, identity) => (identity.kind === 'person' ? removeTwoFactorData(tx, identity.id) : Promise.resolve()),
  // An erasure also takes the self-registrations and attempt notices kept under the subject's
  // address. A routine deletion does not: a registration made since under the same address is
  // someone's new request, not the deleted account's data (it expires and is purged anyway).
  (tx, identity) =>
    identity.reason === 'erasure' ? removeRegistrationsOfAddress(tx, identity.email) : Promise.resolve(),
];
export const PURGE_STEPS: readonly PurgeStep[] = [
  (tx, now, limit) => purgeExpiredEmailLinks(tx, daysBefore(now, EXPIRED_ROW_RETENTION_DAYS), limit),
  purgeExpiredTwoFactorArtifacts,
  purgeExpiredPendingRegistrations,
];

export interface RetentionPassResult {
  /** False when another instance held the lock and this run did nothing. */
  readonly ran: boolean;
  readonly anonymised: number;
  readonly purged: number;
  readonly remaining: number;
}

export interface RetentionPassOptions {
  readonly dialect: Dialect;
  readonly batchSize: number;
  /** Wait for another instance's run to finish (an administrator's request) instead of skipping. */
  readonly waitForLock: boolean;
}

/** The pass as a named command: RetentionPassCommand when scheduled, ErasureReconciliationCommand on request. */
export function retentionPassCommand(name: string, options: RetentionPassOptions) {
  return defineCommand({
    name,
    async execute(context, _input: null): Promise<RetentionPassResult> {
      const { tx, now } = context;
      if (!(await takeRetentionLock(tx, options.dialect, options.waitForLock))) {
        return { ran: false, anonymised: 0, purged: 0, remaining: 0 };
      }
      const deletedBefore = daysBefore(now, DELETED_RETENTION_DAYS);
      const persons = await findDueIdentities(tx, 'person', deletedBefore, options.batchSize);
      const users = await findDueIdentities(
        tx,
        'extidpUser',
        deletedBefore,
        options.batchSize - persons.length,
      );
      for (const identity of [...persons, ...users]) {
        if (identity.kind === 'person') await anonymisePerson(tx, identity.id, now);
        else await anonymiseExtidpUser(tx, identity.id, now);
        for (const step of ERASURE_STEPS) await step(tx, identity, now);
      }
      let purged = 0;
      for (const step of PURGE_STEPS) purged += await step(tx, now, options.batchSize);
      const remaining = await countDueIdentities(tx, deletedBefore);
      return { ran: true, anonymised: persons.length + users.length, purged, remaining };
    },
  });
}

/**
 * Runs the pass every hour (and once at start) until stopped. A run still going
 * when the next is due is not doubled; `stop` waits for a running one to finish.
 */
export class RetentionSchedule {
  readonly #commands: CommandRunner;
  readonly #log: FastifyBaseLogger;
  readonly #command: ReturnType<typeof retentionPassCommand>;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<RetentionPassResult | null> | null = null;

  constructor(
    commands: CommandRunner,
    log: FastifyBaseLogger,
    options: Omit<RetentionPassOptions, 'waitForLock'> & { intervalMs: number },
  ) {
    this.#commands = commands;
    this.#log = log;
    // Scheduled runs skip when another instance is already at work: it will do the same rows.
    this.#command = retentionPassCommand('RetentionPassCommand', { ...options, waitForLock: false });
    this.#intervalMs = options.intervalMs;
  }

  start(): void {
    if (this.#timer !== null) return;
    // A first run at once: an instance restarted more often than hourly still does the work.
    void this.runOnce();
    this.#timer = setInterval(() => void this.runOnce(), this.#intervalMs);
    // The schedule alone must not keep the process alive.
    this.#timer.unref();
  }

  /** One scheduled run now (also what the timer calls); null when one is already running or it failed. */
  async runOnce(): Promise<RetentionPassResult | null> {
    if (this.#running !== null) return null;
    this.#running = this.#run();
    try {
      return await this.#running;
    } finally {
      this.#running = null;
    }
  }

  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running;
  }

  async #run(): Promise<RetentionPassResult | null> {
    const system: Actor | null = null;
    try {
      const result = await this.#commands.run(this.#command, null, system);
      this.#log.info({ ...result }, 'retention pass finished');
      return result;
    } catch (error) {
      this.#log.error({ err: error }, 'retention pass failed');
      return null;
    }
  }
}
