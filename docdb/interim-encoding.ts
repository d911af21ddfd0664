/**
 * TEMPORARY stand-in for docdb/encoding/ (written by another helper, not yet committed): the same
 * function names, a simple order-preserving layout. storage-keys.ts is the only importer; switch its
 * import to './encoding' and delete this file once that module lands.
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import type { DocKey, Primitive } from './doc-db-api';

export const WEAK_READ = 1;
export const WEAK_WRITE = 2;
export const STRONG_READ = 4;
export const STRONG_WRITE = 8;
export const INTENT_TYPE_SET_TAG = 13;

/** Two intent type sets conflict iff one has a strong read/write and the other the opposite op. */
export function intentTypesConflict(a: number, b: number): boolean {
  const strongA = a & (STRONG_READ | STRONG_WRITE);
  const strongB = b & (STRONG_READ | STRONG_WRITE);
  const reads = (s: number): boolean => (s & (WEAK_READ | STRONG_READ)) !== 0;
  const writes = (s: number): boolean => (s & (WEAK_WRITE | STRONG_WRITE)) !== 0;
  // strong read vs any write, strong write vs any read
  if ((strongA & STRONG_READ && writes(b)) || (strongA & STRONG_WRITE && reads(b))) return true;
  if ((strongB & STRONG_READ && writes(a)) || (strongB & STRONG_WRITE && reads(a))) return true;
  return false;
}

function escapeBytes(b: Uint8Array): Buffer {
  const out: number[] = [];
  for (const x of b) {
    if (x === 0) out.push(0, 1);
    else out.push(x);
  }
  out.push(0, 0);
  return Buffer.from(out);
}

function unescapeBytes(b: Buffer, off: number): { v: Buffer; end: number } {
  const out: number[] = [];
  let i = off;
  for (;;) {
    assert(i < b.length, 'truncated escaped bytes');
    const x = b[i]!;
    if (x === 0) {
      const y = b[i + 1];
      if (y === 0) return { v: Buffer.from(out), end: i + 2 };
      assert(y === 1, 'bad escape');
      out.push(0);
      i += 2;
    } else {
      out.push(x);
      i++;
    }
  }
}

export function encodePrimitive(p: Primitive): Buffer {
  if (p === null) return Buffer.from([0x24]);
  if (p === false) return Buffer.from([0x46]);
  if (p === true) return Buffer.from([0x54]);
  if (typeof p === 'bigint') {
    const b = Buffer.alloc(9);
    b[0] = 0x49;
    b.writeBigUInt64BE(BigInt.asUintN(64, p) ^ (1n << 63n), 1);
    return b;
  }
  if (typeof p === 'number') {
    const b = Buffer.alloc(9);
    b[0] = 0x44;
    b.writeDoubleBE(p, 1);
    if ((b[1]! & 0x80) !== 0) for (let i = 1; i < 9; i++) b[i] = ~b[i]! & 0xff;
    else b[1] = b[1]! | 0x80;
    return b;
  }
  if (typeof p === 'string') return Buffer.concat([Buffer.from([0x53]), escapeBytes(Buffer.from(p, 'utf8'))]);
  return Buffer.concat([Buffer.from([0x62]), escapeBytes(p)]);
}

export function decodePrimitive(b: Buffer, off: number): { value: Primitive; end: number } {
  const t = b[off];
  switch (t) {
    case 0x24:
      return { value: null, end: off + 1 };
    case 0x46:
      return { value: false, end: off + 1 };
    case 0x54:
      return { value: true, end: off + 1 };
    case 0x49:
      return { value: BigInt.asIntN(64, b.readBigUInt64BE(off + 1) ^ (1n << 63n)), end: off + 9 };
    case 0x44: {
      const c = Buffer.from(b.subarray(off + 1, off + 9));
      if ((c[0]! & 0x80) !== 0) c[0] = c[0]! & 0x7f;
      else for (let i = 0; i < 8; i++) c[i] = ~c[i]! & 0xff;
      return { value: c.readDoubleBE(0), end: off + 9 };
    }
    case 0x53: {
      const r = unescapeBytes(b, off + 1);
      return { value: r.v.toString('utf8'), end: r.end };
    }
    case 0x62: {
      const r = unescapeBytes(b, off + 1);
      return { value: new Uint8Array(r.v), end: r.end };
    }
    default:
      throw new Error(`bad primitive tag ${String(t)}`);
  }
}

