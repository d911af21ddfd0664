/**
 * Cell reads over RegularDB (HBase's Get/Scan with versions, time range, as-of and raw; docs/cells.md):
 * walk the rows of a key range, turn each row's stored versions into cell entries and let the cell
 * model (cell-versions.ts) pick what each column returns under its family's rules.
 *
 * Reads committed data only (RegularDB): a transaction's provisional records are not seen, and a
 * committed transaction is seen once applied. There is no uncertainty window: the read time is an
 * explicit snapshot, as HBase's timestamps are.
 */
import type { HybridTime } from '../common/hybrid-time';
import { selectColumnCells, type CellEntry, type CellReadOptions, type CellReadResult, type CellReadSpec, type CellRow, type CellRules } from './cell-versions';

export type { CellReadOptions, CellReadResult, CellRow } from './cell-versions';
import { GroupIterator } from './group-iterator';
import type { KvEngine } from './kv-engine';
import type { StoredValue, SubKind } from './row-assembler';
import { decodeDocKeyBuf, decodeStored, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

/** Rows one cell read returns at most (a scan resumes from its resume key). */
export const CELL_READ_ROWS_MAX = 10_000;
/** Cells one cell read returns at most, across its rows (bounds the answer's memory). */
export const CELL_READ_CELLS_MAX = 100_000;
/** About the value bytes one cell read returns before it stops with a resume key (keeps an answer well below the RPC message limit). */
export const CELL_READ_BYTES_MAX = 4 << 20;

function cellBytes(c: CellEntry): number {
  const v = c.value;
  if (typeof v === 'string') return 24 + v.length * 3;
  if (v instanceof Uint8Array) return 24 + v.byteLength;
  return 24;
}

/** A stored version as a cell entry; undefined for the liveness column (not a cell). */
export function cellEntryOf(sub: SubKind, ht: HybridTime, writeId: number, sv: StoredValue): CellEntry | undefined {
  if (sub.kind === 'liveness') return undefined;
  if (sub.kind === 'row') return { kind: 'deleteRow', columnId: -1, ht, writeId };
  if (sv.type === 'versionTombstone') return { kind: 'deleteVersion', columnId: sub.id, ht, writeId };
  if (sv.type === 'primitive' && sv.value !== null) return { kind: 'put', columnId: sub.id, ht, writeId, value: sv.value, ...(sv.ttlMs !== undefined ? { ttlMs: sv.ttlMs } : {}) };
  // A tombstone, or a stored null (which reads as one).
  return { kind: 'deleteColumn', columnId: sub.id, ht, writeId };
}

/** The cells one row returns (an empty list: the row has nothing to show). */
export function rowCells(entries: readonly CellEntry[], rulesOf: (columnId: number) => CellRules, spec: CellReadSpec, columns?: ReadonlySet<number>, schemaColumns?: ReadonlySet<number>): CellEntry[] {
  const byColumn = new Map<number, CellEntry[]>();
  const rowMarkers: CellEntry[] = [];
  for (const e of entries) {
    if (e.columnId === -1) {
      rowMarkers.push(e);
      continue;
    }
    // A dropped column's versions count for nothing (row-assembler.ts), nor do unasked columns.
    if (schemaColumns !== undefined && !schemaColumns.has(e.columnId)) continue;
    if (columns !== undefined && !columns.has(e.columnId)) continue;
    const list = byColumn.get(e.columnId);
    if (list) list.push(e);
    else byColumn.set(e.columnId, [e]);
  }
  const out: CellEntry[] = [];
  if (spec.raw) out.push(...selectColumnCells(rowMarkers, rulesOf(-1), spec));
  for (const id of [...byColumn.keys()].sort((a, b) => a - b)) {
    const own = byColumn.get(id)!;
    const picked = selectColumnCells(spec.raw ? own : [...own, ...rowMarkers], rulesOf(id), spec);
    out.push(...picked);
  }
  return out;
}

export async function readCellRows(engine: KvEngine, opts: CellReadOptions, rulesOf: (columnId: number) => CellRules, schemaColumns?: ReadonlySet<number>): Promise<CellReadResult> {
  const start = opts.startKey && opts.startKey.length > 0 ? Buffer.from(opts.startKey) : REGULAR_DATA_START;
  const end = opts.endKey && opts.endKey.length > 0 ? Buffer.from(opts.endKey) : REGULAR_DATA_END;
  const limit = Math.min(opts.limit && opts.limit > 0 ? opts.limit : CELL_READ_ROWS_MAX, CELL_READ_ROWS_MAX);
  const columns = opts.columns && opts.columns.length > 0 ? new Set(opts.columns) : undefined;
  const it = new GroupIterator(engine.iterator({ gte: start, lt: end }));
  const rows: CellRow[] = [];
  let cellCount = 0;
  let bytes = 0;
  try {
    for (;;) {
      const g = await it.next();
      if (g === undefined) return { rows };
      if (rows.length >= limit || cellCount >= CELL_READ_CELLS_MAX || bytes >= CELL_READ_BYTES_MAX) return { rows, resumeKey: Buffer.from(g.docKeyBuf) };
      const entries: CellEntry[] = [];
      for (const [key, value] of g.entries) {
        const p = parseRegularKey(key, g.docKeyBuf.length);
        const e = cellEntryOf(p.sub, p.ht, p.writeId, decodeStored(value));
        if (e !== undefined) entries.push(e);
      }
      const cells = rowCells(entries, rulesOf, opts, columns, schemaColumns);
      if (cells.length === 0) continue;
      cellCount += cells.length;
      for (const c of cells) bytes += cellBytes(c);
      rows.push({ key: decodeDocKeyBuf(g.docKeyBuf), cells });
    }
  } finally {
    await it.close();
  }
}
