/**
 * Export and import at size (docs/backup.md, docs/benchmarks.md): one local cluster (1 master + 3
 * tservers, RF 3), a table of N rows of about 100 bytes (3 tablets), loaded untimed; then a full
 * export of it into a temp directory and an import of that export into a new table, each timed,
 * with every tserver's RSS sampled every 200 ms (the peak printed). Figures only: nothing asserted.
 * Each tserver runs with memory_limit_hard_bytes = 512 MiB unless --tserver_flags gives another.
 *
 *   node dist/bench/backup-bench.js [--rows 1000000] [--tablets 3] [--tserver_flags "a=1,b=2"] [--host_base 159]
 *     [--cpu_prof DIR] [--export_only]
 * (env BENCH_BACKUP_ROWS, BENCH_BACKUP_TABLETS, BENCH_BACKUP_TSERVER_FLAGS, BENCH_BACKUP_CPU_PROF). Servers on
 * 127.0.0.159-161 (or host_base..+2). `--cpu_prof DIR`: V8 CPU profiles into DIR — the client's of the export
 * alone (export-client.cpuprofile), each tserver's of its whole life (load included; the export's own
 * functions — scans, row pages — are told apart by name); summarise one with `npm run bench profile FILE`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { exportTables, importTables } from '../client/backup/export-import';
import { TesseraClient } from '../client/tessera-client';
import { BenchCluster } from './bench-cluster';
import { sectionNumber, sectionString } from './section-args';
import { cpuSeconds } from './proc-stats';
import { profileWhile } from './profiling';

const HOST_BASE = 159;
const NO_ALIAS_PORT_SHIFT = 15_900;
const LOAD_BATCH_ROWS = 2000;
const LOAD_IN_FLIGHT = 4;
const MIB = 1024 * 1024;
/**
 * Each tserver's memory limit unless --tserver_flags names one: the target is RSS ≤ 512 MiB per
 * server, and three tservers on one machine each take 85 % of its RAM as their limit by default
 * (tserver/memory-limit.ts) — a limit is how servers sharing a machine are told their part.
 */
const DEFAULT_MEMORY_LIMIT_FLAG = `--memory_limit_hard_bytes=${512 * MIB}`;

interface Measured<T> {
  result: T;
  seconds: number;
  peakRssMiB: number[];
  /** CPU seconds (utime + stime) while `f` ran: all tservers together, and this process (the client). */
  tserverCpuSeconds: number;
  clientCpuSeconds: number;
}

/** Peak RSS of every tserver while `f` runs (sampled every 200 ms), and the CPU it cost. */
async function withRss<T>(cluster: BenchCluster, f: () => Promise<T>): Promise<Measured<T>> {
  const pids = cluster.tservers().map((s) => s.child.pid);
  const peak = pids.map(() => 0);
  const sample = (): void => pids.forEach((p, i) => (peak[i] = Math.max(peak[i]!, BenchCluster.rssBytes(p) ?? 0)));
  const timer = setInterval(sample, 200);
  const tserverCpu = (): number => pids.reduce<number>((a, p) => a + (cpuSeconds(p) ?? 0), 0);
  const cpu0 = tserverCpu();
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  try {
    const result = await f();
    sample();
    const own = process.cpuUsage(own0);
    return {
      result,
      seconds: Math.round((performance.now() - t0) / 100) / 10,
      peakRssMiB: peak.map((b) => Math.round(b / MIB)),
      tserverCpuSeconds: tserverCpu() - cpu0,
      clientCpuSeconds: (own.user + own.system) / 1e6,
    };
  } finally {
    clearInterval(timer);
  }
}

/** The tservers' CPU seconds per second with nothing to do (heartbeats, Raft ticks), over `ms`. */
async function idleCpuPerSecond(cluster: BenchCluster, ms = 3_000): Promise<number> {
  const m = await withRss(cluster, () => new Promise((res) => setTimeout(res, ms)));
  return m.tserverCpuSeconds / (ms / 1000);
}

/**
 * CPU per row in µs, tservers / client: what a loaded machine moves less than the wall time. The
 * tservers' idle CPU over the run's wall time is taken off (a slow run on a loaded machine pays it
 * for longer, which says nothing of the export's work).
 */
function cpuPerRow(m: Measured<unknown>, rows: number, idlePerSecond: number): string {
  const us = (s: number): number => Math.round((s * 1e6) / rows);
  return `CPU per row ${us(m.tserverCpuSeconds - idlePerSecond * m.seconds)} µs tservers (3 together, net of their idle ${Math.round(idlePerSecond * 1000)} ms/s) / ${us(m.clientCpuSeconds)} µs client`;
}

