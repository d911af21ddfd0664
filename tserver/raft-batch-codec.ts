/**
 * RaftBatchPB (rpc/protos/tserver.proto) encoded by hand: it is the hottest message of the system and
 * its shape is trivial, so it skips the generic protobuf layer. The bytes are standard protobuf wire
 * format (field 1 string from_uuid, field 2 repeated RaftEnvelopePB { 1 string group_id, 2 bytes
 * message }, field 3 string from_address), so any protobuf decoder reads them.
 */
import { BinaryReader } from '../common/byte-codec';
import { DbError, ErrorCode } from '../common/errors';
import { putVarint, varintLen, type Codec } from '../rpc';

export interface RaftEnvelope {
  groupId: string;
  /** raft/message-codec.ts encoding of one Message. */
  message: Uint8Array;
}

export interface RaftBatch {
  fromUuid: string;
  messages: RaftEnvelope[];
  /** Sender's RPC address (field 3), so receivers learn how to reach replicas added by a config change. */
  fromAddress?: string;
}

function malformed(why: string): DbError {
  return new DbError(ErrorCode.MALFORMED_FRAME, `malformed RaftBatchPB: ${why}`);
}

export function encodeRaftBatch(v: RaftBatch): Uint8Array {
  const from = Buffer.from(v.fromUuid, 'utf8');
  const envs = v.messages.map((m) => {
    const g = Buffer.from(m.groupId, 'utf8');
    const inner = 1 + varintLen(g.length) + g.length + 1 + varintLen(m.message.byteLength) + m.message.byteLength;
    return { g, m: m.message, inner };
  });
  const fromAddr = Buffer.from(v.fromAddress ?? '', 'utf8');
  let size = from.length > 0 ? 1 + varintLen(from.length) + from.length : 0;
  if (fromAddr.length > 0) size += 1 + varintLen(fromAddr.length) + fromAddr.length;
  for (const e of envs) size += 1 + varintLen(e.inner) + e.inner;
  const b = Buffer.allocUnsafe(size);
  let p = 0;
  if (from.length > 0) {
    b[p++] = 0x0a;
    p = putVarint(b, p, from.length);
    p += from.copy(b, p);
  }
  for (const e of envs) {
    b[p++] = 0x12;
    p = putVarint(b, p, e.inner);
    b[p++] = 0x0a;
    p = putVarint(b, p, e.g.length);
    p += e.g.copy(b, p);
    b[p++] = 0x12;
    p = putVarint(b, p, e.m.byteLength);
    b.set(e.m, p);
    p += e.m.byteLength;
  }
  if (fromAddr.length > 0) {
    b[p++] = 0x1a;
    p = putVarint(b, p, fromAddr.length);
    p += fromAddr.copy(b, p);
  }
  return b;
}

/** The shared reader (common/byte-codec.ts) with protobuf's wire rules: 10-byte varints, length-delimited fields, skips. */
class R extends BinaryReader {
  constructor(b: Uint8Array, start: number, end: number) {
    super(b, malformed, start, end);
  }
  varint(): number {
    let r = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      const x = this.u8();
      r += (x & 0x7f) * mul;
      if ((x & 0x80) === 0) return r;
      mul *= 0x80;
    }
    throw malformed('varint too long');
  }
  lenDelim(): [number, number] {
    const n = this.varint();
    if (n > this.end - this.pos) throw malformed('length past end');
    const s = this.pos;
    this.pos += n;
    return [s, s + n];
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.lenDelim();
    else if (wire === 5) this.pos += 4;
    else throw malformed(`wire type ${wire}`);
    if (this.pos > this.end) throw malformed('truncated field');
  }
}

const dec = new TextDecoder();

export function decodeRaftBatch(b: Uint8Array): RaftBatch {
  const r = new R(b, 0, b.length);
  const out: RaftBatch = { fromUuid: '', messages: [] };
  while (r.pos < r.end) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 1 && wire === 2) {
      const [s, e] = r.lenDelim();
      out.fromUuid = dec.decode(b.subarray(s, e));
    } else if (field === 2 && wire === 2) {
      const [s, e] = r.lenDelim();
      const ir = new R(b, s, e);
      const env: RaftEnvelope = { groupId: '', message: new Uint8Array(0) };
      while (ir.pos < ir.end) {
        const t = ir.varint();
        const f = Math.floor(t / 8);
        const w = t % 8;
        if (f === 1 && w === 2) {
          const [a, z] = ir.lenDelim();
          env.groupId = dec.decode(b.subarray(a, z));
        } else if (f === 2 && w === 2) {
          const [a, z] = ir.lenDelim();
          env.message = b.subarray(a, z);
        } else ir.skip(w);
      }
      out.messages.push(env);
    } else if (field === 3 && wire === 2) {
      const [s, e] = r.lenDelim();
      out.fromAddress = dec.decode(b.subarray(s, e));
    } else r.skip(wire);
  }
  return out;
}

export const raftBatchCodec: Codec<RaftBatch> = { encode: encodeRaftBatch, decode: decodeRaftBatch };
