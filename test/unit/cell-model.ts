/**
 * Model-based test of HBase's cell model on DocDB (docs/cells.md): random timestamped puts (with cell
 * TTLs), deletes of a version / a column / a row, clock advances, history GC (whole, or incremental
 * passes of a row or two) and reads (get and scan;
 * versions, time ranges, as-of, raw, column projection) run against a DocDb and against a small
 * reference model that keeps every cell forever and answers from HBase's rules directly.
 *
 * What must agree:
 *  - every non-raw read at or above the history floor equals the model's (GC never changes a read
 *    it still serves), and a read below the floor is SNAPSHOT_TOO_OLD;
 *  - a raw read returns only cells the model has, and every one newer than the floor;
 *  - after GC, no column keeps more than VERSIONS puts at or before the cutoff, and (deleted cells not
 *    kept) no put at or before it that a stored marker masks: retention really happens.
 */
import * as fc from 'fast-check';
import { expect } from 'vitest';
import { htFrom, type HybridTime } from '../../common/hybrid-time';
import { DbError } from '../../common/errors';
import type { DocDb } from '../../docdb/doc-db';
import type { CellEntry, CellRules } from '../../docdb/cell-versions';
import type { CellWrite, DocKey } from '../../docdb/doc-db-api';
import { encodeRowDocKey } from '../../docdb/storage-keys';

const S = (s: number): HybridTime => htFrom(BigInt(s) * 1_000_000n);
const ROWS = 3;
const COLUMNS = [1, 2];
const rowKey = (r: number): DocKey => ({ hash: 100 + r, hashed: [BigInt(r)], range: [] });

type Kind = CellEntry['kind'];
interface MCell {
  kind: Kind;
  ts: number;
  value?: bigint;
  ttlMs?: number;
}

/** The reference: every cell ever written, per row and column (-1: row tombstones). */
class Model {
  readonly cells = new Map<string, MCell[]>();
  floor = 0;
  list(row: number, col: number): MCell[] {
    const k = `${row}/${col}`;
    let l = this.cells.get(k);
    if (!l) this.cells.set(k, (l = []));
    return l;
  }
  /** Same coordinates and kind replace (a put at one timestamp, a marker at one timestamp). */
  write(row: number, col: number, c: MCell): void {
    const l = this.list(row, col);
    const i = l.findIndex((x) => x.ts === c.ts && x.kind === c.kind);
    if (i >= 0) l[i] = c;
    else l.push(c);
  }
}

export interface ReadSpec {
  readS: number;
  minS?: number;
  maxS?: number;
  versions?: number;
  raw: boolean;
  columns?: number[];
}

function expired(p: MCell, rules: CellRules, atS: number): boolean {
  const ttls = [p.ttlMs, rules.ttlSec > 0 ? rules.ttlSec * 1000 : undefined].filter((x): x is number => x !== undefined);
  return ttls.length > 0 && atS * 1000 >= p.ts * 1000 + Math.min(...ttls);
}

/** HBase's answer for one column (newest first), written from the rules, not from the implementation. */
function modelColumn(m: Model, row: number, col: number, rules: CellRules, q: ReadSpec): MCell[] {
  const exists = [...m.list(row, col), ...m.list(row, -1)].filter((c) => c.ts <= q.readS);
  const inRange = (c: MCell): boolean => (q.minS === undefined || c.ts >= q.minS) && (q.maxS === undefined || c.ts < q.maxS);
  const byAge = (a: MCell, b: MCell): number => b.ts - a.ts || rank(b) - rank(a);
  if (q.raw) {
    const own = m.list(row, col).filter((c) => c.ts <= q.readS && inRange(c)).sort(byAge);
    return q.versions === undefined ? own : own.slice(0, q.versions);
  }
  const markers = exists.filter((c) => c.kind !== 'put');
  const maskedBy = (p: MCell, ms: MCell[]): boolean => ms.some((mk) => (mk.kind === 'deleteVersion' ? mk.ts === p.ts : p.ts <= mk.ts));
  const keep = rules.keepDeletedCells !== 'false';
  const puts = exists.filter((c) => c.kind === 'put').sort(byAge);
  const retained = puts.filter((p) => keep || !maskedBy(p, markers)).slice(0, rules.versions);
  const effective = keep ? markers.filter((mk) => q.maxS === undefined || mk.ts < q.maxS) : markers;
  const out: MCell[] = [];
  retained.forEach((p, i) => {
    if (i >= rules.minVersions && expired(p, rules, q.readS)) return;
    if (!inRange(p) || maskedBy(p, effective)) return;
    out.push(p);
  });
  return out.slice(0, q.versions ?? 1);
}

