/**
 * The RPC frame (rpc/protos/rpc.proto `tessera.Frame`) encoded by hand with protobufjs's Writer/Reader:
 * it wraps every call, so it skips the reflection layer. Wire-compatible with the schema (tested).
 * Decoding untrusted bytes never throws: it reports what it could read (the call id, when present, lets
 * the server answer the caller with MALFORMED_FRAME instead of dropping the connection).
 */
import * as protobuf from 'protobufjs';
import { type WireError } from '../common';
import { assert } from '../common/assert';
import { putVarint, varintLen } from './varint';

export const FrameKind = {
  REQUEST: 1,
  RESPONSE: 2,
  ONEWAY: 3,
  ERROR: 4,
} as const;
export type FrameKind = (typeof FrameKind)[keyof typeof FrameKind];

export interface Frame {
  callId: number;
  kind: FrameKind;
  service: string;
  method: string;
  payload: Uint8Array;
  error?: WireError;
  /** Remaining time the caller waits; 0 = no deadline given. */
  timeoutMs: number;
}

export type FrameDecodeResult = { ok: true; frame: Frame } | { ok: false; callId: number; reason: string };

const EMPTY = new Uint8Array(0);

// Field tags: (field number << 3) | wire type (0 = varint, 2 = length-delimited).
const TAG_CALL_ID = (1 << 3) | 0;
const TAG_KIND = (2 << 3) | 0;
const TAG_SERVICE = (3 << 3) | 2;
const TAG_METHOD = (4 << 3) | 2;
const TAG_PAYLOAD = (5 << 3) | 2;
const TAG_ERROR = (6 << 3) | 2;
const TAG_TIMEOUT = (7 << 3) | 0;
const TAG_ERR_CODE = (1 << 3) | 2;
const TAG_ERR_MESSAGE = (2 << 3) | 2;
const TAG_ERR_DETAILS = (3 << 3) | 2;

/**
 * One allocation of exactly the frame's size and one copy of the payload (protobufjs's writer copied
 * a payload twice: into its growing buffer, then into the finished one — 2 × 4 MiB per Raft batch of
 * large rows).
 */
export function encodeFrame(f: Frame): Uint8Array {
  const serviceLen = f.service ? Buffer.byteLength(f.service) : 0;
  const methodLen = f.method ? Buffer.byteLength(f.method) : 0;
  const payloadLen = f.payload.length;
  let err: { code: string; codeLen: number; message: string; messageLen: number; details: string; detailsLen: number; len: number } | undefined;
  if (f.error) {
    const code = f.error.code ?? '';
    const message = f.error.message ?? '';
    const details = f.error.details && Object.keys(f.error.details).length > 0 ? safeJson(f.error.details) : '';
    const codeLen = Buffer.byteLength(code);
    const messageLen = Buffer.byteLength(message);
    const detailsLen = Buffer.byteLength(details);
    const field = (n: number): number => (n > 0 ? 1 + varintLen(n) + n : 0);
    err = { code, codeLen, message, messageLen, details, detailsLen, len: field(codeLen) + field(messageLen) + field(detailsLen) };
  }
  const timeout = f.timeoutMs > 0 ? Math.min(0xffffffff, Math.ceil(f.timeoutMs)) : 0;
  let size = 1 + varintLen(f.kind);
  if (f.callId !== 0) size += 1 + varintLen(f.callId);
  if (serviceLen > 0) size += 1 + varintLen(serviceLen) + serviceLen;
  if (methodLen > 0) size += 1 + varintLen(methodLen) + methodLen;
  if (payloadLen > 0) size += 1 + varintLen(payloadLen) + payloadLen;
  if (err) size += 1 + varintLen(err.len) + err.len;
  if (timeout > 0) size += 1 + varintLen(timeout);
  const b = Buffer.allocUnsafe(size);
  let p = 0;
  const str = (tag: number, s: string, n: number): void => {
    if (n === 0) return;
    b[p++] = tag;
    p = putVarint(b, p, n);
    p += b.write(s, p, n, 'utf8');
  };
  if (f.callId !== 0) {
    b[p++] = TAG_CALL_ID;
    p = putVarint(b, p, f.callId);
  }
  b[p++] = TAG_KIND;
  p = putVarint(b, p, f.kind);
  str(TAG_SERVICE, f.service, serviceLen);
  str(TAG_METHOD, f.method, methodLen);
  if (payloadLen > 0) {
    b[p++] = TAG_PAYLOAD;
    p = putVarint(b, p, payloadLen);
    b.set(f.payload, p);
    p += payloadLen;
  }
  if (err) {
    b[p++] = TAG_ERROR;
    p = putVarint(b, p, err.len);
    str(TAG_ERR_CODE, err.code, err.codeLen);
    str(TAG_ERR_MESSAGE, err.message, err.messageLen);
    str(TAG_ERR_DETAILS, err.details, err.detailsLen);
  }
  if (timeout > 0) {
    b[p++] = TAG_TIMEOUT;
    p = putVarint(b, p, timeout);
  }
  assert(p === size, `frame encoded to ${p} bytes, sized ${size}`);
  return b;
}

/** Details are JSON on the wire; bigint becomes a string so a details object can never fail to encode. */
function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  } catch {
    return '';
  }
}

function parseDetails(s: string): Record<string, unknown> {
  if (!s) return {};
  try {
    const v: unknown = JSON.parse(s);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { raw: s };
  }
}

function decodeError(r: protobuf.Reader, end: number): WireError {
  let code = '';
  let message = '';
  let details = '';
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag) {
      case TAG_ERR_CODE:
        code = r.string();
        break;
      case TAG_ERR_MESSAGE:
        message = r.string();
        break;
      case TAG_ERR_DETAILS:
        details = r.string();
        break;
      default:
        r.skipType(tag & 7);
    }
  }
  return { code, message, details: parseDetails(details) };
}

export function decodeFrame(buf: Uint8Array): FrameDecodeResult {
  let callId = 0;
  let kind = 0;
  let service = '';
  let method = '';
  let payload: Uint8Array = EMPTY;
  let error: WireError | undefined;
  let timeoutMs = 0;
  try {
    const r = protobuf.Reader.create(buf);
    while (r.pos < r.len) {
      const tag = r.uint32();
      switch (tag) {
        case TAG_CALL_ID:
          callId = r.uint32();
          break;
        case TAG_KIND:
          kind = r.uint32();
          break;
        case TAG_SERVICE:
          service = r.string();
          break;
        case TAG_METHOD:
          method = r.string();
          break;
        case TAG_PAYLOAD:
          payload = r.bytes();
          break;
        case TAG_ERROR: {
          const len = r.uint32();
          const end = r.pos + len;
          if (end > r.len) throw new RangeError('error field runs past the frame');
          error = decodeError(r, end);
          if (r.pos !== end) throw new RangeError('error field length mismatch');
          break;
        }
        case TAG_TIMEOUT:
          timeoutMs = r.uint32();
          break;
        default:
          if (tag >>> 3 === 0) throw new RangeError('field number 0');
          r.skipType(tag & 7);
      }
    }
  } catch (e) {
    return { ok: false, callId, reason: `malformed frame: ${(e as Error).message}` };
  }
  if (kind < FrameKind.REQUEST || kind > FrameKind.ERROR) return { ok: false, callId, reason: `malformed frame: unknown kind ${kind}` };
  return { ok: true, frame: { callId, kind: kind as FrameKind, service, method, payload, error, timeoutMs } };
}
