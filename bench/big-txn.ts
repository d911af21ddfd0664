/**
 * The big transaction (issue 6/8): one transaction writes `rows` rows of `rowBytes` (100 × 1 MiB) into
 * a 3-tablet RF 3 table, several rows per write RPC, then commits. Reports the time to write the
 * intents, the time of the commit() call, the time until every replica of every participant tablet
 * applied the intents (tservers' /api/v1/txn-applies), and each tserver's peak RSS while it ran
 * (VmRSS sampled every RSS_SAMPLE_INTERVAL_MS, plus the process-lifetime VmHWM). Issue 8's targets
 * (commit within 5 s, each tserver ≤ 1 GiB) are printed next to the figures; nothing is asserted.
 *
 * `npm run bench big-txn [-- --rows N --row-bytes N --out DIR]` runs it on its own cluster;
 * `--vs etcd` runs it at the end on the side-by-side cluster (runBigTxn).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TesseraClient } from '../client/tessera-client';
import { fetchApplies, completeTxnLagsMs } from './apply-lag';
import { BenchCluster } from './bench-cluster';
import { peakRssBytes } from './proc-stats';
import { checkSectionArgs, sectionArgs, sectionNumber, sectionString } from './section-args';
import { waitForTransactions } from './vs-loadgen';
import { makeDirs } from '../common/fs-dirs';

export interface BigTxnParams {
  rows: number;
  rowBytes: number;
}

export const BIG_TXN_DEFAULTS: BigTxnParams = { rows: 100, rowBytes: 1024 * 1024 };
export const BIG_TXN_TARGETS = { commitMs: 5_000, tserverRssBytes: 1024 * 1024 * 1024 } as const;

/** Value bytes per write RPC (the client also caps a chunk at WRITE_BYTES_PER_RPC_MAX = 4 MiB). */
const ROW_BYTES_PER_RPC = 4 * 1024 * 1024;
const RSS_SAMPLE_INTERVAL_MS = 100;
const TXN_TIMEOUT_MS = 120_000;
/** How long to wait for every replica to report the apply after commit() returned. */
const APPLY_WAIT_MS = 120_000;
const APPLY_POLL_MS = 100;
const TXN_PROBE_TIMEOUT_MS = 15_000;
const TXN_PROBE_RETRY_MS = 500;
const HOST_BASE = 74;
const NO_ALIAS_PORT_SHIFT = 19_400;

export interface TserverRss {
  rpcAddress: string;
  /** VmRSS before the transaction began. */
  beforeBytes?: number;
  /** Largest VmRSS sample while the transaction ran (until applied everywhere). */
  peakSampledBytes?: number;
  /** VmHWM: the process-lifetime peak (includes anything the process did before). */
  hwmBytes?: number;
}

export interface BigTxnResult {
  rows: number;
  rowBytes: number;
  rowsPerRpc: number;
  participants: number;
  writeIntentsMs: number;
  commitMs: number;
  /** commit() start → the last replica finished applying (wall clock of this machine). */
  commitToAllAppliedMs?: number;
  /** Commit hybrid time → the last replica finished applying. */
  applyLagMs?: number;
  /** All participant replicas reported the apply within APPLY_WAIT_MS. */
  appliedEverywhere: boolean;
  tservers: TserverRss[];
  targets: typeof BIG_TXN_TARGETS;
}

/** Sample VmRSS of pids until stopped; peak per pid. */
function rssSampler(pids: ReadonlyArray<number | undefined>): { stop: () => Array<number | undefined> } {
  const peaks: Array<number | undefined> = pids.map((p) => BenchCluster.rssBytes(p));
  const timer = setInterval(() => {
    pids.forEach((p, i) => {
      const v = BenchCluster.rssBytes(p);
      if (v !== undefined) peaks[i] = Math.max(peaks[i] ?? 0, v);
    });
  }, RSS_SAMPLE_INTERVAL_MS);
  return {
    stop: () => {
      clearInterval(timer);
      return peaks;
    },
  };
}