/** Order of kinds at one timestamp (their write ids): put < column/row tombstone < version tombstone. */
function rank(c: MCell): number {
  return c.kind === 'put' ? 0 : c.kind === 'deleteVersion' ? 2 : 1;
}

const show = (c: { kind: Kind; ts: number; value?: bigint }): string => `${c.kind}@${c.ts}${c.value !== undefined ? `=${c.value}` : ''}`;
const tsOf = (ht: HybridTime): number => Number(ht >> 12n) / 1_000_000;

type Action =
  | { t: 'put'; row: number; col: number; back: number; value: number; ttlMs?: number }
  | { t: 'delVersion'; row: number; col: number; back: number }
  | { t: 'delColumn'; row: number; col: number; back: number }
  | { t: 'delRow'; row: number; back: number }
  | { t: 'advance'; by: number }
  | { t: 'gc'; lag: number; chunkRows?: number }
  | { t: 'read'; row: number | 'scan'; back: number; range?: [number, number]; versions?: number; raw: boolean; cols?: number[] };

const rowArb = fc.integer({ min: 0, max: ROWS - 1 });
const colArb = fc.constantFrom(...COLUMNS);
const backArb = fc.integer({ min: 0, max: 4 });
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), row: rowArb, col: colArb, back: backArb, value: fc.integer({ min: 0, max: 99 }), ttlMs: fc.option(fc.constantFrom(1000, 2500, 6000), { nil: undefined }) }, { requiredKeys: ['t', 'row', 'col', 'back', 'value'] }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delVersion' as const), row: rowArb, col: colArb, back: backArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delColumn' as const), row: rowArb, col: colArb, back: backArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('delRow' as const), row: rowArb, back: backArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('advance' as const), by: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('gc' as const), lag: fc.integer({ min: 0, max: 6 }), chunkRows: fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined }) }, { requiredKeys: ['t', 'lag'] }) },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        t: fc.constant('read' as const),
        row: fc.oneof(rowArb, fc.constant('scan' as const)),
        back: fc.integer({ min: 0, max: 8 }),
        range: fc.option(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 8 })).map(([a, w]): [number, number] => [a, a + w]), { nil: undefined }),
        versions: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        raw: fc.boolean(),
        cols: fc.option(fc.subarray(COLUMNS, { minLength: 1 }), { nil: undefined }),
      },
      { requiredKeys: ['t', 'row', 'back', 'raw'] },
    ),
  },
);

const rulesArb: fc.Arbitrary<CellRules> = fc
  .record({ versions: fc.integer({ min: 1, max: 3 }), minV: fc.integer({ min: 0, max: 3 }), ttlSec: fc.constantFrom(0, 0, 2, 5), keepDeletedCells: fc.constantFrom('false' as const, 'true' as const, 'ttl' as const) })
  .map((r) => ({ versions: r.versions, minVersions: Math.min(r.minV, r.versions), ttlSec: r.ttlSec, keepDeletedCells: r.keepDeletedCells }));

