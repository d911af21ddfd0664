/**
 * Point reads of rows the row cache does not hold, on one DocDB on RocksDB in this process
 * (docs/rows.md, "A miss reads on a reused iterator"): CPU per read with reused iterators
 * (docdb_point_read_iterators, the default) and with a fresh iterator per read, alternated round by
 * round in the same process, for rows present and absent. The row cache is cleared before each pass
 * so every read misses it. CPU is this process's (all threads: RocksDB's pool included). Prints a
 * table; asserts nothing.
 *
 *   node dist/bench/point-reads-bench.js [--rows 50000] [--reads 8000] [--rounds 3] [--read_ahead 256,96]
 *
 * --read_ahead runs the reused-iterator figures with each of these docdb_point_read_ahead_bytes
 * values (alternated with the rest); rows of 4 versions (each row written 4 times) show what a
 * smaller read-ahead costs a row that needs more native reads.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Flags } from '../common/flags';
import { htFrom } from '../common/hybrid-time';
import { DocDb, DOCDB_POINT_READ_AHEAD_BYTES, DOCDB_POINT_READ_ITERATORS, RocksDbEngine, type DocKey } from '../docdb';

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i < 0 ? dflt : Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(v) || v <= 0) throw new Error(`--${name} needs a positive integer`);
  return v;
}

/** --read_ahead: comma-separated byte counts (default: the flag's default). */
function readAheadList(): number[] {
  const i = process.argv.indexOf('--read_ahead');
  if (i < 0) return [DOCDB_POINT_READ_AHEAD_BYTES.default];
  const xs = (process.argv[i + 1] ?? '').split(',').map(Number);
  if (xs.length === 0 || xs.some((x) => !Number.isSafeInteger(x) || x < 0)) throw new Error('--read_ahead needs byte counts, e.g. 256,96');
  return xs;
}

const key = (id: number): DocKey => ({ hash: (id * 7919) & 0xffff, hashed: [BigInt(id)], range: [] });
const READERS = 16;

/** `reads` point reads of rows `id(j)` by READERS loops, row cache cleared first; CPU µs per read. */
async function pass(db: DocDb, reads: number, id: (j: number) => number): Promise<number> {
  db.rowCache.clear();
  const readHt = htFrom(10n ** 15n, 0);
  const resolveStatus = () => Promise.resolve({ status: 'PENDING' as const });
  const c0 = process.cpuUsage();
  let next = 0;
  await Promise.all(
    Array.from({ length: READERS }, async () => {
      for (let j = next++; j < reads; j = next++) await db.getRow(key(id(j)), { readHt, resolveStatus });
    }),
  );
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / reads;
}

async function main(): Promise<void> {
  const rows = arg('rows', 50_000);
  const reads = arg('reads', 8000);
  const rounds = arg('rounds', 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-point-reads-'));
  const flags = new Flags();
  const db = await DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'r')), intents: await RocksDbEngine.open(path.join(dir, 'i')), flags });
  try {
    for (let s = 0, index = 1; s < rows; s += 500, index++) {
      const ops = Array.from({ length: Math.min(500, rows - s) }, (_, i) => ({ type: 'upsert' as const, key: key(s + i), columns: [{ columnId: 1, value: BigInt(s + i) }, { columnId: 2, value: 'x'.repeat(20) }] }));
      await db.writeRegular(ops, htFrom(BigInt(1000 + index) * 1000n, 0), { term: 1, index });
    }
    // Rows of 4 versions: ids from 2 × rows, a fifth as many, each written 4 times.
    const multi = Math.max(1, Math.floor(rows / 5));
    for (let v = 0, index = 100_000; v < 4; v++) {
      for (let s = 0; s < multi; s += 500, index++) {
        const ops = Array.from({ length: Math.min(500, multi - s) }, (_, i) => ({ type: 'upsert' as const, key: key(2 * rows + s + i), columns: [{ columnId: 1, value: BigInt(v) }, { columnId: 2, value: 'x'.repeat(20) }] }));
        await db.writeRegular(ops, htFrom(BigInt(1000 + index) * 1000n, 0), { term: 1, index });
      }
    }
    const readAheads = readAheadList();
    process.stdout.write(`point reads: ${rows} rows, ${reads} reads by ${READERS} loops per pass, ${rounds} round(s); reused iterators with read-ahead ${readAheads.join(', ')} bytes\n`);
    const out = new Map<string, number[]>();
    const add = (name: string, us: number): void => void out.set(name, [...(out.get(name) ?? []), us]);
    const sides = [...readAheads.map((ra) => ({ reuse: true, ra })), { reuse: false, ra: 0 }];
    for (let r = 0; r < rounds; r++) {
      for (const { reuse, ra } of r % 2 === 0 ? sides : [...sides].reverse()) {
        flags.set(DOCDB_POINT_READ_ITERATORS, reuse);
        flags.set(DOCDB_POINT_READ_AHEAD_BYTES, ra);
        const side = reuse ? `reused iterators, read-ahead ${ra}` : 'fresh iterator per read';
        await pass(db, reads, (j) => (j * 7919) % rows); // warm: JIT, block cache, iterators of this read-ahead
        add(`present rows, ${side}`, await pass(db, reads, (j) => (j * 7919 + 13) % rows));
        add(`absent rows, ${side}`, await pass(db, reads, (j) => rows + ((j * 7919) % rows)));
        add(`rows of 4 versions, ${side}`, await pass(db, reads, (j) => 2 * rows + ((j * 7919) % multi)));
      }
    }
    process.stdout.write('\n| figure | CPU µs per read, per round |\n|---|---|\n');
    for (const [name, xs] of out) process.stdout.write(`| ${name} | ${xs.map((x) => x.toFixed(1)).join(', ')} |\n`);
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