/** Create the table, run the transaction, wait for the applies; the cluster and client are the caller's. */
export async function runBigTxn(cluster: BenchCluster, client: TesseraClient, table: string, p: BigTxnParams, log: (line: string) => void): Promise<BigTxnResult> {
  await client.createTable({ name: table, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
  const why = await waitForTransactions(client, table, TXN_PROBE_TIMEOUT_MS, TXN_PROBE_RETRY_MS);
  if (why !== undefined) throw new Error(`big-txn: transactions not usable (${why})`);
  const tservers = cluster.tservers();
  const pids = tservers.map((s) => s.child.pid);
  const before = pids.map((pid) => BenchCluster.rssBytes(pid));
  const sampler = rssSampler(pids);
  const rowsPerRpc = Math.max(1, Math.floor(ROW_BYTES_PER_RPC / Math.max(1, p.rowBytes)));
  // One shared value: the client holds one copy, the servers see p.rows × p.rowBytes of values.
  const value = 'b'.repeat(p.rowBytes);
  const sinceMicros = Date.now() * 1000;
  try {
    const txn = await client.beginTransaction({ isolation: 'snapshot', timeoutMs: TXN_TIMEOUT_MS });
    const t0 = performance.now();
    // Chunks of one RPC per tablet (3 tablets): bounded client memory, every tablet busy.
    const chunkRows = rowsPerRpc * 3;
    for (let i = 0; i < p.rows; i += chunkRows) {
      const chunk = Array.from({ length: Math.min(chunkRows, p.rows - i) }, (_, j) => ({ id: BigInt(i + j), v: value }));
      await txn.table(table).upsertMany(chunk, { timeoutMs: TXN_TIMEOUT_MS, rowsPerRpc });
    }
    const writeIntentsMs = performance.now() - t0;
    log(`big-txn: ${p.rows} rows × ${p.rowBytes} bytes written as intents in ${writeIntentsMs.toFixed(0)} ms (${rowsPerRpc} rows per RPC); committing`);
    const commitStartWallMs = Date.now();
    const c0 = performance.now();
    await txn.commit({ timeoutMs: TXN_TIMEOUT_MS });
    const commitMs = performance.now() - c0;
    const participants = txn.participants().length;
    const f = { replicationFactor: 3, minTablets: participants, txnIds: new Set([txn.txnId]) };
    let applyLagMs: number | undefined;
    let lastAppliedWallMs: number | undefined;
    for (const until = Date.now() + APPLY_WAIT_MS; Date.now() < until; ) {
      const records = await fetchApplies(tservers.map((s) => s.webAddress), sinceMicros);
      const { lagsMs } = completeTxnLagsMs(records, f);
      applyLagMs = lagsMs.get(txn.txnId);
      if (applyLagMs !== undefined) {
        lastAppliedWallMs = Math.max(...records.filter((r) => r.txnId === txn.txnId).map((r) => r.appliedMicros)) / 1000;
        break;
      }
      await new Promise((r) => setTimeout(r, APPLY_POLL_MS));
    }
    const peaks = sampler.stop();
    return {
      rows: p.rows,
      rowBytes: p.rowBytes,
      rowsPerRpc,
      participants,
      writeIntentsMs,
      commitMs,
      ...(lastAppliedWallMs !== undefined ? { commitToAllAppliedMs: Math.max(0, lastAppliedWallMs - commitStartWallMs) } : {}),
      ...(applyLagMs !== undefined ? { applyLagMs } : {}),
      appliedEverywhere: applyLagMs !== undefined,
      tservers: tservers.map((s, i) => {
        const b = before[i];
        const pk = peaks[i];
        const hwm = peakRssBytes(s.child.pid);
        return { rpcAddress: s.rpcAddress, ...(b !== undefined ? { beforeBytes: b } : {}), ...(pk !== undefined ? { peakSampledBytes: pk } : {}), ...(hwm !== undefined ? { hwmBytes: hwm } : {}) };
      }),
      targets: BIG_TXN_TARGETS,
    };
  } finally {
    sampler.stop();
  }
}

const mib = (b: number | undefined): string => (b === undefined ? 'n/a' : `${(b / (1024 * 1024)).toFixed(0)} MiB`);
const ms = (x: number | undefined): string => (x === undefined ? 'n/a' : `${x.toFixed(0)} ms`);

/** Markdown of one big-transaction result, the figures next to issue 8's targets (pure). */
export function renderBigTxn(r: BigTxnResult): string {
  const rssTarget = r.targets.tserverRssBytes;
  const within = (ok: boolean): string => (ok ? 'within target' : 'OVER target');
  const lines = [
    `### Big transaction: ${r.rows} rows × ${(r.rowBytes / 1024).toFixed(0)} KiB in one transaction (3 tablets, RF 3, ${r.rowsPerRpc} rows per write RPC, ${r.participants} participant tablets)`,
    '',
    '| figure | value | target (issue 8) |',
    '|---|---:|---|',
    `| write the intents | ${ms(r.writeIntentsMs)} | |`,
    `| commit() | ${ms(r.commitMs)} | ≤ ${r.targets.commitMs} ms (${within(r.commitMs <= r.targets.commitMs)}) |`,
    `| commit() start → applied on every replica | ${r.appliedEverywhere ? ms(r.commitToAllAppliedMs) : 'not within the wait'} | |`,
    `| apply lag (commit time → last replica applied) | ${ms(r.applyLagMs)} | |`,
    '',
    '| tserver | RSS before | peak RSS while it ran (sampled) | VmHWM (process lifetime) | target |',
    '|---|---:|---:|---:|---|',
    ...r.tservers.map((t) => {
      const peak = t.peakSampledBytes;
      return `| ${t.rpcAddress} | ${mib(t.beforeBytes)} | ${mib(peak)} | ${mib(t.hwmBytes)} | ≤ ${mib(rssTarget)}${peak === undefined ? '' : ` (${within(peak <= rssTarget)})`} |`;
    }),
  ];
  return lines.join('\n') + '\n';
}

/** `npm run bench big-txn`: its own cluster (127.0.0.74+), one big transaction, figures to stdout and --out. */
export async function runBigTxnSection(): Promise<void> {
  const args = sectionArgs('big-txn');
  checkSectionArgs(args, ['rows', 'row-bytes', 'out']);
  const p: BigTxnParams = {
    rows: Math.floor(sectionNumber(args, 'rows', 'BENCH_BIG_TXN_ROWS', BIG_TXN_DEFAULTS.rows, 1)),
    rowBytes: Math.floor(sectionNumber(args, 'row-bytes', 'BENCH_BIG_TXN_ROW_BYTES', BIG_TXN_DEFAULTS.rowBytes, 1)),
  };
  const outDir = path.resolve(sectionString(args, 'out', 'BENCH_OUT') ?? path.join(__dirname, '../../bench/results'));
  const cluster = new BenchCluster();
  let client: TesseraClient | undefined;
  try {
    process.stdout.write(`big-txn: starting 1 master + 3 tservers (RF 3, fsync on); ${p.rows} rows × ${p.rowBytes} bytes in one transaction\n`);
    await cluster.start(3, HOST_BASE, ['--durable_wal_write=true'], { noAliasPortShift: NO_ALIAS_PORT_SHIFT });
    client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    const r = await runBigTxn(cluster, client, 'big_txn', p, (l) => process.stdout.write(l + '\n'));
    const md = renderBigTxn(r);
    process.stdout.write('\n' + md);
    makeDirs(outDir, 'output directory');
    fs.writeFileSync(path.join(outDir, 'big-txn-latest.json'), JSON.stringify(r, null, 2));
    fs.writeFileSync(path.join(outDir, 'big-txn-latest.md'), md);
    process.stdout.write(`wrote ${path.join(outDir, 'big-txn-latest.json')}\n`);
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.stop();
  }
}
