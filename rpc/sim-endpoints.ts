/**
 * The server and client endpoints of the simulated network (sim-transport.ts). They reach the
 * network only through SimWire, so the network owns the schedule, the faults and the calls in flight.
 */
import { DbError, ErrorCode, type Logger, type ManualClock, type WireError } from '../common';
import { encodeOneway, encodeRequest } from './call-payload';
import { HandlerRegistry } from './handler-registry';
import type { CallOptions, Codec, Handler, MethodDef, OnewayDef, OnewayHandler, RpcClient, RpcServer, ServerOptions } from './types';

export type PacketKind = 'request' | 'response' | 'error' | 'oneway';

export interface Packet {
  readonly seq: number;
  readonly atMs: number;
  /** Sort key within the same atMs: seq, or smaller for a packet that overtakes (reorder). */
  readonly order: number;
  readonly kind: PacketKind;
  readonly fromHost: string;
  readonly toHost: string;
  /** Server address for requests/one-ways; the client's id for answers. */
  readonly to: string;
  readonly epoch: number;
  readonly callId: number;
  readonly service: string;
  readonly method: string;
  readonly payload: Uint8Array;
  readonly error?: WireError;
  readonly timeoutMs: number;
  readonly clientId: number;
}

/** What the endpoints need of the simulated network (SimNetwork implements it). */
export interface SimWire {
  readonly clock: ManualClock;
  readonly messageBytesMax: number;
  readonly defaultTimeoutMs: number;
  readonly logger: Logger;
  /** Listen on host:port (0: an ephemeral port); returns the address. */
  bind(s: SimRpcServer, host: string, port: number): string;
  unbind(address: string): void;
  registerClient(c: SimRpcClient): number;
  closeClient(c: SimRpcClient): void;
  startCall(c: SimRpcClient, address: string, service: string, method: string, payload: Uint8Array, codec: Codec<unknown>, timeoutMs: number, serverTimeoutMs?: number): Promise<unknown>;
  sendOneway(c: SimRpcClient, address: string, service: string, method: string, payload: Uint8Array): void;
  reply(server: SimRpcServer, req: Packet, payload: Uint8Array, error: WireError | undefined): void;
}

export class SimRpcServer implements RpcServer {
  private readonly registry: HandlerRegistry;
  private boundAddress: string;
  private running = false;
  private readonly messageBytesMax: number;

  constructor(
    private readonly network: SimWire,
    private readonly opts: ServerOptions,
  ) {
    this.registry = new HandlerRegistry(network.logger);
    this.boundAddress = `${opts.host}:${opts.port}`;
    this.messageBytesMax = opts.messageBytesMax ?? network.messageBytesMax;
  }

  get address(): string {
    return this.boundAddress;
  }

  handle<Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void {
    this.registry.handle(m, h);
  }

  onOneway<M>(m: OnewayDef<M>, h: OnewayHandler<M>): void {
    this.registry.onOneway(m, h);
  }

  setStarting(reason: string | undefined): void {
    this.registry.setStarting(reason);
  }

  start(): Promise<void> {
    try {
      this.boundAddress = this.network.bind(this, this.opts.host, this.opts.port);
    } catch (e) {
      return Promise.reject(e);
    }
    this.running = true;
    return Promise.resolve();
  }

  stop(): Promise<void> {
    if (this.running) {
      this.running = false;
      this.network.unbind(this.boundAddress);
    }
    return Promise.resolve();
  }

  /** @internal */
  receive(p: Packet): void {
    const ctx = { peer: `${p.fromHost}:${p.clientId}`, deadlineMonoMs: this.network.clock.monoMs() + (p.timeoutMs || this.network.defaultTimeoutMs) };
    if (p.kind === 'oneway') {
      if (p.payload.length <= this.messageBytesMax) this.registry.dispatchOneway(p.service, p.method, p.payload, ctx);
      return;
    }
    if (p.payload.length > this.messageBytesMax) {
      this.network.reply(this, p, new Uint8Array(0), {
        code: ErrorCode.MESSAGE_TOO_LARGE,
        message: `request of ${p.payload.length} bytes exceeds rpc_max_message_size ${this.messageBytesMax}`,
        details: { bytes: p.payload.length, limit: this.messageBytesMax },
      });
      return;
    }
    void this.registry.dispatch(p.service, p.method, p.payload, ctx, this.messageBytesMax).then((r) => {
      if (r.ok) this.network.reply(this, p, r.payload, undefined);
      else this.network.reply(this, p, new Uint8Array(0), r.error);
    });
  }
}

export class SimRpcClient implements RpcClient {
  readonly id: number;
  private closed = false;

  constructor(
    private readonly network: SimWire,
    readonly host: string,
  ) {
    this.id = network.registerClient(this);
  }

  call<Req, Resp>(address: string, m: MethodDef<Req, Resp>, req: Req, opts?: CallOptions): Promise<Resp> {
    if (this.closed) return Promise.reject(new DbError(ErrorCode.SHUTTING_DOWN, 'RPC client is closed'));
    const payload = encodeRequest(m, req, this.network.messageBytesMax);
    if (payload instanceof DbError) return Promise.reject(payload);
    const timeoutMs = opts?.timeoutMs ?? this.network.defaultTimeoutMs;
    return this.network.startCall(this, address, m.service, m.method, payload, m.resp as Codec<unknown>, timeoutMs, Math.max(timeoutMs, opts?.serverTimeoutMs ?? 0)) as Promise<Resp>;
  }

  send<M>(address: string, m: OnewayDef<M>, msg: M): void {
    if (this.closed) return;
    const payload = encodeOneway(m, msg, this.network.messageBytesMax);
    this.network.sendOneway(this, address, m.service, m.method, payload);
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.network.closeClient(this);
    }
    return Promise.resolve();
  }
}
