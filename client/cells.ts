/**
 * The client side of HBase's cell model (docs/cells.md): puts at client timestamps with cell and row
 * TTLs, delete markers (one version, a column, a family, a row), and gets / scans with versions, a
 * time range, an as-of time, raw, and column or family projection.
 *
 * Times: a bigint is a hybrid time (what the cluster hands out: physical µs << 12 | logical), a number
 * or a Date a wall-clock time in milliseconds (converted to the hybrid time at its start).
 */
import { DbError, ErrorCode } from '../common/errors';
import { htFrom, type HybridTime } from '../common/hybrid-time';
import { cellMethods, type CellWritePB, type ReadCellsRequestPB, type ReadCellsResponsePB } from '../rpc';
import type { CallOptions, ColumnValue, Row } from './client-types';
import type { MetaCache, TableLocations } from './meta-cache';
import { Deadline } from './retry-policy';
import { withTableSchema } from './schema-retry';
import type { TabletInvoker } from './tablet-invoker';
import { valueFromPb, valueToPb, type TableSchema } from './table-schema';

/** A hybrid time (bigint), or a wall-clock time (ms number or Date). */
export type CellTime = bigint | number | Date;

export function toHybridTime(t: CellTime, what = 'time'): HybridTime {
  if (typeof t === 'bigint') {
    if (t < 0n) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} ${t} is negative`);
    return t;
  }
  const ms = t instanceof Date ? t.getTime() : t;
  if (!Number.isFinite(ms) || ms < 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${what} ${String(t)} is not a wall-clock time in ms`);
  return htFrom(BigInt(Math.floor(ms)) * 1000n);
}

export interface CellPut {
  column: string;
  value: Exclude<ColumnValue, null>;
  /** The cell's timestamp (HBase's explicit timestamp); absent: the write's own time. */
  timestamp?: CellTime;
  /** The cell's TTL (absent: the row TTL, else none; the family's TTL applies as well). */
  ttlMs?: number;
}

export type CellDelete =
  /** One version: the one at exactly `timestamp`. */
  | { type: 'version'; column: string; timestamp: CellTime }
  /** Every version of a column at or before `timestamp` (absent: the write's time). */
  | { type: 'column'; column: string; timestamp?: CellTime }
  /** Every version of every column of a family at or before `timestamp`. */
  | { type: 'family'; family: string; timestamp?: CellTime }
  /** Every version of every column of the row at or before `timestamp`. */
  | { type: 'row'; timestamp?: CellTime };

export interface CellReadOptions extends CallOptions {
  /** Versions per column (default 1; raw: every version). */
  versions?: number;
  /** Cell timestamps in [min, max). */
  timeRange?: [CellTime, CellTime];
  /** A snapshot of the past (within history retention, else SNAPSHOT_TOO_OLD). */
  asOf?: CellTime;
  /** Every version and every delete marker (HBase's raw scan). */
  raw?: boolean;
  /** Only these columns ... */
  columns?: string[];
  /** ... and / or the columns of these families. */
  families?: string[];
}

export interface CellResult {
  /** Column name; '' for a row delete marker (raw reads). */
  column: string;
  family: string;
  timestamp: HybridTime;
  type: 'PUT' | 'DELETE_VERSION' | 'DELETE_COLUMN' | 'DELETE_ROW';
  value?: ColumnValue;
  ttlMs?: number;
}

export interface CellRowResult {
  key: Row;
  /** Per column, newest first. */
  cells: CellResult[];
}

export interface CellOpsDeps {
  table: string;
  cache: MetaCache;
  invoker: TabletInvoker;
  defaultTimeoutMs: number;
}

/** Scan pages per tablet at most (each up to the tablet's row limit): bounds one scanCells. */
const SCAN_PAGES_MAX = 10_000;

export class CellOps {
  constructor(private readonly deps: CellOpsDeps) {}

  private deadline(o?: CallOptions): Deadline {
    return new Deadline(o?.timeoutMs ?? this.deps.defaultTimeoutMs);
  }

  private withSchema<T>(d: Deadline, f: (loc: TableLocations) => Promise<T>): Promise<T> {
    return withTableSchema(this.deps.cache, this.deps.table, d, f);
  }

