/**
 * A tablet scan with a filter (evaluator.ts): the intent-aware merge of RegularDB and IntentsDB
 * row by row (intent-aware-reader.ts), each row resolved to its visible cells and run through the
 * filter, and the storage iterators of both databases seeked when the filter gives a row hint — so
 * a row prefix or range filter reads only the rows it returns (plus the one that ends it), and a
 * fuzzy row filter jumps from candidate to candidate.
 *
 * Counters: `cellsRead` — visible cells of every row read from storage; `cellsSkipped` — of those,
 * the cells the filter dropped (by a code, or passed over by a column hint); `seeks` — iterator
 * seeks made for row hints. Rows a seek jumps over are never read, so they count in neither.
 *
 * Work per call is bounded: after FILTER_ROWS_EXAMINED_MAX rows the call answers what it has with a
 * resume key (possibly no rows), so a filter that rejects everything still pages through the tablet.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { Primitive, Row, ScanResult } from '../doc-db-api';
import { GroupIterator, type DocKeyGroup } from '../group-iterator';
import { SCAN_ROWS_MAX, type IntentAwareReader, type ReadRange } from '../intent-aware-reader';
import type { KvEngine, KvIterator } from '../kv-engine';
import { INTENTS_DATA_END, INTENTS_DATA_START, REGULAR_DATA_END, REGULAR_DATA_START } from '../storage-keys';
import { ReturnCode, type CellFilter, type FilterCell } from './evaluator';

/** Rows one filtered scan call examines at most before it answers with a resume key. */
export const FILTER_ROWS_EXAMINED_MAX = 100_000;

export interface FilteredScanDeps {
  regular: KvEngine;
  intents: KvEngine;
  /** False when IntentsDB holds no strong intent (skip it). */
  readIntents: boolean;
  /** Built without a column projection: the filter sees every column. */
  reader: IntentAwareReader;
}

export interface FilteredScanOptions {
  range: ReadRange;
  filter: CellFilter;
  /** Follow seek hints (false: read and evaluate every cell, the reference the tests compare with). */
  seekHints: boolean;
  /** Columns to return (the filter still sees all). */
  columns?: readonly number[];
  rowsExaminedMax?: number;
}

const EMPTY_ITERATOR: KvIterator = { seek: () => undefined, next: () => Promise.resolve(undefined), close: () => Promise.resolve() };

function atLeast(a: Uint8Array | undefined, b: Buffer): Buffer {
  return a !== undefined && Buffer.compare(a, b) > 0 ? Buffer.from(a) : b;
}
function atMost(a: Uint8Array | undefined, b: Buffer): Buffer {
  return a !== undefined && a.length > 0 && Buffer.compare(a, b) < 0 ? Buffer.from(a) : b;
}
function groupBytes(g: DocKeyGroup | undefined): number {
  let n = 0;
  for (const [k, v] of g?.entries ?? []) n += k.length + v.length;
  return n;
}

/** The row's cells, in column id order, each with its version's hybrid time. */
function cellsOf(row: Row, hts: ReadonlyMap<number, HybridTime>): FilterCell[] {
  const cells: FilterCell[] = [];
  for (const [columnId, value] of row.columns) cells.push({ columnId, ht: hts.get(columnId) ?? row.writeHt, value });
  return cells.sort((a, b) => a.columnId - b.columnId);
}

function project(cells: readonly FilterCell[], columns: readonly number[] | undefined): Map<number, Primitive> {
  const out = new Map<number, Primitive>();
  for (const c of cells) if (c.value !== null && (columns === undefined || columns.includes(c.columnId))) out.set(c.columnId, c.value);
  return out;
}

type RowOutcome = { included: FilterCell[] | undefined; stop: boolean; seekTo?: Buffer };

class Counters {
  cellsRead = 0;
  cellsSkipped = 0;
  seeks = 0;
}

