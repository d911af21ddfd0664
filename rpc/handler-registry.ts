/**
 * Server-side method table and dispatch, shared by the WebSocket and simulated transports so both give
 * the same answers to the same inputs: unknown method -> UNKNOWN_METHOD, undecodable payload ->
 * MALFORMED_FRAME, handler DbError -> passed through, any other exception -> INTERNAL (logged), too
 * large a response -> MESSAGE_TOO_LARGE. Nothing a handler or a peer does can throw out of here.
 */
import { assert, DbError, ErrorCode, type Logger } from '../common';
import type { DispatchResult, Handler, MethodDef, OnewayDef, OnewayHandler, RpcContext } from './types';

interface CallEntry {
  readonly kind: 'call';
  readonly def: MethodDef<unknown, unknown>;
  readonly handler: Handler<unknown, unknown>;
}
interface OnewayEntry {
  readonly kind: 'oneway';
  readonly def: OnewayDef<unknown>;
  readonly handler: OnewayHandler<unknown>;
}
type Entry = CallEntry | OnewayEntry;

export type { DispatchResult } from './types';

function fail(code: ErrorCode, message: string, details: Record<string, unknown> = {}): DispatchResult {
  return { ok: false, error: { code, message, details } };
}

export class HandlerRegistry {
  /** service -> method -> entry; two levels so dispatch needs no string concatenation. */
  private readonly services = new Map<string, Map<string, Entry>>();
  /**
   * Set while the server listens but has not registered all its methods yet (a master opening its sys
   * catalog): a request for a method not registered yet gets SERVICE_UNAVAILABLE with this reason —
   * retryable, the caller tries again — instead of UNKNOWN_METHOD, which would be final.
   */
  private startingReason: string | undefined;

  /** `reason` while starting (see startingReason); undefined once every method is registered. */
  setStarting(reason: string | undefined): void {
    this.startingReason = reason;
  }

  constructor(private readonly log: Logger) {}

  private add(service: string, method: string, e: Entry): void {
    let methods = this.services.get(service);
    if (!methods) {
      methods = new Map();
      this.services.set(service, methods);
    }
    assert(!methods.has(method), `RPC method ${service}.${method} registered twice`);
    methods.set(method, e);
  }

  handle<Req, Resp>(m: MethodDef<Req, Resp>, h: Handler<Req, Resp>): void {
    this.add(m.service, m.method, { kind: 'call', def: m as MethodDef<unknown, unknown>, handler: h as Handler<unknown, unknown> });
  }

  onOneway<M>(m: OnewayDef<M>, h: OnewayHandler<M>): void {
    this.add(m.service, m.method, { kind: 'oneway', def: m as OnewayDef<unknown>, handler: h as OnewayHandler<unknown> });
  }

  private lookup(service: string, method: string): Entry | undefined {
    return this.services.get(service)?.get(method);
  }

  /** Run a request; always resolves (never rejects) with the encoded response or a wire error. */
  async dispatch(service: string, method: string, payload: Uint8Array, ctx: RpcContext, messageBytesMax: number): Promise<DispatchResult> {
    const e = this.lookup(service, method);
    if (!e || e.kind !== 'call') {
      if (this.startingReason !== undefined) return fail(ErrorCode.SERVICE_UNAVAILABLE, this.startingReason, { service, method });
      return fail(ErrorCode.UNKNOWN_METHOD, `no RPC method ${service}.${method} on this server`, { service, method });
    }
    let req: unknown;
    try {
      req = e.def.req.decode(payload);
    } catch (err) {
      return fail(ErrorCode.MALFORMED_FRAME, `request of ${service}.${method} does not decode: ${(err as Error).message}`, { service, method });
    }
    let resp: unknown;
    try {
      resp = await e.handler(req, ctx);
    } catch (err) {
      if (err instanceof DbError) return { ok: false, error: err.toWire() };
      this.log.error({ err, service, method, peer: ctx.peer }, 'RPC handler threw an unexpected exception');
      return fail(ErrorCode.INTERNAL, `${service}.${method} failed: ${err instanceof Error ? err.message : String(err)}`, { service, method });
    }
    let out: Uint8Array;
    try {
      out = e.def.resp.encode(resp);
    } catch (err) {
      this.log.error({ err, service, method }, 'RPC response does not encode');
      return fail(ErrorCode.INTERNAL, `${service}.${method}: response does not encode: ${(err as Error).message}`, { service, method });
    }
    if (out.length > messageBytesMax) {
      return fail(ErrorCode.MESSAGE_TOO_LARGE, `${service}.${method}: response of ${out.length} bytes exceeds rpc_max_message_size ${messageBytesMax}`, {
        service,
        method,
        bytes: out.length,
        limit: messageBytesMax,
      });
    }
    return { ok: true, payload: out };
  }

  /** Deliver a one-way message; problems are logged and the message dropped (there is no one to answer). */
  dispatchOneway(service: string, method: string, payload: Uint8Array, ctx: RpcContext): void {
    const e = this.lookup(service, method);
    if (!e || e.kind !== 'oneway') {
      if (!e && this.startingReason !== undefined) {
        this.log.debug({ service, method, peer: ctx.peer }, 'one-way message dropped: server still starting');
        return;
      }
      this.log.warn({ service, method, peer: ctx.peer }, 'one-way message for an unknown method dropped');
      return;
    }
    let msg: unknown;
    try {
      msg = e.def.msg.decode(payload);
    } catch (err) {
      this.log.warn({ err, service, method, peer: ctx.peer }, 'one-way message does not decode; dropped');
      return;
    }
    try {
      e.handler(msg, ctx);
    } catch (err) {
      this.log.error({ err, service, method, peer: ctx.peer }, 'one-way handler threw');
    }
  }
}
