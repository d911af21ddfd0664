/**
 * DocHybridTime = (HybridTime, writeId): the version suffix of every stored key, after a '#'.
 *
 * Encoded DESCENDING so that, for one SubDocKey, the newest version sorts FIRST: a read at time T
 * seeks to `key '#' enc(T, WRITE_ID_MAX)` and the first entry at or after it with the same prefix is
 * the newest version at or before T.
 *
 * Layout (then every byte complemented, which turns this ascending form into the descending one):
 *   u64 BE hybrid time  ++  orderedVarint(writeId * 8 + L)
 * where L (1..5) is the length of that varint. Its low 3 bits land in the last byte, so the length
 * of the whole DocHybridTime (8 + L) can be read from the key's LAST byte and the time split off a
 * key from its end without parsing the key — as YugabyteDB does with its 5 length bits. Including L
 * in the varint keeps the order: L grows with writeId, and a longer varint always sorts higher.
 * The write id (a uint32) costs one byte when below 16 — almost always — so a version suffix is 10
 * bytes: '#' + 8 + 1.
 */
import { assert } from '../../common/assert';
import { DbError, ErrorCode } from '../../common/errors';
import { HT_MAX, type HybridTime } from '../../common/hybrid-time';
import { ByteWriter } from './byte-buffer';
import { encodeOrderedVarint, orderedVarintLength } from './ordered-varint';
import { Tag } from './tags';

export const WRITE_ID_MAX = 0xffffffff;
/** The largest encoded DocHybridTime, without the '#'. */
export const DOC_HT_MAX_BYTES = 8 + 5;

function writeIdVarint(writeId: number): { value: number; len: number } {
  // Smallest L such that writeId*8 + L still fits in an L-byte ordered varint.
  for (let len = 1; len <= 5; len++) {
    const value = writeId * 8 + len;
    if (orderedVarintLength(value) === len) return { value, len };
  }
  assert(false, `write id out of range: ${writeId}`);
}

/** Append the encoded DocHybridTime (without '#') to `out`. */
export function writeDocHybridTime(out: ByteWriter, ht: HybridTime, writeId: number): void {
  if (ht < 0n || ht > HT_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `hybrid time out of range: ${ht}`);
  assert(Number.isInteger(writeId) && writeId >= 0 && writeId <= WRITE_ID_MAX, `write id out of range: ${writeId}`);
  const start = out.length;
  out.u64BE(ht);
  encodeOrderedVarint(out, writeIdVarint(writeId).value);
  out.complementFrom(start);
}

export function encodeDocHybridTime(ht: HybridTime, writeId: number): Buffer {
  const w = new ByteWriter(DOC_HT_MAX_BYTES);
  writeDocHybridTime(w, ht, writeId);
  return w.finish();
}

/** '#' + DocHybridTime, encoded anew. */
function encodeSuffix(ht: HybridTime, writeId: number): Buffer {
  const w = new ByteWriter(1 + DOC_HT_MAX_BYTES);
  w.u8(Tag.HYBRID_TIME);
  writeDocHybridTime(w, ht, writeId);
  return w.finish();
}

/**
 * Write ids below this take their (time-independent) encoded tail from a table (a batch's cells have
 * small ones), filled as ids are first used. 4096 and not 64: a 160-row mutateRows entry numbers 320
 * cells, and encoding the varint of every cell past the 64th was a share of each replica's apply
 * (docs/rows.md, Limits).
 */
const SUFFIX_CACHE_WRITE_IDS = 4096;
/** Per write id below SUFFIX_CACHE_WRITE_IDS: the complemented varint that ends its DocHybridTime. */
const writeIdTails: Array<Buffer | undefined> = [];
/**
 * '#' + the complemented u64 of the two newest hybrid times encoded (every cell of a batch shares
 * its time; an intent write and an apply interleave two).
 */
const htPrefixes: Array<{ ht: HybridTime; prefix: Buffer }> = [];

