/**
 * `npm run bench -- --vs etcd` / `tessera bench --vs etcd`: tessera and etcd side by side in one run
 * on this machine. Starts a 3-member etcd cluster (127.0.0.60+) and a tessera cluster of 1 master +
 * 3 tservers (RF 3, durable_wal_write=true; 127.0.0.70+), then runs each workload from a separate
 * load-generator process (bench/vs-loadgen.ts) for --warmup + --seconds, alternating the systems
 * (A B, then B A, …) over --rounds rounds. Prints one table and writes JSON + Markdown to --out
 * (default bench/results/). Without an etcd binary the etcd columns are skipped, and it says so.
 * --tserver-flag name=value (repeatable) adds a flag to every tserver, to compare a setting.
 * After each transaction run it joins the tservers' /api/v1/txn-applies records into the apply lag
 * (commit → intents applied on every replica; bench/apply-lag.ts), and at the end it runs the big
 * transaction (bench/big-txn.ts) on the tessera cluster unless --workloads leaves `big-txn` out.
 * Nothing here asserts on speed: a benchmark reports figures.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TesseraClient } from '../client/tessera-client';
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { masterMethods } from '../rpc';
import { flagAssignment, Flags, parseFlagArgs } from '../common/flags';
// Registers every flag a tserver parses, so --tserver-flag is checked before any server starts.
import '../tserver/tserver-server';
import { BenchCluster } from './bench-cluster';
import { EtcdCluster, findEtcd } from './etcd-cluster';
import { measureApplyLag, type ApplyLagFigures } from './apply-lag';
import { BIG_TXN_DEFAULTS, renderBigTxn, runBigTxn, type BigTxnResult } from './big-txn';
import { scrapeCounters } from './io-costs';
import { filesystemType, peakRssBytes } from './proc-stats';
import { waitForTransactions, type LoadSpec, type VsOp } from './vs-loadgen';
import { log, runLoadgen, toRun, type LoadgenRun, type Target } from './vs-loadgen-run';
import { appendProfiles } from './vs-profiles';
import { aggregate, renderMarkdown, renderSlowSeconds, type PeakRss, type VsRun } from './vs-report';
import { makeDirs } from '../common/fs-dirs';
import { DbError, ErrorCode } from '../common/errors';

export { log, runLoadgen, toRun, type LoadgenRun, type Target } from './vs-loadgen-run';

const ETCD_HOST_BASE = 60;
const TESSERA_HOST_BASE = 70;
/** Port shift for tessera when loopback aliases do not work (inside this part's 26000-27999 range). */
const TESSERA_NO_ALIAS_PORT_SHIFT = 26000 - 7000;
const TABLE = 'vs_etcd';
export const VALUE_BYTES = 100;
/**
 * Default warm-up of each workload's first run. A fresh tserver runs a new workload at about half its
 * steady speed for several seconds while V8 tiers the hot path up (2-row transactions at c64 on 2
 * cores: 5.9 ms of server CPU per transaction in the first 1,000, 2.7 ms from the 4,000th; the
 * optimizing compiler's thread competes with the saturated servers), so a 3 s warm-up left round 1
 * measuring the JIT, not the database.
 */
export const FIRST_WARMUP_SECONDS_DEFAULT = 10;
/** The probe transaction before the rounds: the status tablets may still be electing leaders. */
const TXN_PROBE_TIMEOUT_MS = 15_000;
const TXN_PROBE_RETRY_MS = 500;
/**
 * Before the first workload, tablet leadership must have been quiet this long (the master's leader
 * balancer moves a new table's leaders with a 3 s cool-down per tablet), so that a leadership change
 * counted while the workloads run is an election under load, not a planned move.
 */
export const LEADERS_QUIET_MS = 4_000;
export const LEADERS_SETTLE_MAX_MS = 30_000;
export const REPLICATION_FACTOR = 3;
/** tservers of the tessera cluster. */
export const TSERVERS = 3;
/** The 2-row transaction workload spans 2 tablets (vs-loadgen twoTabletKeys). */
const TXN_TABLETS = 2;
/** Tablets of the benchmark table. */
const TABLE_TABLETS = 3;
const BIG_TXN = 'big-txn';
const BIG_TXN_TABLE = 'vs_big_txn';