async function apply(db: DocDb, m: Model, a: Action, st: { now: number; op: number }, rules: Map<number, CellRules>): Promise<void> {
  const write = async (row: number, cell: CellWrite): Promise<void> => {
    st.op++;
    await db.writeRegular([{ type: 'cells', key: rowKey(row), cells: [cell] }], S(st.now), { term: 1, index: st.op });
  };
  switch (a.t) {
    case 'advance':
      st.now += a.by;
      return;
    case 'gc': {
      const cutoff = Math.max(m.floor, st.now - a.lag);
      // Incremental GC (chunkRows): passes over a few rows each, resumed until the end.
      let start: Uint8Array | undefined;
      for (let pass = 0; pass <= ROWS; pass++) {
        const r = await db.gc(S(cutoff), { ...(a.chunkRows ? { rowsMax: a.chunkRows } : {}), ...(start ? { startKey: start } : {}) });
        expect(r.cutoffHt).toBe(S(cutoff));
        start = r.resumeKey;
        if (!start) break;
      }
      expect(start, 'incremental GC ended').toBeUndefined();
      m.floor = cutoff;
      await checkRetention(db, m, rules, cutoff);
      return;
    }
    case 'read':
      return checkRead(db, m, a, st.now, rules);
  }
  const ts = st.now - a.back;
  // A write at or below the history floor is refused by the tablet (cell-service); not generated here.
  if (ts <= m.floor) return;
  if (a.t === 'put') {
    await write(a.row, { kind: 'put', columnId: a.col, value: BigInt(a.value), ht: S(ts), ...(a.ttlMs !== undefined ? { ttlMs: a.ttlMs } : {}) });
    m.write(a.row, a.col, { kind: 'put', ts, value: BigInt(a.value), ...(a.ttlMs !== undefined ? { ttlMs: a.ttlMs } : {}) });
  } else if (a.t === 'delVersion') {
    await write(a.row, { kind: 'deleteVersion', columnId: a.col, ht: S(ts) });
    m.write(a.row, a.col, { kind: 'deleteVersion', ts });
  } else if (a.t === 'delColumn') {
    await write(a.row, { kind: 'deleteColumn', columnId: a.col, ht: S(ts) });
    m.write(a.row, a.col, { kind: 'deleteColumn', ts });
  } else {
    await write(a.row, { kind: 'deleteRow', ht: S(ts) });
    m.write(a.row, -1, { kind: 'deleteRow', ts });
  }
}

