/**
 * The storage layout on top of the key encoding: which bytes RegularDB and IntentsDB keys and values
 * hold. The only file that talks to the encoding module, so a change there stays local.
 *
 *   RegularDB version   SubDocKey + DocHybridTime(ht, writeId)                → value
 *   intent              SubDocKey + 13 + typeset + DocHybridTime(ht, writeId)   → 'x' txn 'w' writeId value?
 *   head intent         the same key                                           → 'x' txn 'w' writeId 'M' meta value?
 *   reverse index       'x' + txn id + DocHybridTime(ht, writeId)               → intent key
 * SubDocKey = DocKey (row level) | DocKey + liveness | DocKey + column id.
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import { TxnId } from '../common/ids';
import type { DocKey } from './doc-db-api';
import * as enc from './encoding';
import type { StoredValue, SubKind } from './row-assembler';

export const INTENT_BITS = { WEAK_READ: enc.WEAK_READ, WEAK_WRITE: enc.WEAK_WRITE, STRONG_READ: enc.STRONG_READ, STRONG_WRITE: enc.STRONG_WRITE } as const;
export const INTENT_TYPE_SET_TAG = enc.INTENT_TYPE_SET_TAG;
export const intentTypesConflict = enc.intentTypesConflict;

/** Data keys (DocKeys start with 'G') lie in [DATA_START, ...); meta keys use bytes below it. */
export const REGULAR_DATA_START = Buffer.from([0x20]);
export const REGULAR_DATA_END = Buffer.from([0xff]);
export const INTENTS_DATA_START = Buffer.from([0x20]);
/** 'x': transaction metadata and reverse index sort after every intent. */
export const INTENTS_DATA_END = Buffer.from([0x78]);

export function encodeRowDocKey(k: DocKey): Buffer {
  const b = enc.encodeDocKey(k);
  assert(b.length > 0 && b[0]! >= REGULAR_DATA_START[0]! && b[0]! < INTENTS_DATA_END[0]!, 'DocKey outside the data key range');
  return b;
}

/**
 * The tablet lock key: the DocKey without components ('!'), which no row has (every table has a
 * primary key). A serializable scan puts its strong read intent here; every write meets it through
 * the weak intent each write implies on it (conflict.ts), without storing that weak intent.
 */
export const TABLET_LOCK_SUBKEY: Buffer = encodeRowDocKey({ hash: 0, hashed: [], range: [] });

/**
 * The hash-key lock of a serializable scan that stays within one hash key (YugabyteDB locks the
 * scanned prefix, not the tablet): the DocKey of that hash key without range components. For a
 * table with range columns no row has it, and every write of a row under it implies a weak write
 * intent on it (conflict.ts); for a table without range columns it is the one row itself.
 */
export function hashKeyLock(k: DocKey): DocKey | undefined {
  return k.hashed.length > 0 ? { hash: k.hash, hashed: k.hashed, range: [] } : undefined;
}

/** The bytes every DocKey under a hash-key lock starts with (its own encoding without the closing '!'). */
export function hashKeyRowsPrefix(lock: DocKey): Buffer {
  const b = encodeRowDocKey(lock);
  return b.subarray(0, b.length - 1);
}

/** The byte that closes a DocKey's hashed and range groups. */
const GROUP_END_BYTE = Buffer.from([0x21]);

/**
 * The hash-key lock covering every key of [start, end) (encoded DocKey bounds of a scan), when the
 * range stays within one hash key: `start` is that hash key's prefix (plus range components) and
 * `end` is within it or just past it. undefined otherwise (the scan then locks the tablet).
 */
export function hashKeyLockOfRange(start: Uint8Array | undefined, end: Uint8Array | undefined): DocKey | undefined {
  if (!start || !end || start.length === 0 || end.length === 0) return undefined;
  let k: DocKey;
  try {
    k = enc.decodeDocKey(Buffer.concat([start, GROUP_END_BYTE]), 0).key;
  } catch {
    return undefined;
  }
  const lock = hashKeyLock(k);
  if (!lock) return undefined;
  const prefix = hashKeyRowsPrefix(lock);
  const e = Buffer.from(end.buffer, end.byteOffset, end.byteLength);
  const s = Buffer.from(start.buffer, start.byteOffset, start.byteLength);
  if (!s.subarray(0, prefix.length).equals(prefix)) return undefined;
  const past = Buffer.from(prefix);
  past[past.length - 1]!++;
  return (e.length >= prefix.length && e.subarray(0, prefix.length).equals(prefix)) || e.equals(past) ? lock : undefined;
}
export function docKeyLength(key: Buffer): number {
  return enc.docKeyLength(key, 0);
}

