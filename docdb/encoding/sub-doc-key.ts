/**
 * SubDocKey: a DocKey plus what inside the row is addressed, plus (for stored keys) the version.
 *
 *   DocKey                                         the row itself (row tombstone)
 *   DocKey 'J' varint(0)                           the liveness system column
 *   DocKey 'K' varint(columnId)                    a column
 *   ... [13 typeSet]                               intent keys only (IntentsDB)
 *   ... '#' DocHybridTime                          the version (omitted in "key without time")
 *
 * Byte order = (DocKey, then row < liveness < columns by id, then NEWER time first), because
 * '#' (0x23) < 'J' < 'K' and the column id varint is order-preserving. An intent's type-set byte 13
 * sorts below '#', so in IntentsDB all intents of one SubDocKey group by type set, then by time.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridTime } from '../../common/hybrid-time';
import type { DocKey } from './types';
import { ByteReader, ByteWriter } from './byte-buffer';
import { decodeDocHybridTimeAt, DOC_HT_MAX_BYTES, writeDocHybridTime } from './doc-hybrid-time';
import { readDocKey } from './doc-key';
import { isValidIntentTypeSet } from './intent-types';
import { decodeOrderedVarint, encodeOrderedVarint } from './ordered-varint';
import { SystemColumn, Tag } from './tags';

/** Column ids are uint32 (the ordered varint holds them in 1..5 bytes). */
export const COLUMN_ID_MAX = 0xffffffff;

export type SubKey = number | 'liveness' | undefined;

/** The column (or liveness) entry of a SubDocKey, after its DocKey. */
export function writeSubKey(out: ByteWriter, column: SubKey): void {
  if (column === undefined) return;
  if (column === 'liveness') {
    out.u8(Tag.SYSTEM_COLUMN);
    encodeOrderedVarint(out, SystemColumn.LIVENESS);
    return;
  }
  if (!Number.isInteger(column) || column < 0 || column > COLUMN_ID_MAX) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `column id out of range: ${column}`);
  }
  out.u8(Tag.COLUMN_ID);
  encodeOrderedVarint(out, column);
}

/** The SubDocKey without time: encoded DocKey + the column (or liveness) entry, if any. */
export function encodeSubDocKey(docKey: Uint8Array, column: SubKey): Buffer {
  const w = new ByteWriter(docKey.length + 8 + 1 + DOC_HT_MAX_BYTES);
  w.bytes(docKey);
  writeSubKey(w, column);
  return w.finish();
}

export interface SubDocKeyParts {
  /** encoded DocKey (must be encoded already: callers cache it per row). */
  docKey: Uint8Array;
  column?: SubKey;
  /** Intent keys: the intent type set byte. */
  intentTypes?: number;
  /** Versioned keys: the time suffix. */
  ht?: HybridTime;
  writeId?: number;
}

/** Build any SubDocKey-shaped key in one allocation: DocKey [+ column] [+ 13 types] [+ '#' time]. */
export function encodeSubDocKeyFull(p: SubDocKeyParts): Buffer {
  const w = new ByteWriter(p.docKey.length + 8 + 2 + 1 + DOC_HT_MAX_BYTES);
  w.bytes(p.docKey);
  writeSubKey(w, p.column);
  if (p.intentTypes !== undefined) {
    if (!isValidIntentTypeSet(p.intentTypes)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `bad intent type set ${p.intentTypes}`);
    w.u8(Tag.INTENT_TYPE_SET);
    w.u8(p.intentTypes);
  }
  if (p.ht !== undefined) {
    w.u8(Tag.HYBRID_TIME);
    writeDocHybridTime(w, p.ht, p.writeId ?? 0);
  }
  return w.finish();
}

/**
 * Read the column / liveness entry at `offset` (just after the DocKey), if there is one.
 * `end` is the offset after it (= `offset` for a row-level key).
 */
export function decodeSubKeyAt(key: Uint8Array, offset: number): { column: SubKey; end: number } {
  const r = new ByteReader(key, offset);
  const column = readSubKey(r);
  return { column, end: r.offset };
}

function readSubKey(r: ByteReader): SubKey {
  const t = r.peek();
  if (t === Tag.COLUMN_ID) {
    r.offset++;
    const id = decodeOrderedVarint(r);
    if (id > COLUMN_ID_MAX) throw r.corruption(`column id out of range: ${id}`);
    return id;
  }
  if (t === Tag.SYSTEM_COLUMN) {
    r.offset++;
    const id = decodeOrderedVarint(r);
    if (id !== SystemColumn.LIVENESS) throw r.corruption(`unknown system column ${id}`);
    return 'liveness';
  }
  return undefined;
}

export interface DecodedSubDocKey {
  docKey: DocKey;
  /** Offset just past the DocKey's final '!'. */
  docKeyEnd: number;
  column?: number | 'liveness';
  /** Offset just past the column entry (= docKeyEnd for a row-level key): the key-without-time end for regular keys. */
  subKeyEnd: number;
  intentTypes?: number;
  ht?: HybridTime;
  writeId?: number;
  /** Offset of the '#' when the key has a time. */
  timeStart?: number;
}

/** Parse a whole SubDocKey (with or without intent types and time); trailing garbage is CORRUPTION. */
export function decodeSubDocKey(key: Uint8Array): DecodedSubDocKey {
  const r = new ByteReader(key);
  const docKey = readDocKey(r);
  const docKeyEnd = r.offset;
  const column = readSubKey(r);
  const out: DecodedSubDocKey = { docKey, docKeyEnd, subKeyEnd: r.offset };
  if (column !== undefined) out.column = column;
  if (r.peek() === Tag.INTENT_TYPE_SET) {
    r.offset++;
    const s = r.u8();
    if (!isValidIntentTypeSet(s)) throw r.corruption(`bad intent type set ${s}`);
    out.intentTypes = s;
  }
  if (r.peek() === Tag.HYBRID_TIME) {
    out.timeStart = r.offset;
    const t = decodeDocHybridTimeAt(key, r.offset + 1, r.end);
    out.ht = t.ht;
    out.writeId = t.writeId;
    r.offset = r.end;
  }
  if (r.remaining !== 0) throw r.corruption('trailing bytes after SubDocKey');
  return out;
}