export const VS_WORKLOADS: Record<string, { op: VsOp; concurrency: number; tesseraOnly?: boolean; optional?: boolean; sameTablet?: boolean }> = {
  'put-c1': { op: 'put', concurrency: 1 },
  'put-c16': { op: 'put', concurrency: 16 },
  'put-c64': { op: 'put', concurrency: 64 },
  'read-c16': { op: 'read', concurrency: 16 },
  'txn2-c16': { op: 'txn', concurrency: 16, tesseraOnly: true },
  'txn2-c64': { op: 'txn', concurrency: 64, tesseraOnly: true },
  // Not in the default set: the transaction latency without queueing, to tell queueing from cost.
  'txn2-c1': { op: 'txn', concurrency: 1, tesseraOnly: true, optional: true },
  // Not in the default set either: deeper queues batch more per Raft round, RocksDB write and
  // frame, so the CPU per transaction here approaches the per-transaction floor.
  'txn2-c256': { op: 'txn', concurrency: 256, tesseraOnly: true, optional: true },
  // Not in the default set: 2-row transactions whose rows share one tablet (docs/transactions.md,
  // the single-tablet fast path), to set beside puts and the 2-tablet transactions.
  'txn1-c16': { op: 'txn', concurrency: 16, tesseraOnly: true, optional: true, sameTablet: true },
  'txn1-c64': { op: 'txn', concurrency: 64, tesseraOnly: true, optional: true, sameTablet: true },
};

/** Every name --workloads accepts: the load workloads and, last, the big transaction. */
const ALL_WORKLOADS = [...Object.keys(VS_WORKLOADS), BIG_TXN];

export interface VsOptions {
  seconds: number;
  warmupSeconds: number;
  /** Warm-up of each workload's first run (round 1), per system: the servers' JIT tiers up under load. */
  firstWarmupSeconds: number;
  rounds: number;
  workloads: string[];
  outDir: string;
  readKeys: number;
  /**
   * V8 CPU profiles (node --cpu-prof) into outDir/profiles: of tserver 0 ('ts0', `--profile`), or of
   * every tserver ('all', `--profile all`), which adds each window's per-second busy timeline.
   */
  profile: false | 'ts0' | 'all';
  bigTxnRows: number;
  bigTxnRowBytes: number;
  /** Extra flags for every tessera tserver (`--name=value`), after the harness's own: A/B a setting. */
  tserverFlags: string[];
  /** The tessera cluster's loopback base (127.0.0.N…N+2; default 70): a second run beside another one. */
  hostBase: number;
  /** Leave etcd out (`--no-etcd`): tessera's own ratios (transactions against puts) need no etcd. */
  noEtcd: boolean;
}

/** Flags the harness sets itself to place its cluster: --tserver-flag may not change them. */
const HARNESS_TSERVER_FLAGS = ['tserver_master_addrs', 'rpc_bind_addresses', 'webserver_port', 'fs_data_dirs', 'log_level'];

/**
 * One --tserver-flag argument (`name=value`, a leading `--` accepted) as the tserver parses it,
 * checked against the tserver's flag registry (unknown name, bad value) before any server starts.
 */