/** '#' + the 8 complemented bytes of `ht`, kept for the two newest times. */
function hashAndTime(ht: HybridTime): Buffer {
  for (let i = 0; i < htPrefixes.length; i++) if (htPrefixes[i]!.ht === ht) return htPrefixes[i]!.prefix;
  if (ht < 0n || ht > HT_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `hybrid time out of range: ${ht}`);
  const b = Buffer.allocUnsafe(9);
  b[0] = Tag.HYBRID_TIME;
  b.writeBigUInt64BE(ht, 1);
  for (let i = 1; i < 9; i++) b[i] = ~b[i]! & 0xff;
  if (htPrefixes.length >= 2) htPrefixes.shift();
  htPrefixes.push({ ht, prefix: b });
  return b;
}

/**
 * `keyWithoutTime` + '#' + DocHybridTime. Every cell of a write batch has the same hybrid time and a
 * small write id, so the time's 9 bytes are encoded once per time and a small write id's tail comes
 * from a table: each key is three copies into one buffer (encoding the u64 of a BigInt, the varint
 * and the complement per key were a few percent of a tablet server's write path, and every replica
 * applies each entry's cells at a new time, bench/results/2026-12-07-rows-3.md).
 */
export function appendDocHybridTime(keyWithoutTime: Uint8Array, ht: HybridTime, writeId: number): Buffer {
  if (!(writeId >= 0 && writeId < SUFFIX_CACHE_WRITE_IDS && Number.isInteger(writeId))) {
    const suffix = encodeSuffix(ht, writeId);
    const out = Buffer.allocUnsafe(keyWithoutTime.length + suffix.length);
    out.set(keyWithoutTime, 0);
    out.set(suffix, keyWithoutTime.length);
    return out;
  }
  const head = hashAndTime(ht);
  const tail = (writeIdTails[writeId] ??= encodeDocHybridTime(0n, writeId).subarray(8));
  const out = Buffer.allocUnsafe(keyWithoutTime.length + 9 + tail.length);
  out.set(keyWithoutTime, 0);
  out.set(head, keyWithoutTime.length);
  out.set(tail, keyWithoutTime.length + 9);
  return out;
}

/** '#' + DocHybridTime written into `w` (appendDocHybridTime's bytes, without a buffer of their own). */
export function writeDocHybridTimeSuffix(w: ByteWriter, ht: HybridTime, writeId: number): void {
  if (!(writeId >= 0 && writeId < SUFFIX_CACHE_WRITE_IDS && Number.isInteger(writeId))) {
    // A large batch's later cells (a 1,000-row COPY chunk numbers 5,000): the time's 9 bytes still
    // come from the cache, only the write id's varint is encoded (and complemented) in place.
    assert(Number.isInteger(writeId) && writeId >= 0 && writeId <= WRITE_ID_MAX, `write id out of range: ${writeId}`);
    w.bytes(hashAndTime(ht));
    const start = w.length;
    encodeOrderedVarint(w, writeIdVarint(writeId).value);
    w.complementFrom(start);
    return;
  }
  w.bytes(hashAndTime(ht));
  w.bytes((writeIdTails[writeId] ??= encodeDocHybridTime(0n, writeId).subarray(8)));
}

/**
 * The seek key for a read at `readHt`: sorts before every version of `keyWithoutTime` at or before
 * `readHt` and after every newer one.
 */
export function versionSeekKey(keyWithoutTime: Uint8Array, readHt: HybridTime): Buffer {
  return appendDocHybridTime(keyWithoutTime, readHt, WRITE_ID_MAX);
}

/**
 * Offset of the '#' before a key's DocHybridTime, read from its last byte (as decodeDocHybridTimeFromEnd
 * does, without decoding the time); -1 when the key cannot end in one.
 */
export function docHybridTimeStart(key: Uint8Array): number {
  const n = key.length;
  if (n < 1 + 8 + 1) return -1;
  const len = ~key[n - 1]! & 7;
  if (len < 1 || len > 5) return -1;
  const at = n - 1 - 8 - len;
  return at >= 0 && key[at] === Tag.HYBRID_TIME ? at : -1;
}

