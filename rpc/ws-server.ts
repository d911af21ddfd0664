/**
 * RPC server over WebSocket. One connection per client process carries every service; each binary
 * message is one Frame. Untrusted input is answered (when a call id is known) or the offending
 * connection is closed; the server itself keeps serving everyone else.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type * as tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { DbError, ErrorCode, RPC_INFLIGHT_CALLS_MAX, RPC_OUTBOUND_QUEUE_BYTES_MAX, type Logger, type WireError } from '../common';
import { decodeFrame, encodeFrame, FrameKind } from './frame-codec';
import { HandlerRegistry, type DispatchResult } from './handler-registry';
import { IN_PROCESS_PEER, LocalCallTracker } from './local-calls';
import { KeepaliveTicker, keepaliveStep, keepaliveTiming, type KeepaliveState } from './keepalive';
import { sendCoalesced } from './send-coalescer';
import { STAGE_TRACE_ON, traceStage } from '../common/stage-trace';
import { byRemote, inFlightRows, round1, type RpczConnection, type TrackedCall } from './rpcz';
import { FrameBoundaryTracker } from './frame-watch';
import { answerClientError, checkingIntervalMs, HTTP_HEADER_BYTES_MAX } from './listener-limits';
import type { ClusterSecrets } from './cluster-secret';
import type { ServerTls } from './tls';
import { isLoopbackHost } from './console-guard';
import { AUTH_NONCE_HEADER, CLOSE_UNAUTHENTICATED, newNonce, parseAuthMessage, verifyAuth } from './rpc-auth';
import type { ConnectionStats, Handler, MethodDef, OnewayDef, OnewayHandler, RpcServer, ServerOptions } from './types';

/** Room for the frame header around a payload of the largest allowed size. */
export const FRAME_OVERHEAD_BYTES_MAX = 64 * 1024;

/** The header of a WebSocket upgrade naming the connecting client (ws-client's `caller`): /rpcz shows it. */
export const CALLER_HEADER = 'x-tessera-caller';
/** A caller name longer than this, or with other than printable ASCII, is not shown (untrusted input). */
const CALLER_CHARS_MAX = 200;

/** The caller a client named in its upgrade request, if it is a short printable name. */
export function callerOf(v: string | string[] | undefined): string | undefined {
  if (typeof v !== 'string' || v.length === 0 || v.length > CALLER_CHARS_MAX || !/^[\x20-\x7e]+$/.test(v)) return undefined;
  return v;
}

/** WebSocket close codes (RFC 6455) used when a peer breaks the protocol. */
const CLOSE_UNSUPPORTED_DATA = 1003;
const CLOSE_INVALID_PAYLOAD = 1007;
const CLOSE_POLICY_VIOLATION = 1008;

export interface WsServerDeps {
  log: Logger;
  messageBytesMax: number;
  defaultTimeoutMs: () => number;
  /** Ping a client connection quiet this long (0 or absent: no keepalive). */
  keepaliveIntervalMs?: number;
  /** Close a client connection whose ping stayed unanswered this long (needs keepalive on). */
  connectionTimeoutMs?: number;
  /** The upgrade request must arrive whole within this long (rpc_handshake_timeout_ms; default 5000). */
  handshakeTimeoutMs?: number;
  /** Close a connection stuck this long in the middle of a frame (rpc_frame_timeout_ms; default 5000). */
  frameTimeoutMs?: number;
  /** Connections one remote IP may hold (rpc_connections_per_ip_max; default 1024). */
  connectionsPerIpMax?: number;
  /** The cluster secrets (rpc-auth.ts): every connection must prove one; none: no challenge. */
  secrets?: ClusterSecrets;
  /** Certificate and key (rpc/tls.ts): the port speaks wss; absent: ws. */
  tls?: ServerTls;
}

const HANDSHAKE_TIMEOUT_MS_DEFAULT = 5_000;
const FRAME_TIMEOUT_MS_DEFAULT = 5_000;
const CONNECTIONS_PER_IP_MAX_DEFAULT = 1_024;
const HTTP_SERVICE_UNAVAILABLE = 503;
/** How long a connection this server closes may take to answer the close handshake. */
const CLOSE_GRACE_MS = 1_000;

