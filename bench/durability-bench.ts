/**
 * The price of each durability level (docs/durability.md): one local cluster (1 master + 3 tservers,
 * RF 3), one table per level (ASYNC, FLUSH, FSYNC; 3 tablets each), and for each in turn C concurrent
 * writers (each one upsert at a time, fresh keys) for S seconds, in R interleaved rounds after an
 * untimed warm-up. Prints writes/s (median of the rounds, and each round) and latency percentiles side
 * by side, and writes bench/results/durability-latest.{json,md}.
 *
 *   node dist/bench/durability-bench.js [--concurrency 64] [--seconds 5] [--rounds 3] [--levels ASYNC,FLUSH,FSYNC]
 * (env BENCH_DUR_CONCURRENCY, BENCH_DUR_SECONDS, BENCH_DUR_ROUNDS, BENCH_DUR_LEVELS). Servers on 127.0.0.236-238.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TesseraClient } from '../client/tessera-client';
import type { TableDurability } from '../client/client-types';
import { makeDirs } from '../common/fs-dirs';
import { BenchCluster } from './bench-cluster';
import { sectionNumber, sectionString } from './section-args';

const HOST_BASE = 236;
const NO_ALIAS_PORT_SHIFT = 19_700;
const LEVELS: readonly TableDurability[] = ['ASYNC', 'FLUSH', 'FSYNC'];
const WRITE_TIMEOUT_MS = 30_000;
/** A warm-up before each timed run (connections, leaders, caches). */
const WARMUP_MS = 1_000;

interface LevelResult {
  level: TableDurability;
  round: number;
  concurrency: number;
  seconds: number;
  writes: number;
  failures: number;
  writesPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

async function runLevel(client: TesseraClient, level: TableDurability, round: number, concurrency: number, seconds: number): Promise<LevelResult> {
  const table = client.table(`bench_${level.toLowerCase()}`);
  const lat: number[] = [];
  let failures = 0;
  let measuring = false;
  let stop = false;
  let next = round * 100_000_000;
  const writer = async (): Promise<void> => {
    while (!stop) {
      const id = BigInt(next++);
      const t0 = performance.now();
      try {
        await table.upsert({ id, v: `value-${id}` }, { timeoutMs: WRITE_TIMEOUT_MS });
        if (measuring) lat.push(performance.now() - t0);
      } catch {
        if (measuring) failures++;
      }
    }
  };
  const all = Promise.all(Array.from({ length: concurrency }, () => writer()));
  await new Promise((r) => setTimeout(r, WARMUP_MS));
  measuring = true;
  const start = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  measuring = false;
  const elapsed = (performance.now() - start) / 1000;
  stop = true;
  await all;
  lat.sort((a, b) => a - b);
  const pct = (q: number): number => (lat.length === 0 ? 0 : Math.round(lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]! * 10) / 10);
  return { level, round, concurrency, seconds, writes: lat.length, failures, writesPerSec: Math.round(lat.length / elapsed), p50Ms: pct(0.5), p99Ms: pct(0.99) };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** One row per level: the median of its rounds (rounds interleave the levels, so load drift hits each alike). */
function render(rs: readonly LevelResult[], levels: readonly TableDurability[]): string {
  const lines = ['| level | concurrency | writes/s (median) | writes/s per round | p50 ms (median) | p99 ms (median) | failures |', '|---|---|---|---|---|---|---|'];
  for (const level of levels) {
    const mine = rs.filter((r) => r.level === level);
    const failures = mine.reduce((n, r) => n + r.failures, 0);
    lines.push(`| ${level} | ${mine[0]?.concurrency ?? 0} | ${Math.round(median(mine.map((r) => r.writesPerSec)))} | ${mine.map((r) => r.writesPerSec).join(' / ')} | ${median(mine.map((r) => r.p50Ms))} | ${median(mine.map((r) => r.p99Ms))} | ${failures} |`);
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const concurrency = Math.floor(sectionNumber(args, 'concurrency', 'BENCH_DUR_CONCURRENCY', 64, 1));
  const seconds = sectionNumber(args, 'seconds', 'BENCH_DUR_SECONDS', 5, 1);
  const rounds = Math.floor(sectionNumber(args, 'rounds', 'BENCH_DUR_ROUNDS', 3, 1));
  // The order of the runs (a cluster's first minute is slower: elections, leader balancing).
  const order = (sectionString(args, 'levels', 'BENCH_DUR_LEVELS') ?? LEVELS.join(',')).split(',').map((l) => l.trim().toUpperCase());
  const levels = order.filter((l): l is TableDurability => (LEVELS as readonly string[]).includes(l));
  if (levels.length !== order.length) throw new Error(`--levels: a comma list of ${LEVELS.join(', ')}`);
  const cluster = new BenchCluster();
  let client: TesseraClient | undefined;
  try {
    process.stdout.write(`durability: 1 master + 3 tservers (RF 3); ${concurrency} writers; ${rounds} rounds of ${seconds} s per level, after an untimed warm-up\n`);
    await cluster.start(3, HOST_BASE, [], { noAliasPortShift: NO_ALIAS_PORT_SHIFT });
    client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    for (const level of LEVELS) {
      await client.createTable({ name: `bench_${level.toLowerCase()}`, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3, durability: level });
    }
    // Untimed: the cluster's first seconds (elections, leader balancing, cold caches) belong to no level.
    await runLevel(client, levels[0]!, rounds, concurrency, seconds);
    const results: LevelResult[] = [];
    for (let round = 0; round < rounds; round++) {
      for (const level of levels) {
        const r = await runLevel(client, level, round, concurrency, seconds);
        process.stdout.write(`round ${round + 1} ${level}: ${r.writesPerSec} writes/s (p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, ${r.failures} failures)\n`);
        results.push(r);
      }
    }
    const md = render(results, levels);
    process.stdout.write('\n' + md);
    const outDir = path.resolve(__dirname, '../../bench/results');
    makeDirs(outDir, 'output directory');
    fs.writeFileSync(path.join(outDir, 'durability-latest.json'), JSON.stringify(results, null, 2));
    fs.writeFileSync(path.join(outDir, 'durability-latest.md'), md);
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.stop();
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`durability bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  });
}