export function tserverFlagArg(text: string): string {
  const { name, value } = flagAssignment(text, '--tserver-flag');
  if (HARNESS_TSERVER_FLAGS.includes(name)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--tserver-flag ${name}: set by the benchmark itself (${HARNESS_TSERVER_FLAGS.join(', ')} are)`);
  const arg = `--${name}=${value}`;
  try {
    parseFlagArgs([arg], new Flags());
  } catch (e) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `--tserver-flag: ${e instanceof Error ? e.message : String(e)}`);
  }
  return arg;
}

export function parseVsArgs(argv: readonly string[]): VsOptions {
  const o: VsOptions = { seconds: 10, warmupSeconds: 3, firstWarmupSeconds: FIRST_WARMUP_SECONDS_DEFAULT, rounds: 3, workloads: ALL_WORKLOADS.filter((w) => !VS_WORKLOADS[w]?.optional), outDir: path.resolve(__dirname, '../../bench/results'), readKeys: 10_000, profile: false, bigTxnRows: BIG_TXN_DEFAULTS.rows, bigTxnRowBytes: BIG_TXN_DEFAULTS.rowBytes, tserverFlags: [], hostBase: TESSERA_HOST_BASE, noEtcd: false };
  const num = (name: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < min) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--${name} needs a number >= ${min}, got '${v ?? ''}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const [k, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const val = (): string | undefined => inline ?? argv[++i];
    switch (k) {
      case '--vs': {
        const v = val();
        if (v !== 'etcd') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--vs supports only etcd, got '${v ?? ''}'`);
        break;
      }
      case '--seconds': o.seconds = num('seconds', val(), 0.5); break;
      case '--warmup': o.warmupSeconds = num('warmup', val(), 0); break;
      case '--first-warmup': o.firstWarmupSeconds = num('first-warmup', val(), 0); break;
      case '--rounds': o.rounds = Math.floor(num('rounds', val(), 1)); break;
      case '--read-keys': o.readKeys = Math.floor(num('read-keys', val(), 1)); break;
      case '--out': o.outDir = path.resolve(val() ?? '.'); break;
      case '--profile': {
        // A bare --profile is tserver 0; its optional value (next argument or =) names which.
        const v = inline ?? (argv[i + 1] === 'all' || argv[i + 1] === 'ts0' ? argv[++i] : 'ts0');
        if (v !== 'ts0' && v !== 'all') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--profile takes ts0 (the default) or all, got '${v}'`);
        o.profile = v;
        break;
      }
      case '--big-txn-rows': o.bigTxnRows = Math.floor(num('big-txn-rows', val(), 1)); break;
      case '--big-txn-row-bytes': o.bigTxnRowBytes = Math.floor(num('big-txn-row-bytes', val(), 1)); break;
      case '--tserver-flag': o.tserverFlags.push(tserverFlagArg(val() ?? '')); break;
      case '--host-base': o.hostBase = Math.floor(num('host-base', val(), 2)); break;
      case '--no-etcd': o.noEtcd = true; break;
      case '--workloads': {
        const ws = (val() ?? '').split(',').map((s) => s.trim()).filter(Boolean);
        const bad = ws.filter((w) => !ALL_WORKLOADS.includes(w));
        if (bad.length || ws.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--workloads: unknown '${bad.join(',')}' (known: ${ALL_WORKLOADS.join(', ')})`);
        o.workloads = ws;
        break;
      }
      default:
        throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown option '${a}' (known: --vs etcd --seconds --warmup --first-warmup --rounds --workloads --read-keys --out --profile [ts0|all] --big-txn-rows --big-txn-row-bytes --tserver-flag --host-base --no-etcd)`);
    }
  }
  return o;
}

export async function runVsEtcd(o: VsOptions): Promise<{ jsonPath: string; mdPath: string }> {
  const etcdBin = o.noEtcd ? undefined : findEtcd();
  const notes = new Map<string, string>();
  const tessera = new BenchCluster();
  const etcd = etcdBin ? new EtcdCluster(etcdBin) : undefined;
  if (!etcd) log(o.noEtcd ? 'etcd: left out (--no-etcd); tessera figures only' : 'etcd: not installed (run .ci/etcd-setup.sh, or set ETCD_BIN) — the etcd comparison is SKIPPED; tessera figures only');
  const profileDir = path.join(o.outDir, 'profiles');
  try {
    const firstWarmup = Math.max(o.warmupSeconds, o.firstWarmupSeconds);
    log(`vs etcd: ${o.rounds} round(s), ${o.warmupSeconds} s warm-up (${firstWarmup} s in round 1) + ${o.seconds} s per run, workloads ${o.workloads.join(', ')}`);
    // Both systems keep their data under the temp dir: on tmpfs an fsync costs nothing and the figures
    // would not be "data on disk" (set TMPDIR to a disk-backed directory).
    const fsType = filesystemType(os.tmpdir());
    if (fsType === 'tmpfs' || fsType === 'ramfs') {
      notes.set('data dir', `WARNING: ${os.tmpdir()} is ${fsType}: fsync is free, figures are not on-disk figures (set TMPDIR)`);
      log(notes.get('data dir') ?? '');
    }
    makeDirs(o.outDir, 'output directory');
    if (o.profile) makeDirs(profileDir, 'output directory');
    const profilesBefore = new Set(o.profile ? fs.readdirSync(profileDir) : []);
    await tessera.start(TSERVERS, o.hostBase, ['--durable_wal_write=true', ...o.tserverFlags], {
      noAliasPortShift: TESSERA_NO_ALIAS_PORT_SHIFT,
      ...(o.profile ? { tserverNodeArgs: (i: number) => (i === 0 || o.profile === 'all' ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []) } : {}),
      // info: one line per leadership change, counted below (an election under load explains a stall).
      logLevel: 'info',
    });
    log(`tessera: 1 master + 3 tservers up (master ${tessera.masterAddress})`);
    const prep = await prepareTessera(tessera, o.workloads.filter((w) => VS_WORKLOADS[w]?.op === 'txn'), notes);
    const txnOk = prep.txnOk;
    const clusterShape = `tessera: ${TSERVERS} tservers, RF ${REPLICATION_FACTOR}, table of ${TABLE_TABLETS} tablets${o.tserverFlags.length > 0 ? `, tserver flags ${o.tserverFlags.join(' ')}` : ''}, ${prep.statusTablets}`;
    if (etcd) {
      await etcd.start(ETCD_HOST_BASE);
      log(`etcd: 3 members up (leader ${etcd.leaderUrl}); load goes to the leader`);
    }
    const targets = vsTargets(o, tessera, etcd);
    await preloadAndSettle(o, targets, tessera, notes);
    const tableWorkloads = o.workloads.filter((w) => VS_WORKLOADS[w]);
    const loadStartMs = Date.now();
    const runs = await runRounds(o, targets, tessera, { txnOk, firstWarmup, tableWorkloads }, notes);
    const loadEndMs = Date.now();
    const rss = peakRssOf(targets, runs);
    // Last, after the peak RSS above was read: its RSS figures are sampled while it runs.
    const bigTxn = o.workloads.includes(BIG_TXN) ? await bigTxnStep(o, tessera, notes) : undefined;
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    // Leadership changes while the load ran: none are planned then, so each is an election (or a
    // balancing move) that aborts in-flight transactions and stalls its tablet. Keep the logs then.
    const leaderChanges = tessera.leaderChangesBetween(loadStartMs, loadEndMs);
    const tesseraErrors = runs.filter((r) => r.system === 'tessera').reduce((a, r) => a + r.errors, 0);
    notes.set('leader changes', `${leaderChanges} tablet leadership change(s) in tessera while the workloads ran (big-txn, which creates its table, excluded)`);
    if (leaderChanges > 0 || tesseraErrors > 0) {
      const logsDir = path.join(o.outDir, `vs-etcd-${stamp}-logs`);
      tessera.saveLogs(logsDir);
      notes.set('logs', `tessera server logs kept in ${logsDir} (${tesseraErrors} error(s), ${leaderChanges} leadership change(s))`);
      log(notes.get('logs') ?? '');
    }
    const rows = aggregate(tableWorkloads, runs, notes);
    const header = `## tessera vs etcd (${new Date().toISOString()})\n\n${o.rounds} round(s) × ${o.seconds} s after ${o.warmupSeconds} s warm-up (${firstWarmup} s in round 1); ${etcd ? 'etcd ' + (await etcdVersion(etcdBin)) : 'etcd SKIPPED (not installed)'}; ${clusterShape}; values ${VALUE_BYTES} bytes; data on ${fsType ?? 'unknown fs'} (${os.tmpdir()}); medians of rounds; CPU = utime+stime per 1,000 ops; cores busy = CPU seconds of servers and load generators per second of the run; other processes' cores: what the rest of the machine (other engineers' work) kept busy meanwhile, /proc/stat less the two, on a machine with ${os.availableParallelism()} CPU core(s).`;
    const extra = ['apply lag', BIG_TXN, 'data dir', 'leader changes', 'logs'].filter((k) => notes.has(k)).map((k) => `- ${k}: ${notes.get(k) ?? ''}\n`).join('');
    const slow = renderSlowSeconds(runs);
    const md = renderMarkdown(rows, rss, header) + extra + (slow.length ? '\n' + slow.join('\n') + '\n' : '') + (bigTxn ? '\n' + renderBigTxn(bigTxn) : '');
    const json = { options: o, etcd: etcd ? 'ran' : 'skipped', rows, rss, runs, ...(bigTxn ? { bigTxn } : {}), notes: Object.fromEntries(notes) };
    const { jsonPath, mdPath } = writeReports(o.outDir, 'vs-etcd', stamp, json, md);
    log('\n' + md);
    log(`wrote ${jsonPath} and ${mdPath}`);
    if (o.profile) await appendProfiles({ o, tessera, runs, json, jsonPath, mdPath, profileDir, profilesBefore });
    return { jsonPath, mdPath };
  } finally {
    await Promise.all([tessera.stop(), etcd?.stop()]);
  }
}