interface ServerConn {
  readonly ws: WebSocket;
  readonly peer: string;
  /** Who the client said it is (CALLER_HEADER; with a cluster secret, the identity its answer proved). */
  caller: string | undefined;
  /** The challenge's nonce (cluster secret on), and whether the client answered it. */
  readonly nonce: string | undefined;
  authenticated: boolean;
  /** Calls being handled (the bound RPC_INFLIGHT_CALLS_MAX counts these; a client reusing a call id still counts twice). */
  inflight: number;
  /** The same calls by id, for /rpcz (a reused id shows its newest call). */
  readonly calls: Map<number, TrackedCall>;
  /** Calls answered on this connection (/rpcz). */
  answered: number;
  readonly openedMs: number;
  /** Set by closeConn: frames already received on the connection are dropped unread (and unlogged). */
  closing?: boolean;
  /** Keepalive: when the client was last heard from, and the ping outstanding. */
  readonly ka: KeepaliveState;
  /** The remote IP (rpc_connections_per_ip_max counts connections by it). */
  readonly ip: string;
  /** Frame boundaries of the bytes received, and when the last byte came (rpc_frame_timeout_ms). */
  readonly frames: FrameBoundaryTracker;
  lastByteMs: number;
}

export function toBytes(data: RawData): Uint8Array {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return new Uint8Array(data);
}

export class WsRpcServer implements RpcServer {
  private readonly registry: HandlerRegistry;
  private readonly conns = new Set<ServerConn>();
  private httpServer: http.Server | https.Server | undefined;
  private wss: WebSocketServer | undefined;
  private boundAddress: string;
  private stopping = false;
  private readonly messageBytesMax: number;
  private keepalive: NodeJS.Timeout | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  /** Open connections by remote IP. */
  private readonly perIp = new Map<string, number>();
  /** Client connections closed because a ping stayed unanswered (console, tests). */
  silentClosed = 0;
  /** Connections closed stuck in the middle of a frame (rpc_frame_timeout_ms), and connects refused over rpc_connections_per_ip_max. */
  stalledFrameClosed = 0;
  refusedPerIp = 0;
  /** Connections that ended without a valid answer to the cluster secret's challenge (closed by either side). */
  unauthenticatedClosed = 0;
  /** Nonces put in upgrade responses, until the connection opens. */
  private readonly nonces = new WeakMap<http.IncomingMessage, string>();

  constructor(
    private readonly opts: ServerOptions,
    private readonly deps: WsServerDeps,
  ) {
    this.registry = new HandlerRegistry(deps.log);
    this.messageBytesMax = opts.messageBytesMax ?? deps.messageBytesMax;
    this.boundAddress = `${opts.host}:${opts.port}`;
  }

  get address(): string {
    return this.boundAddress;
  }

  /** Connections currently open (console, tests). */
  get connectionCount(): number {
    return this.conns.size;
  }

  connectionStats(): ConnectionStats {
    return { open: this.conns.size, closedUnansweredPing: this.silentClosed, closedUnauthenticated: this.unauthenticatedClosed, closedStalledFrame: this.stalledFrameClosed, refusedPerIp: this.refusedPerIp };
  }

  /** /rpcz's inbound side: every client connection and the calls being handled on it. */
  rpcz(): RpczConnection[] {
    const now = performance.now();
    const out: RpczConnection[] = this.local.inFlight > 0 || this.localUsed ? [this.local.rpcz(IN_PROCESS_PEER)] : [];
    for (const c of this.conns) {
      out.push({
        remote: c.peer,
        ...(c.caller !== undefined ? { caller: c.caller } : {}),
        state: 'open',
        openForMs: round1(now - c.openedMs),
        quietMs: round1(now - c.ka.lastHeardMs),
        calls: c.answered,
        callsInFlight: c.inflight,
        inFlight: inFlightRows(c.calls, now),
      });
    }
    return out.sort(byRemote);
  }

  handle<Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void {
    this.registry.handle(m, h);
  }

  /** Calls made inside this process (rpc/local-calls.ts), for the bound and /rpcz. */
  private readonly local = new LocalCallTracker();
  private localUsed = false;