  private column(s: TableSchema, name: string): { id: number } {
    const c = s.byName.get(name);
    if (!c) throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${s.name} has no column ${name}`, { column: name });
    if (s.isKey(name)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `column ${name} is part of the primary key: cells are the other columns`, { column: name });
    return c;
  }

  async putCells(key: Row, puts: readonly CellPut[], o: CallOptions & { rowTtlMs?: number } = {}): Promise<HybridTime> {
    return this.write(key, (s) =>
      puts.map((p): CellWritePB => {
        const c = s.byName.get(p.column);
        const col = this.column(s, p.column);
        return {
          type: 'PUT',
          columnId: col.id,
          value: valueToPb(s.value(c!, p.value)),
          ...(p.timestamp !== undefined ? { ht: toHybridTime(p.timestamp, 'timestamp') } : {}),
          ...(p.ttlMs !== undefined ? { ttlMs: BigInt(p.ttlMs) } : {}),
        };
      }), o, o.rowTtlMs);
  }

  async deleteCells(key: Row, deletes: readonly CellDelete[], o: CallOptions = {}): Promise<HybridTime> {
    return this.write(key, (s) =>
      deletes.map((d): CellWritePB => {
        const at = d.timestamp !== undefined ? { ht: toHybridTime(d.timestamp, 'timestamp') } : {};
        if (d.type === 'version') return { type: 'DELETE_VERSION', columnId: this.column(s, d.column).id, ...at };
        if (d.type === 'column') return { type: 'DELETE_COLUMN', columnId: this.column(s, d.column).id, ...at };
        if (d.type === 'family') return { type: 'DELETE_FAMILY', family: d.family, ...at };
        return { type: 'DELETE_ROW', ...at };
      }), o);
  }

  private async write(key: Row, build: (s: TableSchema) => CellWritePB[], o: CallOptions, rowTtlMs?: number): Promise<HybridTime> {
    const d = this.deadline(o);
    return this.withSchema(d, (loc) => this.writeWith(loc, key, build, d, rowTtlMs));
  }

  private async writeWith(loc: TableLocations, key: Row, build: (s: TableSchema) => CellWritePB[], d: Deadline, rowTtlMs?: number): Promise<HybridTime> {
    const s = loc.schema;
    const k = s.key(key);
    const cells = build(s);
    if (cells.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'no cells to write');
    const inv = this.deps.invoker;
    // Not resent after an unknown outcome: a put at an explicit timestamp is idempotent, one without is not.
    const r = await inv.call(this.deps.table, { hash: k.hash, key: s.routeKey(k) }, cellMethods().writeCells, (t) => ({ tabletId: t.tabletId, rows: [{ key: s.keyPb(k), cells, ...(rowTtlMs ? { rowTtlMs: BigInt(rowTtlMs) } : {}) }], schemaVersion: s.version, propagatedHt: inv.propagatedHt }), d, false);
    inv.observeHt(r.propagatedHt);
    return BigInt(r.writeHt ?? 0n);
  }

  /** The request fields of a read; `nothing`: the projection names no cell column (the read answers nothing). */
  private readSpec(s: TableSchema, o: CellReadOptions): { spec: Omit<ReadCellsRequestPB, 'tabletId'>; nothing: boolean } {
    if (o.versions !== undefined && (!Number.isInteger(o.versions) || o.versions < 1)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `versions ${o.versions} must be a positive integer`, { part: 'VERSIONS' });
    const ids = new Set<number>();
    for (const c of o.columns ?? []) ids.add(this.column(s, c).id);
    for (const f of o.families ?? []) {
      if (!s.families.some((x) => x.name === f)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${s.name} has no family ${f} (it has ${s.families.map((x) => x.name).join(', ')})`, { family: f, part: 'FAMILY' });
      for (const c of s.columns) if (c.family === f && !s.isKey(c.name)) ids.add(c.id);
    }
    const projected = (o.columns?.length ?? 0) + (o.families?.length ?? 0) > 0;
    const range = o.timeRange ? { hasTimeRange: true, minHt: toHybridTime(o.timeRange[0], 'time range start'), maxHt: toHybridTime(o.timeRange[1], 'time range end') } : {};
    if (range.hasTimeRange && range.minHt! >= range.maxHt!) throw new DbError(ErrorCode.INVALID_ARGUMENT, `time range [${range.minHt}, ${range.maxHt}) is empty or reversed`, { part: 'TIME_RANGE' });
    const spec = { schemaVersion: s.version, columnIds: [...ids], versions: o.versions ?? 0, ...range, asOfHt: o.asOf !== undefined ? toHybridTime(o.asOf, 'as-of time') : 0n, raw: o.raw === true };
    return { spec, nothing: projected && ids.size === 0 };
  }

  private rowsOf(s: TableSchema, r: ReadCellsResponsePB): CellRowResult[] {
    return (r.rows ?? []).map((row) => {
      const key: Row = {};
      const k = row.key ?? {};
      s.hash.forEach((c, i) => (key[c.name] = valueFromPb(k.hashed?.[i])));
      s.range.forEach((c, i) => (key[c.name] = valueFromPb(k.range?.[i])));
      const cells = (row.cells ?? []).map((c): CellResult => {
        const col = c.type === 'DELETE_ROW' ? undefined : s.byId.get(c.columnId ?? -1);
        return {
          column: col?.name ?? '',
          family: col?.family ?? '',
          timestamp: BigInt(c.ht ?? 0n),
          type: (c.type ?? 'PUT') as CellResult['type'],
          ...(c.value ? { value: valueFromPb(c.value) } : {}),
          ...(c.ttlMs ? { ttlMs: Number(c.ttlMs) } : {}),
        };
      });
      return { key, cells };
    });
  }

  async getCells(key: Row, o: CellReadOptions = {}): Promise<CellRowResult | undefined> {
    const d = this.deadline(o);
    return this.withSchema(d, (loc) => this.getWith(loc, key, o, d));
  }

  private async getWith(loc: TableLocations, key: Row, o: CellReadOptions, d: Deadline): Promise<CellRowResult | undefined> {
    const s = loc.schema;
    const { spec, nothing } = this.readSpec(s, o);
    const k = s.key(key);
    if (nothing) return undefined;
    const inv = this.deps.invoker;
    const r = await inv.call(this.deps.table, { hash: k.hash, key: s.routeKey(k) }, cellMethods().readCells, (t) => ({ ...spec, tabletId: t.tabletId, keys: [s.keyPb(k)], propagatedHt: inv.propagatedHt }), d, true);
    inv.observeHt(r.propagatedHt);
    return this.rowsOf(s, r)[0];
  }

  /**
   * Every tablet's rows' cells in partition order, one page (one ReadCells answer) at a time, so a
   * caller streaming a whole table (an incremental export, docs/backup.md) holds one page. One read
   * time for the whole scan: `asOf`, else the first answer's. `pagesPerTabletMax` 1 with `pageRows` 1
   * probes every tablet (a history-floor check) without reading them.
   */
  async *scanCellPages(o: CellReadOptions & { pageRows?: number; pagesPerTabletMax?: number } = {}): AsyncGenerator<CellRowResult[]> {
    const d = this.deadline(o);
    const loc = await this.withSchema(d, (l) => Promise.resolve(l));
    const s = loc.schema;
    const { spec, nothing } = this.readSpec(s, o);
    if (nothing) return;
    const inv = this.deps.invoker;
    let asOf = spec.asOfHt ?? 0n;
    const pages = Math.min(o.pagesPerTabletMax ?? SCAN_PAGES_MAX, SCAN_PAGES_MAX);
    for (const tablet of loc.tablets) {
      let start: Uint8Array | undefined;
      for (let page = 0; page < pages; page++) {
        const r = await inv.call(this.deps.table, { tabletId: tablet.tabletId }, cellMethods().readCells, (t) => ({ ...spec, tabletId: t.tabletId, asOfHt: asOf, ...(o.pageRows ? { limit: o.pageRows } : {}), ...(start ? { startKey: start } : {}), propagatedHt: inv.propagatedHt }), d, true);
        inv.observeHt(r.propagatedHt);
        if (asOf === 0n && r.readHt) asOf = BigInt(r.readHt);
        const rows = this.rowsOf(s, r);
        if (rows.length > 0) yield rows;
        if (!r.resumeKey || r.resumeKey.length === 0) break;
        if (page === pages - 1 && o.pagesPerTabletMax === undefined) throw new DbError(ErrorCode.INTERNAL, `cell scan of ${this.deps.table}: tablet ${tablet.tabletId} needs more than ${SCAN_PAGES_MAX} pages`);
        start = r.resumeKey;
      }
    }
  }

  /** Every tablet in partition order; `limit` rows at most (default 1000). One read time for the whole scan. */
  async scanCells(o: CellReadOptions & { limit?: number } = {}): Promise<CellRowResult[]> {
    const d = this.deadline(o);
    return this.withSchema(d, (loc) => this.scanWith(loc, o, d));
  }

  private async scanWith(loc: TableLocations, o: CellReadOptions & { limit?: number }, d: Deadline): Promise<CellRowResult[]> {
    const s = loc.schema;
    const { spec, nothing } = this.readSpec(s, o);
    if (nothing) return [];
    const limit = o.limit ?? 1000;
    const inv = this.deps.invoker;
    const out: CellRowResult[] = [];
    let asOf = spec.asOfHt ?? 0n;
    for (const tablet of loc.tablets) {
      let start: Uint8Array | undefined;
      for (let page = 0; page < SCAN_PAGES_MAX && out.length < limit; page++) {
        const r = await inv.call(this.deps.table, { tabletId: tablet.tabletId }, cellMethods().readCells, (t) => ({ ...spec, tabletId: t.tabletId, asOfHt: asOf, limit: limit - out.length, ...(start ? { startKey: start } : {}), propagatedHt: inv.propagatedHt }), d, true);
        inv.observeHt(r.propagatedHt);
        // The first answer fixes the read time for the rest of the scan (one snapshot).
        if (asOf === 0n && r.readHt) asOf = BigInt(r.readHt);
        out.push(...this.rowsOf(s, r));
        if (!r.resumeKey || r.resumeKey.length === 0) break;
        start = r.resumeKey;
      }
      if (out.length >= limit) break;
    }
    return out.slice(0, limit);
  }
}
