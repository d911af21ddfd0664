/**
 * `npm run bench:docdb -- --only=cells`: the cost of HBase-style versioned reads (docs/cells.md) on
 * RocksDB in a temp dir: rows with five versions of one cell (family VERSIONS=5), read one by one as
 * a get of 1 version, then of 3 versions, then raw. Prints gets per second and the ratio (the issue's
 * target: a get of 3 versions costs at most 1.5× a get of 1).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { htFrom } from '../common/hybrid-time';
import { DocDb, encodeRowDocKey, RocksDbEngine, type CellReadOptions, type DocKey, type RowOp } from '../docdb';

const VERSIONS_WRITTEN = 5;
const BATCH_ROWS = 500;

export async function runCellsBench(rows: number, print: (s: string) => void): Promise<Record<string, number>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-cells-bench-'));
  const db = await DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) });
  try {
    db.setCellFamilies(new Map([[2, { versions: VERSIONS_WRITTEN, minVersions: 0, ttlSec: 0, keepDeletedCells: 'false' }]]));
    const key = (i: number): DocKey => ({ hash: (i * 7919) & 0xffff, hashed: [BigInt(i)], range: [] });
    const base = 1_700_000_000_000_000n;
    let index = 0;
    for (let from = 0; from < rows; from += BATCH_ROWS) {
      const ops: RowOp[] = [];
      for (let i = from; i < Math.min(rows, from + BATCH_ROWS); i++) {
        ops.push({ type: 'cells', key: key(i), cells: Array.from({ length: VERSIONS_WRITTEN }, (_, v) => ({ kind: 'put' as const, columnId: 2, value: `row ${i} version ${v}`, ht: htFrom(base + BigInt(v) * 1000n) })) });
      }
      await db.writeRegular(ops, htFrom(base + 10_000_000n), { term: 1, index: ++index });
    }
    const readHt = htFrom(base + 20_000_000n);
    const timeGets = async (o: Omit<CellReadOptions, 'readHt'>): Promise<{ perSec: number; cells: number }> => {
      let cells = 0;
      const t0 = performance.now();
      for (let i = 0; i < rows; i++) {
        const k = encodeRowDocKey(key(i));
        const r = await db.readCells({ ...o, readHt, startKey: k, endKey: Buffer.concat([k, Buffer.from([0xff])]), limit: 1 });
        cells += r.rows[0]?.cells.length ?? 0;
      }
      return { perSec: rows / ((performance.now() - t0) / 1000), cells };
    };
    await timeGets({ versions: 1 }); // warm the block cache
    const one = await timeGets({ versions: 1 });
    const three = await timeGets({ versions: 3 });
    const raw = await timeGets({ raw: true });
    print(`${rows} rows × ${VERSIONS_WRITTEN} versions on RocksDB`);
    print(`get 1 version : ${one.perSec.toFixed(0)} gets/s (${one.cells} cells)`);
    print(`get 3 versions: ${three.perSec.toFixed(0)} gets/s (${three.cells} cells)`);
    print(`get raw       : ${raw.perSec.toFixed(0)} gets/s (${raw.cells} cells)`);
    const ratio = one.perSec / three.perSec;
    print(`cost of 3 versions / 1 version: ${ratio.toFixed(2)}× (target ≤ 1.5×)`);
    return { rows, get1PerSec: Math.round(one.perSec), get3PerSec: Math.round(three.perSec), rawPerSec: Math.round(raw.perSec), costRatio3v1: Number(ratio.toFixed(2)) };
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
