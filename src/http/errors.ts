import type { FastifyError, FastifyInstance } from 'fastify';
import { failure } from './envelope.ts';
import { InvalidField, MESSAGE_STATUS, type Message, Refusal } from './messages.ts';
import { MALFORMED } from './validation.ts';

const INTERNAL_ERROR: Message = 'Internal server error, please try again later';

/**
 * Turns everything that goes wrong into the DataOutput envelope with its status from the message
 * table. A request that cannot be bound answers DataOutput even on list endpoints (spec §Resources).
 * Unexpected failures answer 500 with the fixed message; exception text is added only on an
 * instance that allows sensitive diagnostics and listens on loopback.
 */
export function installErrorHandling(app: FastifyInstance, exposeDiagnostics: boolean): void {
  app.setErrorHandler((error: FastifyError | Error, request, reply) => {
    if (error instanceof Refusal) {
      return reply
        .code(error.status)
        .headers(error.headers)
        .send(failure([error.message]));
    }
    if (error instanceof InvalidField) {
      return reply.code(400).send(failure([error.message]));
    }
    if (isMalformedRequest(error)) {
      return reply.code(400).send(failure([MALFORMED]));
    }
    request.log.error({ err: error }, 'unexpected failure');
    const reasons: string[] = [INTERNAL_ERROR];
    if (exposeDiagnostics) reasons.push(String(error.stack ?? error.message));
    return reply.code(MESSAGE_STATUS[INTERNAL_ERROR]).send(failure(reasons));
  });

  app.setNotFoundHandler((_request, reply) => reply.code(404).send(failure(['Not found.'])));
}

/** Fastify's own refusals of a body or content type: not JSON, empty JSON, too large. */
function isMalformedRequest(error: FastifyError | Error): boolean {
  const { code, statusCode } = error as FastifyError;
  if (typeof code === 'string' && (code.startsWith('FST_ERR_CTP_') || code === 'FST_ERR_VALIDATION'))
    return true;
  return statusCode === 400 || statusCode === 413 || statusCode === 415;
}
