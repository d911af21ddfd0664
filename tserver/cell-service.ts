/**
 * CellService (rpc/protos/cells.proto): HBase's cell model on one tablet (docs/cells.md).
 * WriteCells: puts at client timestamps (bounded: not beyond this leader's hybrid clock, not at or
 * below the history floor, where GC may already have decided what stays), cell and row TTLs, and
 * delete markers of one version, a column, a family (a column marker on each of its columns) or a
 * row — one Raft entry for every row of the call. ReadCells: gets or a scan with versions, a time
 * range, an as-of time and raw. Requests are untrusted: bad input is INVALID_ARGUMENT naming the
 * part, never a crash.
 */
import { DbError, ErrorCode } from '../common/errors';
import { FAMILY_VERSIONS_MAX } from '../common/column-families';
import type { HybridClock } from '../common/hybrid-clock';
import type { HybridTime } from '../common/hybrid-time';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { encodeRowDocKey, type CellEntry, type CellWrite, type DocKey, type RowOp } from '../docdb';
import type { CellMethods, CellPB, CellRowWritePB, CellWritePB, ReadCellsRequestPB, ReadCellsResponsePB, RpcServer, WriteCellsRequestPB, WriteCellsResponsePB } from '../rpc';
import { checkSchemaVersion, checkType, keyFromPb, keyToPb, valueFromPb, valueToPb, WRITE_OPS_MAX } from './tablet-service';
import type { TabletManager } from './tablet-manager';
import type { TabletMeta } from './tablet/tablet-meta';
import type { TabletPeer } from './tablet/tablet-peer';

/** Cells one WriteCells row carries at most. */
export const CELL_WRITES_PER_ROW_MAX = 1000;
/** Keys one ReadCells get names at most. */
export const CELL_READ_KEYS_MAX = 1000;

export interface CellServiceDeps {
  manager(): TabletManager;
  clock: HybridClock;
}

function invalid(msg: string, details: Record<string, unknown> = {}): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg, details);
}

const NUM_MAX = BigInt(Number.MAX_SAFE_INTEGER);

function ttlOf(v: bigint | undefined, what: string): number | undefined {
  const t = BigInt(v ?? 0n);
  if (t === 0n) return undefined;
  if (t < 0n || t > NUM_MAX) throw invalid(`${what} ${t} ms is out of range`, { part: 'TTL' });
  return Number(t);
}

/** Non-key columns of the schema by id, and the family each is in. */
function dataColumn(meta: TabletMeta, id: number | undefined): TabletMeta['schema']['columns'][number] {
  const c = meta.schema.columns.find((x) => x.id === (id ?? -1));
  if (!c) throw invalid(`unknown column id ${String(id)}`, { unknownColumn: true, part: 'COLUMN' });
  if (meta.schema.hashColumns.includes(c.name) || meta.schema.rangeColumns.includes(c.name)) throw invalid(`column ${c.name} is part of the primary key: cells are the other columns`, { part: 'COLUMN' });
  return c;
}

export class CellService {
  constructor(private readonly deps: CellServiceDeps) {}

  private tablet(id: string | undefined, schemaVersion: number | undefined, propagatedHt: bigint | undefined): TabletPeer {
    if (!id) throw invalid('tablet_id missing');
    const t = this.deps.manager().get(id);
    checkSchemaVersion(t, schemaVersion);
    if (t.meta.tableName === TRANSACTIONS_TABLE) throw new DbError(ErrorCode.NOT_SUPPORTED, `table ${TRANSACTIONS_TABLE} is a system table`, { table: TRANSACTIONS_TABLE });
    if (propagatedHt) this.deps.clock.update(BigInt(propagatedHt));
    return t;
  }

