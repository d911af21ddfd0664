/**
 * One RPC client connection over WebSocket (ws-client.ts): opened on first use and reopened on demand
 * after a loss, with connect back-off, TCP connect time-out, keepalive, cluster-secret answer, the
 * calls in flight and the frames queued while connecting.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { WebSocket, type RawData } from 'ws';
import { DbError, ErrorCode, RPC_INFLIGHT_CALLS_MAX, RPC_OUTBOUND_QUEUE_BYTES_MAX, type Logger } from '../common';
import { decodeFrame, encodeFrame, FrameKind } from './frame-codec';
import type { Codec } from './types';
import { hostResolver, type HostResolver } from './host-resolver';
import { KeepaliveTicker, keepaliveStep, keepaliveTiming, type KeepaliveState } from './keepalive';
import { round1, inFlightRows, type RpczConnection, type TrackedCall } from './rpcz';
import { sendCoalesced } from './send-coalescer';
import { STAGE_TRACE_ON, traceStage } from '../common/stage-trace';
import { CALLER_HEADER, FRAME_OVERHEAD_BYTES_MAX, toBytes } from './ws-server';
import { AUTH_NONCE_HEADER, authMessage, CLOSE_UNAUTHENTICATED } from './rpc-auth';
import type { ClientTls } from './tls';

export interface WsClientDeps {
  log: Logger;
  messageBytesMax: number;
  defaultTimeoutMs: () => number;
  connectTimeoutMs: number;
  /**
   * Longest the TCP connect (SYN → SYN-ACK, answered by the peer's kernel) may take before the attempt
   * is given up and the next call tries afresh at once (0: only connectTimeoutMs applies). A SYN
   * unanswered this long was dropped (a network cut); a new attempt every so often notices a heal
   * within about this long, where one attempt waits out TCP's own SYN retransmissions (1, 3, 7 s …).
   */
  tcpConnectTimeoutMs?: number;
  backoffMaxMs: number;
  /** Resolves host names of addresses (default: the process's, which keeps what it found; see host-resolver.ts). */
  resolver?: HostResolver;
  /** Ping a connection quiet this long (0: no keepalive). Default off (tests' own clients). */
  keepaliveIntervalMs?: number;
  /** Close a connection whose ping stayed unanswered this long (needs keepalive on). */
  connectionTimeoutMs?: number;
  /** Who this client is, sent with every connect (CALLER_HEADER) for the servers' /rpcz. */
  caller?: string | (() => string | undefined);
  /** The cluster secret this client proves when a server challenges it (rpc-auth.ts); none: it cannot. */
  secret?: Buffer;
  /** Dial wss and verify every server's certificate against this CA and the host dialled (rpc/tls.ts). */
  tls?: ClientTls;
}

const BACKOFF_BASE_MS = 25;
/**
 * Connect errors of a cut network rather than a down peer: no route to it (this end's interface gone,
 * or its host unreachable), or its name unresolvable because DNS did not answer (host-resolver.ts).
 */
const NETWORK_DOWN_CODES = new Set(['ENETUNREACH', 'EHOSTUNREACH', 'ENETDOWN', 'EHOSTDOWN', 'EAI_AGAIN']);
/** Pause after such an error before the next connect (not growing: a heal is noticed within it). */
const NETWORK_DOWN_RETRY_MS = 200;
/** Connections this client keeps; beyond it the least recently created idle one is dropped. */
const CLOSE_WAIT_MS = 1000;

interface PendingCall extends TrackedCall {
  readonly resolve: (v: unknown) => void;
  readonly reject: (e: DbError) => void;
  readonly codec: Codec<unknown>;
  timer: NodeJS.Timeout | undefined;
  /** Handed to the socket: after a connection loss the server may have run it (not safe to retry). */
  sent: boolean;
}

interface QueuedFrame {
  readonly callId: number;
  readonly bytes: Uint8Array;
}

function networkError(message: string, details: Record<string, unknown>, retryable: boolean): DbError {
  return new DbError(ErrorCode.NETWORK_ERROR, message, details, { retryable });
}

