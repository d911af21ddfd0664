/**
 * Encoding a call's request or a one-way message on the client side, with the size check every
 * client transport makes the same way (ws-client.ts, sim-endpoints.ts).
 */
import { DbError, ErrorCode } from '../common';
import type { MethodDef, OnewayDef } from './types';

/** The encoded request, or the error the call fails with (a bad request, or one over rpc_max_message_size). */
export function encodeRequest<Req, Resp>(m: MethodDef<Req, Resp>, req: Req, messageBytesMax: number): Uint8Array | DbError {
  let payload: Uint8Array;
  try {
    payload = m.req.encode(req);
  } catch (e) {
    return e instanceof DbError ? e : new DbError(ErrorCode.INVALID_ARGUMENT, `cannot encode ${m.service}.${m.method} request: ${(e as Error).message}`);
  }
  if (payload.length > messageBytesMax) {
    return new DbError(ErrorCode.MESSAGE_TOO_LARGE, `${m.service}.${m.method} request of ${payload.length} bytes exceeds rpc_max_message_size ${messageBytesMax}`, {
      bytes: payload.length,
      limit: messageBytesMax,
    });
  }
  return payload;
}

/**
 * The encoded one-way message. A message that cannot be encoded or is over the size limit is a
 * caller bug and throws (network trouble, by contrast, drops one-way messages silently).
 */
export function encodeOneway<M>(m: OnewayDef<M>, msg: M, messageBytesMax: number): Uint8Array {
  const payload = m.msg.encode(msg);
  if (payload.length > messageBytesMax) {
    throw new DbError(ErrorCode.MESSAGE_TOO_LARGE, `${m.service}.${m.method} message of ${payload.length} bytes exceeds rpc_max_message_size ${messageBytesMax}`, {
      bytes: payload.length,
      limit: messageBytesMax,
    });
  }
  return payload;
}
