/**
 * `npm run bench load [-- --rows N --batch-rows N --in-flight N --tablets N --out DIR]` (issue 8:
 * "loading 1,000,000 rows (100 bytes) with the client's batch API within 60 s"): a fresh local RF 3
 * cluster (1 master + 3 tservers on 127.0.0.77+, fsync on), one table, rows written with
 * client.table(name).upsertMany, `inFlight` batches of `batchRows` rows at once (each batch is split
 * per tablet into write RPCs by the client). Prints progress every PROGRESS_INTERVAL_MS and then total
 * time and rows/s next to the target; nothing is asserted. Small runs: --rows 20000 or BENCH_LOAD_ROWS.
 *
 * Bounded: a batch is tried BATCH_TRIES times at most (an upsert batch is idempotent, so a resend after
 * an unknown outcome is safe), and the whole load stops at --max-seconds.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Row } from '../client/client-types';
import { TesseraClient } from '../client/tessera-client';
import { BenchCluster } from './bench-cluster';
import { checkSectionArgs, sectionArgs, sectionNumber, sectionString } from './section-args';
import { makeDirs } from '../common/fs-dirs';

export interface LoadParams {
  rows: number;
  valueBytes: number;
  /** Rows per upsertMany call. */
  batchRows: number;
  /** upsertMany calls in flight at once. */
  inFlight: number;
  tablets: number;
  /** The load stops here whatever is left. */
  maxSeconds: number;
}

export const LOAD_DEFAULTS: LoadParams = { rows: 1_000_000, valueBytes: 100, batchRows: 10_000, inFlight: 4, tablets: 3, maxSeconds: 900 };
export const LOAD_TARGET_SECONDS = 60;

export interface LoadBenchResult {
  params: LoadParams;
  rowsLoaded: number;
  seconds: number;
  rowsPerSec: number;
  batches: number;
  retriedBatches: number;
  /** The first error that ended the load early, if one did. */
  error?: string;
  /** Rows a full scan counted afterwards (only for runs of at most VERIFY_ROWS_MAX rows). */
  verifiedRows?: number;
  targetSeconds: number;
}

const HOST_BASE = 77;
const NO_ALIAS_PORT_SHIFT = 19_600;
const BATCH_TRIES = 3;
const BATCH_TIMEOUT_MS = 60_000;
/** Write RPCs in flight within one upsertMany call. */
const RPCS_PER_BATCH = 4;
const PROGRESS_INTERVAL_MS = 5_000;
const VERIFY_ROWS_MAX = 100_000;
const TABLE = 'load';
/** A fresh table elects its tablet leaders first; the load clock starts once every tablet has one. */
const LEADERS_WAIT_MS = 60_000;
const LEADERS_POLL_MS = 200;

/** Wait (bounded) until the master reports a leader for every tablet of the table; ms waited. */
async function waitForLeaders(client: TesseraClient, table: string): Promise<number> {
  const t0 = performance.now();
  for (const until = Date.now() + LEADERS_WAIT_MS; Date.now() < until; ) {
    const loc = await client.tableLocations(table).catch(() => undefined);
    if (loc && loc.tablets.length > 0 && loc.tablets.every((t) => t.replicas.some((r) => r.role === 'LEADER'))) break;
    await new Promise((r) => setTimeout(r, LEADERS_POLL_MS));
  }
  return performance.now() - t0;
}

export async function runLoad(client: TesseraClient, table: string, p: LoadParams, log: (line: string) => void): Promise<LoadBenchResult> {
  const t = client.table(table);
  const value = 'v'.repeat(p.valueBytes);
  const batches = Math.ceil(p.rows / p.batchRows);
  let next = 0;
  let loaded = 0;
  let retried = 0;
  let error: string | undefined;
  const t0 = performance.now();
  const deadline = t0 + p.maxSeconds * 1000;
  let lastLoaded = 0;
  let lastAt = t0;
  const progress = setInterval(() => {
    const now = performance.now();
    log(`load: ${loaded.toLocaleString('en-US')}/${p.rows.toLocaleString('en-US')} rows after ${((now - t0) / 1000).toFixed(1)} s (${Math.round(((loaded - lastLoaded) * 1000) / (now - lastAt))} rows/s now, ${Math.round((loaded * 1000) / (now - t0))} overall)`);
    lastLoaded = loaded;
    lastAt = now;
  }, PROGRESS_INTERVAL_MS);
  const worker = async (): Promise<void> => {
    while (error === undefined && next < batches && performance.now() < deadline) {
      const b = next++;
      const first = b * p.batchRows;
      const rows: Row[] = Array.from({ length: Math.min(p.batchRows, p.rows - first) }, (_, i) => ({ id: BigInt(first + i), v: value }));
      for (let attempt = 1; ; attempt++) {
        try {
          await t.upsertMany(rows, { timeoutMs: BATCH_TIMEOUT_MS, concurrency: RPCS_PER_BATCH });
          loaded += rows.length;
          break;
        } catch (e) {
          const why = e instanceof Error ? e.message.split('\n')[0] : String(e);
          if (attempt >= BATCH_TRIES) {
            error ??= `batch ${b} failed ${BATCH_TRIES} times: ${why}`;
            return;
          }
          retried++;
          log(`load: batch ${b} failed (${why}); trying again`);
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: p.inFlight }, worker));
  } finally {
    clearInterval(progress);
  }
  const seconds = (performance.now() - t0) / 1000;
  if (error === undefined && loaded < p.rows) error = `stopped at --max-seconds ${p.maxSeconds} with ${loaded} of ${p.rows} rows`;
  let verifiedRows: number | undefined;
  if (p.rows <= VERIFY_ROWS_MAX) verifiedRows = (await t.scan({ columns: ['id'], pageSize: 10_000, timeoutMs: 120_000 })).length;
  return {
    params: p,
    rowsLoaded: loaded,
    seconds,
    rowsPerSec: seconds > 0 ? loaded / seconds : 0,
    batches,
    retriedBatches: retried,
    ...(error !== undefined ? { error } : {}),
    ...(verifiedRows !== undefined ? { verifiedRows } : {}),
    targetSeconds: LOAD_TARGET_SECONDS,
  };
}