/** What every load generator of a run gets: the operation, its load and the target's connection. */
function loadSpec(o: VsOptions, t: Target, op: VsOp, concurrency: number, warmupSeconds: number, seconds: number): LoadSpec {
  return { system: t.system, op, concurrency, warmupSeconds, seconds, readKeys: o.readKeys, valueBytes: VALUE_BYTES, ...t.spec };
}

/** The systems to load: tessera (with its main threads under `--profile all`) and etcd when installed. */
function vsTargets(o: VsOptions, tessera: BenchCluster, etcd: EtcdCluster | undefined): Target[] {
  return [
    {
      ...tesseraTarget(tessera),
      ...(o.profile === 'all'
        ? {
            mainThreads: () => {
              const ts = tessera.tservers();
              return { names: ts.map((_, i) => `ts${i}`), pids: ts.map((t) => t.child.pid) };
            },
          }
        : {}),
    },
    ...(etcd ? [{ system: 'etcd' as const, serverPids: () => etcd.pids(), serverNames: () => etcd.members.map((m, i) => `etcd${i}${m.clientUrl === etcd.leaderUrl ? ' (leader)' : ''}`), spec: { etcdUrl: etcd.leaderUrl } }] : []),
  ];
}

/** Preload the keys read workloads read, then wait (bounded) until the leader balancer is quiet. */
async function preloadAndSettle(o: VsOptions, targets: readonly Target[], tessera: BenchCluster, notes: Map<string, string>): Promise<void> {
  if (o.workloads.some((w) => VS_WORKLOADS[w]?.op === 'read')) {
    for (const t of targets) {
      const r = await runLoadgen(t, loadSpec(o, t, 'preload', 64, 0, 0));
      if (r.result.errors > 0) throw new Error(`${t.system} preload of ${o.readKeys} keys had ${r.result.errors} errors: ${r.result.firstError ?? ''}`);
      log(`${t.system}: preloaded ${o.readKeys} keys in ${r.result.seconds.toFixed(1)} s`);
    }
  }
  const settle = await tessera.waitLeadersSettled(LEADERS_QUIET_MS, LEADERS_SETTLE_MAX_MS);
  if (settle.settled) log(`tessera: tablet leadership quiet for ${LEADERS_QUIET_MS / 1000} s (waited ${(settle.waitedMs / 1000).toFixed(1)} s for the leader balancer)`);
  else notes.set('leader balancing', `tablet leadership still moving after ${LEADERS_SETTLE_MAX_MS / 1000} s; the workloads started anyway`);
}