  /** A client timestamp: within (history floor, now]. */
  private timestamp(t: TabletPeer, v: bigint | undefined): HybridTime | undefined {
    const ht = BigInt(v ?? 0n);
    if (ht === 0n) return undefined;
    const now = this.deps.clock.now();
    if (ht > now) throw invalid(`timestamp ${ht} is beyond the hybrid clock (${now}): a cell cannot be written in the future`, { part: 'TIMESTAMP', nowHt: String(now) });
    const floor = t.historyFloorHt() ?? 0n;
    if (ht <= floor) throw invalid(`timestamp ${ht} is at or below the history cutoff ${floor}: retention there was already applied`, { part: 'TIMESTAMP', historyFloorHt: String(floor) });
    return ht;
  }

  private cellsOf(t: TabletPeer, row: CellRowWritePB): RowOp {
    const meta = t.meta;
    const key = keyFromPb(meta, row.key);
    const cells = row.cells ?? [];
    if (cells.length === 0) throw invalid('a row of WriteCells has no cells');
    if (cells.length > CELL_WRITES_PER_ROW_MAX) throw invalid(`a row carries ${cells.length} cell writes; at most ${CELL_WRITES_PER_ROW_MAX}`);
    const rowTtl = ttlOf(row.rowTtlMs, 'row TTL');
    const out: CellWrite[] = [];
    for (const c of cells) out.push(...this.cellWrites(t, meta, c, rowTtl));
    return { type: 'cells', key, cells: out };
  }

  private cellWrites(t: TabletPeer, meta: TabletMeta, c: CellWritePB, rowTtl: number | undefined): CellWrite[] {
    const ht = this.timestamp(t, c.ht);
    const at = ht === undefined ? {} : { ht };
    switch (c.type) {
      case 'PUT': {
        const col = dataColumn(meta, c.columnId);
        const value = valueFromPb(c.value);
        if (value === null) throw invalid(`PUT of ${col.name} needs a value (delete a cell with DELETE_VERSION or DELETE_COLUMN)`, { part: 'VALUE' });
        checkType(col, value, false);
        const ttl = ttlOf(c.ttlMs, 'cell TTL') ?? rowTtl;
        return [{ kind: 'put', columnId: col.id, value, ...at, ...(ttl !== undefined ? { ttlMs: ttl } : {}) }];
      }
      case 'DELETE_VERSION': {
        const col = dataColumn(meta, c.columnId);
        if (ht === undefined) throw invalid(`DELETE_VERSION of ${col.name} needs the version's timestamp`, { part: 'TIMESTAMP' });
        return [{ kind: 'deleteVersion', columnId: col.id, ht }];
      }
      case 'DELETE_COLUMN':
        return [{ kind: 'deleteColumn', columnId: dataColumn(meta, c.columnId).id, ...at }];
      case 'DELETE_FAMILY': {
        const fam = c.family ?? '';
        const known = (meta.schema.families ?? []).some((f) => f.name === fam) || (fam === 'default' && meta.schema.columns.some((x) => !x.family));
        if (!known) throw invalid(`table ${meta.tableName} has no family '${fam}'`, { part: 'FAMILY', family: fam });
        const keyCols = new Set([...meta.schema.hashColumns, ...meta.schema.rangeColumns]);
        return meta.schema.columns.filter((x) => (x.family ?? 'default') === fam && !keyCols.has(x.name)).map((x) => ({ kind: 'deleteColumn' as const, columnId: x.id, ...at }));
      }
      case 'DELETE_ROW':
        return [{ kind: 'deleteRow', ...at }];
      default:
        throw invalid(`unknown cell write '${String(c.type)}' (PUT | DELETE_VERSION | DELETE_COLUMN | DELETE_FAMILY | DELETE_ROW)`, { part: 'TYPE' });
    }
  }

  async writeCells(req: WriteCellsRequestPB): Promise<WriteCellsResponsePB> {
    const t = this.tablet(req.tabletId, req.schemaVersion, req.propagatedHt);
    const rows = req.rows ?? [];
    if (rows.length === 0) throw invalid('WriteCells has no rows');
    if (rows.length > WRITE_OPS_MAX) throw invalid(`WriteCells has ${rows.length} rows; at most ${WRITE_OPS_MAX}`);
    const ops = rows.map((r) => ({ kind: 'UPSERT' as const, op: this.cellsOf(t, r) }));
    const writeHt = await t.write({ ops });
    return { writeHt, propagatedHt: this.deps.clock.now() };
  }

