/**
 * The console kit every server uses (docs/architecture.md §Consoles): an HTTP server with HTML pages, each with a JSON twin
 * under /api/v1/<path> (YugabyteDB style), plus the built-in pages /varz, /healthz, /logs, /metrics,
 * /prometheus-metrics, /threadz, /rpcz (given the server's RPC connections) and /mem-trackers, and POST /api/v1/flags to change a flag at run time.
 * Errors are DbError JSON: 400 for bad input, 401/403 for refused mutations (console-guard.ts), 404 for
 * unknown paths, 408 for requests not whole within webserver_request_timeout_ms, 410 for reads below a
 * history floor (SNAPSHOT_TOO_OLD), 413 for big bodies, 431 for big headers, 503 while a leader is
 * elected or a server stops, 500 otherwise.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type * as net from 'node:net';
import { DbError, ErrorCode, silentLogger, type Flags, type Logger, type LogRing } from '../common';
import { clusterSecretsOf, readSecretFile } from './cluster-secret';
import { ConsoleGuard, isLoopbackHost, WEBSERVER_TOKEN_FILE, type GuardRefusal } from './console-guard';
import { answerClientError, checkingIntervalMs, HTTP_HEADER_BYTES_MAX, WEBSERVER_CONNECTIONS_PER_IP_MAX, WEBSERVER_REQUEST_TIMEOUT_MS } from './listener-limits';
import { CERTS_DIR, certNodeName, hostOfAddress, serverTlsOf } from './tls';
import { escapeHtml, htmlTable, layout, link, type Cell, type NavItem } from './html';
import { toJson } from './json';
import type { Metrics } from './metrics';
import { rpczHtml, type Rpcz } from './rpcz';
import { API_PREFIX, BodyError, normalizePath, readJsonBody, statusOf, TextPage, type WebRequest } from './web-http';
import { flagJson, formatUptime, memTrackersHtml, setFlagFromBody, threadzHtml, threadzJson, varzHtml, type MemTrackerNode } from './web-builtin-pages';

export { WEB_BODY_BYTES_MAX, TextPage, type WebRequest } from './web-http';
export { formatUptime, threadzJson, type MemTrackerNode, type Threadz } from './web-builtin-pages';

/** Log lines /logs shows unless ?lines= says otherwise. */
const LOG_LINES_DEFAULT = 200;


export interface RouteHandlers {
  /** Page body (inside the shared layout), or a TextPage served as is. */
  html?: (req: WebRequest) => string | TextPage | Promise<string | TextPage>;
  /** The JSON twin, served at /api/v1/<path>. */
  json?: (req: WebRequest) => unknown | Promise<unknown>;
  /** Page title (defaults to the path). */
  title?: string;
  /** Show in the nav bar with this label. */
  nav?: string;
}

export type PostHandler = (body: unknown, req: WebRequest) => unknown | Promise<unknown>;


export interface WebServerOptions {
  /** "master", "tserver", ...: shown in every page title. */
  kind: string;
  host?: string;
  port: number;
  flags: Flags;
  logRing?: LogRing;
  metrics?: Metrics;
  memTrackers?: () => MemTrackerNode;
  /** Extra facts for /healthz (e.g. { uuid }); returning ok: false makes it answer 503. */
  health?: () => { ok: boolean; [k: string]: unknown };
  /** The server's RPC connections and calls in flight, for /rpcz (rpc/rpcz.ts); no page without it. */
  rpcz?: () => Rpcz;
  /** This server's other names (its RPC bind host, broadcast name): a mutation's Host may be one (console-guard.ts). */
  ownHosts?: readonly string[];
  log?: Logger;
}

/** One fact of a console's home page: shown as a row, and under `key` in the home page's JSON twin. */
export interface OverviewItem {
  key: string;
  label: string;
  value: unknown;
  /** How the page shows it (default: the value as text). */
  html?: Cell;
}

interface Route extends RouteHandlers {
  path: string;
}


export class WebServer {
  private readonly routes = new Map<string, Route>();
  /** JSON twins by their /api/v1 path. */
  private readonly apiRoutes = new Map<string, Route>();
  private readonly posts = new Map<string, PostHandler>();
  private server: http.Server | https.Server | undefined;
  private boundAddress: string;
  private readonly log: Logger;
  private readonly startedMs = Date.now();
  private overview: (() => OverviewItem[] | Promise<OverviewItem[]>) | undefined;
  /** Set by start(): what a mutation must show (console-guard.ts). */
  private guard: ConsoleGuard | undefined;

