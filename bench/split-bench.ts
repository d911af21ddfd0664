/**
 * `tessera bench split [--sizes-mib 64,128,256] [--value-bytes 1000] [--window-seconds 5]
 * [--seq-rows 1000000] [--threshold-mib 8] [--parts size,seq]` (issue 60's performance targets,
 * docs/splitting.md): a fresh local RF 3 cluster (1 master + 3 tservers on 127.0.0.176+).
 *
 * - size: for each size, a range table of one tablet is loaded with that many MiB of rows (random
 *   bytes, so compression does not shrink them), then single-row upserts at random keys run for a
 *   window without a split (baseline) and for a window with a manual split at its start; printed:
 *   the split's time until the master answered (children serving) and until a write to each
 *   child's range succeeded, and the write p50/p99 of both windows (target: split ≤ 5 s at 1 GiB,
 *   p99 with the split ≤ 3× without).
 * - seq: a range table loaded with --seq-rows sequential keys, automatic splitting on (one
 *   threshold for both phases); printed: every tablet's RegularDB bytes and max/min (target ≤ 2).
 *
 * BENCH_SPLIT_KEEP_LOGS=DIR keeps the servers' logs there; BENCH_SPLIT_TSERVER_FLAGS='--a=1 --b=2'
 * starts the tservers with those flags.
 * Nothing is asserted; every loop is bounded (row counts, windows, --max-seconds per load).
 */
import { randomBytes } from 'node:crypto';
import { TesseraClient } from '../client/tessera-client';
import type { Row } from '../client/client-types';
import { compareKeyBytes } from '../common/key-bounds';
import { encodeDocKeyBytes } from '../common/partition-hash';
import { getJson } from '../lab/console-http';
import type { ReplicaRow } from '../lab/tablet-view';
import { BenchCluster } from './bench-cluster';
import { percentile } from './pgbench-output';
import { checkSectionArgs, sectionArgs, sectionNumber, sectionString } from './section-args';

const HOST_BASE = 176;
const NO_ALIAS_PORT_SHIFT = 21_400;
const MIB = 1 << 20;
const BATCH_ROWS = 1000;
const LOAD_BATCH_BYTES = 2 * MIB;
const LOAD_IN_FLIGHT = 4;
const WRITERS = 4;
const LOAD_MAX_SECONDS = 1200;
const SPLIT_TIMEOUT_MS = 120_000;
const SETTLE_MAX_MS = 120_000;
/** Polls (2 s apart) the tablet count must hold still before the seq part reads the sizes. */
const SETTLE_STILL_POLLS = 3;

export interface SplitBenchParams {
  sizesMib: number[];
  valueBytes: number;
  windowSeconds: number;
  seqRows: number;
  thresholdMib: number;
  parts: string[];
}

function params(): SplitBenchParams {
  const args = sectionArgs('split');
  checkSectionArgs(args, ['sizes-mib', 'value-bytes', 'window-seconds', 'seq-rows', 'threshold-mib', 'parts']);
  const list = (v: string | undefined, d: string) => (v ?? d).split(',').map((x) => x.trim()).filter(Boolean);
  return {
    sizesMib: list(sectionString(args, 'sizes-mib', 'BENCH_SPLIT_SIZES_MIB'), '64,128,256').map(Number),
    valueBytes: sectionNumber(args, 'value-bytes', 'BENCH_SPLIT_VALUE_BYTES', 1000, 10),
    windowSeconds: sectionNumber(args, 'window-seconds', 'BENCH_SPLIT_WINDOW_SECONDS', 5, 1),
    seqRows: sectionNumber(args, 'seq-rows', 'BENCH_SPLIT_SEQ_ROWS', 1_000_000, 1000),
    thresholdMib: sectionNumber(args, 'threshold-mib', 'BENCH_SPLIT_THRESHOLD_MIB', 8, 1),
    parts: list(sectionString(args, 'parts', 'BENCH_SPLIT_PARTS'), 'size,seq'),
  };
}

