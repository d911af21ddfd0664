/**
 * DocKey: the primary key of a row, encoded so RocksDB's byte order is the row order of a tablet.
 *
 *   with hash columns:     'G' + u16 BE hash + hashed components + '!' + range components + '!'
 *   without hash columns:  range components + '!'
 *
 * Because '!' sorts below every component tag, a key with fewer range components sorts before its
 * extensions and the encoding is prefix-free among DocKeys of one table shape: seeking to a DocKey
 * never lands inside another DocKey's versions.
 *
 * Partition hash (`partitionHash`): 32-bit FNV-1a over the *encoded* hashed components (tags
 * included, so 1n and 1.0 and "1" hash differently), finished with MurmurHash3's fmix32 avalanche
 * (FNV alone mixes the last bytes poorly), then folded to 16 bits as (h >>> 16) ^ (h & 0xffff).
 * It is part of the on-disk and routing contract: golden values are checked in by the tests.
 */
import { assert } from '../../common/assert';
import type { DocKey, Primitive } from './types';
import { ByteReader, ByteWriter } from './byte-buffer';
import { comparePrimitives, decodePrimitive, encodePrimitive, skipPrimitive } from './primitive';
import { Tag } from './tags';

export const HASH_MAX = 0xffff;

export interface DocKeyEncodeOptions {
  /** Per range component: sort it descending (schema `DESC`). Missing entries are ascending. */
  rangeDescending?: readonly boolean[];
}

/** Append the encoded DocKey to `out` (for callers building longer keys in one writer). */
export function writeDocKey(out: ByteWriter, k: DocKey, opts?: DocKeyEncodeOptions): void {
  if (k.hashed.length > 0) {
    assert(Number.isInteger(k.hash) && k.hash >= 0 && k.hash <= HASH_MAX, `DocKey hash out of range: ${k.hash}`);
    out.u8(Tag.HASH);
    out.u16BE(k.hash);
    for (const c of k.hashed) encodePrimitive(out, c);
    out.u8(Tag.GROUP_END);
  } else {
    // A table without hash columns has no hash; a non-zero one means the caller mixed up shapes.
    assert(k.hash === 0, `DocKey without hashed components must have hash 0, got ${k.hash}`);
  }
  const desc = opts?.rangeDescending;
  for (let i = 0; i < k.range.length; i++) encodePrimitive(out, k.range[i], desc?.[i] === true);
  out.u8(Tag.GROUP_END);
}

export function encodeDocKey(k: DocKey, opts?: DocKeyEncodeOptions): Buffer {
  const w = new ByteWriter(32);
  writeDocKey(w, k, opts);
  return w.finish();
}

/**
 * Decode the DocKey starting at `offset`; `end` is the offset just past its final '!'. Descending
 * components decode to their values (the direction is in their tags).
 */
export function decodeDocKey(buf: Uint8Array, offset = 0): { key: DocKey; end: number } {
  const r = new ByteReader(buf, offset);
  const key = readDocKey(r);
  return { key, end: r.offset };
}

/** Components per group are bounded by the key length: each takes at least one byte. */
export function readDocKey(r: ByteReader): DocKey {
  let hash = 0;
  const hashed: Primitive[] = [];
  if (r.peek() === Tag.HASH) {
    r.offset++;
    hash = r.u16BE();
    readGroup(r, hashed);
    if (hashed.length === 0) throw r.corruption('DocKey has a hash but no hashed components');
  }
  const range: Primitive[] = [];
  readGroup(r, range);
  return { hash, hashed, range };
}

function readGroup(r: ByteReader, into: Primitive[]): void {
  for (;;) {
    const t = r.peek();
    if (t === -1) throw r.corruption('DocKey group lacks its end marker');
    if (t === Tag.GROUP_END) {
      r.offset++;
      return;
    }
    into.push(decodePrimitive(r));
  }
}

/**
 * Length of the DocKey starting at `offset` (where subkeys / time begin), found by skipping the
 * components without decoding them: the storage layer calls this for every key it scans.
 */
export function docKeyLength(buf: Uint8Array, offset = 0): number {
  const r = new ByteReader(buf, offset);
  if (r.peek() === Tag.HASH) {
    r.offset++;
    r.need(2, 'DocKey hash');
    r.offset += 2;
    if (skipGroup(r) === 0) throw r.corruption('DocKey has a hash but no hashed components');
  }
  skipGroup(r);
  return r.offset - offset;
}

function skipGroup(r: ByteReader): number {
  let n = 0;
  for (;;) {
    const t = r.peek();
    if (t === -1) throw r.corruption('DocKey group lacks its end marker');
    if (t === Tag.GROUP_END) {
      r.offset++;
      return n;
    }
    skipPrimitive(r);
    n++;
  }
}

// The hash lives in common/ so the client computes the very same function (it may not import
// docdb/); re-exported here for DocDB's callers.
import { hash16, partitionHash } from '../../common/partition-hash';
export { hash16, partitionHash };

/** A DocKey with its hash computed (the usual way to build one). */
export function makeDocKey(hashed: readonly Primitive[], range: readonly Primitive[] = []): DocKey {
  return { hash: partitionHash(hashed), hashed: [...hashed], range: [...range] };
}

/** 'G' + u16 BE: every DocKey with this hash starts with it (tablet range scans). */
export function docKeyPrefixForHash(hash: number): Buffer {
  assert(Number.isInteger(hash) && hash >= 0 && hash <= HASH_MAX, `hash out of range: ${hash}`);
  const b = Buffer.allocUnsafe(3);
  b[0] = Tag.HASH;
  b.writeUInt16BE(hash, 1);
  return b;
}

/**
 * Key bounds [lower, upper) holding every DocKey whose hash is in [hashStart, hashEnd), with
 * hashEnd up to 0x10000 (a tablet's partition). The upper bound for 0x10000 is 'H', just past 'G'.
 */
export function docKeyBoundsForHashRange(hashStart: number, hashEnd: number): { lower: Buffer; upper: Buffer } {
  assert(hashStart >= 0 && hashStart < hashEnd && hashEnd <= HASH_MAX + 1, `bad hash range [${hashStart}, ${hashEnd})`);
  const upper = hashEnd > HASH_MAX ? Buffer.from([Tag.HASH + 1]) : docKeyPrefixForHash(hashEnd);
  return { lower: docKeyPrefixForHash(hashStart), upper };
}

function compareGroups(a: readonly Primitive[], b: readonly Primitive[], desc?: readonly boolean[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = comparePrimitives(a[i], b[i]);
    if (c !== 0) return desc?.[i] === true ? -c : c;
  }
  return a.length - b.length < 0 ? -1 : a.length > b.length ? 1 : 0;
}

/**
 * The logical order of DocKeys that the encoding preserves: keys with hash columns by (hash, hashed
 * components, range components); keys without by range components; a shorter group sorts first.
 * (Keys of one table all have the same shape; mixing shapes is not a meaningful order.)
 */
export function compareDocKeys(a: DocKey, b: DocKey, opts?: DocKeyEncodeOptions): number {
  if (a.hashed.length > 0 && b.hashed.length > 0) {
    if (a.hash !== b.hash) return a.hash < b.hash ? -1 : 1;
    const c = compareGroups(a.hashed, b.hashed);
    if (c !== 0) return c;
  }
  return compareGroups(a.range, b.range, opts?.rangeDescending);
}