/** Run one row through the filter: its kept cells (undefined: row dropped), and what the scan does next. */
function judgeRow(f: CellFilter, key: Buffer, cells: readonly FilterCell[], seekHints: boolean, n: Counters): RowOutcome {
  const code = f.startRow({ key, cells });
  if (code !== ReturnCode.INCLUDE) {
    n.cellsSkipped += cells.length;
    f.rowDone(false);
    const h = code === ReturnCode.SEEK ? f.hint() : undefined;
    const seekTo = h !== undefined && 'row' in h && Buffer.compare(h.row, key) > 0 ? h.row : undefined;
    return { included: undefined, stop: seekHints && code === ReturnCode.DONE, ...(seekHints && seekTo ? { seekTo } : {}) };
  }
  const included: FilterCell[] = [];
  let columnFloor = -1;
  let stop = false;
  let seekTo: Buffer | undefined;
  for (let i = 0; i < cells.length; i++) {
    const cell = cells[i]!;
    if (cell.columnId < columnFloor) {
      n.cellsSkipped++;
      continue;
    }
    const c = f.filterCell(cell);
    if (c === ReturnCode.INCLUDE) {
      included.push(f.transformCell(cell));
      continue;
    }
    if (c === ReturnCode.SEEK) {
      const h = f.hint();
      if (h !== undefined && 'column' in h) {
        if (seekHints) columnFloor = h.column;
        n.cellsSkipped++;
        continue;
      }
      if (h !== undefined && seekHints && Buffer.compare(h.row, key) > 0) seekTo = h.row;
    }
    if (c === ReturnCode.SEEK || c === ReturnCode.NEXT_ROW || c === ReturnCode.DONE) {
      n.cellsSkipped += cells.length - i;
      stop = seekHints && c === ReturnCode.DONE;
      break;
    }
    n.cellsSkipped++; // SKIP, NEXT_COL
  }
  const pass = included.length > 0 || cells.length === 0;
  f.rowDone(pass);
  return { included: pass ? included : undefined, stop, ...(seekTo ? { seekTo } : {}) };
}

export async function filteredScan(d: FilteredScanDeps, o: FilteredScanOptions): Promise<ScanResult & { cellsRead: number; cellsSkipped: number; seeks: number }> {
  const { range, filter, seekHints } = o;
  const limit = Math.min(range.limit ?? SCAN_ROWS_MAX, SCAN_ROWS_MAX);
  const maxBytes = range.maxBytes ?? Infinity;
  const examinedMax = o.rowsExaminedMax ?? FILTER_ROWS_EXAMINED_MAX;
  const iLo = atLeast(range.start, INTENTS_DATA_START);
  const rLo = atLeast(range.start, REGULAR_DATA_START);
  // Intents first (see intent-aware-reader.ts).
  const ig = new GroupIterator(d.readIntents ? d.intents.iterator({ gte: iLo, lt: atMost(range.end, INTENTS_DATA_END) }) : EMPTY_ITERATOR);
  const rg = new GroupIterator(d.regular.iterator({ gte: rLo, lt: atMost(range.end, REGULAR_DATA_END) }));
  const n = new Counters();
  const rows: Row[] = [];
  const result = (resumeKey?: Buffer): ScanResult & Counters => ({ rows, ...(resumeKey ? { resumeKey } : {}), cellsRead: n.cellsRead, cellsSkipped: n.cellsSkipped, seeks: n.seeks });
  let bytes = 0;
  let examined = 0;
  try {
    for (;;) {
      const a = await rg.peek();
      const b = await ig.peek();
      if (a === undefined && b === undefined) return result();
      const cmp = a === undefined ? 1 : b === undefined ? -1 : Buffer.compare(a.docKeyBuf, b.docKeyBuf);
      if (seekHints && filter.filterAllRemaining()) return result();
      if (rows.length >= limit || (rows.length > 0 && bytes >= maxBytes) || examined >= examinedMax) return result(cmp <= 0 ? a!.docKeyBuf : b!.docKeyBuf);
      const reg = cmp <= 0 ? await rg.next() : undefined;
      const int = cmp >= 0 ? await ig.next() : undefined;
      examined++;
      const hts = new Map<number, HybridTime>();
      const row = await d.reader.row(reg, int, hts);
      if (row === undefined) continue;
      const key = (reg ?? int)!.docKeyBuf;
      const cells = cellsOf(row, hts);
      n.cellsRead += cells.length;
      const out = judgeRow(filter, key, cells, seekHints, n);
      if (out.included !== undefined) {
        // Every cell kept as it was (no projection, no transform): the row as read.
        const unchanged = o.columns === undefined && out.included.length === cells.length && out.included.every((c, i) => c === cells[i]);
        rows.push(unchanged ? row : { key: row.key, columns: project(out.included, o.columns), writeHt: row.writeHt });
        bytes += groupBytes(reg) + groupBytes(int);
      }
      if (out.stop) return result();
      if (out.seekTo !== undefined) {
        n.seeks++;
        rg.seek(atLeast(out.seekTo, rLo));
        ig.seek(atLeast(out.seekTo, iLo));
      }
    }
  } finally {
    await rg.close();
    await ig.close();
  }
}
