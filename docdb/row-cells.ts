/**
 * How a row operation becomes cells (sub-key + value), YugabyteDB style: an upsert writes the liveness
 * system column and one cell per column (null → column tombstone); a delete writes a tombstone at the
 * DocKey level, which shadows every older cell of the row. Shared by the non-transactional write path,
 * intent writes and conflict checks, so all three agree on which keys an operation touches.
 *
 * A `cells` op (HBase's model, docs/cells.md) writes its cells at their own timestamps when given:
 * a put at an explicit timestamp takes the fixed write id PUT_AT_TS_WRITE_ID, so a second put of the
 * same cell at the same timestamp replaces the first (HBase: same coordinates, last write wins);
 * delete markers take write ids above every put's, so at equal timestamps a marker is the newer
 * version and masks the put (HBase: a delete masks puts at or before its timestamp).
 */
import type { HybridTime } from '../common/hybrid-time';
import type { CellWrite, ColumnWrite, DocKey, RowOp } from './doc-db-api';
import type { StoredValue, SubKind } from './row-assembler';
import { encodeRowDocKey, subDocKey } from './storage-keys';

/** Write id of a put at an explicit timestamp (above any batch's op-order ids). */
export const PUT_AT_TS_WRITE_ID = 0x7000_0000;
/** Write id of a column or row tombstone of a cells op (above every put's). */
export const MARKER_WRITE_ID = 0xffff_fffe;
/** Write id of a version tombstone (its own slot, so it and a column tombstone at one time coexist). */
export const VERSION_MARKER_WRITE_ID = 0xffff_ffff;

export interface Cell {
  docKey: DocKey;
  /** Encoded DocKey. */
  docKeyBuf: Buffer;
  sub: SubKind;
  /** Encoded SubDocKey without hybrid time. */
  subKey: Buffer;
  value: StoredValue;
  /** The cell's own version time and write id (a cells op), instead of the batch's time and next id. */
  at?: { ht?: HybridTime; writeId: number };
}

export function cellsOf(op: RowOp): Cell[] {
  const docKeyBuf = encodeRowDocKey(op.key);
  const mk = (sub: SubKind, value: StoredValue, at?: Cell['at']): Cell => ({ docKey: op.key, docKeyBuf, sub, subKey: subDocKey(docKeyBuf, sub), value, ...(at ? { at } : {}) });
  if (op.type === 'delete') return [mk({ kind: 'row' }, { type: 'tombstone' })];
  if (op.type === 'cells') return op.cells.map((c) => cellOf(c, mk));
  const ttl = op.ttlMs;
  const out: Cell[] = [mk({ kind: 'liveness' }, ttl === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs: ttl })];
  for (const c of op.columns) out.push(mk({ kind: 'column', id: c.columnId }, columnValue(c, ttl)));
  return out;
}

/** A column write's stored value; a string's UTF-8 bytes, when at hand, go along without decoding them. */
export function columnValue(c: ColumnWrite, ttl: number | undefined): StoredValue {
  if (c.utf8 !== undefined) {
    const utf8 = c.utf8;
    // `value` stays a getter: whoever looks at it decodes (the column's own getter, cached there).
    return ttl === undefined ? { type: 'primitive', utf8, get value() { return c.value; } } : { type: 'primitive', utf8, ttlMs: ttl, get value() { return c.value; } };
  }
  return c.value === null ? { type: 'tombstone' } : ttl === undefined ? { type: 'primitive', value: c.value } : { type: 'primitive', value: c.value, ttlMs: ttl };
}

function cellOf(c: CellWrite, mk: (sub: SubKind, value: StoredValue, at?: Cell['at']) => Cell): Cell {
  const ht = (h: HybridTime | undefined): { ht?: HybridTime } => (h === undefined ? {} : { ht: h });
  switch (c.kind) {
    case 'put': {
      const value: StoredValue = c.ttlMs === undefined ? { type: 'primitive', value: c.value } : { type: 'primitive', value: c.value, ttlMs: c.ttlMs };
      return mk({ kind: 'column', id: c.columnId }, value, c.ht === undefined ? undefined : { ht: c.ht, writeId: PUT_AT_TS_WRITE_ID });
    }
    case 'deleteVersion':
      return mk({ kind: 'column', id: c.columnId }, { type: 'versionTombstone' }, { ht: c.ht, writeId: VERSION_MARKER_WRITE_ID });
    case 'deleteColumn':
      return mk({ kind: 'column', id: c.columnId }, { type: 'tombstone' }, { ...ht(c.ht), writeId: MARKER_WRITE_ID });
    case 'deleteRow':
      return mk({ kind: 'row' }, { type: 'tombstone' }, { ...ht(c.ht), writeId: MARKER_WRITE_ID });
  }
}
