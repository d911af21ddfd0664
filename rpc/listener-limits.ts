/**
 * Limits of the listening sockets (docs/security.md): a console's request and an RPC port's WebSocket
 * handshake must arrive whole within a bound, headers stay small, and a client that sends garbage or
 * stalls is answered with a status (400, 408, 413, 431) and closed — never left holding a socket,
 * never taking the process down.
 */
import type { Duplex } from 'node:stream';
import { defineFlag, ErrorCode, type Logger } from '../common';
import { toJson } from './json';

export const WEBSERVER_REQUEST_TIMEOUT_MS = defineFlag({
  name: 'webserver_request_timeout_ms',
  type: 'int',
  default: 5_000,
  help: 'A console request (headers and body) must arrive whole within this long; a half-sent request or a body shorter than its Content-Length is answered 408 and closed.',
  validate: (v) => (v >= 100 && v <= 600_000 ? undefined : 'between 100 and 600000'),
});

export const RPC_HANDSHAKE_TIMEOUT_MS = defineFlag({
  name: 'rpc_handshake_timeout_ms',
  type: 'int',
  default: 5_000,
  help: "An RPC connection's WebSocket upgrade request must arrive whole, and (with a cluster secret) its challenge be answered, within this long; else it is closed (408 for a half-sent upgrade).",
  validate: (v) => (v >= 100 && v <= 600_000 ? undefined : 'between 100 and 600000'),
});

export const RPC_FRAME_TIMEOUT_MS = defineFlag({
  name: 'rpc_frame_timeout_ms',
  type: 'int',
  default: 5_000,
  help: 'An RPC connection that began a WebSocket frame and then sent nothing more for this long is closed (a truncated frame). A frame still arriving, however slowly, is bounded by rpc_connection_timeout_ms instead (its keepalive pong cannot pass the half frame).',
  validate: (v) => (v >= 100 && v <= 600_000 ? undefined : 'between 100 and 600000'),
});

export const RPC_CONNECTIONS_PER_IP_MAX = defineFlag({
  name: 'rpc_connections_per_ip_max',
  type: 'int',
  default: 1_024,
  help: 'RPC connections one remote IP address may hold open on a server; a connect beyond it is refused with HTTP 503 before the WebSocket opens. Servers and clients keep one connection per server they talk to, so a cluster is far below it.',
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

export const WEBSERVER_CONNECTIONS_PER_IP_MAX = defineFlag({
  name: 'webserver_connections_per_ip_max',
  type: 'int',
  default: 256,
  help: 'Console connections one remote IP address may hold open on a server; a connection beyond it is answered HTTP 503 and closed (over https it is closed). A browser opens a handful.',
  validate: (v) => (v >= 1 ? undefined : 'at least 1'),
});

/** Largest request header block (Node's default): more is answered 431. */
export const HTTP_HEADER_BYTES_MAX = 16 * 1024;

/** How often Node checks its connections for header and request timeouts. */
export function checkingIntervalMs(timeoutMs: number): number {
  return Math.max(25, Math.min(1_000, Math.floor(timeoutMs / 5)));
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large' };

/** The status a client error of Node's HTTP parser is answered with. */
export function clientErrorStatus(code: string | undefined): 400 | 408 | 413 | 431 {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return 408;
    case 'HPE_HEADER_OVERFLOW':
      return 431;
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return 413;
    default:
      return 400;
  }
}

/**
 * Answer a request Node's HTTP server could not take (its 'clientError'): a status and a DbError JSON
 * body, then close. A socket already reset or half-answered is only destroyed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, log: Logger, where: string): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = clientErrorStatus(err.code);
  const code = status === 408 ? ErrorCode.TIMED_OUT : status === 400 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.MESSAGE_TOO_LARGE;
  const body = toJson({ code, message: `${where}: ${STATUS_TEXT[status]} (${err.code ?? err.message})`, details: { status } });
  log.debug({ err, status }, `${where}: bad or late request; answered ${status} and closed`);
  socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  // A peer that does not read its answer must not keep the socket either.
  setTimeout(() => socket.destroy(), 1_000).unref();
}
