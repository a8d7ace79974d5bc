import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/database.ts';
import type { WriteTransactions } from '../db/write-transactions.ts';
import { InvalidField, Refusal } from '../http/messages.ts';
import type { AuditInbox } from './audit-inbox.ts';
import { type AuditRecord, insertAuditEntry } from './audit.repository.ts';

/**
 * Every write is a named command run through `CommandRunner.run`, which records one audit entry
 * (actor, target, action = command name, outcome). This is the spec's "one decorator": nobody
 * writes an audit row by hand.
 *
 * A command has two steps:
 * - `prepare` (optional) runs outside any transaction: checks that read, and slow work such as
 *   password hashing that must not hold SQLite's single write lock;
 * - `execute` runs in a transaction together with the success audit row, so a write and its
 *   audit entry commit together or not at all. On SQLite, commands that arrive together share
 *   one commit, each under its own savepoint (db/write-transactions.ts).
 * A command that writes nothing but its audit entry (it decides in `prepare`) has no `execute`:
 * its output is what `prepare` returned, and its transaction holds the one audit row, which
 * needs no savepoint of its own.
 * A refusal or failure in either step rolls back and is recorded with succeeded = false.
 * `execute` may instead *return* a Refusal: its writes so far commit (a failed-attempt counter,
 * a spent guess, a charged budget), the entry is recorded as failed, and the refusal is thrown.
 */

export interface Actor {
  readonly id: string;
}

export interface StepContext {
  readonly db: Db;
  /** The command's time, read once from the clock: every row it writes agrees on "now". */
  readonly now: string;
  readonly clock: Clock;
  readonly actor: Actor | null;
  /** Names the audited target (the resource acted on). The last call wins. */
  setTarget(id: string | null): void;
  /** Work to do once the transaction has committed (mail, cache invalidation); never fails the command. */
  afterCommit(effect: () => void | Promise<void>): void;
  /** Whether the caller still awaits the answer (its connection is open): slow work it no longer
   * awaits, such as a queued password check, can be dropped. */
  callerConnected(): boolean;
}

/** What the transport tells a command about its caller (`StepContext.callerConnected`). */
export interface CallerState {
  readonly callerConnected: () => boolean;
}

const ALWAYS_CONNECTED: CallerState = { callerConnected: () => true };

export interface ExecuteContext extends StepContext {
  readonly tx: Tx;
}

export interface Command<Input, Output, Prepared = Input> {
  /** The audit action: the command type name, e.g. CreateScopeCommand. */
  readonly name: string;
  readonly prepare?: (context: StepContext, input: Input) => Promise<Prepared>;
  /** Absent when the command writes nothing but its audit entry: `prepare` gives the output. */
  readonly execute?: (context: ExecuteContext, prepared: Prepared) => Promise<Output | Refusal>;
}

export function defineCommand<Input, Output>(command: {
  name: string;
  execute: (context: ExecuteContext, input: Input) => Promise<Output | Refusal>;
}): Command<Input, Output, Input>;
export function defineCommand<Input, Output, Prepared>(command: {
  name: string;
  prepare: (context: StepContext, input: Input) => Promise<Prepared>;
  execute: (context: ExecuteContext, prepared: Prepared) => Promise<Output | Refusal>;
}): Command<Input, Output, Prepared>;
export function defineCommand<Input, Output>(command: {
  name: string;
  prepare: (context: StepContext, input: Input) => Promise<Output>;
}): Command<Input, Output, Output>;
export function defineCommand<Input, Output, Prepared>(
  command: Command<Input, Output, Prepared>,
): Command<Input, Output, Prepared> {
  return command;
}

export class CommandRunner {
  readonly #db: Db;
  readonly #writes: WriteTransactions;
  readonly #clock: Clock;
  readonly #log: FastifyBaseLogger;
  readonly #inbox: AuditInbox;

  constructor(db: Db, writes: WriteTransactions, clock: Clock, log: FastifyBaseLogger, inbox: AuditInbox) {
    this.#db = db;
    this.#writes = writes;
    this.#clock = clock;
    this.#log = log;
    this.#inbox = inbox;
  }

  async run<Input, Output, Prepared>(
    command: Command<Input, Output, Prepared>,
    input: Input,
    actor: Actor | null,
    caller: CallerState = ALWAYS_CONNECTED,
  ): Promise<Output> {
    let targetId: string | null = null;
    const effects: Array<() => void | Promise<void>> = [];
    const base: StepContext = {
      db: this.#db,
      now: this.#clock.now().toISOString(),
      clock: this.#clock,
      actor,
      setTarget: (id) => {
        targetId = id;
      },
      afterCommit: (effect) => {
        effects.push(effect);
      },
      callerConnected: caller.callerConnected,
    };
    const audit = (succeeded: boolean, failureReason: string | null): AuditRecord => ({
      actorId: actor?.id ?? null,
      targetId,
      action: command.name,
      succeeded,
      failureReason,
      recordedAt: base.now,
    });

    let output: Output | Refusal;
    try {
      const prepared =
        command.prepare === undefined ? (input as unknown as Prepared) : await command.prepare(base, input);
      const execute = command.execute;
      if (execute === undefined) {
        await this.#writes.runSingleWrite((tx) => insertAuditEntry(tx, audit(true, null)));
        output = prepared as unknown as Output;
      } else {
        output = await this.#writes.run(async (tx) => {
          const result = await execute({ ...base, tx }, prepared);
          const refused = result instanceof Refusal;
          await insertAuditEntry(tx, audit(!refused, refused ? result.message : null));
          return result;
        });
      }
    } catch (error) {
      await this.#recordFailure(audit(false, failureReasonOf(error)));
      throw error;
    }
    this.#inbox.appended();
    for (const effect of effects) this.#runEffect(command.name, effect);
    if (output instanceof Refusal) throw output;
    return output;
  }

  async #recordFailure(record: AuditRecord): Promise<void> {
    try {
      await this.#writes.runSingleWrite((tx) => insertAuditEntry(tx, record));
      this.#inbox.appended();
    } catch (error) {
      // The refusal itself must still reach the caller; a lost failure entry is logged instead.
      this.#log.error(
        { err: error, action: record.action },
        'could not record a failed command in the audit trail',
      );
    }
  }

  #runEffect(action: string, effect: () => void | Promise<void>): void {
    Promise.resolve()
      .then(effect)
      .catch((error: unknown) => this.#log.error({ err: error, action }, 'after-commit effect failed'));
  }
}

/** The reason kept with a failed entry: the refusal's message, never an exception's text. */
function failureReasonOf(error: unknown): string {
  if (error instanceof Refusal || error instanceof InvalidField) return error.message;
  return 'Internal error';
}
