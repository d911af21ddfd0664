/**
 * The RPC contract every transport implements (WebSocket for real processes, simulated for tests).
 * Messages are protobuf (see rpc/protos/); a method is a (service, method, request codec, response
 * codec) tuple. Errors travel as {code, message, details} and surface as DbError.
 */
import type { RpczConnection } from './rpcz-types';
import type { WireError } from '../common';

/** A dispatched call's outcome: the answer's bytes, or the error to send. */
export type DispatchResult = { ok: true; payload: Uint8Array } | { ok: false; error: WireError };

export interface Codec<T> {
  encode(v: T): Uint8Array;
  decode(b: Uint8Array): T;
}

export interface MethodDef<Req, Resp> {
  readonly service: string;
  readonly method: string;
  readonly req: Codec<Req>;
  readonly resp: Codec<Resp>;
}

/** A message without a response (Raft batches). Delivery is best effort, like UDP with ordering per connection. */
export interface OnewayDef<M> {
  readonly service: string;
  readonly method: string;
  readonly msg: Codec<M>;
}

export interface CallOptions {
  /** Time allowed for the whole call; past it the call fails with TIMED_OUT. */
  timeoutMs?: number;
  /**
   * The deadline the server is told (what it may spend, e.g. waiting on a conflict); default
   * timeoutMs. Longer when the caller gives up on this attempt sooner but resends the same request
   * (a retryable request's copy joins the running original, which keeps its whole time).
   */
  serverTimeoutMs?: number;
}

export interface RpcContext {
  /** Remote address as the transport sees it. */
  readonly peer: string;
  /** Monotonic ms (performance.now()) after which the caller has given up. */
  readonly deadlineMonoMs: number;
}

export type Handler<Req, Resp> = (req: Req, ctx: RpcContext) => Promise<Resp>;
export type OnewayHandler<M> = (msg: M, ctx: RpcContext) => void;

export interface RpcServer {
  handle<Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void;
  onOneway<M>(m: OnewayDef<M>, h: OnewayHandler<M>): void;
  /**
   * While `reason` is set, a request for a method not registered yet is answered SERVICE_UNAVAILABLE
   * with it (retryable) rather than UNKNOWN_METHOD: a server can listen before it has opened what its
   * handlers need, so a port already taken fails the start before anything is written to disk.
   */
  setStarting(reason: string | undefined): void;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** `host:port` actually bound (port 0 resolves to the chosen port). */
  readonly address: string;
  /** Transports with connections (WebSocket) tell about them. */
  connectionStats?(): ConnectionStats;
  /** /rpcz: each client connection and the calls being handled on it (transports with connections). */
  rpcz?(): RpczConnection[];
  /**
   * A call made inside this server's own process (rpc/local-calls.ts): dispatched as a request that
   * arrived over the network would be, without a frame or a socket. Transports that have it (WebSocket).
   */
  dispatchLocal?(service: string, method: string, payload: Uint8Array, serverTimeoutMs: number): Promise<DispatchResult>;
}

/** Connections of one RPC client or server (metrics): open now, and closed since start because a keepalive ping stayed unanswered. */
export interface ConnectionStats {
  open: number;
  closedUnansweredPing: number;
  /** Clients: connect attempts given up since start because their TCP connect went unanswered (rpc_tcp_connect_timeout_ms). */
  connectTimedOut?: number;
  /**
   * Servers: connections closed since start without a valid answer to the cluster secret's challenge,
   * stuck mid-frame past rpc_frame_timeout_ms, and connects refused over rpc_connections_per_ip_max.
   */
  closedUnauthenticated?: number;
  closedStalledFrame?: number;
  refusedPerIp?: number;
}

export interface RpcClient {
  call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req, opts?: CallOptions): Promise<Resp>;
  send<M>(address: string, m: OnewayDef<M>, msg: M): void;
  close(): Promise<void>;
  /** Transports with connections (WebSocket) tell about them. */
  connectionStats?(): ConnectionStats;
  /** /rpcz: each server this client called and the calls in flight to it (transports with connections). */
  rpcz?(): RpczConnection[];
}

export interface ServerOptions {
  host: string;
  port: number;
  messageBytesMax?: number;
}

export interface ClientOptions {
  /**
   * Who this client is, told to every server it connects to (a tserver: `tserver 127.0.0.2:9100`) so
   * the servers' /rpcz names the caller rather than only its ephemeral ip:port. A function is asked at
   * each connect (a server bound to port 0 knows its address only once it listens).
   */
  caller?: string | (() => string | undefined);
}

export interface Transport {
  createServer(opts: ServerOptions): RpcServer;
  createClient(opts?: ClientOptions): RpcClient;
}