  async readCells(req: ReadCellsRequestPB): Promise<ReadCellsResponsePB> {
    const t = this.tablet(req.tabletId, req.schemaVersion, req.propagatedHt);
    const meta = t.meta;
    const columns = (req.columnIds ?? []).map((id) => dataColumn(meta, id).id);
    const versions = req.versions ?? 0;
    if (versions < 0 || versions > FAMILY_VERSIONS_MAX) throw invalid(`versions ${versions} must be between 1 and ${FAMILY_VERSIONS_MAX}`, { part: 'VERSIONS' });
    const range = req.hasTimeRange ? { minHt: BigInt(req.minHt ?? 0n), maxHt: BigInt(req.maxHt ?? 0n) } : {};
    if (req.hasTimeRange && range.minHt! >= range.maxHt!) throw invalid(`time range [${range.minHt}, ${range.maxHt}) is empty or reversed`, { part: 'TIME_RANGE' });
    let asOf: HybridTime | undefined = BigInt(req.asOfHt ?? 0n) || undefined;
    if (asOf !== undefined && asOf > this.deps.clock.now()) throw invalid(`as-of time ${asOf} is in the future`, { part: 'AS_OF' });
    const spec = { ...range, ...(versions > 0 ? { versions } : {}), raw: req.raw === true, ...(columns.length > 0 ? { columns } : {}) };
    const keys = (req.keys ?? []).map((k) => keyFromPb(meta, k));
    if (keys.length > CELL_READ_KEYS_MAX) throw invalid(`ReadCells names ${keys.length} keys; at most ${CELL_READ_KEYS_MAX}`);
    const out: ReadCellsResponsePB = { rows: [] };
    const ranges: Array<{ startKey?: Uint8Array; endKey?: Uint8Array; limit?: number; key?: DocKey }> =
      keys.length > 0 ? keys.map((key) => ({ key })) : [{ ...(req.startKey?.length ? { startKey: req.startKey } : {}), ...(req.endKey?.length ? { endKey: req.endKey } : {}), ...(req.limit ? { limit: req.limit } : {}) }];
    for (const r of ranges) {
      const bounds = r.key ? rowBounds(r.key) : r;
      // Every key of one call reads at one time: the first read's.
      const res = await t.readCells({ ...spec, ...bounds, ...(asOf !== undefined ? { readHt: asOf } : {}) });
      asOf = res.readHt;
      out.readHt = res.readHt;
      for (const row of res.rows) out.rows!.push({ key: keyToPb(row.key), cells: row.cells.map(cellPb) });
      if (res.resumeKey) out.resumeKey = res.resumeKey;
    }
    out.propagatedHt = this.deps.clock.now();
    return out;
  }

  register(server: RpcServer, m: CellMethods): void {
    server.handle(m.writeCells, (r) => this.writeCells(r));
    server.handle(m.readCells, (r) => this.readCells(r));
  }
}

/** [the row's DocKey, the next DocKey): the row alone. */
function rowBounds(key: DocKey): { startKey: Uint8Array; endKey: Uint8Array; limit: number } {
  const k = encodeRowDocKey(key);
  return { startKey: k, endKey: Buffer.concat([k, Buffer.from([0xff])]), limit: 1 };
}

const CELL_TYPE: Record<CellEntry['kind'], string> = { put: 'PUT', deleteVersion: 'DELETE_VERSION', deleteColumn: 'DELETE_COLUMN', deleteRow: 'DELETE_ROW' };

function cellPb(c: CellEntry): CellPB {
  return {
    columnId: c.columnId < 0 ? 0 : c.columnId,
    type: CELL_TYPE[c.kind],
    ht: c.ht,
    ...(c.value !== undefined ? { value: valueToPb(c.value) } : {}),
    ...(c.ttlMs !== undefined ? { ttlMs: BigInt(c.ttlMs) } : {}),
  };
}
