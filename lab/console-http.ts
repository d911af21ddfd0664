/**
 * Talking to a server's web console from the lab: health checks and run-time flag changes
 * (docs/architecture.md §Contracts). Every request has a timeout so a paused or partitioned node cannot hang the lab.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { DbError, ErrorCode, isErrorCode } from '../common';

export const CONSOLE_REQUEST_TIMEOUT_MS = 3_000;
/** Bodies larger than this are cut off (a console page is small; this guards against a runaway). */
const CONSOLE_BODY_BYTES_MAX = 16 * 1024 * 1024;

export interface HttpReply {
  status: number;
  body: string;
}

/** The CA https consoles are verified against when a call names none (a TLS verify run sets it: trustConsoleCa). */
let defaultCa: Buffer | undefined;

/** Trust `ca` (a cluster's ca.crt) for https console calls that name no CA of their own; undefined: the system's CAs again. */
export function trustConsoleCa(ca: Buffer | undefined): void {
  defaultCa = ca;
}

export function httpRequest(url: string, opts: { method?: string; body?: string; timeoutMs?: number; token?: string | undefined; ca?: Buffer | undefined } = {}): Promise<HttpReply> {
  // https (a console with --certs_dir): verified against `ca` (docs/security.md).
  const ca = opts.ca ?? defaultCa;
  const request = url.startsWith('https:') ? (u: string, o: https.RequestOptions, cb: (res: http.IncomingMessage) => void) => https.request(u, { ...o, ...(ca ? { ca } : {}) }, cb) : http.request;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: opts.method ?? 'GET',
        timeout: opts.timeoutMs ?? CONSOLE_REQUEST_TIMEOUT_MS,
        headers: {
          ...(opts.body !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(opts.body) } : {}),
          // A console with a token or cluster secret asks for it on every change (docs/security.md).
          ...(opts.token !== undefined ? { authorization: `Bearer ${opts.token}` } : {}),
        },
        // A fresh connection per call: a paused server must not poison a pooled socket.
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (bytes > CONSOLE_BODY_BYTES_MAX) {
            req.destroy(new DbError(ErrorCode.MESSAGE_TOO_LARGE, `${url}: reply larger than ${CONSOLE_BODY_BYTES_MAX} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new DbError(ErrorCode.TIMED_OUT, `${url}: no answer within ${opts.timeoutMs ?? CONSOLE_REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', (e) => reject(e instanceof DbError ? e : new DbError(ErrorCode.NETWORK_ERROR, `${url}: ${e.message}`, {}, { cause: e })));
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

export async function isHealthy(webUrl: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const r = await httpRequest(`${webUrl}/api/v1/healthz`, { timeoutMs });
    return r.status === 200;
  } catch {
    return false;
  }
}

/** A master's sys-catalog role from its /api/v1/healthz (undefined when it does not say). */
export async function masterRaftRole(webUrl: string, timeoutMs = 1_000): Promise<string | undefined> {
  try {
    const h = (await getJson(`${webUrl}/api/v1/healthz`, timeoutMs)) as { role?: unknown };
    return typeof h.role === 'string' ? h.role : undefined;
  } catch {
    return undefined;
  }
}

export async function getJson(url: string, timeoutMs?: number): Promise<unknown> {
  const r = await httpRequest(url, { timeoutMs });
  if (r.status !== 200) throw new DbError(ErrorCode.NETWORK_ERROR, `${url}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
  try {
    return JSON.parse(r.body);
  } catch {
    throw new DbError(ErrorCode.NETWORK_ERROR, `${url}: reply is not JSON`);
  }
}

/**
 * POST /api/v1/flags {name, value, force} (with `token` as a bearer token when given). Returns the server's reply value; a DbError from the server
 * (INVALID_ARGUMENT, NOT_SAFE) is rethrown with its code.
 */
export async function postFlag(webUrl: string, name: string, value: string, force: boolean, token?: string): Promise<unknown> {
  const url = `${webUrl}/api/v1/flags`;
  const r = await httpRequest(url, { method: 'POST', body: JSON.stringify({ name, value, force }), token });
  let body: unknown;
  try {
    body = JSON.parse(r.body);
  } catch {
    body = r.body;
  }
  if (r.status >= 200 && r.status < 300) return body;
  const err = wireError(body);
  if (err) throw err;
  throw new DbError(ErrorCode.NETWORK_ERROR, `${url}: HTTP ${r.status}: ${r.body.slice(0, 200)}`);
}

/** Accepts `{code, message}` or `{error: {code, message}}`. */
function wireError(body: unknown): DbError | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const o = body as Record<string, unknown>;
  const e = typeof o['error'] === 'object' && o['error'] !== null ? (o['error'] as Record<string, unknown>) : o;
  if (typeof e['code'] !== 'string' || typeof e['message'] !== 'string') return undefined;
  return new DbError(isErrorCode(e['code']) ? e['code'] : ErrorCode.INTERNAL, e['message']);
}

/**
 * Raft messages a tserver dropped since it started (tserver_raft_messages{direction="dropped"} on its
 * /prometheus-metrics: lab faults such as TEST_drop_traffic_peers, undecodable ones, unknown tablets
 * or peers); undefined when the console does not answer or does not say.
 */
export async function raftMessagesDropped(webUrl: string, timeoutMs = 3_000): Promise<number | undefined> {
  try {
    const r = await httpRequest(`${webUrl}/prometheus-metrics`, { timeoutMs });
    const m = /^tserver_raft_messages\{[^}]*direction="dropped"[^}]*\} (\d+)/m.exec(r.body);
    return r.status === 200 && m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One kind of a server's (master's or tserver's) rpc_connections metric, both sides summed:
 * `closed_unanswered_ping`, connections closed since it started because a keepalive ping stayed
 * unanswered for rpc_connection_timeout_ms; `connect_timed_out`, its own connect attempts given up
 * because their TCP connect went unanswered for rpc_tcp_connect_timeout_ms. Undefined when the
 * console does not answer.
 */
export async function rpcConnectionCount(webUrl: string, kind: 'closed_unanswered_ping' | 'connect_timed_out', timeoutMs = 3_000): Promise<number | undefined> {
  try {
    const r = await httpRequest(`${webUrl}/prometheus-metrics`, { timeoutMs });
    if (r.status !== 200) return undefined;
    let n = 0;
    for (const m of r.body.matchAll(new RegExp(`^rpc_connections\\{[^}]*kind="${kind}"[^}]*\\} (\\d+)`, 'gm'))) n += Number(m[1]);
    return n;
  } catch {
    return undefined;
  }
}