/** Markdown of a load result next to issue 8's target (pure). */
export function renderLoad(r: LoadBenchResult): string {
  const p = r.params;
  const lines = [
    `### Load: ${p.rows.toLocaleString('en-US')} rows of ${p.valueBytes} bytes with upsertMany (${p.batchRows.toLocaleString('en-US')} rows per call, ${p.inFlight} calls in flight, ${p.tablets} tablets, RF 3)`,
    '',
    '| figure | value | target (issue 8) |',
    '|---|---:|---|',
    `| rows loaded | ${r.rowsLoaded.toLocaleString('en-US')} | ${p.rows.toLocaleString('en-US')} |`,
    `| total time | ${r.seconds.toFixed(1)} s | 1,000,000 rows ≤ ${r.targetSeconds} s${p.rows === 1_000_000 && !r.error ? ` (${r.seconds <= r.targetSeconds ? 'within target' : 'OVER target'})` : ''} |`,
    `| rows/s | ${Math.round(r.rowsPerSec).toLocaleString('en-US')} | ≥ ${Math.round(1_000_000 / r.targetSeconds).toLocaleString('en-US')} |`,
    `| batches retried | ${r.retriedBatches} of ${r.batches} | |`,
    ...(r.verifiedRows !== undefined ? [`| rows counted by a scan afterwards | ${r.verifiedRows.toLocaleString('en-US')} | |`] : []),
  ];
  if (r.error) lines.push('', `- ended early: ${r.error}`);
  return lines.join('\n') + '\n';
}

export async function runLoadSection(): Promise<void> {
  const args = sectionArgs('load');
  checkSectionArgs(args, ['rows', 'batch-rows', 'in-flight', 'tablets', 'max-seconds', 'out']);
  const p: LoadParams = {
    rows: Math.floor(sectionNumber(args, 'rows', 'BENCH_LOAD_ROWS', LOAD_DEFAULTS.rows, 1)),
    valueBytes: LOAD_DEFAULTS.valueBytes,
    batchRows: Math.floor(sectionNumber(args, 'batch-rows', 'BENCH_LOAD_BATCH_ROWS', LOAD_DEFAULTS.batchRows, 1)),
    inFlight: Math.floor(sectionNumber(args, 'in-flight', 'BENCH_LOAD_IN_FLIGHT', LOAD_DEFAULTS.inFlight, 1)),
    tablets: Math.floor(sectionNumber(args, 'tablets', 'BENCH_LOAD_TABLETS', LOAD_DEFAULTS.tablets, 1)),
    maxSeconds: sectionNumber(args, 'max-seconds', 'BENCH_LOAD_MAX_SECONDS', LOAD_DEFAULTS.maxSeconds, 1),
  };
  const outDir = path.resolve(sectionString(args, 'out', 'BENCH_OUT') ?? path.join(__dirname, '../../bench/results'));
  const cluster = new BenchCluster();
  let client: TesseraClient | undefined;
  try {
    process.stdout.write(`load: starting 1 master + 3 tservers (RF 3, fsync on); ${p.rows.toLocaleString('en-US')} rows of ${p.valueBytes} bytes\n`);
    await cluster.start(3, HOST_BASE, ['--durable_wal_write=true'], { noAliasPortShift: NO_ALIAS_PORT_SHIFT });
    client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    await client.createTable({ name: TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: p.tablets, replicationFactor: 3 });
    const leadersMs = await waitForLeaders(client, TABLE);
    process.stdout.write(`load: table of ${p.tablets} tablets has its leaders after ${leadersMs.toFixed(0)} ms; loading\n`);
    const r = await runLoad(client, TABLE, p, (l) => process.stdout.write(l + '\n'));
    const md = renderLoad(r);
    process.stdout.write('\n' + md);
    for (const s of cluster.tservers()) {
      const rss = BenchCluster.rssBytes(s.child.pid);
      process.stdout.write(`tserver ${s.rpcAddress} RSS ${rss === undefined ? 'n/a' : `${(rss / (1024 * 1024)).toFixed(0)} MiB`}\n`);
    }
    makeDirs(outDir, 'output directory');
    fs.writeFileSync(path.join(outDir, 'load-latest.json'), JSON.stringify(r, null, 2));
    fs.writeFileSync(path.join(outDir, 'load-latest.md'), md);
    process.stdout.write(`wrote ${path.join(outDir, 'load-latest.json')}\n`);
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.stop();
  }
}
