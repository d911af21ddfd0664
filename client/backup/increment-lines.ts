/**
 * An incremental export's lines (docs/backup.md, format version 2): one JSON object per changed row,
 * `{"k":{key columns},"c":[[column, ht, type, value?], …]}`, holding every put and every delete
 * marker of the row whose timestamp is inside the export's window (HBase's Export with a time
 * range: a raw scan). Types: P put, V version delete, C column delete, R row delete (column "").
 *
 * `materializeRow` is the pure core of applying an increment: from the row as it stood before the
 * window and the window's cells, the row as of a hybrid time inside the window, by the cell model's
 * masking rules (docs/cells.md): a marker masks puts at or before its timestamp, at an equal one too.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { ColumnValue, Row } from '../client-types';
import type { CellResult, CellRowResult } from '../cells';
import { decodeValue, encodeValue } from './backup-format';

export type CellType = CellResult['type'];
const TYPE_CODE: Record<CellType, string> = { PUT: 'P', DELETE_VERSION: 'V', DELETE_COLUMN: 'C', DELETE_ROW: 'R' };
const CODE_TYPE: Record<string, CellType> = { P: 'PUT', V: 'DELETE_VERSION', C: 'DELETE_COLUMN', R: 'DELETE_ROW' };

export interface WindowCell {
  column: string;
  ht: bigint;
  type: CellType;
  value?: ColumnValue;
}

export interface ChangedRow {
  key: Row;
  cells: WindowCell[];
}

export function encodeChangedRow(r: CellRowResult): string {
  const k: Record<string, unknown> = {};
  for (const [c, v] of Object.entries(r.key)) k[c] = encodeValue(v);
  const cells = r.cells.map((c) => {
    const out: unknown[] = [c.column, c.timestamp.toString(), TYPE_CODE[c.type]];
    if (c.type === 'PUT') out.push(encodeValue(c.value ?? null));
    return out;
  });
  return `${JSON.stringify({ k, c: cells })}\n`;
}

export function decodeChangedRow(line: string, where: string): ChangedRow {
  let o: unknown;
  try {
    o = JSON.parse(line);
  } catch {
    throw new DbError(ErrorCode.CORRUPTION, `${where}: not a JSON line`);
  }
  const rec = o as { k?: unknown; c?: unknown };
  if (!rec || typeof rec !== 'object' || !rec.k || typeof rec.k !== 'object' || !Array.isArray(rec.c)) throw new DbError(ErrorCode.CORRUPTION, `${where}: not a changed row ({k, c})`);
  const key: Row = {};
  for (const [c, v] of Object.entries(rec.k as Record<string, unknown>)) key[c] = decodeValue(v, `${where}, key ${c}`);
  const cells = (rec.c as unknown[]).map((x): WindowCell => {
    if (!Array.isArray(x) || typeof x[0] !== 'string' || typeof x[1] !== 'string' || !/^\d+$/.test(x[1]) || typeof x[2] !== 'string' || !CODE_TYPE[x[2]]) throw new DbError(ErrorCode.CORRUPTION, `${where}: a cell of an unknown shape: ${JSON.stringify(x).slice(0, 80)}`);
    const type = CODE_TYPE[x[2]]!;
    return { column: x[0], ht: BigInt(x[1]), type, ...(type === 'PUT' ? { value: decodeValue(x[3], `${where}, column ${x[0]}`) } : {}) };
  });
  return { key, cells };
}

/** What applying a changed row does to the target: nothing, write the whole row, or delete it. */
export type RowChange = { type: 'none' } | { type: 'upsert'; row: Row } | { type: 'delete' };

/**
 * The row as of `uptoHt` from `base` (the row before the window; undefined: absent) and the
 * window's cells. Cells are taken in timestamp order, a marker after a put at an equal timestamp; a
 * version delete takes out the put at exactly its timestamp. A column delete leaves the row present
 * (a row write of a null writes one, beside the row's liveness); a row delete clears every column.
 */
export function materializeRow(base: Row | undefined, row: ChangedRow, uptoHt: bigint, keyColumns: readonly string[], valueColumns: readonly string[]): RowChange {
  const cells = row.cells.filter((c) => c.ht <= uptoHt);
  if (cells.length === 0) return { type: 'none' };
  const versionDeleted = new Set(cells.filter((c) => c.type === 'DELETE_VERSION').map((c) => `${c.column}@${c.ht}`));
  const rank = (c: WindowCell): number => (c.type === 'PUT' ? 0 : 1);
  const ordered = cells.filter((c) => c.type !== 'DELETE_VERSION' && !(c.type === 'PUT' && versionDeleted.has(`${c.column}@${c.ht}`))).sort((a, b) => (a.ht < b.ht ? -1 : a.ht > b.ht ? 1 : rank(a) - rank(b)));
  let exists = base !== undefined;
  let values = new Map<string, ColumnValue>(valueColumns.map((c) => [c, base?.[c] ?? null]));
  for (const c of ordered) {
    if (c.type === 'DELETE_ROW') {
      exists = false;
      values = new Map(valueColumns.map((v) => [v, null]));
    } else if (values.has(c.column)) {
      // A cell of a column the schema no longer has (dropped) counts for nothing, as in a read.
      values.set(c.column, c.type === 'PUT' ? (c.value ?? null) : null);
      exists = true;
    }
  }
  if (!exists) return base === undefined ? { type: 'none' } : { type: 'delete' };
  const out: Row = {};
  for (const k of keyColumns) out[k] = row.key[k] ?? null;
  for (const [c, v] of values) out[c] = v;
  return { type: 'upsert', row: out };
}