/** Random text (base64 of random bytes: about 6 bits of entropy a byte, so compression barely shrinks it). */
function randomValue(bytes: number): string {
  return randomBytes(Math.ceil((bytes * 3) / 4)).toString('base64').slice(0, bytes);
}

/** Rows a load batch carries: LOAD_BATCH_BYTES of values at most (a 1 GiB load uses large values, few rows a batch). */
function batchRows(valueBytes: number): number {
  return Math.max(1, Math.min(BATCH_ROWS, Math.floor(LOAD_BATCH_BYTES / (valueBytes + 20))));
}

/** Rows [from, to) in batches, LOAD_IN_FLIGHT batches at once, bounded by LOAD_MAX_SECONDS. */
async function load(client: TesseraClient, table: string, from: number, to: number, valueBytes: number, log: (s: string) => void): Promise<number> {
  const t = client.table(table);
  let next = from;
  const t0 = performance.now();
  let lastLog = t0;
  const worker = async (): Promise<void> => {
    while (next < to && performance.now() - t0 < LOAD_MAX_SECONDS * 1000) {
      const first = next;
      next = Math.min(to, next + batchRows(valueBytes));
      const rows: Row[] = [];
      for (let k = first; k < next; k++) rows.push({ k: BigInt(k), v: randomValue(valueBytes) });
      await t.upsertMany(rows, { timeoutMs: 120_000 });
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(`  ${table}: ${next - from} rows after ${((lastLog - t0) / 1000).toFixed(0)} s`);
      }
    }
  };
  await Promise.all(Array.from({ length: LOAD_IN_FLIGHT }, worker));
  return (performance.now() - t0) / 1000;
}

