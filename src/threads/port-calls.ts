import type { MessagePort } from 'node:worker_threads';

/**
 * Calls from one thread to another over a MessagePort: what the HTTP threads ask of the main
 * thread (credential-check slots). Each call carries an id, and its answer
 * names it; a message sent with `tell` wants no answer.
 */

interface Envelope<Message> {
  /** 0: no answer wanted. */
  readonly id: number;
  readonly message: Message;
}

export interface PortCaller<Request, Answer> {
  /** Sends `request` and resolves with the other side's answer. */
  call(request: Request): Promise<Answer>;
  /** Sends `request`; no answer comes back. */
  tell(request: Request): void;
}

/** The asking side. The port never keeps a thread alive: what uses it (a server) does. */
export function portCaller<Request, Answer>(port: MessagePort): PortCaller<Request, Answer> {
  const waiting = new Map<number, (answer: Answer) => void>();
  let lastId = 0;
  port.on('message', ({ id, message }: Envelope<Answer>) => {
    waiting.get(id)?.(message);
    waiting.delete(id);
  });
  port.unref();
  return {
    call: (request) =>
      new Promise<Answer>((resolve) => {
        lastId += 1;
        waiting.set(lastId, resolve);
        port.postMessage({ id: lastId, message: request } satisfies Envelope<Request>);
      }),
    tell: (request) => port.postMessage({ id: 0, message: request } satisfies Envelope<Request>),
  };
}

/** The answering side: `answer` handles each request; its result goes back to a `call`. */
export function answerCalls<Request, Answer>(
  port: MessagePort,
  answer: (request: Request) => Answer | Promise<Answer>,
): void {
  port.on('message', ({ id, message }: Envelope<Request>) => {
    void Promise.resolve(answer(message)).then((result) => {
      if (id !== 0) port.postMessage({ id, message: result } satisfies Envelope<Answer>);
    });
  });
}