async function checkRead(db: DocDb, m: Model, a: Extract<Action, { t: 'read' }>, now: number, rules: Map<number, CellRules>): Promise<void> {
  const readS = now - a.back;
  const q: ReadSpec = { readS, raw: a.raw, ...(a.range ? { minS: a.range[0], maxS: a.range[1] } : {}), ...(a.versions ? { versions: a.versions } : {}), ...(a.cols ? { columns: a.cols } : {}) };
  const rows = a.row === 'scan' ? [...Array(ROWS).keys()] : [a.row];
  const opts = {
    readHt: S(readS),
    ...(q.minS !== undefined ? { minHt: S(q.minS), maxHt: S(q.maxS!) } : {}),
    ...(q.versions !== undefined ? { versions: q.versions } : {}),
    raw: q.raw,
    ...(q.columns ? { columns: q.columns } : {}),
    ...(a.row === 'scan' ? {} : { startKey: encodeRowDocKey(rowKey(a.row)), endKey: Buffer.concat([encodeRowDocKey(rowKey(a.row)), Buffer.from([0xff])]) }),
  };
  let real: Awaited<ReturnType<DocDb['readCells']>>;
  try {
    real = await db.readCells(opts);
  } catch (e) {
    expect(e instanceof DbError && e.code === 'SNAPSHOT_TOO_OLD' && readS < m.floor, `read at ${readS} (floor ${m.floor}): ${String(e)}`).toBe(true);
    return;
  }
  expect(readS >= m.floor, `read at ${readS} below the floor ${m.floor} was served`).toBe(true);
  for (const row of rows) {
    const got = real.rows.find((r) => r.key.hashed[0] === BigInt(row))?.cells ?? [];
    for (const col of q.columns ?? COLUMNS) {
      const mine = got.filter((c) => c.columnId === col).map((c) => ({ kind: c.kind, ts: tsOf(c.ht), ...(c.value !== undefined ? { value: c.value as bigint } : {}) }));
      const want = modelColumn(m, row, col, rules.get(col)!, q);
      const ctx = `row ${row} col ${col} rules ${JSON.stringify(rules.get(col))} read ${JSON.stringify(q)} floor ${m.floor}`;
      if (!q.raw) {
        expect(mine.map(show), ctx).toEqual(want.map(show));
        continue;
      }
      // Raw: what GC left — a subset of the model's, holding everything above the floor.
      const wantSet = new Set(modelColumn(m, row, col, rules.get(col)!, { ...q, versions: undefined }).map(show));
      for (const c of mine) expect(wantSet.has(show(c)), `${ctx}: raw ${show(c)} is not in the model`).toBe(true);
      if (q.versions === undefined) {
        const mineSet = new Set(mine.map(show));
        for (const c of want) if (c.ts > m.floor) expect(mineSet.has(show(c)), `${ctx}: raw misses ${show(c)}`).toBe(true);
      }
    }
    if (q.raw) {
      const rowMarks = got.filter((c) => c.columnId === -1).map((c) => `${c.kind}@${tsOf(c.ht)}`);
      const model = new Set(m.list(row, -1).map((c) => `${c.kind}@${c.ts}`));
      for (const r of rowMarks) expect(model.has(r), `row ${row}: raw row marker ${r} not in the model`).toBe(true);
    }
  }
}

/** After GC at `cutoff`: at most VERSIONS puts at or before it per column, none masked when deleted cells are not kept. */
async function checkRetention(db: DocDb, m: Model, rules: Map<number, CellRules>, cutoff: number): Promise<void> {
  const all = await db.readCells({ readHt: S(cutoff + 1000), raw: true });
  for (const row of all.rows) {
    const rowMarks = row.cells.filter((c) => c.columnId === -1);
    for (const col of COLUMNS) {
      const r = rules.get(col)!;
      const own = row.cells.filter((c) => c.columnId === col);
      const old = own.filter((c) => c.kind === 'put' && c.ht <= S(cutoff));
      expect(old.length, `col ${col} ${JSON.stringify(r)}: ${old.length} puts at or before the cutoff ${cutoff} stay`).toBeLessThanOrEqual(r.versions);
      if (r.keepDeletedCells !== 'false') continue;
      for (const p of old) {
        const masked = [...own, ...rowMarks].some((mk) => (mk.kind === 'deleteVersion' ? mk.ht === p.ht : mk.kind !== 'put' && p.ht <= mk.ht) && mk.ht <= S(cutoff));
        expect(masked, `col ${col}: a deleted put at ${tsOf(p.ht)} survived GC at ${cutoff} (floor ${m.floor})`).toBe(false);
      }
    }
  }
}

/** Run `runs` random histories against fresh databases from `open`. */
export async function runCellModel(open: () => Promise<DocDb>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(rulesArb, rulesArb, fc.array(actionArb, { minLength: 5, maxLength: 45 }), async (r1, r2, actions) => {
      const db = await open();
      try {
        const rules = new Map<number, CellRules>([[1, r1], [2, r2]]);
        db.setCellFamilies(rules);
        const m = new Model();
        const st = { now: 10, op: 0 };
        for (const a of actions) await apply(db, m, a, st, rules);
        // Every history ends with a GC at the newest time and a full read: retention applied.
        await apply(db, m, { t: 'gc', lag: 0 }, st, rules);
        for (const raw of [false, true]) await apply(db, m, { t: 'read', row: 'scan', back: 0, raw, versions: 4 }, st, rules);
      } finally {
        await db.close();
      }
    }),
    { numRuns: runs },
  );
}
