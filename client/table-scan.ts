/**
 * One scan of a table (table.ts's scan, scanRows and aggregate): its plan (tablets, bounds, page
 * size, filter, aggregates) and one pass over its tablets at one read time.
 */
import { filterRowLimit } from '../common/filter-ast';
import { toFilterAst } from '../common/filter-expression';
import { DbError, ErrorCode } from '../common/errors';
import { decodePartials, emptyPartials, mergePartials } from '../common/scan-aggregate';
import { compareKeyBytes, maxLowerBound, minUpperBound } from '../common/key-bounds';
import { hashPrefixBytes } from '../common/partition-hash';
import { ROW_FORMAT_EXPORT_LINES, ROW_FORMAT_ROWS, tabletServerMethods, type ScanResponsePB, type TxnContextPB } from '../rpc';
import type { Row, ScanOptions } from './client-types';
import type { TableLocations, TabletLocation } from './meta-cache';
import { readTimeMoved, type ReadTime } from './read-time';
import type { Deadline } from './retry-policy';
import type { TableSchema } from './table-schema';
import type { TabletInvoker } from './tablet-invoker';
import type { TxnBinding } from './txn-binding';

/** Rows one scan call returns at most (the tserver's limit). */
export const SCAN_PAGE_MAX = 10_000;
const SCAN_PAGE_DEFAULT = 1000;
/** Scan pages of one scan at most (a bound on a runaway loop: 10^6 pages). */
const SCAN_PAGES_MAX = 1_000_000;
/** What a scan pass needs of its table handle. */
export interface ScanDeps {
  readonly name: string;
  readonly invoker: TabletInvoker;
  readonly txn: TxnBinding | undefined;
  /** Read-time fields of a call to the tablet (the transaction's, else `rt`). */
  readFields(tabletId: string, rt: ReadTime): { readHt: bigint; globalLimitHt?: bigint; txn?: TxnContextPB };
  readonly readFatal: ReadonlySet<string>;
}

export interface ScanPlan {
  loc: TableLocations;
  schema: TableSchema;
  limit: number;
  page: number;
  columns: number[] | undefined;
  bounds: { start: Uint8Array; end: Uint8Array };
  tablets: TableLocations['tablets'];
  o: ScanOptions;
  d: Deadline;
  /** The filter as JSON for every scan call ('' = none). */
  filterJson: string;
  /** The aggregates as JSON for every scan call ('' = rows are returned). */
  aggregateJson: string;
}

const EMPTY_KEY = new Uint8Array(0);

/** Whether a range table's tablet holds any key of [bounds.start, bounds.end) (empty = open). */
function rangeOverlaps(t: TabletLocation, bounds: { start: Uint8Array; end: Uint8Array }): boolean {
  const lo = maxLowerBound(bounds.start, t.keyStart ?? EMPTY_KEY);
  const hi = minUpperBound(bounds.end, t.keyEnd ?? EMPTY_KEY);
  return lo.length === 0 || hi.length === 0 || compareKeyBytes(lo, hi) < 0;
}

