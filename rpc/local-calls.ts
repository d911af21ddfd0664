/**
 * Calls from inside a server process to that same server (a tserver's SQL layer reading and writing
 * the tablets its own tserver leads; docs/sql.md "Calls to the SQL node's own tablets"). They skip
 * what only a network needs — the frame, the WebSocket, the loopback socket both ways — and keep
 * everything else a call over the network has: the request and the answer are still protobuf-encoded
 * and decoded (so the handler and the caller see exactly what they would see from the wire, with no
 * object shared between them), the server's dispatch, size checks and error codes are the same
 * (HandlerRegistry), a stopping server answers SHUTTING_DOWN, the in-flight bound holds, /rpcz lists
 * the calls on both sides, and the caller's timeout fails the call with TIMED_OUT as before.
 */
import { DbError, ErrorCode, RPC_INFLIGHT_CALLS_MAX } from '../common';
import { encodeRequest } from './call-payload';
import type { DispatchResult } from './handler-registry';
import { inFlightRows, round1, type TrackedCall } from './rpcz';
import type { RpczConnection } from './rpcz-types';
import type { CallOptions, Codec, ConnectionStats, MethodDef, OnewayDef, RpcClient } from './types';

/** The peer a handler sees for a call made inside its own process. */
export const IN_PROCESS_PEER = 'in-process';

/** The server side: what WsRpcServer.dispatchLocal offers. */
export interface LocalDispatcher {
  dispatchLocal(service: string, method: string, payload: Uint8Array, serverTimeoutMs: number): Promise<DispatchResult>;
}

/**
 * The calls being handled for this process (the server's /rpcz row `in-process`), bounded like one
 * connection's (RPC_INFLIGHT_CALLS_MAX).
 */
export class LocalCallTracker {
  private readonly calls = new Map<number, TrackedCall>();
  private nextId = 1;
  private answered = 0;
  private readonly openedMs = performance.now();

  /** An id for a new call, or undefined when RPC_INFLIGHT_CALLS_MAX are in flight (BACKPRESSURE). */
  begin(service: string, method: string, timeoutMs: number): number | undefined {
    if (this.calls.size >= RPC_INFLIGHT_CALLS_MAX) return undefined;
    const id = this.nextId;
    this.nextId = id >= 0xffffffff ? 1 : id + 1;
    this.calls.set(id, { service, method, startMs: performance.now(), timeoutMs });
    return id;
  }

  end(id: number): void {
    if (this.calls.delete(id)) this.answered++;
  }

  get inFlight(): number {
    return this.calls.size;
  }

  rpcz(remote: string): RpczConnection {
    const now = performance.now();
    return { remote, caller: IN_PROCESS_PEER, state: 'open', openForMs: round1(now - this.openedMs), quietMs: 0, calls: this.answered + this.calls.size, callsInFlight: this.calls.size, inFlight: inFlightRows(this.calls, now) };
  }
}

/**
 * An RpcClient that makes calls to `localAddress` through `server` in this process and every other
 * call (and every one-way message) through `inner`; while `enabled()` is false, every call goes
 * through `inner` (a runtime switch for A/B runs).
 */
export class LocalCallsClient implements RpcClient {
  private readonly tracker = new LocalCallTracker();

  constructor(
    private readonly inner: RpcClient,
    private readonly localAddress: string,
    private readonly server: LocalDispatcher,
    private readonly messageBytesMax: number,
    private readonly defaultTimeoutMs: () => number,
    private readonly enabled: () => boolean = () => true,
  ) {}

  call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req, opts?: CallOptions): Promise<Resp> {
    if (address !== this.localAddress || !this.enabled()) return this.inner.call(address, m, req, opts);
    const payload = encodeRequest(m, req, this.messageBytesMax);
    if (payload instanceof DbError) return Promise.reject(payload);
    const timeoutMs = opts?.timeoutMs ?? this.defaultTimeoutMs();
    const id = this.tracker.begin(m.service, m.method, timeoutMs);
    if (id === undefined) return Promise.reject(new DbError(ErrorCode.BACKPRESSURE, `${this.tracker.inFlight} calls in flight to ${address} (in-process)`, { address }));
    return new Promise<Resp>((resolve, reject) => {
      let done = false;
      const timer = setTimeout(() => {
        if (done) return;
        done = true;
        this.tracker.end(id);
        // heard: the server is this process, alive (the call is slow, not lost): as a WebSocket call
        // whose connection kept delivering frames, the caller keeps the server as the leader
        // (client/status-tablet-proxy.ts, replica-health.ts; a transaction's heartbeats under load).
        reject(new DbError(ErrorCode.TIMED_OUT, `${m.service}.${m.method} to ${address} timed out after ${timeoutMs} ms`, { address, timeoutMs, sent: true, heard: true }));
      }, timeoutMs);
      const settle = (r: DispatchResult): void => {
        if (done) return; // late answer to a call that timed out
        done = true;
        clearTimeout(timer);
        this.tracker.end(id);
        if (!r.ok) return reject(DbError.fromWire(r.error));
        try {
          resolve((m.resp as Codec<Resp>).decode(r.payload));
        } catch (e) {
          reject(new DbError(ErrorCode.MALFORMED_FRAME, `response of ${m.service}.${m.method} does not decode: ${(e as Error).message}`));
        }
      };
      this.server.dispatchLocal(m.service, m.method, payload, Math.max(timeoutMs, opts?.serverTimeoutMs ?? 0)).then(settle, (e: unknown) => settle({ ok: false, error: DbError.from(e).toWire() }));
    });
  }

  send<M>(address: string, m: OnewayDef<M>, msg: M): void {
    this.inner.send(address, m, msg);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  connectionStats(): ConnectionStats {
    return this.inner.connectionStats?.() ?? { open: 0, closedUnansweredPing: 0 };
  }

  rpcz(): RpczConnection[] {
    return [this.tracker.rpcz(`${this.localAddress} (in-process)`), ...(this.inner.rpcz?.() ?? [])];
  }
}
