/**
 * RPC client over WebSocket: one connection per server address, opened on first use and reopened on
 * demand after a loss. Connects refused by a down peer back off exponentially (bounded); while
 * backing off, calls to that address fail at once with a retryable NETWORK_ERROR instead of hanging.
 * A cut network is told apart, so its heal is noticed within about a second: a SYN unanswered for
 * rpc_tcp_connect_timeout_ms gives the attempt up and the next call tries again at once; no route to
 * the peer (ENETUNREACH, EHOSTUNREACH) retries after a short fixed pause. Host names are resolved
 * through host-resolver.ts (kept after the first lookup: no getaddrinfo on the thread pool per connect).
 */
import { DbError, ErrorCode } from '../common';
import type { CallOptions, Codec, ConnectionStats, MethodDef, OnewayDef, RpcClient } from './types';
import { byRemote, type RpczConnection } from './rpcz';
import { encodeOneway, encodeRequest } from './call-payload';
import { WsConnection, type WsClientDeps } from './ws-connection';

export type { WsClientDeps } from './ws-connection';

/** Connections this client keeps; beyond it the least recently created idle one is dropped. */
const CONNECTIONS_MAX = 4096;
const EMPTY = new Uint8Array(0);

export class WsRpcClient implements RpcClient {
  private readonly conns = new Map<string, WsConnection>();
  private closed = false;

  /** Keepalive closes and connect time-outs of connections dropped from the map since (evicted idle ones). */
  private closedUnansweredPingGone = 0;
  private connectsTimedOutGone = 0;

  constructor(private readonly deps: WsClientDeps) {}

  connectionStats(): ConnectionStats {
    let open = 0;
    let closed = this.closedUnansweredPingGone;
    let timedOut = this.connectsTimedOutGone;
    for (const c of this.conns.values()) {
      if (c.isOpen) open++;
      closed += c.closedUnansweredPing;
      timedOut += c.connectsTimedOut;
    }
    return { open, closedUnansweredPing: closed, connectTimedOut: timedOut };
  }

  /** /rpcz's outbound side: every server this client has a connection (or a back-off) to. */
  rpcz(): RpczConnection[] {
    const now = performance.now();
    return [...this.conns.values()].map((c) => c.rpcz(now)).sort(byRemote);
  }

  private conn(address: string): WsConnection {
    let c = this.conns.get(address);
    if (!c) {
      if (this.conns.size >= CONNECTIONS_MAX) {
        for (const [a, old] of this.conns) {
          if (old.idle) {
            this.closedUnansweredPingGone += old.closedUnansweredPing;
            this.connectsTimedOutGone += old.connectsTimedOut;
            this.conns.delete(a);
            break;
          }
        }
      }
      c = new WsConnection(address, this.deps);
      this.conns.set(address, c);
    }
    return c;
  }

  call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req, opts?: CallOptions): Promise<Resp> {
    if (this.closed) return Promise.reject(new DbError(ErrorCode.SHUTTING_DOWN, 'RPC client is closed'));
    const payload = encodeRequest(m, req, this.deps.messageBytesMax);
    if (payload instanceof DbError) return Promise.reject(payload);
    const timeoutMs = opts?.timeoutMs ?? this.deps.defaultTimeoutMs();
    return this.conn(address).call(m.service, m.method, payload, m.resp as Codec<unknown>, timeoutMs, Math.max(timeoutMs, opts?.serverTimeoutMs ?? 0)) as Promise<Resp>;
  }

  /**
   * One-way message. Network trouble drops it silently (callers such as Raft retry by protocol); a
   * message that cannot be encoded or is over the size limit is a caller bug and throws.
   */
  send<M>(address: string, m: OnewayDef<M>, msg: M): void {
    if (this.closed) return;
    const payload = encodeOneway(m, msg, this.deps.messageBytesMax);
    this.conn(address).send(m.service, m.method, payload.length === 0 ? EMPTY : payload);
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.conns.values()];
    this.conns.clear();
    await Promise.all(all.map((c) => c.close()));
  }
}
