/**
 * `npm run bench` (section "cluster"): a local RF 3 cluster (1 master + 3 tservers, fsync on: the
 * default durable_wal_write=true) and the client library:
 *   - single-row upserts per second with p50/p99 latency at concurrency 1, 16 and 64
 *   - point reads per second (and p50/p99) at concurrency 16
 *   - RSS of each tserver afterwards.
 * A benchmark prints figures; nothing here asserts on speed. BENCH_SECONDS sets each phase's length.
 */
import * as hdr from 'hdr-histogram-js';
import { TesseraClient } from '../client/tessera-client';
import { BenchCluster } from './bench-cluster';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const PRELOAD_ROWS = 20_000;

interface PhaseResult {
  name: string;
  concurrency: number;
  ops: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

async function phase(name: string, concurrency: number, op: (i: number) => Promise<void>): Promise<PhaseResult> {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  let next = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const i = next++;
      const t0 = performance.now();
      try {
        await op(i);
        h.recordValue(Math.max(1, Math.round((performance.now() - t0) * 1000)));
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const secs = (performance.now() - start) / 1000;
  const r = { name, concurrency, ops: h.totalCount, opsPerSec: Math.round(h.totalCount / secs), p50Ms: h.getValueAtPercentile(50) / 1000, p99Ms: h.getValueAtPercentile(99) / 1000, errors };
  h.destroy();
  return r;
}

export async function runClusterBench(): Promise<void> {
  const cluster = new BenchCluster();
  let client: TesseraClient | undefined;
  try {
    process.stdout.write(`cluster bench: starting 1 master + 3 tservers (RF 3, fsync on), ${SECONDS} s per phase\n`);
    await cluster.start(3, 91);
    client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    await client.createTable({ name: 'bench', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
    const t = client.table('bench');
    const value = 'x'.repeat(100);
    const results: PhaseResult[] = [];
    let base = 0;
    for (const c of [1, 16, 64]) {
      const offset = base;
      results.push(await phase('upsert (1 row)', c, (i) => t.upsert({ id: BigInt(offset + i), v: value })));
      base += 10_000_000;
    }
    const rows = Array.from({ length: PRELOAD_ROWS }, (_, i) => ({ id: BigInt(i), v: value }));
    const t0 = performance.now();
    await t.upsertMany(rows, { concurrency: 8 });
    const loadSecs = (performance.now() - t0) / 1000;
    results.push(await phase('point read', 16, async (i) => {
      const r = await t.get({ id: BigInt((i * 7919) % PRELOAD_ROWS) });
      if (!r) throw new Error('missing row');
    }));
    process.stdout.write('\nworkload          concurrency   ops/s    p50 ms   p99 ms   errors\n');
    for (const r of results) {
      process.stdout.write(`${r.name.padEnd(18)}${String(r.concurrency).padStart(11)}${String(r.opsPerSec).padStart(9)}${r.p50Ms.toFixed(2).padStart(9)}${r.p99Ms.toFixed(2).padStart(9)}${String(r.errors).padStart(9)}\n`);
    }
    process.stdout.write(`batch load (upsertMany, ${PRELOAD_ROWS} rows): ${Math.round(PRELOAD_ROWS / loadSecs)} rows/s\n`);
    for (const s of cluster.servers.filter((x) => x.role === 'tserver')) {
      const rss = BenchCluster.rssBytes(s.child.pid);
      process.stdout.write(`tserver ${s.rpcAddress} RSS ${rss === undefined ? 'n/a' : `${(rss / (1024 * 1024)).toFixed(1)} MiB`}\n`);
    }
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.stop();
  }
}
