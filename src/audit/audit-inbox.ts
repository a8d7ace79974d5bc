import type { FastifyBaseLogger } from 'fastify';
import type { WriteTransactions } from '../db/write-transactions.ts';
import { moveAuditInbox } from './audit.repository.ts';

/** Rows appended by this thread after which it moves the inbox at once. */
export const AUDIT_INBOX_MOVE_ROWS = 2000;
/** How long an appended row waits at most before this thread moves the inbox. */
export const AUDIT_INBOX_MOVE_DELAY_MS = 1000;

/**
 * SQLite: when the audit inbox is moved into `audit_entries`.
 *
 * A command's audit row is appended to `audit_inbox`, a table without indexes, in the command's
 * own transaction, so the row commits with the command's writes or not at all, as before. The
 * indexed trail is written later, many rows at a time. Why: SQLite's commit writes every page
 * its transaction dirtied to the log, and an audit row in `audit_entries` dirties a page in
 * each of its six B-trees (the table, its key, four indexes), where the inbox dirties one. A
 * group commit of a few commands paid for those pages again at every commit, and read them
 * back after each commit of the other HTTP thread (measured: a secret exchange's share of log
 * writes and page reads; docs/performance-history.md, twenty-second round). Moved by the thousand,
 * the indexed pages are written once per move.
 *
 * Each HTTP thread moves the inbox (all of it, whichever thread appended the rows) once it has
 * appended AUDIT_INBOX_MOVE_ROWS rows since its last move, or AUDIT_INBOX_MOVE_DELAY_MS after
 * the first of them. Readers of the trail do not wait for either: they move the inbox first
 * (`settle`, or `moveAuditInbox` inside their own transaction). Rows left in the inbox by a
 * stopped process are moved by the next move. PostgreSQL has no inbox (its commits do not pay
 * per page like this): there `settle` does nothing.
 */
export class AuditInbox {
  readonly #writes: WriteTransactions | null;
  readonly #log: FastifyBaseLogger;
  readonly #moveRows: number;
  readonly #moveDelayMs: number;
  /** Rows this thread appended since its last move. */
  #appended = 0;
  #timer: NodeJS.Timeout | null = null;
  /** The last background move failed: its rows are still in the inbox, to be moved later. */
  #lastMoveFailed = false;
  /** The move running in the background, if any: closing waits for it. */
  #moving: Promise<void> | null = null;
  #closed = false;

  /** `writes` is null on PostgreSQL, where audit rows go straight to `audit_entries`. */
  constructor(
    writes: WriteTransactions | null,
    log: FastifyBaseLogger,
    { moveRows = AUDIT_INBOX_MOVE_ROWS, moveDelayMs = AUDIT_INBOX_MOVE_DELAY_MS } = {},
  ) {
    this.#writes = writes;
    this.#log = log;
    this.#moveRows = moveRows;
    this.#moveDelayMs = moveDelayMs;
  }

  /** The command runner calls this once per audit row it has committed. */
  appended(): void {
    if (this.#writes === null) return;
    this.#appended += 1;
    this.#schedule();
  }

  /** Moves the inbox now: a reader of `audit_entries` outside a transaction calls this first. */
  async settle(): Promise<void> {
    if (this.#writes === null) return;
    this.#cancelTimer();
    this.#appended = 0;
    await this.#writes.run(moveAuditInbox);
    this.#lastMoveFailed = false;
  }

  /**
   * Before the database closes: stops the timer and waits for a move under way. Rows still in
   * the inbox stay there, committed, for the next start's first move.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelTimer();
    await this.#moving;
  }

  /**
   * Moves at once when this thread has appended enough rows, else arms the timer for them (or,
   * after a failed move, for the rows it left). While a move runs, nothing: its end schedules
   * the rows appended meanwhile.
   */
  #schedule(): void {
    if (this.#closed || this.#moving !== null) return;
    if (this.#appended === 0 && !this.#lastMoveFailed) return;
    if (this.#appended >= this.#moveRows) {
      this.#moveInBackground();
      return;
    }
    if (this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#moveInBackground();
    }, this.#moveDelayMs);
    // A pending move must not keep a stopping process alive: the rows are safe in the inbox.
    this.#timer.unref();
  }

  #moveInBackground(): void {
    this.#moving = this.settle()
      .catch((error: unknown) => {
        // The rows stay in the inbox, committed. The timer tries again even if no row comes
        // meanwhile (a thread that appends nothing more would otherwise leave them there until a
        // reader came). By the timer rather than at once, so a failing database is not asked in
        // a loop.
        this.#lastMoveFailed = true;
        this.#log.error({ err: error }, 'could not move the audit inbox; trying again shortly');
      })
      .finally(() => {
        this.#moving = null;
        this.#schedule();
      });
  }

  #cancelTimer(): void {
    if (this.#timer === null) return;
    clearTimeout(this.#timer);
    this.#timer = null;
  }
}