/** Every round of every workload on every system, alternating their order from round to round. */
async function runRounds(o: VsOptions, targets: readonly Target[], tessera: BenchCluster, r: { txnOk: boolean; firstWarmup: number; tableWorkloads: readonly string[] }, notes: Map<string, string>): Promise<VsRun[]> {
  const { txnOk, firstWarmup, tableWorkloads } = r;
  const runs: VsRun[] = [];
  for (let round = 1; round <= o.rounds; round++) {
    for (const w of tableWorkloads) {
      const def = VS_WORKLOADS[w];
      if (!def || (def.op === 'txn' && !txnOk)) continue;
      const ts = targets.filter((t) => !def.tesseraOnly || t.system === 'tessera');
      // A B in odd rounds, B A in even ones: neither system always runs on a "warmer" machine.
      const order = round % 2 === 1 ? ts : [...ts].reverse();
      for (const t of order) {
        const warmup = round === 1 ? firstWarmup : o.warmupSeconds;
        const lg = await runLoadgen(t, { ...loadSpec(o, t, def.op, def.concurrency, warmup, o.seconds), ...(def.sameTablet === true ? { sameTablet: true } : {}) });
        const lag = def.op === 'txn' && t.system === 'tessera' ? await txnApplyLag(tessera, lg, notes) : undefined;
        const r = toRun(round, w, t.system, lg, lag);
        runs.push(r);
        const txnPart = def.op === 'txn' ? `  commit() p50 ${r.commitP50Ms?.toFixed(2) ?? 'n/a'} ms p99 ${r.commitP99Ms?.toFixed(2) ?? 'n/a'} ms  apply lag p50 ${lag?.p50Ms?.toFixed(2) ?? 'n/a'} ms p99 ${lag?.p99Ms?.toFixed(2) ?? 'n/a'} ms (first replica p50 ${lag?.firstP50Ms?.toFixed(2) ?? 'n/a'} ms; ${lag?.complete ?? 0} complete, ${lag?.incomplete ?? 0} incomplete)${r.commitPaths ? `  commits single-tablet/distributed ${r.commitPaths.singleTablet}/${r.commitPaths.distributed} (warm-up ${r.commitPaths.warmupSingleTablet}/${r.commitPaths.warmupDistributed})` : ''}${lag?.stages ? `; stages p50: commit round ${lag.stages.commitRoundP50Ms.toFixed(2)} ms, → first replica ${lag.stages.toFirstP50Ms.toFixed(2)} ms, first → last ${lag.stages.spreadP50Ms.toFixed(2)} ms (other tablet later ${lag.stages.otherTabletP50Ms.toFixed(2)} ms, followers behind ${lag.stages.followersP50Ms.toFixed(2)} ms)` : ''}` : '';
        const secs = r.perSecondSpread ? `  1-s rates ${r.perSecondSpread.min}–${r.perSecondSpread.max} (median ${r.perSecondSpread.median})` : '';
        log(`round ${round} ${w.padEnd(9)} ${t.system.padEnd(7)} ${Math.round(r.opsPerSec).toString().padStart(7)} ops/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  errors ${r.errors}${secs}${txnPart}`);
      }
    }
  }
  return runs;
}