/** Single-row upserts at random keys of [0, rows) by WRITERS workers until `stop()`; latencies in ms. */
async function writeWindow(client: TesseraClient, table: string, rows: number, stop: () => boolean): Promise<{ lat: number[]; errors: number; timeline: Array<[number, number]> }> {
  const t = client.table(table);
  const timeline: Array<[number, number]> = [];
  const t0 = performance.now();
  let errors = 0;
  const worker = async (): Promise<void> => {
    while (!stop()) {
      const s = performance.now();
      try {
        await t.upsert({ k: BigInt(Math.floor(Math.random() * rows)), v: 'w' }, { timeoutMs: 30_000 });
        timeline.push([s - t0, performance.now() - s]);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, worker));
  return { lat: timeline.map((x) => x[1]).sort((a, b) => a - b), errors, timeline };
}

/**
 * Where the slow writes of the split window were: how many took over `slowMs` (3× the baseline
 * p99, the target), when they started (ms after the split was asked for), and writes and p99 per
 * second of the window — a p99 is set by its slowest 1 %, which need not be the held writes.
 */
function slowWrites(timeline: Array<[number, number]>, slowMs: number): string {
  const slow = timeline.filter((x) => x[1] > slowMs);
  const starts = slow.map((x) => Math.round(x[0]));
  const perSecond: string[] = [];
  for (let s = 0; s * 1000 < Math.max(0, ...timeline.map((x) => x[0])) + 1; s++) {
    const l = timeline.filter((x) => x[0] >= s * 1000 && x[0] < (s + 1) * 1000).map((x) => x[1]).sort((a, b) => a - b);
    perSecond.push(`${s}s: ${l.length} p99 ${l.length ? percentile(l, 99).toFixed(0) : '-'}`);
  }
  return `${slow.length} of ${timeline.length} writes over ${slowMs.toFixed(0)} ms (started at ${starts.length ? `${Math.min(...starts)}..${Math.max(...starts)}` : '-'} ms); per second: ${perSecond.join(', ')}`;
}

function createRange(client: TesseraClient, name: string): Promise<string> {
  return client.createTable({ name, columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { range: ['k'] }, numTablets: 1 });
}

async function sizePart(client: TesseraClient, p: SplitBenchParams, log: (s: string) => void): Promise<string[]> {
  const out: string[] = ['| size | load s | split answered s | both children took a write s | write p50 / p99 ms without | with split | p99 ratio | errors |', '|---|---|---|---|---|---|---|---|'];
  for (const mib of p.sizesMib) {
    const table = `split${mib}`;
    const rows = Math.ceil((mib * MIB) / (p.valueBytes + 20));
    await createRange(client, table);
    const loadS = await load(client, table, 0, rows, p.valueBytes, log);
    const base = await timed(p.windowSeconds, (stop) => writeWindow(client, table, rows, stop));
    const [tablet] = (await client.tableLocations(table)).tablets;
    const t0 = performance.now();
    let answered = 0;
    let served = 0;
    const withSplit = await timed(p.windowSeconds, async (stop) => {
      const load = writeWindow(client, table, rows, () => stop() && served > 0);
      await client.splitTablet(tablet!.tabletId, { timeoutMs: SPLIT_TIMEOUT_MS });
      answered = (performance.now() - t0) / 1000;
      const t = client.table(table);
      await Promise.all([t.upsert({ k: 0n, v: 'first' }), t.upsert({ k: BigInt(rows - 1), v: 'last' })]);
      served = (performance.now() - t0) / 1000;
      return load;
    });
    const q = (l: number[], x: number) => (l.length ? percentile(l, x).toFixed(1) : '-');
    const ratio = base.lat.length && withSplit.lat.length ? (percentile(withSplit.lat, 99) / percentile(base.lat, 99)).toFixed(2) : '-';
    const line = `| ${mib} MiB (${rows} rows) | ${loadS.toFixed(0)} | ${answered.toFixed(2)} | ${served.toFixed(2)} | ${q(base.lat, 50)} / ${q(base.lat, 99)} (${base.lat.length} writes) | ${q(withSplit.lat, 50)} / ${q(withSplit.lat, 99)} (${withSplit.lat.length} writes) | ${ratio} | ${base.errors + withSplit.errors} |`;
    log(line);
    if (base.lat.length) log(`  ${mib} MiB split window: ${slowWrites(withSplit.timeline, 3 * percentile(base.lat, 99))}`);
    out.push(line);
  }
  return out;
}

/** Runs f with a stop() that turns true after `seconds`. */
async function timed<T>(seconds: number, f: (stop: () => boolean) => Promise<T>): Promise<T> {
  const end = performance.now() + seconds * 1000;
  return f(() => performance.now() >= end);
}

async function seqPart(client: TesseraClient, cluster: BenchCluster, p: SplitBenchParams, log: (s: string) => void): Promise<string[]> {
  const table = 'seq';
  await createRange(client, table);
  const loadS = await load(client, table, 0, p.seqRows, 100, log);
  // Splits still under way finish (the tablet count stays put and the sizes go under the threshold).
  const settled = await settledSizes(client, cluster, table, p.thresholdMib * MIB);
  const rows = settled.tablets.map((t) => rowsBelow(t.keyEnd, p.seqRows) - rowsBelow(t.keyStart, 0));
  const ratio = (l: number[]) => (l.length ? (Math.max(...l) / Math.max(1, Math.min(...l))).toFixed(2) : '-');
  const lines = [
    `seq: ${p.seqRows} sequential rows (100-byte values) in ${loadS.toFixed(0)} s, threshold ${p.thresholdMib} MiB; ${rows.length} tablets after ${settled.waitS.toFixed(0)} s of settling`,
    `seq: rows per tablet, key order (exact: every key 0..N-1 was written, counted from the tablets' key bounds): ${rows.join(' ')}; max/min ${ratio(rows)}`,
    `seq: leaders' RegularDB MiB (table files of the own range + memtable), key order: ${settled.bytes.map((b) => (b / MIB).toFixed(1)).join(' ')}; max/min ${ratio(settled.bytes)}`,
  ];
  for (const l of lines) log(l);
  return lines;
}

/** How many of the keys 0..n-1 encode below `bound` (empty: `empty`); the encoding keeps the order. */
function rowsBelow(bound: Uint8Array | undefined, empty: number): number {
  if (!bound || bound.length === 0) return empty;
  let lo = 0;
  let hi = 1 << 30;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (compareKeyBytes(encodeDocKeyBytes(0, [], [BigInt(mid)]), bound) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The leaders' RegularDB bytes of the table's tablets in key order, once the tablet count held still and none is over the threshold (bounded wait). */
async function settledSizes(client: TesseraClient, cluster: BenchCluster, table: string, thresholdBytes: number): Promise<{ tablets: Array<{ keyStart?: Uint8Array; keyEnd?: Uint8Array }>; bytes: number[]; waitS: number }> {
  const t0 = Date.now();
  let still = 0;
  let lastCount = -1;
  for (;;) {
    const loc = await client.tableLocations(table);
    const bytes = new Map<string, number>();
    for (const ts of cluster.tservers()) {
      // A busy tserver (clean-ups, compactions) answers its console slowly: a long timeout.
      const body = (await getJson(`http://${ts.webAddress}/api/v1/tablets`, 15_000).catch(() => ({}))) as { tablets?: ReplicaRow[] };
      for (const r of body.tablets ?? []) {
        if (r.role.toUpperCase() === 'LEADER') bytes.set(r.tabletId, r.regulardb.memtableBytes + r.regulardb.sstBytes);
      }
    }
    const sizes = loc.tablets.map((t) => bytes.get(t.tabletId) ?? 0);
    still = loc.tablets.length === lastCount ? still + 1 : 0;
    lastCount = loc.tablets.length;
    if (Date.now() - t0 > SETTLE_MAX_MS || (still >= SETTLE_STILL_POLLS && sizes.every((b) => b > 0 && b <= thresholdBytes))) return { tablets: loc.tablets, bytes: sizes, waitS: (Date.now() - t0) / 1000 };
    await new Promise((r) => setTimeout(r, 2000));
  }
}

/** One fresh cluster per part: automatic splitting only where it is measured. */
async function withCluster<T>(masterFlags: string[], f: (client: TesseraClient, cluster: BenchCluster) => Promise<T>): Promise<T> {
  const cluster = new BenchCluster();
  try {
    // BENCH_SPLIT_TSERVER_FLAGS: extra tserver flags, space-separated (e.g. --uv_threadpool_size=2).
    const tserverFlags = (process.env['BENCH_SPLIT_TSERVER_FLAGS'] ?? '').split(' ').filter(Boolean);
    await cluster.start(3, HOST_BASE, tserverFlags, { noAliasPortShift: NO_ALIAS_PORT_SHIFT, logLevel: 'info', masterFlags });
    const client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    try {
      return await f(client, cluster);
    } finally {
      await client.close();
    }
  } finally {
    const keep = process.env['BENCH_SPLIT_KEEP_LOGS'];
    if (keep) cluster.saveLogs(keep);
    await cluster.stop();
  }
}

export async function runSplitBench(): Promise<void> {
  const p = params();
  const log = (s: string) => console.log(s);
  const t = String(p.thresholdMib * MIB);
  log(`bench split: ${JSON.stringify(p)}`);
  const lines: string[] = [];
  if (p.parts.includes('size')) lines.push(...(await withCluster([], (c) => sizePart(c, p, log))));
  const auto = ['--enable_automatic_tablet_splitting=true', `--tablet_split_low_phase_size_threshold_bytes=${t}`, `--tablet_split_size_threshold_bytes=${t}`, '--tablet_split_low_phase_shard_count_per_node=1000'];
  if (p.parts.includes('seq')) lines.push(...(await withCluster(auto, (c, cluster) => seqPart(c, cluster, p, log))));
  log('\n' + lines.join('\n'));
}