export function encodeDocKey(k: DocKey): Buffer {
  const h = Buffer.alloc(3);
  h[0] = 0x47;
  h.writeUInt16BE(k.hash, 1);
  return Buffer.concat([h, ...k.hashed.map(encodePrimitive), Buffer.from([0x21]), ...k.range.map(encodePrimitive), Buffer.from([0x21])]);
}

export function decodeDocKey(buf: Buffer, offset: number): { key: DocKey; end: number } {
  assert(buf[offset] === 0x47, 'DocKey must start with G');
  const hash = buf.readUInt16BE(offset + 1);
  let i = offset + 3;
  const hashed: Primitive[] = [];
  const range: Primitive[] = [];
  while (buf[i] !== 0x21) {
    const r = decodePrimitive(buf, i);
    hashed.push(r.value);
    i = r.end;
  }
  i++;
  while (buf[i] !== 0x21) {
    const r = decodePrimitive(buf, i);
    range.push(r.value);
    i = r.end;
  }
  return { key: { hash, hashed, range }, end: i + 1 };
}

export function encodeSubDocKey(docKeyBuf: Buffer, column: number | 'liveness' | undefined): Buffer {
  if (column === undefined) return docKeyBuf;
  if (column === 'liveness') return Buffer.concat([docKeyBuf, Buffer.from([0x4a, 0x00])]);
  const b = Buffer.alloc(5);
  b[0] = 0x4b;
  b.writeUInt32BE(column, 1);
  return Buffer.concat([docKeyBuf, b]);
}

export function decodeSubDocKey(key: Buffer, docKeyEnd: number): { column: number | 'liveness' | undefined; end: number } {
  const t = key[docKeyEnd];
  if (t === 0x4a) return { column: 'liveness', end: docKeyEnd + 2 };
  if (t === 0x4b) return { column: key.readUInt32BE(docKeyEnd + 1), end: docKeyEnd + 5 };
  return { column: undefined, end: docKeyEnd };
}

const DOC_HT_BYTES = 13;

export function encodeDocHybridTime(ht: HybridTime, writeId: number): Buffer {
  const b = Buffer.alloc(DOC_HT_BYTES);
  b[0] = 0x23;
  b.writeBigUInt64BE(~ht & ((1n << 64n) - 1n), 1);
  b.writeUInt32BE(~writeId >>> 0, 9);
  return b;
}

export function appendDocHybridTime(keyWithoutTime: Buffer, ht: HybridTime, writeId: number): Buffer {
  return Buffer.concat([keyWithoutTime, encodeDocHybridTime(ht, writeId)]);
}

export function decodeDocHybridTimeFromEnd(key: Buffer): { ht: HybridTime; writeId: number; timeStart: number } {
  const s = key.length - DOC_HT_BYTES;
  assert(s >= 0 && key[s] === 0x23, 'key has no DocHybridTime');
  return { ht: ~key.readBigUInt64BE(s + 1) & ((1n << 64n) - 1n), writeId: ~key.readUInt32BE(s + 9) >>> 0, timeStart: s };
}

export type DocValue = { type: 'primitive'; value: Primitive; ttlMs?: number } | { type: 'tombstone' } | { type: 'liveness'; ttlMs?: number };

export function encodeValue(v: DocValue): Buffer {
  const ttl = v.type !== 'tombstone' && v.ttlMs !== undefined ? Buffer.concat([Buffer.from([0x74]), Buffer.from(BigInt(v.ttlMs).toString(16).padStart(16, '0'), 'hex')]) : Buffer.alloc(0);
  if (v.type === 'tombstone') return Buffer.from([0x58]);
  if (v.type === 'liveness') return Buffer.concat([ttl, Buffer.from([0x4c])]);
  return Buffer.concat([ttl, Buffer.from([0x56]), encodePrimitive(v.value)]);
}

export function decodeValue(b: Buffer): DocValue {
  let i = 0;
  let ttlMs: number | undefined;
  if (b[0] === 0x74) {
    ttlMs = Number(b.readBigUInt64BE(1));
    i = 9;
  }
  const t = b[i];
  if (t === 0x58) return { type: 'tombstone' };
  if (t === 0x4c) return ttlMs === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs };
  assert(t === 0x56, 'bad value tag');
  const value = decodePrimitive(b, i + 1).value;
  return ttlMs === undefined ? { type: 'primitive', value } : { type: 'primitive', value, ttlMs };
}