/**
 * Split the DocHybridTime off the end of a key. `timeStart` is the offset of the '#', so
 * `key.subarray(0, timeStart)` is the key without its time.
 */
export function decodeDocHybridTimeFromEnd(key: Uint8Array): { ht: HybridTime; writeId: number; timeStart: number } {
  const n = key.length;
  if (n < 1 + 8 + 1) throw new DbError(ErrorCode.CORRUPTION, `key too short for a DocHybridTime (${n} bytes)`);
  const len = ~key[n - 1] & 7;
  if (len < 1 || len > 5) throw new DbError(ErrorCode.CORRUPTION, `bad DocHybridTime length bits ${len}`);
  const timeStart = n - 1 - 8 - len;
  if (timeStart < 0 || key[timeStart] !== Tag.HYBRID_TIME) {
    throw new DbError(ErrorCode.CORRUPTION, `no '#' before the DocHybridTime (expected at ${timeStart})`);
  }
  const { ht, writeId } = decodeDocHybridTimeAt(key, timeStart + 1, n);
  return { ht, writeId, timeStart };
}

/** Bytes [at, at+4) of `buf`, each complemented, as an unsigned big-endian 32-bit number. */
function complementedU32(buf: Uint8Array, at: number): number {
  return (~buf[at]! & 0xff) * 0x1000000 + (((~buf[at + 1]! & 0xff) << 16) | ((~buf[at + 2]! & 0xff) << 8) | (~buf[at + 3]! & 0xff));
}

/**
 * Decode an encoded DocHybridTime occupying exactly [from, to) of `buf`. Read in place, complementing
 * byte by byte (no copy, no reader object: every version a scan meets passes through here).
 */
export function decodeDocHybridTimeAt(buf: Uint8Array, from: number, to: number): { ht: HybridTime; writeId: number } {
  const len = to - from;
  if (len < 9 || len > DOC_HT_MAX_BYTES) throw new DbError(ErrorCode.CORRUPTION, `bad DocHybridTime length ${len}`);
  const ht = (BigInt(complementedU32(buf, from)) << 32n) | BigInt(complementedU32(buf, from + 4));
  // The write id's ordered varint (docdb/encoding/ordered-varint.ts), complemented, fills the rest.
  const first = ~buf[from + 8]! & 0xff;
  const n = first < 0x80 ? 1 : first < 0xc0 ? 2 : first < 0xe0 ? 3 : first < 0xf0 ? 4 : first < 0xf8 ? 5 : 0;
  if (n === 0) throw new DbError(ErrorCode.CORRUPTION, `bad ordered varint first byte 0x${first.toString(16)} in a DocHybridTime`);
  if (n !== len - 8) throw new DbError(ErrorCode.CORRUPTION, `inconsistent DocHybridTime length (${len} bytes, a ${n}-byte write id)`);
  let v = first & (0xff >> n);
  for (let i = 1; i < n; i++) v = v * 256 + (~buf[from + 8 + i]! & 0xff);
  // A value stored longer than needed would break "one value, one encoding" and hence equality.
  if (orderedVarintLength(v) !== n) throw new DbError(ErrorCode.CORRUPTION, `non-canonical ordered varint (${n} bytes for ${v}) in a DocHybridTime`);
  if (v % 8 !== len - 8) throw new DbError(ErrorCode.CORRUPTION, `inconsistent DocHybridTime length (${len} bytes, length bits ${v % 8})`);
  return { ht, writeId: Math.floor(v / 8) };
}

/** The order DocHybridTime encodings follow: newer (higher ht, then higher writeId) FIRST. */
export function compareDocHybridTimesNewestFirst(a: { ht: HybridTime; writeId: number }, b: { ht: HybridTime; writeId: number }): number {
  if (a.ht !== b.ht) return a.ht > b.ht ? -1 : 1;
  if (a.writeId !== b.writeId) return a.writeId > b.writeId ? -1 : 1;
  return 0;
}