/** The servers' and load generators' peak RSS per system. */
function peakRssOf(targets: readonly Target[], runs: readonly VsRun[]): PeakRss[] {
  return targets.map((t) => {
    const peaks = t.serverPids().map(peakRssBytes);
    const known = peaks.filter((p): p is number => p !== undefined);
    const clients = runs.filter((r) => r.system === t.system).map((r) => r.clientPeakRssBytes ?? 0);
    return {
      system: t.system,
      ...(known.length === peaks.length && known.length > 0 ? { serversMaxBytes: Math.max(...known), serversSumBytes: known.reduce((a, b) => a + b, 0) } : {}),
      ...(clients.length ? { clientsMaxBytes: Math.max(...clients) } : {}),
    };
  });
}

/** The big transaction (bench/big-txn.ts) on the tessera cluster; a failure becomes a note. */
async function bigTxnStep(o: VsOptions, tessera: BenchCluster, notes: Map<string, string>): Promise<BigTxnResult | undefined> {
  const c = await TesseraClient.connect({ masterAddresses: [tessera.masterAddress], timeoutMs: 30_000 });
  try {
    return await runBigTxn(tessera, c, BIG_TXN_TABLE, { rows: o.bigTxnRows, rowBytes: o.bigTxnRowBytes }, log);
  } catch (e) {
    notes.set(BIG_TXN, `failed: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    log(`big-txn ${notes.get(BIG_TXN) ?? ''}`);
    return undefined;
  } finally {
    await c.close().catch(() => undefined);
  }
}

/** Write a run's report as `<prefix>-<stamp>.{json,md}` and as `<prefix>-latest.{json,md}` in outDir. */
export function writeReports(outDir: string, prefix: string, stamp: string, json: unknown, md: string): { jsonPath: string; mdPath: string } {
  const jsonPath = path.join(outDir, `${prefix}-${stamp}.json`);
  const mdPath = path.join(outDir, `${prefix}-${stamp}.md`);
  const text = portablePaths(JSON.stringify(json, null, 2));
  const page = portablePaths(md);
  for (const [f, body] of [[jsonPath, text], [mdPath, page], [path.join(outDir, `${prefix}-latest.json`), text], [path.join(outDir, `${prefix}-latest.md`), page]] as const) fs.writeFileSync(f, body);
  return { jsonPath, mdPath };
}

/**
 * Reports are committed under bench/results: paths of this machine in them (the output directory, a
 * compared build's tree) are written relative to the repository (`bench/results`, `../wt-base`).
 */
export function portablePaths(text: string, root = path.resolve(__dirname, '../..')): string {
  return text.split(`${root}/`).join('').split(`${path.dirname(root)}/`).join('../');
}

/**
 * Create the benchmark table on a fresh tessera cluster and, when transaction workloads are wanted,
 * wait until a probe transaction commits (the master creates the `transactions` table shortly after
 * the tservers register). A failed probe skips those workloads with a note. Answers whether
 * transactions work and how many status tablets the cluster has (they set how well commits batch).
 */
export async function prepareTessera(tessera: BenchCluster, txnWorkloads: readonly string[], notes: Map<string, string>, label = 'tessera'): Promise<{ txnOk: boolean; statusTablets: string }> {
  const client = await TesseraClient.connect({ masterAddresses: [tessera.masterAddress], timeoutMs: 30_000 });
  try {
    let txnOk = false;
    await client.createTable({ name: TABLE, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: TABLE_TABLETS, replicationFactor: REPLICATION_FACTOR });
    if (txnWorkloads.length > 0) {
      const why = await waitForTransactions(client, TABLE, TXN_PROBE_TIMEOUT_MS, TXN_PROBE_RETRY_MS);
      txnOk = why === undefined;
      if (why !== undefined) {
        for (const w of txnWorkloads) notes.set(w, `skipped: a probe transaction failed on ${label} (${why})`);
        log(`${label}: transactions not usable in this build (${why}); ${txnWorkloads.join(', ')} skipped`);
      }
    }
    const statusTablets = await client
      .rpcClient()
      .call(tessera.masterAddress, masterMethods().getTableLocations, { name: TRANSACTIONS_TABLE }, { timeoutMs: 5_000 })
      .then(
        (l) => `${l.tablets?.length ?? 0} status tablet(s)`,
        (e: unknown) => `status tablets unknown (${e instanceof Error ? e.message : String(e)})`,
      );
    return { txnOk, statusTablets };
  } finally {
    await client.close();
  }
}

/** The load generators' view of a tessera bench cluster, with its server processes and work counters. */
export function tesseraTarget(tessera: BenchCluster): Target {
  return {
    system: 'tessera',
    serverPids: () => tessera.servers.map((s) => s.child.pid),
    // master, ts0, ts1, … (BenchCluster starts the master first, then the tservers in order)
    serverNames: () => {
      let t = 0;
      return tessera.servers.map((s) => (s.role === 'master' ? 'master' : `ts${t++}`));
    },
    spec: { masterAddresses: tessera.masterAddress, table: TABLE },
    counters: () => scrapeCounters(tessera.servers.filter((s) => s.role === 'tserver').map((s) => s.webAddress)),
    applyLagConsoles: () => tessera.tservers().map((s) => s.webAddress),
  };
}

/**
 * Apply lag of the transactions a tessera txn run committed in its measured window; undefined (and a
 * note) when the tservers do not serve /api/v1/txn-applies or the window is unknown.
 */
export async function txnApplyLag(c: BenchCluster, r: LoadgenRun, notes: Map<string, string>): Promise<ApplyLagFigures | undefined> {
  if (r.measureStartMicros === undefined || r.measureEndMicros === undefined) return undefined;
  if (r.applies?.lastError !== undefined) notes.set('apply lag reads', `a read of the consoles during a window failed (${r.applies.lastError}); a long window's first transactions may count as incomplete`);
  try {
    return await measureApplyLag(
      c.tservers().map((s) => s.webAddress),
      r.applies?.sinceMicros ?? r.measureStartMicros,
      { replicationFactor: REPLICATION_FACTOR, minTablets: TXN_TABLETS, commitFromMicros: r.measureStartMicros, commitToMicros: r.measureEndMicros },
      undefined,
      r.applies?.acc,
    );
  } catch (e) {
    notes.set('apply lag', `not measured: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
    return undefined;
  }
}

async function etcdVersion(bin: string | undefined): Promise<string> {
  if (!bin) return 'n/a';
  return new Promise((resolve) => {
    const c = spawn(bin, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    c.on('exit', () => resolve(/etcd Version: (\S+)/.exec(out)?.[1] ?? 'unknown version'));
    c.on('error', () => resolve('unknown version'));
  });
}
