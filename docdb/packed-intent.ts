/**
 * Packed intents (issue 62; docs/transactions.md "One intent per row"): a transactional upsert of a
 * row is ONE intent record on the row's DocKey — a strong intent carrying every cell the upsert
 * writes (liveness and columns, each with its own write id and encoded value) — instead of a strong
 * intent per cell plus a weak one on the DocKey. YugabyteDB packs rows the same way.
 *
 *   intent key     DocKey + 13 + strong type set + DocHybridTime(ht, first cell's write id)
 *   intent value   'x' + len + txn id + 'w' + u32 write id   (the header every intent has)
 *                  'P' u16 n, then n × ( u8 suffix length, suffix, u32 write id, u32 length, value )
 * where a cell's suffix is its SubDocKey after the DocKey ('J' 00 liveness, 'K' varint column id)
 * and its value is in RegularDB's own format (encodeStored), so apply moves the bytes as they are.
 * 'P' is no value tag (docdb/README.md "Value tags"): no reader can take a packed intent for a
 * plain value. The cells keep the write ids the per-cell format would give them (the weak intent's
 * id stays reserved), so apply writes RegularDB byte for byte as before and a replica's pending
 * digest does not depend on the format (perCellRecords).
 */
import { assert } from '../common/assert';
import type { TxnId } from '../common/ids';
import * as enc from './encoding';
import type { StoredValue, SubKind } from './row-assembler';
import { encodeIntentValue, intentHeaderBytes, intentKey, parseIntentKey, docKeyLength, splitIntentValue, withoutIntentMeta, writeIntentHeader } from './storage-keys';

/** Marks a packed intent's value (after the intent header). */
export const PACKED_ROW_TAG = 0x50; // 'P'
/** Cells one packed intent holds at most (u16 count). */
export const PACKED_CELLS_MAX = 0xffff;

/** One cell of a packed intent as written. */
export interface PackCell {
  /** The cell's SubDocKey after the DocKey. */
  suffix: Buffer;
  writeId: number;
  value: StoredValue;
}

/** One cell of a packed intent as read: its value still encoded (a view into the intent value). */
export interface PackedCell {
  suffix: Buffer;
  writeId: number;
  encoded: Buffer;
}

/** The intent value of a packed row: header (txn id, the first cell's write id), then the cells. */
export function encodePackedIntentValue(txnId: TxnId, cells: readonly PackCell[]): Buffer {
  assert(cells.length > 0 && cells.length <= PACKED_CELLS_MAX, 'a packed intent needs 1..65535 cells');
  // The header encodeIntentValue writes, into the same buffer, then 'P' and the cell count.
  let n = intentHeaderBytes(txnId) + 3;
  const sizes: number[] = [];
  for (const c of cells) {
    assert(c.suffix.length > 0 && c.suffix.length < 256, 'packed cell suffix out of range');
    const s = enc.encodedValueBytes(c.value);
    sizes.push(s);
    n += 1 + c.suffix.length + 8 + s;
  }
  const w = new enc.ByteWriter(n);
  writeIntentHeader(w, txnId, cells[0]!.writeId);
  w.u8(PACKED_ROW_TAG);
  w.u16BE(cells.length);
  cells.forEach((c, i) => {
    w.u8(c.suffix.length);
    w.bytes(c.suffix);
    w.u32BE(c.writeId);
    w.u32BE(sizes[i]!);
    const at = w.length;
    enc.writeValue(w, c.value);
    assert(w.length - at === sizes[i], 'packed cell value size mismatch');
  });
  return w.finish();
}

/** Is this (an intent value's part after its header) a packed row? */
export function isPacked(encoded: Buffer | undefined): encoded is Buffer {
  return encoded !== undefined && encoded.length > 0 && encoded[0] === PACKED_ROW_TAG;
}

/** The cells of a packed row (`encoded`: the intent value after its header), as views into it. */
export function decodePackedCells(encoded: Buffer): PackedCell[] {
  const out: PackedCell[] = [];
  forEachPackedCell(encoded, (suffix, writeId, value) => out.push({ suffix, writeId, encoded: value }));
  return out;
}

/**
 * Calls `visit` with each cell of a packed row (views into `encoded`), in order, checking the
 * layout as it goes: apply walks the cells this way without building a PackedCell per cell.
 */
export function forEachPackedCell(encoded: Buffer, visit: (suffix: Buffer, writeId: number, value: Buffer) => void): void {
  assert(encoded[0] === PACKED_ROW_TAG && encoded.length >= 3, 'not a packed intent');
  const n = encoded.readUInt16BE(1);
  let at = 3;
  for (let i = 0; i < n; i++) {
    assert(at + 1 <= encoded.length, 'truncated packed intent');
    const sl = encoded[at]!;
    assert(sl > 0 && at + 1 + sl + 8 <= encoded.length, 'truncated packed intent');
    const suffix = encoded.subarray(at + 1, at + 1 + sl);
    at += 1 + sl;
    const writeId = encoded.readUInt32BE(at);
    const vl = encoded.readUInt32BE(at + 4);
    at += 8;
    assert(vl > 0 && at + vl <= encoded.length, 'truncated packed intent');
    visit(suffix, writeId, encoded.subarray(at, at + vl));
    at += vl;
  }
  assert(at === encoded.length, 'trailing bytes after a packed intent');
}

/** What a packed cell's suffix addresses in the row. */
export function subKindOfSuffix(suffix: Buffer): SubKind {
  const d = enc.decodeSubKeyAt(suffix, 0);
  assert(d.end === suffix.length && d.column !== undefined, 'bad packed cell suffix');
  return d.column === 'liveness' ? { kind: 'liveness' } : { kind: 'column', id: d.column };
}

/**
 * The records the per-cell format would hold for this stored intent, weak intents left out: a
 * packed row becomes a strong intent per cell (same keys, write ids and values as the per-cell
 * format writes), any other strong intent stays as it is. Digests of pending intents use it, so
 * replicas that wrote one transaction in different formats (the flag flipped on one of them) agree.
 */
export function perCellRecords(key: Buffer, value: Buffer, isStrong: (typeset: number) => boolean): Array<{ key: Buffer; value: Buffer }> {
  const p = parseIntentKey(key, docKeyLength(key));
  if (!isStrong(p.typeset)) return [];
  const { txnId, encoded } = splitIntentValue(value);
  // The metadata a head intent carries is left out: the reverse-index layout keeps it elsewhere.
  if (!isPacked(encoded)) return [{ key, value: withoutIntentMeta(value) }];
  return decodePackedCells(encoded).map((c) => ({
    key: intentKey(Buffer.concat([p.subKey, c.suffix]), p.typeset, p.ht, c.writeId),
    value: Buffer.concat([encodeIntentValue(txnId, c.writeId, undefined), c.encoded]),
  }));
}
