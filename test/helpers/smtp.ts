import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One mail as the SMTP server received it, with its parts decoded. */
export interface ReceivedMail {
  readonly to: readonly string[];
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  readonly raw: string;
}

/**
 * A real SMTP server in the test process: the service delivers to it over a socket exactly as
 * it would to a provider, and tests read links from what arrived.
 */
export class SmtpSink {
  readonly mails: ReceivedMail[] = [];
  readonly #server: SMTPServer;
  readonly #waiters = new Set<() => void>();
  #port = 0;
  /** When set, every message is refused with this SMTP error (delivery-failure tests). */
  rejectWith: string | null = null;

  private constructor() {
    this.#server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData: (stream, session, callback) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          if (this.rejectWith !== null) {
            callback(new Error(this.rejectWith));
            return;
          }
          const raw = Buffer.concat(chunks).toString('utf8');
          this.mails.push(
            parseMail(
              raw,
              session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()),
            ),
          );
          for (const wake of this.#waiters) wake();
          callback();
        });
      },
    });
  }

  static async start(): Promise<SmtpSink> {
    const sink = new SmtpSink();
    await new Promise<void>((resolve) => sink.#server.listen(0, '127.0.0.1', resolve));
    sink.#port = (sink.#server.server.address() as AddressInfo).port;
    return sink;
  }

  /** SERVICE_SMTP_URL for an app that delivers here. */
  get url(): string {
    return `smtp://127.0.0.1:${this.#port}`;
  }

  mailsTo(address: string): ReceivedMail[] {
    return this.mails.filter((mail) => mail.to.includes(address.toLowerCase()));
  }

  /** Waits for the count-th mail (1-based) to an address, and returns it. */
  async waitForMail(address: string, count = 1, timeoutMs = 5_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const mails = this.mailsTo(address);
      if (mails.length >= count) return mails[count - 1]!;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`no mail #${count} to ${address} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(wake, remaining);
        this.#waiters.add(wake);
      });
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/**
 * The token of the first link in a mail's text part (`?token=` or `&token=`), or, in a mail
 * sent without a configured link base, the bare token on a line of its own.
 */
export function linkTokenOf(mail: ReceivedMail): string {
  const match = /[?&]token=([A-Za-z0-9_%-]+)/.exec(mail.text) ?? /^([A-Za-z0-9_-]{43})$/m.exec(mail.text);
  if (match === null) throw new Error(`no link token in mail "${mail.subject}"`);
  return decodeURIComponent(match[1]!);
}

/** The first http(s) URL in a mail's text part. */
export function linkOf(mail: ReceivedMail): string {
  const match = /https?:\/\/\S+/.exec(mail.text);
  if (match === null) throw new Error(`no link in mail "${mail.subject}"`);
  return match[0];
}

// ---------------------------------------------------------------------------------------------
// A small MIME reader: enough for what nodemailer writes (multipart/alternative, quoted-printable
// or base64 parts, RFC 2047 encoded subjects).

function parseMail(raw: string, to: string[]): ReceivedMail {
  const { headers, body } = splitHeaders(raw);
  const parts = collectParts(headers, body);
  return {
    to,
    subject: decodeEncodedWords(headers.get('subject') ?? ''),
    text: parts.get('text/plain') ?? '',
    html: parts.get('text/html') ?? '',
    raw,
  };
}

function splitHeaders(entity: string): { headers: Map<string, string>; body: string } {
  const normalized = entity.replace(/\r\n/g, '\n');
  const end = normalized.indexOf('\n\n');
  const head = end === -1 ? normalized : normalized.slice(0, end);
  const body = end === -1 ? '' : normalized.slice(end + 2);
  const headers = new Map<string, string>();
  for (const line of head.replace(/\n[ \t]+/g, ' ').split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { headers, body };
}

function collectParts(headers: Map<string, string>, body: string, into = new Map<string, string>()) {
  const contentType = headers.get('content-type') ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (contentType.toLowerCase().startsWith('multipart/') && boundary !== undefined) {
    for (const section of body.split(`--${boundary}`).slice(1)) {
      if (section.startsWith('--')) break;
      const part = splitHeaders(section.replace(/^\n/, ''));
      collectParts(part.headers, part.body, into);
    }
    return into;
  }
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  const encoding = (headers.get('content-transfer-encoding') ?? '7bit').toLowerCase();
  into.set(type, decodeBody(body, encoding));
  return into;
}

function decodeBody(body: string, encoding: string): string {
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (encoding === 'quoted-printable') {
    const bytes = body
      .replace(/=\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

function decodeEncodedWords(value: string): string {
  return value.replace(/=\?utf-8\?([bq])\?([^?]*)\?=/gi, (_match, kind: string, text: string) =>
    kind.toLowerCase() === 'b'
      ? Buffer.from(text, 'base64').toString('utf8')
      : Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
          'latin1',
        ).toString('utf8'),
  );
}
