import type { FastifyBaseLogger } from 'fastify';
import type { Command, CommandRunner } from '../../audit/command-runner.ts';

/**
 * A bounded queue worked off by one background worker, in order. `enqueue` never waits: when
 * the queue is full the item is refused (the caller logs the drop), so a flood of requests
 * costs bounded memory. Items still queued when the process stops are lost (spec §Limits:
 * "a restart drops queued requests").
 */
export class BoundedWorkQueue<Item> {
  readonly #capacity: number;
  readonly #work: (item: Item) => Promise<void>;
  readonly #onError: (error: unknown) => void;
  readonly #items: Item[] = [];
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(options: {
    capacity: number;
    work: (item: Item) => Promise<void>;
    onError: (error: unknown) => void;
  }) {
    this.#capacity = options.capacity;
    this.#work = options.work;
    this.#onError = options.onError;
  }

  /** Items waiting (not counting the one being worked on). */
  get size(): number {
    return this.#items.length;
  }

  /** Queues an item; false when the queue is full or stopped (the item is dropped). */
  enqueue(item: Item): boolean {
    if (this.#stopped || this.#items.length >= this.#capacity) return false;
    this.#items.push(item);
    this.#running ??= this.#run();
    return true;
  }

  /** Resolves when the queue is empty and the worker is idle. */
  async idle(): Promise<void> {
    while (this.#running !== null) await this.#running;
  }

  /** Drops what is queued and waits for the item in progress to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#items.length = 0;
    await this.idle();
  }

  async #run(): Promise<void> {
    try {
      for (let item = this.#items.shift(); item !== undefined; item = this.#items.shift()) {
        try {
          await this.#work(item);
        } catch (error) {
          this.#onError(error);
        }
      }
    } finally {
      this.#running = null;
    }
  }
}

/**
 * A bounded queue whose worker runs one audited command per request, with no actor: the work an
 * anonymous endpoint answers before doing (password recovery, self-registration), so neither
 * the answer nor its timing reveals what the work finds. A failure is logged by its error name
 * only: the request holds an address, perhaps a password, and the log must not collect them.
 */
export function createCommandQueue<Input, Prepared>(
  command: Command<Input, unknown, Prepared>,
  options: {
    readonly commands: CommandRunner;
    readonly log: FastifyBaseLogger;
    readonly capacity: number;
    readonly failureMessage: string;
  },
): BoundedWorkQueue<Input> {
  return new BoundedWorkQueue<Input>({
    capacity: options.capacity,
    work: async (request) => {
      await options.commands.run(command, request, null);
    },
    onError: (error) =>
      options.log.error({ reason: error instanceof Error ? error.name : 'unknown' }, options.failureMessage),
  });
}