async function load(client: TesseraClient, rows: number): Promise<void> {
  const t = client.table('bench_backup');
  const pad = 'x'.repeat(100 - 12);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < rows) {
      const from = next;
      next = Math.min(rows, next + LOAD_BATCH_ROWS);
      const batch = [];
      for (let i = from; i < next; i++) batch.push({ id: BigInt(i), v: `${String(i).padStart(12, '0')}${pad}` });
      await t.upsertMany(batch, { timeoutMs: 600_000 });
    }
  };
  await Promise.all(Array.from({ length: LOAD_IN_FLIGHT }, worker));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const rows = Math.floor(sectionNumber(args, 'rows', 'BENCH_BACKUP_ROWS', 1_000_000, 1));
  const tablets = Math.floor(sectionNumber(args, 'tablets', 'BENCH_BACKUP_TABLETS', 3, 1));
  const hostBase = Math.floor(sectionNumber(args, 'host_base', 'BENCH_BACKUP_HOST_BASE', HOST_BASE, 1));
  const profDir = sectionString(args, 'cpu_prof', 'BENCH_BACKUP_CPU_PROF');
  const givenFlags = (sectionString(args, 'tserver_flags', 'BENCH_BACKUP_TSERVER_FLAGS') ?? '').split(',').map((f) => f.trim()).filter(Boolean).map((f) => `--${f.replace(/^--/, '')}`);
  const tserverFlags = givenFlags.some((f) => f.startsWith('--memory_limit_hard_bytes=')) ? givenFlags : [DEFAULT_MEMORY_LIMIT_FLAG, ...givenFlags];
  const cluster = new BenchCluster();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-backup-bench-'));
  let client: TesseraClient | undefined;
  try {
    process.stdout.write(`backup: 1 master + 3 tservers (RF 3); ${rows} rows of ~100 B in ${tablets} tablets${tserverFlags.length ? `; tserver flags ${tserverFlags.join(' ')}` : ''}\n`);
    if (profDir) fs.mkdirSync(profDir, { recursive: true });
    const profArgs = (i: number): string[] => (profDir ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(profDir)}`, `--cpu-prof-name=tserver-${i}.cpuprofile`] : []);
    await cluster.start(3, hostBase, tserverFlags, { noAliasPortShift: NO_ALIAS_PORT_SHIFT + (hostBase - HOST_BASE) * 10, tserverNodeArgs: profArgs });
    client = await TesseraClient.connect({ masterAddresses: [cluster.masterAddress], timeoutMs: 30_000 });
    await client.createTable({ name: 'bench_backup', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: tablets, replicationFactor: 3 });
    const t0 = performance.now();
    await load(client, rows);
    process.stdout.write(`load (untimed): ${Math.round((performance.now() - t0) / 100) / 10} s\n`);
    const c = client;
    const idle = await idleCpuPerSecond(cluster);
    const runExport = (): Promise<Awaited<ReturnType<typeof exportTables>>> => exportTables(c, { tables: ['bench_backup'], to: path.join(dir, 'full') });
    const ex = await withRss(cluster, () => (profDir ? profileWhile(path.join(profDir, 'export-client.cpuprofile'), runExport) : runExport()));
    const bytes = ex.result.tables[0]!.parts.reduce((n, p) => n + p.bytes, 0);
    process.stdout.write(`export: ${ex.seconds} s (${Math.round(rows / ex.seconds)} rows/s, ${Math.round(bytes / MIB)} MiB); tserver peak RSS ${ex.peakRssMiB.join(' / ')} MiB; ${cpuPerRow(ex, rows, idle)}\n`);
    if (args.includes('--export_only')) return;
    const im = await withRss(cluster, () => importTables(c, { from: path.join(dir, 'full'), into: 'bench_backup_copy' }));
    process.stdout.write(`import: ${im.seconds} s (${Math.round(rows / im.seconds)} rows/s, digest checked); tserver peak RSS ${im.peakRssMiB.join(' / ')} MiB; ${cpuPerRow(im, rows, idle)}\n`);
  } finally {
    await client?.close().catch(() => undefined);
    await cluster.stop(profDir ? { graceMs: 15_000 } : {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e: unknown) => {
    process.stderr.write(`backup bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  });
}