export class WsConnection {
  private ws: WebSocket | undefined;
  private state: 'idle' | 'connecting' | 'open' = 'idle';
  private readonly pending = new Map<number, PendingCall>();
  /** Frames written while connecting; flushed on open. Bounded by queuedBytes. */
  private queue: QueuedFrame[] = [];
  private queuedBytes = 0;
  private nextCallId = 1;
  private failures = 0;
  private retryAtMs = 0;
  /** Frames received from the server (a timed-out call tells whether it was heard from meanwhile). */
  private framesReceived = 0;
  /** Keepalive: when the server was last heard from, and the ping outstanding. */
  private readonly ka: KeepaliveState = { lastHeardMs: 0, pingSentMs: 0 };
  private keepalive: NodeJS.Timeout | undefined;
  /** Why this side closed the open connection (the error its calls fail with names it). */
  private closeReason: string | undefined;
  /** When the current socket opened (performance.now()), and the calls made to this address (/rpcz). */
  private openedMs = 0;
  private callsMade = 0;

  constructor(
    readonly address: string,
    private readonly deps: WsClientDeps,
  ) {}

  get idle(): boolean {
    return this.pending.size === 0 && this.state !== 'open';
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Times this connection was closed because a keepalive ping stayed unanswered. */
  closedUnansweredPing = 0;

  /** Make sure a socket is open or opening; false when backing off after failed connects. */
  private ensure(): boolean {
    if (this.state !== 'idle') return true;
    if (performance.now() < this.retryAtMs) return false;
    this.connect();
    return true;
  }

  /** Bound of a connect's TCP part (rpc_tcp_connect_timeout_ms, at most the whole connect's; 0: none of its own). */
  private get tcpTimeoutMs(): number {
    return Math.min(this.deps.tcpConnectTimeoutMs ?? 0, this.deps.connectTimeoutMs);
  }

  /** The last connect attempt was given up because its TCP connect went unanswered (no back-off after it). */
  private tcpTimedOut = false;

  /** The error code of the connect attempt that failed (ECONNREFUSED, ENETUNREACH, …). */
  private connectErrorCode: string | undefined;

  /** Why the server refused this client (its cluster secret challenge): calls fail UNAUTHENTICATED. */
  private authRefusal: string | undefined;
  /** The last refusal, until the server answers a frame: calls during the back-off after it fail the same way. */
  private lastRefusal: string | undefined;

  private connect(): void {
    this.state = 'connecting';
    this.tcpTimedOut = false;
    this.connectErrorCode = undefined;
    this.authRefusal = undefined;
    const caller = typeof this.deps.caller === 'function' ? this.deps.caller() : this.deps.caller;
    let nonce: string | undefined;
    const ws = new WebSocket(`${this.deps.tls ? 'wss' : 'ws'}://${this.address}/rpc`, {
      perMessageDeflate: false,
      maxPayload: this.deps.messageBytesMax + FRAME_OVERHEAD_BYTES_MAX,
      handshakeTimeout: this.deps.connectTimeoutMs,
      generateMask: zeroMask,
      ...(caller !== undefined ? { headers: { [CALLER_HEADER]: caller } } : {}),
      createConnection: ((opts: net.NetConnectOpts) => this.tcpConnect(opts, this.tcpTimeoutMs)) as typeof net.createConnection,
    });
    ws.binaryType = 'nodebuffer';
    this.ws = ws;
    ws.on('upgrade', (res) => {
      const h = res.headers[AUTH_NONCE_HEADER];
      nonce = typeof h === 'string' ? h : undefined;
    });
    ws.on('open', () => {
      if (this.ws !== ws) return;
      if (nonce !== undefined) {
        if (!this.deps.secret) {
          // Sending calls would only get them refused: fail them here, clearly.
          this.authRefusal = `${this.address} needs the cluster secret and this client has none (--cluster_secret_file, or the client's clusterSecret option)`;
          ws.terminate();
          return;
        }
        // The answer goes first; the queued calls follow it without waiting (rpc-auth.ts).
        ws.send(authMessage(this.deps.secret, nonce, caller ?? ''));
      }
      this.state = 'open';
      this.failures = 0;
      this.openedMs = performance.now();
      this.ka.lastHeardMs = this.openedMs;
      this.startKeepalive(ws);
      const q = this.queue;
      this.queue = [];
      this.queuedBytes = 0;
      for (const f of q) {
        if (f.callId !== 0) {
          const p = this.pending.get(f.callId);
          if (!p) continue; // timed out while we were connecting
          p.sent = true;
        }
        sendCoalesced(ws, f.bytes);
      }
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (this.ws === ws) this.onMessage(data, isBinary);
    });
    const heard = (): void => {
      if (this.ws === ws) this.ka.lastHeardMs = performance.now();
    };
    ws.on('pong', heard);
    ws.on('ping', heard);
    ws.on('error', (err: NodeJS.ErrnoException) => {
      if (this.ws === ws && this.state === 'connecting') this.connectErrorCode = err.code;
      this.deps.log.debug({ err, address: this.address }, 'RPC client connection error');
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.ws !== ws) return;
      if (code === CLOSE_UNAUTHENTICATED) this.authRefusal = `${this.address} refused this client: ${reason.toString('utf8') || 'UNAUTHENTICATED'} (is its cluster secret one the server accepts?)`;
      this.onClosed();
    });
  }