  /**
   * A call made inside this process (rpc/local-calls.ts: a tserver's SQL layer calling its own
   * tablets): the same checks and dispatch as a request frame in onMessage, without the frame.
   */
  async dispatchLocal(service: string, method: string, payload: Uint8Array, serverTimeoutMs: number): Promise<DispatchResult> {
    this.localUsed = true;
    if (this.stopping) return { ok: false, error: { code: ErrorCode.SHUTTING_DOWN, message: 'server is shutting down', details: {} } };
    if (payload.length > this.messageBytesMax) {
      return { ok: false, error: { code: ErrorCode.MESSAGE_TOO_LARGE, message: `request of ${payload.length} bytes exceeds rpc_max_message_size ${this.messageBytesMax}`, details: { bytes: payload.length, limit: this.messageBytesMax } } };
    }
    const timeoutMs = serverTimeoutMs || this.deps.defaultTimeoutMs();
    const id = this.local.begin(service, method, timeoutMs);
    if (id === undefined) return { ok: false, error: { code: ErrorCode.BACKPRESSURE, message: `${this.local.inFlight} calls in flight in this process`, details: {} } };
    try {
      return await this.registry.dispatch(service, method, payload, { peer: IN_PROCESS_PEER, deadlineMonoMs: performance.now() + timeoutMs }, this.messageBytesMax);
    } finally {
      this.local.end(id);
    }
  }

  onOneway<M>(m: OnewayDef<M>, h: OnewayHandler<M>): void {
    this.registry.onOneway(m, h);
  }

  setStarting(reason: string | undefined): void {
    this.registry.setStarting(reason);
  }

  private get secrets(): ClusterSecrets {
    return this.deps.secrets ?? [];
  }

