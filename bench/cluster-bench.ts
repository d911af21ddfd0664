/**
 * `npm run bench` (section "cluster"): a local RF 3 cluster (1 master + 3 tservers, fsync on: the
 * default durable_wal_write=true) and the client library:
 *   - single-row upserts per second with p50/p99 latency at concurrency 1, 16 and 64
 *   - point reads per second (and p50/p99) at concurrency 16
 *   - 2-row transactions across 2 tablets per second at concurrency 16 and 64: whole-transaction and
 *     commit() p50/p99, and the apply lag (commit → intents applied on every replica, from the
 *     tservers' /api/v1/txn-applies; bench/apply-lag.ts) p50/p99/max
 *   - RSS of each tserver afterwards.
 * A benchmark prints figures; nothing here asserts on speed. BENCH_SECONDS sets each phase's length.
 */
import * as hdr from 'hdr-histogram-js';
import { TesseraClient } from '../client/tessera-client';
import { measureApplyLag, type ApplyLagFigures } from './apply-lag';
import { BenchCluster } from './bench-cluster';
import { twoTabletKeys, waitForTransactions } from './vs-loadgen';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 5);
const PRELOAD_ROWS = 20_000;
const TXN_PROBE_TIMEOUT_MS = 15_000;
const TXN_PROBE_RETRY_MS = 500;

interface PhaseResult {
  name: string;
  concurrency: number;
  ops: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  /** Transactions: the commit() call alone. */
  commitP50Ms?: number;
  commitP99Ms?: number;
  startMicros: number;
  endMicros: number;
}

/** op resolves to the commit() call's duration in microseconds when it is a transaction. */
async function phase(name: string, concurrency: number, op: (i: number) => Promise<number | void>): Promise<PhaseResult> {
  const h = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  const ch = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
  const startMicros = Date.now() * 1000;
  let next = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + SECONDS * 1000;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const i = next++;
      const t0 = performance.now();
      try {
        const commitUs = await op(i);
        h.recordValue(Math.min(60_000_000, Math.max(1, Math.round((performance.now() - t0) * 1000))));
        if (typeof commitUs === 'number') ch.recordValue(Math.min(60_000_000, Math.max(1, Math.round(commitUs))));
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const secs = (performance.now() - start) / 1000;
  const r: PhaseResult = {
    name,
    concurrency,
    ops: h.totalCount,
    opsPerSec: Math.round(h.totalCount / secs),
    p50Ms: h.getValueAtPercentile(50) / 1000,
    p99Ms: h.getValueAtPercentile(99) / 1000,
    errors,
    ...(ch.totalCount > 0 ? { commitP50Ms: ch.getValueAtPercentile(50) / 1000, commitP99Ms: ch.getValueAtPercentile(99) / 1000 } : {}),
    startMicros,
    endMicros: Date.now() * 1000,
  };
  h.destroy();
  ch.destroy();
  return r;
}

// Long by design (docs/conventions.md): a benchmark's run in the order its report prints, phase after phase.
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
    const txnResults: Array<{ r: PhaseResult; lag?: ApplyLagFigures }> = [];
    const why = await waitForTransactions(client, 'bench', TXN_PROBE_TIMEOUT_MS, TXN_PROBE_RETRY_MS);
    if (why !== undefined) process.stdout.write(`transactions not usable (${why}): txn2 phases skipped\n`);
    const c = client;
    for (const conc of why === undefined ? [16, 64] : []) {
      const r = await phase('txn2 (2 tablets)', conc, async () => {
        const [a, b] = twoTabletKeys();
        const txn = await c.beginTransaction({ isolation: 'snapshot' });
        try {
          await txn.table('bench').upsert({ id: BigInt(a), v: value });
          await txn.table('bench').upsert({ id: BigInt(b), v: value });
          const c0 = performance.now();
          await txn.commit();
          return (performance.now() - c0) * 1000;
        } catch (e) {
          await txn.abort().catch(() => undefined);
          throw e;
        }
      });
      results.push(r);
      const lag = await measureApplyLag(
        cluster.tservers().map((s) => s.webAddress),
        r.startMicros,
        { replicationFactor: 3, minTablets: 2, commitFromMicros: r.startMicros, commitToMicros: r.endMicros },
      ).catch((e: unknown) => {
        process.stdout.write(`apply lag not measured: ${e instanceof Error ? e.message : String(e)}\n`);
        return undefined;
      });
      txnResults.push({ r, ...(lag ? { lag } : {}) });
    }
    process.stdout.write('\nworkload          concurrency   ops/s    p50 ms   p99 ms   errors\n');
    for (const r of results) {
      process.stdout.write(`${r.name.padEnd(18)}${String(r.concurrency).padStart(11)}${String(r.opsPerSec).padStart(9)}${r.p50Ms.toFixed(2).padStart(9)}${r.p99Ms.toFixed(2).padStart(9)}${String(r.errors).padStart(9)}\n`);
    }
    if (txnResults.length) {
      const f = (x: number | undefined): string => (x === undefined ? 'n/a' : x.toFixed(2));
      process.stdout.write(`\n${'transactions'.padEnd(18)}${'concurrency'.padStart(11)}${'txn/s'.padStart(7)}${'commit() p50 ms'.padStart(17)}${'p99 ms'.padStart(8)}${'apply lag p50 ms'.padStart(18)}${'p99 ms'.padStart(8)}${'max ms'.padStart(10)}  complete/incomplete\n`);
      for (const { r, lag } of txnResults) {
        process.stdout.write(`${'txn2 (2 tablets)'.padEnd(18)}${String(r.concurrency).padStart(11)}${String(r.opsPerSec).padStart(7)}${f(r.commitP50Ms).padStart(17)}${f(r.commitP99Ms).padStart(8)}${f(lag?.p50Ms).padStart(18)}${f(lag?.p99Ms).padStart(8)}${f(lag?.maxMs).padStart(10)}  ${lag ? `${lag.complete}/${lag.incomplete}` : 'n/a'}\n`);
      }
      process.stdout.write('apply lag: transaction commit -> intents applied on all 3 replicas of both tablets\n');
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
