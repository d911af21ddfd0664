/**
 * HTTP plumbing of the console kit (web-server.ts): the request a page sees, pages served as is,
 * paths, the HTTP status of a DbError, and reading a bounded JSON body.
 */
import type * as http from 'node:http';
import { DbError, ErrorCode } from '../common';

/** Largest request body read; larger ones get 413. */
export const WEB_BODY_BYTES_MAX = 1024 * 1024;
/** Where each page's JSON twin lives: /api/v1/<path>. */
export const API_PREFIX = '/api/v1';

export interface WebRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
}

/** A page served as is, outside the layout (e.g. /varz?raw, /prometheus-metrics). */
export class TextPage {
  constructor(
    readonly body: string,
    readonly contentType = 'text/plain; charset=utf-8',
  ) {}
}

export function statusOf(e: DbError): number {
  switch (e.code) {
    case ErrorCode.INVALID_ARGUMENT:
    case ErrorCode.NOT_SAFE:
    case ErrorCode.MALFORMED_FRAME:
      return 400;
    case ErrorCode.NOT_FOUND:
    case ErrorCode.TABLE_NOT_FOUND:
    case ErrorCode.TABLET_NOT_FOUND:
      return 404;
    case ErrorCode.MESSAGE_TOO_LARGE:
      return 413;
    case ErrorCode.UNAUTHENTICATED:
      return 401;
    case ErrorCode.PERMISSION_DENIED:
      return 403;
    // A read below a history floor: the versions asked for are gone for good.
    case ErrorCode.SNAPSHOT_TOO_OLD:
      return 410;
    // Expected while a leader is elected or a server stops: the caller retries (or follows the hint).
    case ErrorCode.NOT_THE_LEADER:
    case ErrorCode.LEADER_NOT_READY:
    case ErrorCode.SERVICE_UNAVAILABLE:
    case ErrorCode.SHUTTING_DOWN:
      return 503;
    default:
      return 500;
  }
}

export function normalizePath(p: string): string {
  const s = p.startsWith('/') ? p : `/${p}`;
  return s.length > 1 && s.endsWith('/') ? s.slice(0, -1) : s;
}

export class BodyError extends Error {
  constructor(
    readonly status: number,
    readonly error: DbError,
  ) {
    super(error.message);
  }
}

/** Read a JSON body of at most WEB_BODY_BYTES_MAX bytes (413 beyond, 400 when it is not JSON). */
export function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    req.on('data', (c: Buffer) => {
      if (done) return;
      bytes += c.length;
      if (bytes > WEB_BODY_BYTES_MAX) {
        done = true;
        req.resume(); // drain the rest so the answer can be read
        reject(new BodyError(413, new DbError(ErrorCode.MESSAGE_TOO_LARGE, `request body over ${WEB_BODY_BYTES_MAX} bytes`)));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text.trim() === '' ? {} : (JSON.parse(text) as unknown));
      } catch (e) {
        reject(new BodyError(400, new DbError(ErrorCode.INVALID_ARGUMENT, `request body is not JSON: ${(e as Error).message}`)));
      }
    });
    req.on('error', (e) => {
      if (!done) {
        done = true;
        reject(new BodyError(400, new DbError(ErrorCode.INVALID_ARGUMENT, `cannot read request body: ${e.message}`)));
      }
    });
  });
}