  async start(): Promise<void> {
    if (!isLoopbackHost(this.opts.host) && this.secrets.length === 0) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `RPC address ${this.opts.host}:${this.opts.port} is not loopback: a server reachable from other hosts needs --cluster_secret_file (docs/security.md)`, { host: this.opts.host });
    }
    // The upgrade request must arrive whole within the handshake timeout (a half-sent one gets 408).
    const handshakeMs = this.deps.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS_DEFAULT;
    const limits: http.ServerOptions = { requestTimeout: handshakeMs, headersTimeout: handshakeMs, connectionsCheckingInterval: checkingIntervalMs(handshakeMs), maxHeaderSize: HTTP_HEADER_BYTES_MAX };
    const onPlainHttp = (_req: http.IncomingMessage, res: http.ServerResponse): void => {
      // Plain HTTP on the RPC port: say what this port speaks instead of hanging.
      res.writeHead(426, { 'content-type': 'text/plain', connection: 'close' });
      res.end('this is a tessera RPC port: connect with WebSocket\n');
    };
    const t = this.deps.tls;
    // With TLS the TLS handshake is bounded by the same timeout (Node's default is 120 s).
    const server = t ? https.createServer({ ...limits, cert: t.cert, key: t.key, handshakeTimeout: handshakeMs }, onPlainHttp) : http.createServer(limits, onPlainHttp);
    if (t) {
      server.on('tlsClientError', (err: Error, socket: tls.TLSSocket) => {
        this.deps.log.debug({ err }, 'RPC port: TLS handshake failed; socket closed');
        socket.destroy();
      });
    }
    // Garbage that is not even HTTP (raw TCP noise): drop that socket, never the process.
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket, this.deps.log, 'RPC port'));
    const wss = new WebSocketServer({
      server,
      perMessageDeflate: false,
      clientTracking: false,
      maxPayload: this.messageBytesMax + FRAME_OVERHEAD_BYTES_MAX,
      verifyClient: (info: { req: http.IncomingMessage }, cb: (ok: boolean, code?: number, message?: string) => void) => {
        const ip = info.req.socket.remoteAddress ?? '?';
        const max = this.deps.connectionsPerIpMax ?? CONNECTIONS_PER_IP_MAX_DEFAULT;
        if ((this.perIp.get(ip) ?? 0) >= max) {
          this.refusedPerIp++;
          this.deps.log.warn({ ip, max }, 'RPC connect refused: rpc_connections_per_ip_max reached for this address');
          cb(false, HTTP_SERVICE_UNAVAILABLE, `too many RPC connections from ${ip} (rpc_connections_per_ip_max ${max})`);
          return;
        }
        cb(true);
      },
    });
    if (this.secrets.length > 0) {
      // The challenge rides on the upgrade response: the client answers it first thing (rpc-auth.ts).
      wss.on('headers', (headers: string[], req: http.IncomingMessage) => {
        const nonce = newNonce();
        this.nonces.set(req, nonce);
        headers.push(`${AUTH_NONCE_HEADER}: ${nonce}`);
      });
    }
    wss.on('connection', (ws, req) => this.onConnection(ws, req));
    wss.on('error', (err) => this.deps.log.warn({ err }, 'RPC WebSocket server error'));
    this.httpServer = server;
    this.wss = wss;
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error): void => {
        reject(new DbError(ErrorCode.IO_ERROR, `cannot listen on ${this.opts.host}:${this.opts.port}: ${err.message}`, { host: this.opts.host, port: this.opts.port }, { cause: err }));
      };
      server.once('error', onError);
      server.listen(this.opts.port, this.opts.host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => this.deps.log.warn({ err }, 'RPC HTTP server error'));
    const a = server.address();
    if (a && typeof a === 'object') this.boundAddress = `${this.opts.host}:${a.port}`;
    this.startKeepalive();
    this.startSweeper();
  }

  /**
   * Close connections stuck in the middle of a frame for rpc_frame_timeout_ms: a peer that sent half
   * a frame and stopped would otherwise hold its socket (and the buffered half) until keepalive gives
   * up on it, and ws would wait for the rest forever.
   */
  private startSweeper(): void {
    const frameMs = this.deps.frameTimeoutMs ?? FRAME_TIMEOUT_MS_DEFAULT;
    const handshakeMs = this.deps.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS_DEFAULT;
    this.sweeper = setInterval(() => {
      const now = performance.now();
      for (const c of this.conns) {
        if (!c.authenticated && now - c.openedMs > handshakeMs) {
          this.closeConn(c, CLOSE_UNAUTHENTICATED, 'UNAUTHENTICATED: no answer to the cluster secret challenge within rpc_handshake_timeout_ms');
          continue;
        }
        if (c.frames.midFrame && now - c.lastByteMs > frameMs) {
          this.stalledFrameClosed++;
          this.deps.log.info({ peer: c.peer, quietMs: Math.round(now - c.lastByteMs) }, 'RPC connection stuck in the middle of a frame past rpc_frame_timeout_ms; closing it');
          this.dropConn(c);
          c.ws.terminate();
        }
      }
    }, checkingIntervalMs(Math.min(frameMs, handshakeMs)));
    this.sweeper.unref();
  }

  /** Forget a connection (once): out of the open set and the per-IP count. */
  private dropConn(c: ServerConn): void {
    if (!this.conns.delete(c)) return;
    // However it ended (refused by us, or the client gave up on seeing the challenge): never authenticated.
    if (!c.authenticated) this.unauthenticatedClosed++;
    const n = (this.perIp.get(c.ip) ?? 1) - 1;
    if (n <= 0) this.perIp.delete(c.ip);
    else this.perIp.set(c.ip, n);
  }

  /**
   * Keepalive of client connections, the same rule as the client's: a connection from which nothing
   * came for keepaliveIntervalMs gets a ping, and one whose ping stayed unanswered for
   * connectionTimeoutMs is closed. A client process that died without a FIN (power loss, a
   * partition that never heals, a SIGSTOPped process) otherwise holds its connection, with its
   * buffers and the answers queued for it, until TCP gives up many minutes later. WebSocket clients
   * answer pings in their WebSocket layer, so a live client waiting on a long call keeps its
   * connection even when it sends nothing.
   */
  private startKeepalive(): void {
    const t = keepaliveTiming(this.deps.keepaliveIntervalMs, this.deps.connectionTimeoutMs);
    if (!t) return;
    const ticker = new KeepaliveTicker(performance.now(), t.everyMs);
    this.keepalive = setInterval(() => {
      const now = performance.now();
      const stalled = ticker.stalled(now);
      for (const c of this.conns) {
        const step = keepaliveStep(c.ka, now, stalled, t);
        if (step === 'close') {
          this.silentClosed++;
          this.deps.log.info({ peer: c.peer, quietMs: Math.round(now - c.ka.lastHeardMs) }, 'RPC client connection: ping unanswered past rpc_connection_timeout_ms; closing it');
          this.dropConn(c);
          c.ws.terminate();
        } else if (step === 'ping') {
          try {
            c.ws.ping();
          } catch {
            // closing already
          }
        }
      }
    }, t.everyMs);
    this.keepalive.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const c of this.conns) c.ws.terminate();
    this.conns.clear();
    this.perIp.clear();
    const wss = this.wss;
    const server = this.httpServer;
    this.wss = undefined;
    this.httpServer = undefined;
    if (wss) await new Promise<void>((resolve) => wss.close(() => resolve()));
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private onConnection(ws: WebSocket, req: http.IncomingMessage): void {
    if (this.stopping) {
      ws.terminate();
      return;
    }
    ws.binaryType = 'nodebuffer';
    const now = performance.now();
    const conn: ServerConn = {
      ws,
      peer: `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`,
      caller: callerOf(req.headers[CALLER_HEADER]),
      nonce: this.nonces.get(req),
      authenticated: this.secrets.length === 0,
      inflight: 0,
      calls: new Map(),
      answered: 0,
      openedMs: now,
      ka: { lastHeardMs: now, pingSentMs: 0 },
      ip: req.socket.remoteAddress ?? '?',
      frames: new FrameBoundaryTracker(),
      lastByteMs: now,
    };
    this.conns.add(conn);
    this.perIp.set(conn.ip, (this.perIp.get(conn.ip) ?? 0) + 1);
    // Every byte the socket reads (bytes that came with the upgrade request too: ws puts them back).
    req.socket.on('data', (chunk: Buffer) => {
      conn.frames.feed(chunk);
      conn.lastByteMs = performance.now();
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      conn.ka.lastHeardMs = performance.now();
      if (conn.authenticated) this.onMessage(conn, data, isBinary);
      else this.onAuthMessage(conn, data, isBinary);
    });
    const heard = (): void => {
      conn.ka.lastHeardMs = performance.now();
    };
    ws.on('ping', heard);
    ws.on('pong', heard);
    // Oversized frames and protocol errors surface here; ws closes the socket itself.
    ws.on('error', (err) => this.deps.log.debug({ err, peer: conn.peer }, 'RPC connection error'));
    ws.on('close', () => this.dropConn(conn));
  }

  /**
   * A message before the client proved the secret: its answer to the challenge (a text frame), or a
   * call sent without one — answered UNAUTHENTICATED. Either failure closes the connection.
   */
  private onAuthMessage(conn: ServerConn, data: RawData, isBinary: boolean): void {
    if (conn.closing) return;
    if (isBinary) {
      const r = decodeFrame(toBytes(data));
      const callId = r.ok ? r.frame.callId : r.callId;
      if (callId !== 0) this.sendError(conn, callId, { code: ErrorCode.UNAUTHENTICATED, message: 'this server needs the cluster secret (--cluster_secret_file): the connection did not answer its challenge', details: {} });
      this.closeConn(conn, CLOSE_UNAUTHENTICATED, 'UNAUTHENTICATED: a call before the answer to the cluster secret challenge');
      return;
    }
    const answer = parseAuthMessage(toBytes(data).length > 1024 ? '' : Buffer.from(toBytes(data)).toString('utf8'));
    if (!answer || conn.nonce === undefined || !verifyAuth(this.secrets, conn.nonce, answer)) {
      this.closeConn(conn, CLOSE_UNAUTHENTICATED, 'UNAUTHENTICATED: wrong answer to the cluster secret challenge');
      return;
    }
    conn.authenticated = true;
    conn.caller = callerOf(answer.identity) ?? conn.caller;
  }

  private closeConn(conn: ServerConn, code: number, reason: string): void {
    if (conn.closing) return;
    conn.closing = true;
    this.deps.log.warn({ peer: conn.peer, reason }, 'closing RPC connection');
    this.dropConn(conn);
    conn.ws.close(code, reason.slice(0, 120));
    // A peer that never answers the close handshake (mid-frame, or gone) would hold the socket for
    // ws's 30 s close timeout: cut it after a short grace instead.
    setTimeout(() => conn.ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private onMessage(conn: ServerConn, data: RawData, isBinary: boolean): void {
    if (conn.closing) return;
    if (!isBinary) {
      this.closeConn(conn, CLOSE_UNSUPPORTED_DATA, 'RPC frames are binary');
      return;
    }
    const bytes = toBytes(data);
    const r = decodeFrame(bytes);
    if (!r.ok) {
      if (r.callId !== 0) this.sendError(conn, r.callId, { code: ErrorCode.MALFORMED_FRAME, message: r.reason, details: {} });
      else this.closeConn(conn, CLOSE_INVALID_PAYLOAD, r.reason);
      return;
    }
    const f = r.frame;
    if (STAGE_TRACE_ON) traceStage(`rpc.in.${f.method}`, '-', f.callId);
    if (f.kind === FrameKind.ONEWAY) {
      if (f.payload.length > this.messageBytesMax) {
        this.deps.log.warn({ peer: conn.peer, bytes: f.payload.length }, 'oversized one-way message dropped');
        return;
      }
      const timeoutMs = f.timeoutMs || this.deps.defaultTimeoutMs();
      this.registry.dispatchOneway(f.service, f.method, f.payload, { peer: conn.peer, deadlineMonoMs: performance.now() + timeoutMs });
      return;
    }
    if (f.kind !== FrameKind.REQUEST || f.callId === 0) {
      // A client only sends requests (with an id) and one-way messages; anything else cannot be answered.
      this.closeConn(conn, CLOSE_POLICY_VIOLATION, `unexpected frame kind ${f.kind} (call id ${f.callId})`);
      return;
    }
    if (this.stopping) {
      this.sendError(conn, f.callId, { code: ErrorCode.SHUTTING_DOWN, message: 'server is shutting down', details: {} });
      return;
    }
    if (f.payload.length > this.messageBytesMax) {
      this.sendError(conn, f.callId, {
        code: ErrorCode.MESSAGE_TOO_LARGE,
        message: `request of ${f.payload.length} bytes exceeds rpc_max_message_size ${this.messageBytesMax}`,
        details: { bytes: f.payload.length, limit: this.messageBytesMax },
      });
      return;
    }
    if (conn.inflight >= RPC_INFLIGHT_CALLS_MAX) {
      this.sendError(conn, f.callId, { code: ErrorCode.BACKPRESSURE, message: `${conn.inflight} calls in flight on this connection`, details: {} });
      return;
    }
    conn.inflight++;
    const timeoutMs = f.timeoutMs || this.deps.defaultTimeoutMs();
    const callId = f.callId;
    const startMs = performance.now();
    const call: TrackedCall = { service: f.service, method: f.method, startMs, timeoutMs };
    conn.calls.set(callId, call);
    void this.registry
      .dispatch(f.service, f.method, f.payload, { peer: conn.peer, deadlineMonoMs: startMs + timeoutMs }, this.messageBytesMax)
      .then((res) => {
        conn.inflight--;
        conn.answered++;
        if (conn.calls.get(callId) === call) conn.calls.delete(callId);
        if (res.ok) this.send(conn, encodeFrame({ callId, kind: FrameKind.RESPONSE, service: '', method: '', payload: res.payload, timeoutMs: 0 }));
        else this.sendError(conn, callId, res.error);
      });
  }

  private sendError(conn: ServerConn, callId: number, error: WireError): void {
    this.send(conn, encodeFrame({ callId, kind: FrameKind.ERROR, service: '', method: '', payload: new Uint8Array(0), error, timeoutMs: 0 }));
  }

  private send(conn: ServerConn, bytes: Uint8Array): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return; // the caller is gone; its client already failed the call
    if (conn.ws.bufferedAmount + bytes.length > RPC_OUTBOUND_QUEUE_BYTES_MAX) {
      // A client that does not read its answers would make us buffer without bound: cut it off.
      this.closeConn(conn, CLOSE_POLICY_VIOLATION, 'client does not read its responses (outbound queue full)');
      return;
    }
    if (STAGE_TRACE_ON) traceStage('rpc.out', '-', 0);
    sendCoalesced(conn.ws, bytes);
  }
}