export function scanPlan(loc: TableLocations, o: ScanOptions, d: Deadline): ScanPlan {
  const schema = loc.schema;
  const limit = o.limit ?? Infinity;
  if (!(limit >= 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'scan limit must be >= 0');
  const page = Math.min(SCAN_PAGE_MAX, Math.max(1, o.pageSize ?? SCAN_PAGE_DEFAULT));
  const columns = schema.columnIds(o.columns);
  const keyBounds = schema.scanBounds(o.hashKey, o.rangeStart, o.rangeEnd);
  const slice = o.hashSlice && schema.hash.length > 0 ? o.hashSlice : undefined;
  // A hash slice: every DocKey of a hash table starts with its hash code ('G' + u16), so the codes
  // [from, to) are the keys between their prefixes.
  const bounds = slice ? { ...keyBounds, start: maxLowerBound(keyBounds.start, hashPrefixBytes(slice.from)), end: minUpperBound(keyBounds.end, hashPrefixBytes(slice.to)) } : keyBounds;
  const all = bounds.hash !== undefined ? loc.tablets.filter((t) => bounds.hash! >= t.start && bounds.hash! < t.end) : loc.tablets.filter((t) => rangeOverlaps(t, keyBounds));
  const picked = o.tabletOrdinal === undefined ? all : all.slice(o.tabletOrdinal, o.tabletOrdinal + 1);
  const tablets = slice ? picked.filter((t) => slice.from < t.end && slice.to > t.start) : picked;
  // Checked here for a clear error before any RPC; the tablet checks again (any client may send JSON).
  const filter = o.filter === undefined ? undefined : toFilterAst(o.filter);
  const filterJson = filter ? JSON.stringify(filter) : '';
  const agg = o.aggregateInto;
  if (agg) agg.specs = agg.named.map((a) => (a.column === undefined ? { fn: a.fn } : { fn: a.fn, columnId: schema.columnIds([a.column])[0]! }));
  const aggregateJson = agg ? JSON.stringify(agg.specs) : '';
  return { loc, schema, limit: filter ? Math.min(limit, filterRowLimit(filter)) : limit, page, columns, bounds, tablets, o, d, filterJson, aggregateJson };
}

/**
 * One pass over the scanned tablets at one read time: `rt`, else the first page's (the leader's
 * pick) for every later page and tablet. In a transaction every page must come back at the read
 * time the pass started with; the transaction's read time is fixed when the first row is handed
 * on (`collect`: when the pass ends, since nothing reached the caller before).
 */
export function scanPass(t: ScanDeps, plan: ScanPlan, rt: ReadTime, collect: boolean): AsyncGenerator<Row[]> {
  return scanPassOf(t, plan, rt, collect, ROW_FORMAT_ROWS, (r, room) => {
    const rows: Row[] = [];
    for (const row of r.rows ?? []) {
      if (rows.length >= room) break;
      rows.push(plan.schema.rowFromPb(row, plan.o.columns));
    }
    return { page: rows, count: rows.length };
  });
}

/** A page of export lines (common/export-line.ts) as the tablet server wrote them. */
export interface LinePage {
  lines: Uint8Array;
  rows: number;
}

/** scanPass with the rows as export lines written by the tablet servers (no row objects on this side). */
export function scanLinePass(t: ScanDeps, plan: ScanPlan, rt: ReadTime): AsyncGenerator<LinePage> {
  if (plan.aggregateJson) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a scan of export lines computes no aggregates');
  return scanPassOf(t, plan, rt, false, ROW_FORMAT_EXPORT_LINES, (r, room) => {
    const rows = r.lineCount ?? 0;
    if (rows > 0 && !r.lines) throw new DbError(ErrorCode.NOT_SUPPORTED, 'the tablet server sent rows, not export lines (a server older than this client)');
    if (rows > room) throw new DbError(ErrorCode.INTERNAL, `a scan page of ${rows} export lines where ${room} were asked for`);
    return { page: { lines: r.lines ?? new Uint8Array(0), rows }, count: rows };
  });
}

/** Of one scan response: what to hand on (at most `room` rows of it) and how many rows that is. */
type PageTake<T> = (r: ScanResponsePB, room: number) => { page: T; count: number };

async function* scanPassOf<T>(t: ScanDeps, plan: ScanPlan, rt: ReadTime, collect: boolean, rowFormat: number, take: PageTake<T>): AsyncGenerator<T> {
  const { schema, limit, page, columns, bounds, o, d } = plan;
  const sv = schema.version;
  let at = rt;
  const txnReadHt = t.txn?.readHt ?? 0n;
  let accepted = false;
  const accept = (): void => {
    if (!t.txn || accepted) return;
    if (!t.txn.acceptRead(txnReadHt)) throw readTimeMoved(txnReadHt, t.txn.readHt);
    accepted = true;
  };
  let returned = 0;
  let pages = 0;
  // A restarted pass folds again from nothing.
  if (o.aggregateInto) o.aggregateInto.acc = emptyPartials(o.aggregateInto.specs!);
  for (const tablet of plan.tablets) {
    // A range table's tablet is asked only for its own key range (tablets in key order: rows in key order).
    let start: Uint8Array = maxLowerBound(bounds.start, tablet.keyStart ?? EMPTY_KEY);
    const end = minUpperBound(bounds.end, tablet.keyEnd ?? EMPTY_KEY);
    for (;;) {
      if (returned >= limit) break;
      if (++pages > SCAN_PAGES_MAX) throw new DbError(ErrorCode.INTERNAL, `scan of ${t.name} exceeded ${SCAN_PAGES_MAX} pages`);
      const want = Math.min(page, limit - returned);
      const from = start;
      const pageAt = at;
      const r: ScanResponsePB = await t.invoker.call(
        t.name,
        { tabletId: tablet.tabletId },
        tabletServerMethods().scan,
        (tl) => ({ tabletId: tl.tabletId, startKey: from, endKey: end, limit: want, columns, propagatedHt: t.invoker.propagatedHt, schemaVersion: sv, ...(plan.filterJson ? { filter: plan.filterJson } : {}), ...(plan.aggregateJson ? { aggregate: plan.aggregateJson } : {}), ...(rowFormat ? { rowFormat } : {}), ...t.readFields(tl.tabletId, pageAt) }),
        d,
        true,
        t.readFatal,
      );
      t.invoker.observeHt(r.propagatedHt);
      if (o.aggregateInto) {
        if (!r.aggregates) throw new DbError(ErrorCode.NOT_SUPPORTED, `tablet ${tablet.tabletId} did not compute the scan's aggregates (a server older than this client)`);
        mergePartials(o.aggregateInto.specs!, o.aggregateInto.acc!, decodePartials(r.aggregates));
      }
      if (o.stats) {
        o.stats.cellsRead += Number(r.cellsRead ?? 0n);
        o.stats.cellsSkipped += Number(r.cellsSkipped ?? 0n);
        o.stats.calls++;
      }
      if (t.txn) {
        // (Serializable: each page reads at its own time under the tablet's read lock.)
        if (!t.txn.registersReads && BigInt(r.readHt ?? 0n) !== txnReadHt) throw readTimeMoved(txnReadHt, t.txn.readHt);
      } else if (at.readHt === 0n && r.readHt) {
        // Every later page and tablet reads at the first page's time and limit: one consistent snapshot.
        at = { readHt: BigInt(r.readHt), globalLimitHt: BigInt(r.globalLimitHt ?? 0n) };
      }
      // A page at a time: one hand-off per page, not per row (an export's rows pass several
      // generators; a per-row yield cost a promise and a microtask at each).
      const { page: out, count } = take(r, limit - returned);
      returned += count;
      if (count > 0) {
        if (!collect) accept();
        yield out;
      }
      if (!r.resumeKey || r.resumeKey.length === 0) break;
      start = new Uint8Array(r.resumeKey);
    }
  }
  accept();
}
