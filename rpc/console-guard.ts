/**
 * What a console asks of a request that changes something (any method but GET/HEAD), before it reads
 * its body (docs/security.md). A web page open in a local browser can send a POST to a loopback
 * console: a form post (CSRF) carries a form content type and the page's Origin; a DNS-rebinding page
 * carries its own host name in Host. So a mutation must come as application/json (which a page can
 * only send with a CORS preflight, which no console answers), with a Host naming this server or
 * loopback, with no Origin or this console's own, and — when the server has a console token or a
 * cluster secret — with `Authorization: Bearer <one of them>`.
 */
import * as os from 'node:os';
import type * as http from 'node:http';
import { DbError, defineFlag, ErrorCode, FlagTag } from '../common';
import { matchesOne } from './cluster-secret';

export const WEBSERVER_TOKEN_FILE = defineFlag({
  name: 'webserver_token_file',
  type: 'string',
  default: '',
  help: 'File holding the console token (one line; a second line is also accepted, for rotation): console mutations (POST /api/v1/flags, ...) then need `Authorization: Bearer <token>` (the cluster secret is accepted too). Without a token or a cluster secret, mutations are open to loopback callers that pass the Host, Origin and content-type checks.',
  tags: [FlagTag.sensitive],
});

export interface ConsoleGuardOptions {
  /** Host names and addresses of this server besides loopback and its interfaces (bind host, broadcast name). */
  ownHosts: readonly string[];
  /** Bearer tokens accepted (console tokens, cluster secrets); none: no credentials asked. */
  credentials: readonly Buffer[];
}

/** A refusal: the HTTP status and the error to answer with (extra headers for a 401). */
export interface GuardRefusal {
  status: 401 | 403;
  error: DbError;
}

function refuse(reason: string, message: string): GuardRefusal {
  return { status: 403, error: new DbError(ErrorCode.PERMISSION_DENIED, message, { reason }) };
}

/** `host[:port]` or `[v6][:port]` → the lower-case host without brackets. */
export function hostOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end < 0 ? h : h.slice(1, end);
  }
  const colon = h.indexOf(':');
  return colon < 0 ? h : h.slice(0, colon);
}

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

/** This machine's own names and addresses (its host name and every interface's address). */
function machineHosts(): string[] {
  const out = [os.hostname().toLowerCase()];
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.push(a.address.toLowerCase());
  return out;
}

export class ConsoleGuard {
  private readonly hosts: Set<string>;

  constructor(private readonly opts: ConsoleGuardOptions) {
    this.hosts = new Set([...opts.ownHosts.map((h) => hostOf(h)), ...machineHosts()].filter((h) => h !== '' && h !== '0.0.0.0' && h !== '::'));
  }

  get asksCredentials(): boolean {
    return this.opts.credentials.length > 0;
  }

  /** Undefined when the mutation may go on; else what to answer. */
  check(req: http.IncomingMessage): GuardRefusal | undefined {
    const hostHeader = req.headers.host;
    if (typeof hostHeader !== 'string' || hostHeader === '') return refuse('host', 'a console mutation needs a Host header');
    const host = hostOf(hostHeader);
    if (!isLoopbackHost(host) && !this.hosts.has(host)) {
      return refuse('host', `Host '${hostHeader.slice(0, 100)}' is not one of this server's names (a DNS-rebinding page would send its own)`);
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !sameOrigin(origin, hostHeader)) {
      return refuse('origin', `Origin '${origin.slice(0, 100)}' is not this console's (a cross-site page): refused`);
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/json') {
      return refuse('content_type', `a console mutation takes Content-Type: application/json, not '${type.slice(0, 100) || 'none'}' (a form post from a web page is refused)`);
    }
    if (this.opts.credentials.length > 0) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
      if (!m) return { status: 401, error: new DbError(ErrorCode.UNAUTHENTICATED, 'this console needs Authorization: Bearer <console token or cluster secret> for changes', { reason: 'no_credentials' }) };
      if (!matchesOne(Buffer.from(m[1]!, 'utf8'), this.opts.credentials)) {
        return { status: 401, error: new DbError(ErrorCode.UNAUTHENTICATED, 'the bearer token is neither this console\'s token nor the cluster secret', { reason: 'wrong_credentials' }) };
      }
    }
    return undefined;
  }
}

/** An Origin is the console's own when its scheme is http(s) and its host:port is the request's Host. */
function sameOrigin(origin: string, hostHeader: string): boolean {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false; // 'null' (a sandboxed or file: page) and garbage
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
  return u.host.toLowerCase() === hostHeader.trim().toLowerCase();
}