  constructor(private readonly opts: WebServerOptions) {
    this.log = opts.log ?? silentLogger();
    this.boundAddress = `${opts.host ?? '127.0.0.1'}:${opts.port}`;
    this.addBuiltins();
  }

  get address(): string {
    return this.boundAddress;
  }

  route(path: string, h: RouteHandlers): void {
    const p = normalizePath(path);
    const r: Route = { ...h, path: p };
    if (h.html) this.routes.set(p, r);
    if (h.json) this.apiRoutes.set(p === '/' ? API_PREFIX : API_PREFIX + p, r);
  }

  /**
   * The facts the home page shows first (a master: its role, the tablet servers alive, tablets
   * without a leader or short of replicas; a tserver: its tablets and leaders). The home page's JSON
   * twin (`/api/v1`) carries them under `overview`.
   */
  setOverview(f: () => OverviewItem[] | Promise<OverviewItem[]>): void {
    this.overview = f;
  }

  /** A POST route taking and returning JSON, at the exact path given (e.g. '/api/v1/flags'). */
  post(path: string, h: PostHandler): void {
    this.posts.set(normalizePath(path), h);
  }

  async start(): Promise<void> {
    // Read the token and secret files now: a bad one stops the server's start with a clear error.
    const tokenFile = this.opts.flags.get(WEBSERVER_TOKEN_FILE);
    const credentials = [...(tokenFile ? readSecretFile(tokenFile, WEBSERVER_TOKEN_FILE.name) : []), ...clusterSecretsOf(this.opts.flags)];
    const host = this.opts.host ?? '127.0.0.1';
    if (!isLoopbackHost(host) && credentials.length === 0) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `console address ${host} is not loopback: a console reachable from other hosts needs --webserver_token_file or --cluster_secret_file (docs/security.md)`, { host });
    }
    this.guard = new ConsoleGuard({ ownHosts: [this.opts.host ?? '127.0.0.1', ...(this.opts.ownHosts ?? [])], credentials });
    // A request must arrive whole (headers and body) within the timeout: a half-sent one or a body
    // shorter than its Content-Length is answered 408 and closed (answerClientError).
    const timeoutMs = this.opts.flags.get(WEBSERVER_REQUEST_TIMEOUT_MS);
    const limits: http.ServerOptions = { requestTimeout: timeoutMs, headersTimeout: timeoutMs, connectionsCheckingInterval: checkingIntervalMs(timeoutMs), maxHeaderSize: HTTP_HEADER_BYTES_MAX };
    const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      this.serve(req, res).catch((err: unknown) => {
        // serve() answers its own errors; this is only a last guard so one request never kills the process.
        this.log.error({ err }, 'console request failed');
        if (!res.headersSent) this.sendJson(res, 500, DbError.from(err).toWire());
        else res.destroy();
      });
    };
    // --certs_dir: https with the server's node certificate (the same as its RPC port's, rpc/tls.ts).
    const certsDir = this.opts.flags.get(CERTS_DIR);
    const tls = certsDir ? serverTlsOf(certsDir, certNodeName(this.opts.flags, this.certHost())) : undefined;
    const server = tls ? https.createServer({ ...limits, cert: tls.cert, key: tls.key, handshakeTimeout: timeoutMs }, handler) : http.createServer(limits, handler);
    if (tls) server.on('tlsClientError', (_err, socket) => socket.destroy());
    this.limitConnectionsPerIp(server, !tls);
    server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket, this.log, 'console'));
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err) => reject(new DbError(ErrorCode.IO_ERROR, `console cannot listen on ${this.boundAddress}: ${err.message}`, {}, { cause: err })));
      server.listen(this.opts.port, this.opts.host ?? '127.0.0.1', () => resolve());
    });
    server.on('error', (err) => this.log.warn({ err }, 'console server error'));
    const a = server.address();
    if (a && typeof a === 'object') this.boundAddress = `${this.opts.host ?? '127.0.0.1'}:${a.port}`;
    this.server = server;
  }

  /**
   * webserver_connections_per_ip_max: a connection from an address that already holds that many is
   * answered 503 (plain http; over https, before the handshake, only a close is possible) and closed.
   */
  private limitConnectionsPerIp(server: http.Server | https.Server, plain: boolean): void {
    const open = new Map<string, number>();
    server.on('connection', (socket: net.Socket) => {
      const ip = socket.remoteAddress ?? '';
      const n = open.get(ip) ?? 0;
      if (n >= this.opts.flags.get(WEBSERVER_CONNECTIONS_PER_IP_MAX)) {
        this.log.warn({ ip, max: this.opts.flags.get(WEBSERVER_CONNECTIONS_PER_IP_MAX) }, 'console connection refused: webserver_connections_per_ip_max reached for this address');
        const body = 'too many connections from this address\n';
        if (plain) socket.end(`HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        socket.destroySoon();
        return;
      }
      open.set(ip, n + 1);
      socket.once('close', () => {
        const m = (open.get(ip) ?? 1) - 1;
        if (m <= 0) open.delete(ip);
        else open.set(ip, m);
      });
    });
  }

  /** The host the server's certificate is named by: its bind host, else (binding every interface) its other names. */
  private certHost(): string {
    const wildcard = (h: string): boolean => h === '0.0.0.0' || h === '::' || h === '';
    const all = [this.opts.host ?? '127.0.0.1', ...(this.opts.ownHosts ?? [])].map(hostOfAddress);
    return all.find((h) => !wildcard(h)) ?? all[0]!;
  }

  /** http or https (--certs_dir). */
  get scheme(): 'http' | 'https' {
    return this.opts.flags.get(CERTS_DIR) ? 'https' : 'http';
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Wrap a body in the shared layout (for pages a server renders itself). */
  page(title: string, body: string): string {
    const nav: NavItem[] = [];
    for (const r of this.routes.values()) if (r.nav) nav.push({ href: r.path, label: r.nav });
    return layout({ kind: this.opts.kind, address: this.boundAddress, title, nav, body });
  }

  // ---- request handling ---------------------------------------------------------------------------

  private sendJson(res: http.ServerResponse, status: number, v: unknown): void {
    const body = toJson(v);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
    res.end(body);
  }

  private sendHtml(res: http.ServerResponse, status: number, html: string): void {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(html);
  }

  /** A refused mutation: its body is never parsed (Node discards it, within the request timeout). */
  private refuse(res: http.ServerResponse, r: GuardRefusal): void {
    this.log.warn({ reason: r.error.details['reason'], status: r.status }, `console mutation refused: ${r.error.message}`);
    res.writeHead(r.status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      ...(r.status === 401 ? { 'www-authenticate': 'Bearer realm="tessera console"' } : {}),
    });
    res.end(toJson(r.error.toWire()));
  }

  private sendError(res: http.ServerResponse, asJson: boolean, e: DbError, status = statusOf(e)): void {
    // Only a failure of the server itself is worth a warning: a 503 (NOT_THE_LEADER while an election
    // runs, SHUTTING_DOWN, ...) is an answer a retry or the leader fixes.
    if (status === 500) this.log.warn({ err: e }, 'console handler failed');
    if (asJson) this.sendJson(res, status, e.toWire());
    else this.sendHtml(res, status, this.page(`Error ${status}`, `<p><b>${escapeHtml(e.code)}</b>: ${escapeHtml(e.message)}</p>`));
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    const path = normalizePath(url.pathname);
    const wreq: WebRequest = { method: req.method ?? 'GET', path, query: url.searchParams, headers: req.headers };
    const isApi = path === API_PREFIX || path.startsWith(API_PREFIX + '/');
    try {
      if (wreq.method !== 'GET' && wreq.method !== 'HEAD') {
        const refusal = this.guard?.check(req);
        if (refusal) {
          this.refuse(res, refusal);
          return;
        }
      }
      if (wreq.method === 'POST') {
        const h = this.posts.get(path);
        if (!h) throw new DbError(ErrorCode.NOT_FOUND, `no POST route ${path}`, { path });
        const body = await readJsonBody(req);
        this.sendJson(res, 200, await h(body, wreq));
        return;
      }
      if (wreq.method !== 'GET' && wreq.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD, POST' });
        res.end();
        return;
      }
      if (isApi) {
        const r = this.apiRoutes.get(path);
        if (!r?.json) throw new DbError(ErrorCode.NOT_FOUND, `no JSON route ${path}`, { path });
        this.sendJson(res, 200, await r.json(wreq));
        return;
      }
      const r = this.routes.get(path);
      if (!r?.html) throw new DbError(ErrorCode.NOT_FOUND, `no page ${path}`, { path });
      const body = await r.html(wreq);
      if (body instanceof TextPage) {
        res.writeHead(200, { 'content-type': body.contentType, 'cache-control': 'no-store' });
        res.end(body.body);
      } else {
        this.sendHtml(res, 200, this.page(r.title ?? path, body));
      }
    } catch (e) {
      if (e instanceof BodyError) {
        this.sendJson(res, e.status, e.error.toWire());
        return;
      }
      this.sendError(res, isApi || wreq.method === 'POST', DbError.from(e));
    }
  }

  // ---- built-in pages -----------------------------------------------------------------------------

  private addBuiltins(): void {
    const pages = (): Route[] => [...this.routes.values()].filter((r) => r.path !== '/');
    const uptime = (): OverviewItem => ({ key: 'uptimeMs', label: 'Up for', value: Date.now() - this.startedMs, html: formatUptime(Date.now() - this.startedMs) });
    this.route('/', {
      title: 'Home',
      html: async () => {
        const items = [...((await this.overview?.()) ?? []), uptime()];
        const overview = htmlTable(['', ''], items.map((i) => [i.label, i.html !== undefined ? i.html : typeof i.value === 'object' && i.value !== null ? toJson(i.value) : (i.value as Cell)]), { id: 'overview' });
        const links = htmlTable(['page', 'JSON'], pages().map((r) => [link(r.path, r.title ?? r.path), r.json ? link(`${API_PREFIX}${r.path}`, `${API_PREFIX}${r.path}`) : '']), { id: 'pages' });
        return `<h2>Overview</h2>${overview}<h2>Pages</h2>${links}`;
      },
      json: async () => {
        const items = [...((await this.overview?.()) ?? []), uptime()];
        return {
          kind: this.opts.kind,
          address: this.boundAddress,
          overview: Object.fromEntries(items.map((i) => [i.key, i.value])),
          pages: pages().map((r) => ({ path: r.path, title: r.title ?? r.path, ...(r.json ? { json: `${API_PREFIX}${r.path}` } : {}) })),
        };
      },
    });
    this.route('/varz', { title: 'Flags', nav: 'Flags', html: (req) => varzHtml(this.opts.flags, req), json: () => ({ flags: flagJson(this.opts.flags) }) });
    this.post(`${API_PREFIX}/flags`, (body) => setFlagFromBody(this.opts.flags, this.log, body));
    this.route('/healthz', {
      title: 'Health',
      html: () => {
        const h = this.healthJson();
        return `<p>${h.ok ? 'OK' : 'NOT OK'}</p><pre>${escapeHtml(toJson(h, 2))}</pre>`;
      },
      json: () => this.healthJson(),
    });
    this.route('/logs', {
      title: 'Logs',
      nav: 'Logs',
      html: (req) => `<pre>${escapeHtml(this.logLines(req).join('\n'))}</pre>`,
      json: (req) => ({ lines: this.logLines(req) }),
    });
    this.route('/metrics', { title: 'Metrics', nav: 'Metrics', html: async () => new TextPage(toJson(await this.metricsJson(), 2), 'application/json; charset=utf-8'), json: () => this.metricsJson() });
    this.route('/prometheus-metrics', { title: 'Prometheus metrics', html: async () => new TextPage(this.opts.metrics ? await this.opts.metrics.prometheus() : '', this.opts.metrics?.contentType) });
    this.route('/threadz', { title: 'Threads', html: () => threadzHtml(threadzJson()), json: () => threadzJson() });
    const rpcz = this.opts.rpcz;
    if (rpcz) this.route('/rpcz', { title: 'RPC connections and calls in flight', html: () => rpczHtml(rpcz()), json: () => rpcz() });
    this.route('/mem-trackers', {
      title: 'Memory trackers',
      nav: 'Memory',
      html: () => memTrackersHtml(this.opts.memTrackers?.()),
      json: () => this.opts.memTrackers?.() ?? { id: 'root', currentBytes: 0, peakBytes: 0, children: [] },
    });
  }

  /** /metrics is the JSON form even without /api/v1 (YugabyteDB serves JSON there). */
  private async metricsJson(): Promise<unknown> {
    return this.opts.metrics ? await this.opts.metrics.json() : [];
  }

  private healthJson(): { ok: boolean; [k: string]: unknown } {
    const extra = this.opts.health?.() ?? { ok: true };
    return { kind: this.opts.kind, address: this.boundAddress, uptimeMs: Date.now() - this.startedMs, ...extra };
  }

  private logLines(req: WebRequest): string[] {
    const n = Number(req.query.get('lines') ?? LOG_LINES_DEFAULT);
    return this.opts.logRing?.tail(Number.isFinite(n) && n > 0 ? Math.floor(n) : LOG_LINES_DEFAULT) ?? [];
  }




}