export function decodeDocKeyBuf(docKeyBuf: Buffer): DocKey {
  return enc.decodeDocKey(docKeyBuf, 0).key;
}

export function subDocKey(docKeyBuf: Buffer, sub: SubKind): Buffer {
  return enc.encodeSubDocKey(docKeyBuf, sub.kind === 'row' ? undefined : sub.kind === 'liveness' ? 'liveness' : sub.id);
}

function subKindAt(key: Buffer, docKeyLen: number): { sub: SubKind; end: number } {
  const d = enc.decodeSubKeyAt(key, docKeyLen);
  const sub: SubKind = d.column === undefined ? { kind: 'row' } : d.column === 'liveness' ? { kind: 'liveness' } : { kind: 'column', id: d.column };
  return { sub, end: d.end };
}

export function versionKey(subKey: Buffer, ht: HybridTime, writeId: number): Buffer {
  return enc.appendDocHybridTime(subKey, ht, writeId);
}

export function parseRegularKey(key: Buffer, docKeyLen: number): { sub: SubKind; ht: HybridTime; writeId: number } {
  const { sub } = subKindAt(key, docKeyLen);
  const t = enc.decodeDocHybridTimeFromEnd(key);
  return { sub, ht: t.ht, writeId: t.writeId };
}

export function intentKey(subKey: Buffer, typeset: number, ht: HybridTime, writeId: number): Buffer {
  // One buffer (the concatenations it replaced were three allocations per intent).
  const w = new enc.ByteWriter(subKey.length + 3 + enc.DOC_HT_MAX_BYTES);
  w.bytes(subKey);
  w.u8(INTENT_TYPE_SET_TAG);
  w.u8(typeset);
  enc.writeDocHybridTimeSuffix(w, ht, writeId);
  return w.finish();
}

/** The RegularDB version key of a packed intent's cell: the row's SubDocKey + the cell's suffix + time, in one buffer. */
export function cellVersionKey(rowKey: Buffer, suffix: Buffer, ht: HybridTime, writeId: number): Buffer {
  const w = new enc.ByteWriter(rowKey.length + suffix.length + 1 + enc.DOC_HT_MAX_BYTES);
  w.bytes(rowKey);
  w.bytes(suffix);
  enc.writeDocHybridTimeSuffix(w, ht, writeId);
  return w.finish();
}

export function parseIntentKey(key: Buffer, docKeyLen: number): { sub: SubKind; subKey: Buffer; typeset: number; ht: HybridTime; writeId: number } {
  const { sub, end } = subKindAt(key, docKeyLen);
  assert(key[end] === INTENT_TYPE_SET_TAG, 'intent key lacks the intent type set tag');
  const t = enc.decodeDocHybridTimeFromEnd(key);
  return { sub, subKey: key.subarray(0, end), typeset: key[end + 1]!, ht: t.ht, writeId: t.writeId };
}

export function parseIntentKeyToSubKey(key: Buffer): { subKey: Buffer; typeset: number } {
  const p = parseIntentKey(key, docKeyLength(key));
  return { subKey: p.subKey, typeset: p.typeset };
}

export function reverseIndexKey(txnKeyBuf: Buffer, ht: HybridTime, writeId: number): Buffer {
  return Buffer.concat([txnKeyBuf, enc.encodeDocHybridTime(ht, writeId)]);
}

/**
 * Marks a reverse-index value listing several intent keys (one entry per write batch of a
 * transaction, issue 62). An intent key never starts with it (intent keys sort below
 * INTENTS_DATA_END), so a value without it is an older entry holding a single intent key.
 */
const REVERSE_LIST_MARKER = 0xff;