  /**
   * ws's socket: the host name resolved by the resolver (from memory after the first time: no
   * getaddrinfo on the thread pool per connect), and the TCP connect bounded by `timeoutMs` when > 0
   * (the WebSocket upgrade that follows still has the whole connectTimeoutMs): a peer whose kernel did
   * not answer the SYN by then is cut off.
   */
  private tcpConnect(opts: net.NetConnectOpts, timeoutMs: number): net.Socket {
    // As ws's own: the request's `path` is the URL's (/rpc), not a Unix socket.
    const lookup = (this.deps.resolver ?? hostResolver).lookup;
    // wss: ws's options carry the server name to verify (servername); the CA is ours.
    const socket = this.deps.tls
      ? tls.connect({ ...(opts as tls.ConnectionOptions), path: undefined, lookup, ca: this.deps.tls.ca } as tls.ConnectionOptions)
      : net.connect({ ...opts, path: undefined, lookup } as net.NetConnectOpts);
    if (timeoutMs <= 0) return socket;
    // From the SYN on: a host name's resolution comes first (at once from memory after the first time).
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      timer = setTimeout(() => {
        this.tcpTimedOut = true;
        this.connectsTimedOut++;
        socket.destroy(new Error(`TCP connect to ${this.address} unanswered for ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
    };
    if (net.isIP((opts as net.TcpNetConnectOpts).host ?? '') !== 0) arm();
    else socket.once('lookup', (err: Error | null) => err === null && arm());
    const done = (): void => clearTimeout(timer);
    socket.once('connect', done);
    socket.once('secureConnect', done);
    socket.once('close', done);
    return socket;
  }

  /** Connect attempts given up because the TCP connect went unanswered (rpc_tcp_connect_timeout_ms). */
  connectsTimedOut = 0;

  /**
   * Keepalive of an open connection: a ping when the server has been quiet for keepaliveIntervalMs,
   * and the connection closed when that ping stayed unanswered (no pong, no frame) for
   * connectionTimeoutMs. A partitioned peer otherwise keeps the connection open for TCP's many
   * minutes of retransmissions, and after the heal traffic waits for the next one (TCP doubles the
   * wait each time: tens of seconds after a long cut); a fresh connection goes through as soon as the
   * network does. The clock starts at the unanswered ping, not at the last frame heard, so a server
   * held up (paused, or a long GC) for less than connectionTimeoutMs keeps its connection whatever the
   * quiet before it; its sent calls are then answered on it, not failed.
   */
  private startKeepalive(ws: WebSocket): void {
    const t = keepaliveTiming(this.deps.keepaliveIntervalMs, this.deps.connectionTimeoutMs);
    if (!t) return;
    const ticker = new KeepaliveTicker(performance.now(), t.everyMs);
    this.ka.lastHeardMs = performance.now();
    this.ka.pingSentMs = 0;
    this.keepalive = setInterval(() => {
      if (this.ws !== ws || this.state !== 'open') return;
      const now = performance.now();
      const step = keepaliveStep(this.ka, now, ticker.stalled(now), t);
      if (step === 'close') {
        const quiet = now - this.ka.lastHeardMs;
        this.closeReason = `a ping to ${this.address} stayed unanswered for ${Math.round(now - this.ka.pingSentMs)} ms (rpc_connection_timeout_ms ${t.timeoutMs}; nothing heard for ${Math.round(quiet)} ms)`;
        this.deps.log.info({ address: this.address, quietMs: Math.round(quiet) }, 'RPC connection: ping unanswered past rpc_connection_timeout_ms; closing it (the next call connects afresh)');
        this.closedUnansweredPing++;
        ws.terminate();
      } else if (step === 'ping') {
        try {
          ws.ping();
        } catch {
          // closing already
        }
      }
    }, t.everyMs);
    this.keepalive.unref();
  }

  private onClosed(): void {
    const refusal = this.authRefusal;
    if (refusal !== undefined) {
      this.onRefused(refusal);
      return;
    }
    const wasOpen = this.state === 'open';
    const reason = this.closeReason;
    this.closeReason = undefined;
    this.dropSocket();
    if (!wasOpen) {
      this.failures++;
      if (this.tcpTimedOut) {
        // The SYN went unanswered (a cut network): the attempt itself waited rpc_tcp_connect_timeout_ms,
        // so the next call tries again at once — a heal is noticed within about that long.
        this.retryAtMs = 0;
      } else if (this.connectErrorCode !== undefined && NETWORK_DOWN_CODES.has(this.connectErrorCode)) {
        // No route (this end, or the peer's host, cut off): says nothing of the peer's process, and
        // costs nothing to try again; a short fixed pause notices a heal at once.
        this.retryAtMs = performance.now() + Math.min(this.deps.backoffMaxMs, NETWORK_DOWN_RETRY_MS);
      } else {
        // The peer is down (refused, handshake timeout): back off before trying again.
        this.retryAtMs = this.backoffUntilMs();
      }
    }
    this.failCalls((p) =>
      networkError(
        wasOpen ? `connection to ${this.address} lost during ${p.service}.${p.method}${reason ? `: ${reason}` : ''}` : `cannot connect to ${this.address}${this.tcpTimedOut ? ` (its TCP connect went unanswered for ${this.tcpTimeoutMs} ms)` : ''}`,
        { address: this.address, sent: p.sent },
        !p.sent,
      ),
    );
  }

  /**
   * The server refused this client's credentials: every call fails UNAUTHENTICATED (not retryable:
   * another attempt holds the same secret), and connects back off as after a refused one.
   */
  private onRefused(reason: string): void {
    this.dropSocket();
    this.failures++;
    this.lastRefusal = reason;
    this.retryAtMs = this.backoffUntilMs();
    this.failCalls(() => new DbError(ErrorCode.UNAUTHENTICATED, reason, { address: this.address }, { retryable: false }));
  }

  /** The socket is gone: back to idle, the keepalive stopped, frames queued for it dropped. */
  private dropSocket(): void {
    if (this.keepalive) clearInterval(this.keepalive);
    this.keepalive = undefined;
    this.ws = undefined;
    this.state = 'idle';
    this.queue = [];
    this.queuedBytes = 0;
  }

  /** After `failures` failed connects in a row: exponential, bounded by backoffMaxMs. */
  private backoffUntilMs(): number {
    return performance.now() + Math.min(this.deps.backoffMaxMs, BACKOFF_BASE_MS * 2 ** Math.min(20, this.failures - 1));
  }

  /** Fail every call in flight with the error `errorFor` gives it. */
  private failCalls(errorFor: (p: PendingCall) => DbError): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    for (const p of calls) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(errorFor(p));
    }
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    this.framesReceived++;
    this.lastRefusal = undefined;
    this.ka.lastHeardMs = performance.now();
    const r = isBinary ? decodeFrame(toBytes(data)) : ({ ok: false, callId: 0, reason: 'text frame' } as const);
    if (!r.ok) {
      // The server speaks garbage: nothing on this connection can be trusted any more.
      this.deps.log.warn({ address: this.address, reason: r.reason }, 'malformed frame from server; closing connection');
      this.ws?.terminate();
      return;
    }
    const f = r.frame;
    const p = this.pending.get(f.callId);
    if (!p) return; // late answer to a call that timed out
    if (STAGE_TRACE_ON) traceStage(`rpc.answer.${p.method}`, '-', f.callId);
    this.pending.delete(f.callId);
    if (p.timer) clearTimeout(p.timer);
    if (f.kind === FrameKind.RESPONSE) {
      let v: unknown;
      try {
        v = p.codec.decode(f.payload);
      } catch (e) {
        p.reject(new DbError(ErrorCode.MALFORMED_FRAME, `response of ${p.service}.${p.method} does not decode: ${(e as Error).message}`));
        return;
      }
      p.resolve(v);
    } else if (f.kind === FrameKind.ERROR) {
      p.reject(DbError.fromWire(f.error ?? { code: ErrorCode.INTERNAL, message: 'error frame without error' }));
    } else {
      p.reject(new DbError(ErrorCode.MALFORMED_FRAME, `unexpected frame kind ${f.kind} in answer to ${p.service}.${p.method}`));
    }
  }

  private write(callId: number, bytes: Uint8Array): void {
    if (this.state === 'open' && this.ws) {
      if (callId !== 0) this.pending.get(callId)!.sent = true;
      sendCoalesced(this.ws, bytes);
    } else {
      this.queue.push({ callId, bytes });
      this.queuedBytes += bytes.length;
    }
  }

  private outboundBytes(): number {
    return this.queuedBytes + (this.ws?.bufferedAmount ?? 0);
  }

  call(service: string, method: string, payload: Uint8Array, codec: Codec<unknown>, timeoutMs: number, serverTimeoutMs = timeoutMs): Promise<unknown> {
    if (!this.ensure()) {
      if (this.lastRefusal !== undefined) return Promise.reject(new DbError(ErrorCode.UNAUTHENTICATED, this.lastRefusal, { address: this.address }, { retryable: false }));
      return Promise.reject(networkError(`${this.address} is unreachable (retrying after back-off)`, { address: this.address, sent: false }, true));
    }
    if (this.pending.size >= RPC_INFLIGHT_CALLS_MAX) {
      return Promise.reject(new DbError(ErrorCode.BACKPRESSURE, `${this.pending.size} calls in flight to ${this.address}`, { address: this.address }));
    }
    if (this.outboundBytes() + payload.length > RPC_OUTBOUND_QUEUE_BYTES_MAX) {
      return Promise.reject(new DbError(ErrorCode.BACKPRESSURE, `outbound queue to ${this.address} is full`, { address: this.address }));
    }
    let callId = this.nextCallId;
    // Ids wrap within uint32 and skip 0 (= no id); in-flight calls are far fewer than 2^32.
    this.nextCallId = callId >= 0xffffffff ? 1 : callId + 1;
    while (this.pending.has(callId)) callId = callId >= 0xffffffff ? 1 : callId + 1;
    const bytes = encodeFrame({ callId, kind: FrameKind.REQUEST, service, method, payload, timeoutMs: serverTimeoutMs });
    this.callsMade++;
    return new Promise<unknown>((resolve, reject) => {
      const p: PendingCall = { resolve, reject, codec, service, method, startMs: performance.now(), timeoutMs, timer: undefined, sent: false };
      const framesAtStart = this.framesReceived;
      p.timer = setTimeout(() => {
        if (this.pending.get(callId) !== p) return;
        this.pending.delete(callId);
        // heard: the server sent something on this connection meanwhile (alive, this call just takes long).
        reject(new DbError(ErrorCode.TIMED_OUT, `${service}.${method} to ${this.address} timed out after ${timeoutMs} ms`, { address: this.address, timeoutMs, sent: p.sent, heard: this.framesReceived > framesAtStart }));
      }, timeoutMs);
      this.pending.set(callId, p);
      if (STAGE_TRACE_ON) traceStage(`rpc.call.${method}`, '-', callId);
      this.write(callId, bytes);
    });
  }

  /** This connection's /rpcz row. */
  rpcz(now: number): RpczConnection {
    const open = this.state === 'open';
    const backingOff = this.state === 'idle' && now < this.retryAtMs;
    return {
      remote: this.address,
      state: open ? 'open' : this.state === 'connecting' ? 'connecting' : backingOff ? 'backing off' : 'idle',
      ...(open ? { openForMs: round1(now - this.openedMs), quietMs: round1(now - this.ka.lastHeardMs) } : {}),
      calls: this.callsMade,
      callsInFlight: this.pending.size,
      inFlight: inFlightRows(this.pending, now),
      outboundBytes: this.outboundBytes(),
      ...(backingOff ? { connectFailures: this.failures, retryInMs: round1(this.retryAtMs - now) } : {}),
    };
  }

  /** Best effort, like a datagram: dropped while the address is down or the queue is full. */
  send(service: string, method: string, payload: Uint8Array): boolean {
    if (!this.ensure()) return false;
    if (this.outboundBytes() + payload.length > RPC_OUTBOUND_QUEUE_BYTES_MAX) return false;
    this.write(0, encodeFrame({ callId: 0, kind: FrameKind.ONEWAY, service, method, payload, timeoutMs: 0 }));
    return true;
  }

  async close(): Promise<void> {
    const ws = this.ws;
    if (ws) {
      const closed = new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          ws.terminate();
          resolve();
        }, CLOSE_WAIT_MS);
        ws.once('close', () => {
          clearTimeout(t);
          resolve();
        });
      });
      // Fail the calls now rather than when the close handshake ends.
      this.state = 'open';
      this.onClosed();
      ws.close();
      await closed;
    }
  }
}

/**
 * The masking key of every frame this client sends: zero. RFC 6455 masks client frames so a browser
 * script cannot steer what a caching proxy between it and the server sees; tessera's RPC clients are
 * its own servers and CLI, never a browser page. With a zero key ws neither copies nor XORs the
 * payload (on Node 20 without the optional native addon that is a JavaScript loop over every byte,
 * on both the sending and the receiving side, for every Raft batch and request).
 */
function zeroMask(mask: Uint8Array): void {
  mask.fill(0);
}
