/**
 * How a row operation becomes cells (sub-key + value), YugabyteDB style: an upsert writes the liveness
 * system column and one cell per column (null → column tombstone); a delete writes a tombstone at the
 * DocKey level, which shadows every older cell of the row. Shared by the non-transactional write path,
 * intent writes and conflict checks, so all three agree on which keys an operation touches.
 */
import type { DocKey, RowOp } from './doc-db-api';
import type { StoredValue, SubKind } from './row-assembler';
import { encodeRowDocKey, subDocKey } from './storage-keys';

export interface Cell {
  docKey: DocKey;
  /** Encoded DocKey. */
  docKeyBuf: Buffer;
  sub: SubKind;
  /** Encoded SubDocKey without hybrid time. */
  subKey: Buffer;
  value: StoredValue;
}

export function cellsOf(op: RowOp): Cell[] {
  const docKeyBuf = encodeRowDocKey(op.key);
  const mk = (sub: SubKind, value: StoredValue): Cell => ({ docKey: op.key, docKeyBuf, sub, subKey: subDocKey(docKeyBuf, sub), value });
  if (op.type === 'delete') return [mk({ kind: 'row' }, { type: 'tombstone' })];
  const ttl = op.ttlMs;
  const out: Cell[] = [mk({ kind: 'liveness' }, ttl === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs: ttl })];
  for (const c of op.columns) {
    const value: StoredValue =
      c.value === null ? { type: 'tombstone' } : ttl === undefined ? { type: 'primitive', value: c.value } : { type: 'primitive', value: c.value, ttlMs: ttl };
    out.push(mk({ kind: 'column', id: c.columnId }, value));
  }
  return out;
}