/** A reverse-index value: every intent key one write batch of a transaction stored. */
export function encodeReverseValue(intentKeys: readonly Buffer[]): Buffer {
  if (intentKeys.length === 1) return intentKeys[0]!;
  let n = 1;
  for (const k of intentKeys) n += 4 + k.length;
  const out = Buffer.allocUnsafe(n);
  out[0] = REVERSE_LIST_MARKER;
  let at = 1;
  for (const k of intentKeys) {
    out.writeUInt32BE(k.length, at);
    k.copy(out, at + 4);
    at += 4 + k.length;
  }
  return out;
}

/**
 * Marks a reverse-index value that also carries the transaction's stored metadata (issue 62: the
 * metadata rides in each batch's reverse entry instead of a record of its own, one put and one delete
 * fewer per transaction and tablet): [marker][u32 length][metadata][(u32 length, intent key)…].
 */
const REVERSE_META_MARKER = 0xfe;

/** A reverse-index value carrying `meta` (an encoded StoredTxnMeta) and the batch's intent keys (at least one). */
export function encodeReverseValueWithMeta(meta: Buffer, intentKeys: readonly Buffer[]): Buffer {
  let n = 5 + meta.length;
  for (const k of intentKeys) n += 4 + k.length;
  const out = Buffer.allocUnsafe(n);
  out[0] = REVERSE_META_MARKER;
  out.writeUInt32BE(meta.length, 1);
  meta.copy(out, 5);
  let at = 5 + meta.length;
  for (const k of intentKeys) {
    out.writeUInt32BE(k.length, at);
    k.copy(out, at + 4);
    at += 4 + k.length;
  }
  return out;
}

/** The encoded metadata a reverse-index value carries, or undefined (older formats carry none). */
export function reverseValueMeta(u: Uint8Array): Buffer | undefined {
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  if (b.length === 0 || b[0] !== REVERSE_META_MARKER) return undefined;
  assert(b.length >= 5 && 5 + b.readUInt32BE(1) <= b.length, 'truncated reverse-index metadata');
  return b.subarray(5, 5 + b.readUInt32BE(1));
}

/** The intent keys of a reverse-index value (any format). */
export function decodeReverseValue(u: Uint8Array): Buffer[] {
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  assert(b.length > 0, 'empty reverse-index value');
  if (b[0] !== REVERSE_LIST_MARKER && b[0] !== REVERSE_META_MARKER) return [Buffer.from(b)];
  const out: Buffer[] = [];
  let at = 1;
  if (b[0] === REVERSE_META_MARKER) {
    assert(b.length >= 5, 'truncated reverse-index metadata');
    at = 5 + b.readUInt32BE(1);
  }
  while (at < b.length) {
    assert(at + 4 <= b.length, 'truncated reverse-index value');
    const len = b.readUInt32BE(at);
    assert(at + 4 + len <= b.length && len > 0, 'truncated reverse-index value');
    out.push(Buffer.from(b.subarray(at + 4, at + 4 + len)));
    at += 4 + len;
  }
  return out;
}

export function encodeStored(v: StoredValue): Buffer {
  return enc.encodeValue(v);
}

