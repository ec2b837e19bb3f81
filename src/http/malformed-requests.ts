import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ErrorEnvelope } from '../core/contract.js';
import { newId } from '../core/ids.js';

/** What Node's HTTP parser refused, by the error code it reports. */
const REFUSALS: Record<string, { status: number; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'headers_too_large',
    message: 'The request headers are larger than this server accepts (16 KB in all); send fewer or shorter headers.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'request_timeout',
    message: 'The request did not arrive in time; send it again.',
  },
};

const MALFORMED = {
  status: 400,
  code: 'validation_failed',
  message: 'The request is not valid HTTP: a header, the request line or the body framing is malformed.',
};

/**
 * Answers requests that Node's HTTP parser refuses before any route sees them (headers over the
 * limit, a NUL in a header, broken framing) with the documented error envelope and a request id,
 * instead of Node's bare status line.
 */
export function answerMalformedRequests(server: Server, logger: Logger): void {
  // The response each connection is sending, while it sends it: a parser error on a kept-alive
  // connection can arrive while the answer to its previous request is under way.
  const answering = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    answering.set(request.socket, response);
    response.on('close', () => {
      if (answering.get(request.socket) === response) answering.delete(request.socket);
    });
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A response already under way, or a connection the client closed, cannot take an answer.
    if (error.code === 'ECONNRESET' || !socket.writable || answering.get(socket)?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = (error.code && REFUSALS[error.code]) || MALFORMED;
    const requestId = newId('req');
    logger.info({ requestId, reason: error.code, status: refusal.status }, 'refused a malformed request');
    const body: ErrorEnvelope = { error: { code: refusal.code, message: refusal.message, requestId } };
    const json = JSON.stringify(body);
    socket.end(
      [
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}`,
        'Content-Type: application/json; charset=utf-8',
        `Content-Length: ${Buffer.byteLength(json)}`,
        `X-Request-Id: ${requestId}`,
        'Cache-Control: no-store',
        'X-Content-Type-Options: nosniff',
        'Connection: close',
        '',
        json,
      ].join('\r\n'),
    );
  });
}
