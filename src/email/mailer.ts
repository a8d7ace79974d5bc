import type { FastifyBaseLogger } from 'fastify';
import type { Transporter } from 'nodemailer';

/** The kinds of mail the service sends; each has its own template (templates.ts). */
export type MailKind =
  | 'verification'
  | 'password-reset'
  | 'email-changed'
  | 'two-factor-code'
  | 'registration'
  | 'registration-attempt'
  | 'registration-confirmed'
  | 'restriction-lifted';

export interface Mail {
  readonly kind: MailKind;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

/** Where mail goes: an SMTP server, or the log when no provider is configured. */
export interface MailTransport {
  /** `smtp` or `log`: reported by the health check and start-up log. */
  readonly name: string;
  deliver(mail: Mail, from: string): Promise<void>;
  close(): void;
}

export interface MailerOptions {
  readonly from: string;
  /** Mails waiting for delivery beyond this are dropped and logged, so a dead provider cannot exhaust memory. */
  readonly capacity?: number;
}

export const DEFAULT_MAIL_QUEUE_CAPACITY = 10_000;

/**
 * Sends mail off the request path (spec §What the service does 13): `send` only queues, and one
 * worker delivers in order. A delivery failure is logged and never reaches the caller. Logs
 * name the kind and the address, never the subject or body: bodies carry link tokens, and a
 * token in a log is a leaked credential.
 */
export class Mailer {
  readonly #transport: MailTransport;
  readonly #log: FastifyBaseLogger;
  readonly #from: string;
  readonly #capacity: number;
  readonly #queue: Mail[] = [];
  #draining: Promise<void> | null = null;
  #closed = false;

  constructor(transport: MailTransport, log: FastifyBaseLogger, options: MailerOptions) {
    this.#transport = transport;
    this.#log = log;
    this.#from = options.from;
    this.#capacity = options.capacity ?? DEFAULT_MAIL_QUEUE_CAPACITY;
  }

  get transportName(): string {
    return this.#transport.name;
  }

  /** Queues a mail; never throws and never waits for delivery. */
  send(mail: Mail): void {
    if (this.#closed || this.#queue.length >= this.#capacity) {
      this.#log.error({ kind: mail.kind }, 'mail dropped: the delivery queue is full or closed');
      return;
    }
    this.#queue.push(mail);
    this.#draining ??= this.#drain();
  }

  /** Resolves once every queued mail has been attempted (tests, graceful shutdown). */
  async idle(): Promise<void> {
    while (this.#draining !== null) await this.#draining;
  }

  /** Delivers what is queued, then closes the transport. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.idle();
    this.#transport.close();
  }

  async #drain(): Promise<void> {
    try {
      for (let mail = this.#queue.shift(); mail !== undefined; mail = this.#queue.shift()) {
        try {
          await this.#transport.deliver(mail, this.#from);
        } catch (error) {
          // Only the error's class and code: a provider's reply could quote what was sent.
          this.#log.error(
            { kind: mail.kind, to: mail.to, reason: describeFailure(error) },
            'mail delivery failed',
          );
        }
      }
    } finally {
      this.#draining = null;
    }
  }
}

function describeFailure(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.name} ${code}` : error.name;
  }
  return 'unknown';
}

/**
 * SMTP delivery through nodemailer (`smtp://` or `smtps://`, credentials in the URL). The
 * library loads with the first mail: every HTTP thread holds its own copy of what it imports,
 * and an instance without mail to send need not hold this one.
 */
export function smtpTransport(smtpUrl: string): MailTransport {
  let transporter: Promise<Transporter> | null = null;
  const connected = () =>
    (transporter ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport(smtpUrl),
    ));
  return {
    name: 'smtp',
    async deliver(mail, from) {
      await (
        await connected()
      ).sendMail({
        from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
      });
    },
    close: () => void transporter?.then((opened) => opened.close()),
  };
}

/**
 * No provider configured: record that a mail of a kind went to an address, and nothing else.
 * The link or token is deliberately left out, so logs never hold a working credential.
 */
export function loggingTransport(log: FastifyBaseLogger): MailTransport {
  return {
    name: 'log',
    async deliver(mail) {
      log.info({ kind: mail.kind, to: mail.to }, 'mail not delivered: no email provider configured');
    },
    close: () => {},
  };
}

export function createMailer(
  email: { readonly smtpUrl: string | null; readonly from: string },
  log: FastifyBaseLogger,
): Mailer {
  const transport = email.smtpUrl === null ? loggingTransport(log) : smtpTransport(email.smtpUrl);
  return new Mailer(transport, log, { from: email.from });
}