export function decodeStored(b: Uint8Array): StoredValue {
  return enc.decodeValue(Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/** Intent value: 'x' + len + txn id + 'w' + 4-byte write id + value (absent for weak intents). */
export function encodeIntentValue(txnId: TxnId, writeId: number, value: StoredValue | undefined): Buffer {
  const id = Buffer.from(txnId, 'utf8');
  assert(id.length < 256, 'txn id too long');
  const head = Buffer.alloc(2 + id.length + 5);
  head[0] = 0x78;
  head[1] = id.length;
  id.copy(head, 2);
  head[2 + id.length] = 0x77;
  head.writeUInt32BE(writeId, 3 + id.length);
  return value === undefined ? head : enc.encodeValue(value, head);
}

/** Bytes of an intent value's header for `txnId` ('x' len txn id 'w' u32 write id). */
export function intentHeaderBytes(txnId: TxnId): number {
  const idBytes = Buffer.byteLength(txnId, 'utf8');
  assert(idBytes < 256, 'txn id too long');
  return 2 + idBytes + 5;
}

/** The header encodeIntentValue writes, into `w` (a packed intent's value: docdb/packed-intent.ts). */
export function writeIntentHeader(w: enc.ByteWriter, txnId: TxnId, writeId: number): void {
  const idBytes = intentHeaderBytes(txnId) - 7;
  w.u8(0x78);
  w.u8(idBytes);
  w.ensure(idBytes);
  w.raw().write(txnId, w.length, 'utf8');
  w.advance(idBytes);
  w.u8(0x77);
  w.u32BE(writeId);
}

/**
 * An intent value's header, and its value still encoded (a view into `u`): exactly the bytes a
 * RegularDB version of that value holds (both are encodeStored's format), so an apply moves them
 * without decoding and re-encoding them.
 */
export function splitIntentValue(u: Uint8Array): { txnId: TxnId; writeId: number; encoded?: Buffer } {
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const len = b[1]!;
  assert(b[0] === 0x78 && b[2 + len] === 0x77, 'intent value must start with a txn id and its write id');
  // Metadata a head intent carries (intentValueMeta) is skipped: no reader of the value needs it.
  const at = b.length > 7 + len && b[7 + len] === INTENT_META_TAG ? intentValueParts(b).meta!.end : 7 + len;
  const txnId = TxnId(b.toString('utf8', 2, 2 + len));
  const writeId = b.readUInt32BE(3 + len);
  const rest = b.subarray(at);
  return rest.length === 0 ? { txnId, writeId } : { txnId, writeId, encoded: rest };
}

/**
 * Marks, right after an intent value's header, the transaction's metadata carried by the intent
 * itself: the lone intent of a transaction's first write batch on a tablet stores it there instead
 * of in a reverse-index entry ([tag][u32 length][encoded StoredTxnMeta], then the value as before;
 * docs/transactions.md "A lone intent carries its transaction"). 'M' is no value tag and not 'P'.
 */
export const INTENT_META_TAG = 0x4d; // 'M'

/** Where an intent value's part after its header (and after carried metadata) starts, and the metadata's bounds. */
function intentValueParts(b: Buffer): { head: number; meta?: { at: number; end: number } } {
  assert(b[0] === 0x78, 'intent value must start with a txn id');
  const idLen = b[1]!;
  assert(b[2 + idLen] === 0x77, 'intent value lacks its write id');
  const head = 7 + idLen;
  if (b.length <= head || b[head] !== INTENT_META_TAG) return { head };
  assert(b.length >= head + 5, 'truncated intent metadata');
  const end = head + 5 + b.readUInt32BE(head + 1);
  assert(end <= b.length, 'truncated intent metadata');
  return { head, meta: { at: head + 5, end } };
}

/** The transaction metadata an intent value carries (an encoded StoredTxnMeta), or undefined. */
export function intentValueMeta(u: Uint8Array): Buffer | undefined {
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const m = intentValueParts(b).meta;
  return m === undefined ? undefined : b.subarray(m.at, m.end);
}

/** `value` (an intent value without metadata) carrying `meta` after its header, in one new buffer. */
export function withIntentMeta(value: Buffer, meta: Buffer): Buffer {
  const head = 7 + value[1]!;
  assert(intentValueParts(value).meta === undefined, 'intent value already carries metadata');
  const out = Buffer.allocUnsafe(value.length + 5 + meta.length);
  value.copy(out, 0, 0, head);
  out[head] = INTENT_META_TAG;
  out.writeUInt32BE(meta.length, head + 1);
  meta.copy(out, head + 5);
  value.copy(out, head + 5 + meta.length, head);
  return out;
}

/** `u` without the metadata it carries (itself when it carries none): the record as the reverse-index layout stores it. */
export function withoutIntentMeta(u: Uint8Array): Buffer {
  const b = Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
  const p = intentValueParts(b);
  return p.meta === undefined ? b : Buffer.concat([b.subarray(0, p.head), b.subarray(p.meta.end)]);
}

export function decodeIntentValue(u: Uint8Array): { txnId: TxnId; writeId: number; value?: StoredValue } {
  const { txnId, writeId, encoded } = splitIntentValue(u);
  return encoded === undefined ? { txnId, writeId } : { txnId, writeId, value: enc.decodeValue(encoded) };
}
