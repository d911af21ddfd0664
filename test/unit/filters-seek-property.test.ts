/**
 * Filters' seek hints are promises: whatever the scan skips by seeking (rows by a row hint, cells by
 * a column hint, the rest of the tablet by DONE) would have been rejected. Random filters over
 * random data (versions, deletes, intents of committed / pending / aborted transactions) must give
 * the same rows and cells with seek hints as a scan that reads every row and evaluates every cell,
 * on the in-memory engine and on RocksDB; paging through with small pages gives the same rows too
 * (for filters without row counting, which HBase also keeps per call).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { DocDb } from '../../docdb/doc-db';
import type { Row, ScanResult } from '../../docdb/doc-db-api';
import { compileFilter, type FilterAst } from '../../docdb/filters';
import { MemoryEngine } from '../../docdb/memory-engine';
import { RocksDbEngine } from '../../docdb/rocksdb-engine';
import { Statuses } from './docdb-helpers';
import { encodeRowDocKey } from '../../docdb/storage-keys';
import { applyWrites, docKey, filterArb, filterSchema, htOf, keyArb, writesArb, type Write } from './filters-arbitraries';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-filters-prop-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
let runs = 0;

function show(rows: readonly Row[]): string[] {
  return rows.map((r) => JSON.stringify({ k: r.key, c: [...r.columns].sort((a, b) => a[0] - b[0]) }, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)));
}

/** Scan bounds and a column projection, the same for both scans of a case. */
interface Shape {
  start?: Buffer;
  end?: Buffer;
  columns?: number[];
}

async function scanAll(db: DocDb, f: FilterAst, hashed: boolean, statuses: Statuses, seekHints: boolean, shape: Shape, limit?: number): Promise<ScanResult & { calls: number }> {
  const rows: Row[] = [];
  let startKey: Uint8Array | undefined = shape.start;
  let cellsRead = 0;
  let calls = 0;
  for (; calls < 1000; ) {
    calls++;
    const r = await db.scan({
      readHt: htOf(500),
      resolveStatus: statuses.resolve,
      filter: compileFilter(f, filterSchema(hashed)),
      filterSeekHints: seekHints,
      ...(limit ? { limit } : {}),
      ...(startKey ? { startKey } : {}),
      ...(shape.end ? { endKey: shape.end } : {}),
      ...(shape.columns ? { columns: shape.columns } : {}),
    });
    rows.push(...r.rows);
    cellsRead += r.cellsRead ?? 0;
    if (!r.resumeKey) break;
    startKey = r.resumeKey;
  }
  return { rows, cellsRead, calls };
}

function countsRows(f: FilterAst): boolean {
  if (f.type === 'page' || f.type === 'while') return true;
  if (f.type === 'list') return f.filters.some(countsRows);
  if (f.type === 'skip') return countsRows(f.filter);
  return false;
}

async function check(open: () => Promise<DocDb>, hashed: boolean, ws: Write[], filters: FilterAst[], shape: Shape): Promise<void> {
  const db = await open();
  try {
    const statuses = new Statuses();
    await applyWrites(db, ws, statuses);
    for (const f of filters) {
      const seek = await scanAll(db, f, hashed, statuses, true, shape);
      const naive = await scanAll(db, f, hashed, statuses, false, shape);
      expect(show(seek.rows), JSON.stringify(f)).toEqual(show(naive.rows));
      expect(seek.cellsRead!).toBeLessThanOrEqual(naive.cellsRead!);
      if (!countsRows(f)) {
        const paged = await scanAll(db, f, hashed, statuses, true, shape, 2);
        expect(show(paged.rows), `paged ${JSON.stringify(f)}`).toEqual(show(naive.rows));
      }
    }
  } finally {
    await db.close();
  }
}

const times = Array.from({ length: 40 }, (_, i) => 10 + i);
const boundArb = (hashed: boolean): fc.Arbitrary<Buffer | undefined> => fc.option(keyArb.map((k) => encodeRowDocKey(docKey(k, hashed))), { nil: undefined, freq: 3 });
const shapeArb = (hashed: boolean): fc.Arbitrary<Shape> =>
  fc.record({ start: boundArb(hashed), end: boundArb(hashed), columns: fc.option(fc.subarray([1, 2, 3, 4], { minLength: 1 }), { nil: undefined, freq: 2 }) }).map((s) =>
    Object.fromEntries(Object.entries(s).filter(([, v]) => v !== undefined)),
  );
const caseArb = fc.boolean().chain((hashed) => fc.tuple(fc.constant(hashed), writesArb(hashed), fc.array(filterArb(times), { minLength: 2, maxLength: 8 }), shapeArb(hashed)));

describe('filters: seek hints agree with reading every cell', () => {
  it('random filters on random data: same rows and cells with and without seek hints (in-memory engine)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, ([hashed, ws, filters, shape]) => check(() => DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() }), hashed, ws, filters, shape)),
      { numRuns: 300 },
    );
  });

  it('random filters on random data: same rows and cells with and without seek hints (RocksDB)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, ([hashed, ws, filters, shape]) => {
        const dir = path.join(root, `run${runs++}`);
        const open = async (): Promise<DocDb> => DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) });
        return check(open, hashed, ws, filters, shape);
      }),
      // Each run opens two RocksDB databases: slow on a loaded machine, hence fewer runs and a longer deadline.
      { numRuns: 15 },
    );
  }, 180_000);
});
