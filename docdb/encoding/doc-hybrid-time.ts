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

/** Write ids below this have their suffix for the newest hybrid time kept (a batch's cells share one time). */
const SUFFIX_CACHE_WRITE_IDS = 64;
let cachedHt: HybridTime | undefined;
let cachedSuffixes: Array<Buffer | undefined> = [];

/**
 * '#' + DocHybridTime: every cell of a write batch has the same hybrid time and a small write id, so
 * the suffixes of the newest time are kept and copied instead of encoded per key (the u64 of a
 * BigInt, the varint and the complement were a few percent of a tablet server's write path).
 */
function docHtSuffix(ht: HybridTime, writeId: number): Buffer {
  if (!(writeId >= 0 && writeId < SUFFIX_CACHE_WRITE_IDS)) return encodeSuffix(ht, writeId);
  if (ht !== cachedHt) {
    cachedSuffixes = [];
    cachedHt = ht;
  }
  return (cachedSuffixes[writeId] ??= encodeSuffix(ht, writeId));
}

/** Write ids whose ordered varint (writeId * 8 + 1) is one byte: the suffix is '#' + 8 + 1 bytes. */
const ONE_BYTE_WRITE_IDS = 16;
/** '#' + the complemented u64 of the two newest hybrid times (an intent write and an apply interleave two). */
const htPrefixes: Array<{ ht: HybridTime; prefix: Buffer }> = [];

function htPrefix(ht: HybridTime): Buffer {
  for (const p of htPrefixes) if (p.ht === ht) return p.prefix;
  const prefix = encodeSuffix(ht, 0).subarray(0, 9); // checks the range of ht
  if (htPrefixes.length >= 2) htPrefixes.shift();
  htPrefixes.push({ ht, prefix });
  return prefix;
}

/** `keyWithoutTime` + '#' + DocHybridTime. */
export function appendDocHybridTime(keyWithoutTime: Uint8Array, ht: HybridTime, writeId: number): Buffer {
  if (Number.isInteger(writeId) && writeId >= 0 && writeId < ONE_BYTE_WRITE_IDS) {
    // Every key of a batch shares the time, and the write id is one varint byte (L = 1): the
    // time's 9 bytes are copied, the last byte is the complemented varint (see the layout above).
    const n = keyWithoutTime.length;
    const out = Buffer.allocUnsafe(n + 10);
    out.set(keyWithoutTime, 0);
    out.set(htPrefix(ht), n);
    out[n + 9] = ~(writeId * 8 + 1) & 0xff;
    return out;
  }
  const suffix = docHtSuffix(ht, writeId);
  const out = Buffer.allocUnsafe(keyWithoutTime.length + suffix.length);
  out.set(keyWithoutTime, 0);
  out.set(suffix, keyWithoutTime.length);
  return out;
}

/**
 * The seek key for a read at `readHt`: sorts before every version of `keyWithoutTime` at or before
 * `readHt` and after every newer one.
 */
export function versionSeekKey(keyWithoutTime: Uint8Array, readHt: HybridTime): Buffer {
  return appendDocHybridTime(keyWithoutTime, readHt, WRITE_ID_MAX);
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
