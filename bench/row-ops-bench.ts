/**
 * Row operations against plain upserts on a throwaway local cluster (1 master + 3 tservers, RF 3;
 * docs/rows.md): increments vs single-row upserts at c64 (upserts with the client's default per-tablet
 * coalescing, and without it), mutateRows of 10 rows of one tablet vs the same 10 rows as 10 upserts
 * one after the other, and lock + write + unlock cycles. Prints a table of figures; asserts nothing.
 *
 *   node dist/bench/row-ops-bench.js [--host_base 150] [--seconds 8] [--rounds 2]
 */
import { TesseraClient } from '../client/tessera-client';
import { partitionHash } from '../common/partition-hash';
import { BenchCluster } from './bench-cluster';

interface Args {
  hostBase: number;
  seconds: number;
  rounds: number;
}

function parseArgs(argv: string[]): Args {
  const get = (name: string, dflt: number): number => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0) return dflt;
    const v = Number(argv[i + 1]);
    if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
    return v;
  };
  return { hostBase: get('host_base', 150), seconds: get('seconds', 8), rounds: get('rounds', 2) };
}

/** `workers` loops of `op` for `ms`; the ops done per second (each op counts `weight` units). */
async function measure(workers: number, ms: number, op: (w: number, i: number) => Promise<unknown>, weight = 1): Promise<number> {
  const end = performance.now() + ms;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        await op(w, i);
        done += weight;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

const KEYS = 100_000;

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const cluster = new BenchCluster();
  const clients: TesseraClient[] = [];
  try {
    process.stdout.write(`row-ops bench: 1 master + 3 tservers (RF 3) on 127.0.0.${a.hostBase}+; ${a.rounds} round(s) of ${a.seconds} s per figure\n`);
    await cluster.start(3, a.hostBase);
    const c = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    const plain = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000, batchWrites: false });
    clients.push(c, plain);
    await c.createTable({ name: 'bench_rows', columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    const loc = await c.tableLocations('bench_rows');
    // Ids grouped by tablet: a mutateRows call takes 10 ids of one tablet.
    const first = loc.tablets[0]!;
    const sameTablet = Array.from({ length: 20_000 }, (_, i) => BigInt(i)).filter((id) => {
      const h = partitionHash([id]);
      return h >= first.start && h < first.end;
    });
    const ms = a.seconds * 1000;
    const t = c.table('bench_rows');
    const tp = plain.table('bench_rows');
    const key = (w: number, i: number): bigint => BigInt((w * 7919 + i * 104_729) % KEYS);
    const figures = new Map<string, number[]>();
    const add = (name: string, v: number): void => {
      figures.set(name, [...(figures.get(name) ?? []), v]);
      process.stdout.write(`  ${name}: ${Math.round(v)}\n`);
    };
    await measure(16, 2000, (w, i) => t.upsert({ id: key(w, i), v: 'warm' })); // warm-up
    for (let r = 0; r < a.rounds; r++) {
      add('upsert c64 (ops/s, client coalescing on: default)', await measure(64, ms, (w, i) => t.upsert({ id: key(w, i), v: 'x' })));
      add('upsert c64 (ops/s, coalescing off)', await measure(64, ms, (w, i) => tp.upsert({ id: key(w, i), v: 'x' })));
      add('increment c64 (ops/s)', await measure(64, ms, (w, i) => t.increment({ id: key(w, i) }, { n: 1 })));
      const rows10 = (w: number, i: number): bigint[] => Array.from({ length: 10 }, (_, k) => sameTablet[(w * 977 + i * 10 + k) % sameTablet.length]!);
      add('10 upserts one after the other c16 (rows/s)', await measure(16, ms, async (w, i) => {
        for (const id of rows10(w, i)) await t.upsert({ id, v: 'y' });
      }, 10));
      add('mutateRows(10 rows) c16 (rows/s)', await measure(16, ms, (w, i) => t.mutateRows(rows10(w, i).map((id) => ({ key: { id }, put: { v: 'y' } }))), 10));
      add('lock + increment + unlock c16 (cycles/s)', await measure(16, ms, async (w, i) => {
        const k = { id: BigInt(50_000 + w * 1000 + (i % 1000)) };
        const lock = await t.lockRow(k, { leaseMs: 10_000 });
        await t.increment(k, { n: 1 }, { lock });
        await t.unlockRow(lock);
      }));
    }
    process.stdout.write('\n| figure | rounds | mean |\n|---|---|---|\n');
    for (const [name, vs] of figures) process.stdout.write(`| ${name} | ${vs.map((v) => Math.round(v)).join(', ')} | ${Math.round(vs.reduce((x, y) => x + y, 0) / vs.length)} |\n`);
  } finally {
    for (const x of clients) await x.close().catch(() => undefined);
    await cluster.stop();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
