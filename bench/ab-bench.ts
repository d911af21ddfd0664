/**
 * `npm run bench ab -- [options]` / `tessera bench ab [options]`: two tessera clusters side by side in
 * one run, A and B, to tell whether a change makes tessera faster. On this machine the speed of the
 * same build moves by ±10 % from one minute to the next, so two separate runs cannot show a 5 %
 * change; here the two clusters are up at once and each round runs A and B back to back (A B, then
 * B A, …), and the report gives B's figure over A's of the same round, with a sign test over the rounds.
 *
 * A and B differ by build (`--b-tree DIR`: another checkout with its own `npx tsc -b` output, e.g. a
 * `git worktree` of the base commit), by tserver flags (`--b-tserver-flag name=value`) or by Node.js
 * options of the tservers (`--b-node-option --max-semi-space-size=64`); the same for `--a-…`. With no
 * difference it is an A/A run, which shows the noise. The load generators are this build's
 * (bench/vs-loadgen.ts) for both sides, so only the servers differ. Workloads are those of
 * `--vs etcd` (bench/vs-etcd.ts VS_WORKLOADS), default txn2-c64. Nothing here asserts on speed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import { makeDirs } from '../common/fs-dirs';
import { BenchCluster } from './bench-cluster';
import { pairRuns, renderAbMarkdown, type AbLabel, type AbRun } from './ab-stats';
import { filesystemType } from './proc-stats';
import {
  FIRST_WARMUP_SECONDS_DEFAULT,
  LEADERS_QUIET_MS,
  LEADERS_SETTLE_MAX_MS,
  log,
  prepareTessera,
  runLoadgen,
  toRun,
  tesseraTarget,
  tserverFlagArg,
  TSERVERS,
  txnApplyLag,
  VALUE_BYTES,
  VS_WORKLOADS,
  writeReports,
  type Target,
} from './vs-etcd';
import type { LoadSpec } from './vs-loadgen';

export interface AbSide {
  label: AbLabel;
  /** Root of the build whose servers this side runs (holds dist/cli/main.js). */
  tree: string;
  tserverFlags: string[];
  /** Node.js options of this side's tservers (e.g. --max-semi-space-size=64). */
  nodeOptions: string[];
  hostBase: number;
}

export interface AbOptions {
  a: AbSide;
  b: AbSide;
  workloads: string[];
  rounds: number;
  seconds: number;
  warmupSeconds: number;
  firstWarmupSeconds: number;
  readKeys: number;
  outDir: string;
  /**
   * Whose load generators (bench/vs-loadgen.ts, with the client library) drive each side: this
   * build's for both (default: only the servers differ), or each side's own tree's (`each-tree`: to
   * compare a change to the client, e.g. how it batches requests).
   */
  loadGenerators: 'this-build' | 'each-tree';
}

const THIS_TREE = path.resolve(__dirname, '../..');
const SERVER_ENTRY = path.join('dist', 'cli', 'main.js');
/** Ports when loopback aliases do not work: each side its own range. */
const NO_ALIAS_PORT_SHIFT: Record<AbLabel, number> = { A: 28000 - 7000, B: 28500 - 7000 };
const OPTIONS = ['--load-generators', '--a-tree', '--b-tree', '--a-tserver-flag', '--b-tserver-flag', '--a-node-option', '--b-node-option', '--host-base-a', '--host-base-b', '--workloads', '--rounds', '--seconds', '--warmup', '--first-warmup', '--read-keys', '--out'];

function checkTree(dir: string, option: string): string {
  const abs = path.resolve(dir);
  if (!fs.existsSync(path.join(abs, SERVER_ENTRY))) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${option} ${dir}: no ${SERVER_ENTRY} there (build that checkout first: npm ci && npx tsc -b)`);
  return abs;
}

export function parseAbArgs(argv: readonly string[]): AbOptions {
  const side = (label: AbLabel, hostBase: number): AbSide => ({ label, tree: THIS_TREE, tserverFlags: [], nodeOptions: [], hostBase });
  const o: AbOptions = { a: side('A', 70), b: side('B', 80), workloads: ['txn2-c64'], rounds: 6, seconds: 5, warmupSeconds: 2, firstWarmupSeconds: FIRST_WARMUP_SECONDS_DEFAULT, readKeys: 10_000, outDir: path.join(THIS_TREE, 'bench', 'results'), loadGenerators: 'this-build' };
  const num = (name: string, v: string | undefined, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const n = Number(v);
    if (v === undefined || !Number.isFinite(n) || n < min || n > max) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${name} needs a number in [${min}, ${max}], got '${v ?? ''}'`);
    return n;
  };
  const flagsRaw: Record<AbLabel, string[]> = { A: [], B: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const [k, inline] = arg.startsWith('--') && eq > 0 ? [arg.slice(0, eq), arg.slice(eq + 1)] : [arg, undefined];
    if (!OPTIONS.includes(k)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unknown option '${arg}' (known: ${OPTIONS.join(' ')})`);
    const v = inline ?? argv[++i];
    if (v === undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${k} needs a value`);
    const s = k.startsWith('--a-') || k === '--host-base-a' ? o.a : o.b;
    switch (k) {
      case '--a-tree':
      case '--b-tree':
        s.tree = checkTree(v, k);
        break;
      case '--a-tserver-flag':
      case '--b-tserver-flag':
        flagsRaw[s.label].push(v);
        break;
      case '--a-node-option':
      case '--b-node-option':
        if (!v.startsWith('--')) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${k} takes a Node.js option such as --max-semi-space-size=64, got '${v}'`);
        s.nodeOptions.push(v);
        break;
      case '--host-base-a':
      case '--host-base-b':
        s.hostBase = Math.floor(num(k, v, 1, 250));
        break;
      case '--workloads': {
        const ws = v.split(',').map((x) => x.trim()).filter(Boolean);
        const bad = ws.filter((w) => !VS_WORKLOADS[w]);
        if (bad.length > 0 || ws.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--workloads: unknown '${bad.join(',')}' (known: ${Object.keys(VS_WORKLOADS).join(', ')})`);
        o.workloads = ws;
        break;
      }
      case '--rounds': o.rounds = Math.floor(num(k, v, 1, 1000)); break;
      case '--seconds': o.seconds = num(k, v, 0.5); break;
      case '--warmup': o.warmupSeconds = num(k, v, 0); break;
      case '--first-warmup': o.firstWarmupSeconds = num(k, v, 0); break;
      case '--read-keys': o.readKeys = Math.floor(num(k, v, 1)); break;
      case '--out': o.outDir = path.resolve(v); break;
      case '--load-generators':
        if (v !== 'this-build' && v !== 'each-tree') throw new DbError(ErrorCode.INVALID_ARGUMENT, `--load-generators: 'this-build' or 'each-tree', got '${v}'`);
        o.loadGenerators = v;
        break;
    }
  }
  // Flags are checked against this build's registry; another build may know flags this one does not,
  // and its servers then say so themselves when they start.
  for (const s of [o.a, o.b]) s.tserverFlags = flagsRaw[s.label].map((f) => (s.tree === THIS_TREE ? tserverFlagArg(f) : `--${f.replace(/^--/, '')}`));
  // Each side has 3 hosts (master with the first tserver, then the other tservers).
  if (Math.abs(o.a.hostBase - o.b.hostBase) < TSERVERS) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--host-base-a ${o.a.hostBase} and --host-base-b ${o.b.hostBase} overlap: they must be at least ${TSERVERS} apart`);
  if (o.a.hostBase + TSERVERS - 1 > 254 || o.b.hostBase + TSERVERS - 1 > 254) throw new DbError(ErrorCode.INVALID_ARGUMENT, `a host base leaves no room for ${TSERVERS} hosts below 127.0.0.255`);
  return o;
}

/** What sets a side apart, for the report (its build, flags and Node.js options). */
export function describeSide(s: AbSide): string {
  const parts = [s.tree === THIS_TREE ? 'this build' : `build in ${s.tree}`];
  if (s.tserverFlags.length > 0) parts.push(`tserver flags ${s.tserverFlags.join(' ')}`);
  if (s.nodeOptions.length > 0) parts.push(`node options ${s.nodeOptions.join(' ')}`);
  return parts.join(', ');
}

function sameSetup(a: AbSide, b: AbSide): boolean {
  return a.tree === b.tree && a.tserverFlags.join(' ') === b.tserverFlags.join(' ') && a.nodeOptions.join(' ') === b.nodeOptions.join(' ');
}

// Long by design (docs/conventions.md): a benchmark's run in the order its report prints, phase after phase.
export async function runAb(o: AbOptions): Promise<{ jsonPath: string; mdPath: string; runs: AbRun[] }> {
  const sides = [o.a, o.b];
  const clusters = new Map<AbLabel, BenchCluster>(sides.map((s) => [s.label, new BenchCluster()]));
  const notes = new Map<string, string>();
  const cluster = (l: AbLabel): BenchCluster => clusters.get(l)!;
  try {
    const firstWarmup = Math.max(o.warmupSeconds, o.firstWarmupSeconds);
    log(`A/B: ${o.rounds} round(s), ${o.warmupSeconds} s warm-up (${firstWarmup} s in round 1) + ${o.seconds} s per run, workloads ${o.workloads.join(', ')}`);
    for (const s of sides) log(`${s.label}: ${describeSide(s)} (127.0.0.${s.hostBase}+)`);
    if (sameSetup(o.a, o.b)) log('A and B are set up the same: an A/A run, which measures the noise');
    const fsType = filesystemType(os.tmpdir());
    if (fsType === 'tmpfs' || fsType === 'ramfs') notes.set('data dir', `WARNING: ${os.tmpdir()} is ${fsType}: fsync is free, figures are not on-disk figures (set TMPDIR)`);
    makeDirs(o.outDir, 'output directory');
    const txnWorkloads = o.workloads.filter((w) => VS_WORKLOADS[w]?.op === 'txn');
    const txnOk = new Map<AbLabel, boolean>();
    const targets = new Map<AbLabel, Target>();
    for (const s of sides) {
      const c = cluster(s.label);
      await c.start(TSERVERS, s.hostBase, ['--durable_wal_write=true', ...s.tserverFlags], {
        noAliasPortShift: NO_ALIAS_PORT_SHIFT[s.label],
        tserverNodeArgs: () => s.nodeOptions,
        logLevel: 'info',
        cli: path.join(s.tree, SERVER_ENTRY),
      });
      const prep = await prepareTessera(c, txnWorkloads, notes, s.label);
      txnOk.set(s.label, prep.txnOk);
      notes.set(`${s.label} shape`, `1 master + ${TSERVERS} tservers, RF 3, ${prep.statusTablets}`);
      targets.set(s.label, o.loadGenerators === 'each-tree' ? { ...tesseraTarget(c), loadgenScript: path.join(s.tree, 'dist', 'bench', 'vs-loadgen.js') } : tesseraTarget(c));
      log(`${s.label}: up (master ${c.masterAddress}, ${prep.statusTablets})`);
    }
    const base = (t: Target, op: LoadSpec['op'], concurrency: number, warmupSeconds: number, seconds: number): LoadSpec => ({ system: t.system, op, concurrency, warmupSeconds, seconds, readKeys: o.readKeys, valueBytes: VALUE_BYTES, ...t.spec });
    if (o.workloads.some((w) => VS_WORKLOADS[w]?.op === 'read')) {
      for (const s of sides) {
        const r = await runLoadgen(targets.get(s.label)!, base(targets.get(s.label)!, 'preload', 64, 0, 0));
        if (r.result.errors > 0) throw new Error(`${s.label}: preload of ${o.readKeys} keys had ${r.result.errors} errors: ${r.result.firstError ?? ''}`);
      }
    }
    for (const s of sides) {
      const settle = await cluster(s.label).waitLeadersSettled(LEADERS_QUIET_MS, LEADERS_SETTLE_MAX_MS);
      if (!settle.settled) notes.set(`${s.label} leader balancing`, `tablet leadership still moving after ${LEADERS_SETTLE_MAX_MS / 1000} s; the workloads started anyway`);
    }
    const loadStartMs = Date.now();
    const runs: AbRun[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      for (const w of o.workloads) {
        const def = VS_WORKLOADS[w]!;
        if (def.op === 'txn' && !(txnOk.get('A') && txnOk.get('B'))) continue;
        const order = round % 2 === 1 ? sides : [...sides].reverse();
        for (const s of order) {
          const t = targets.get(s.label)!;
          const lg = await runLoadgen(t, base(t, def.op, def.concurrency, round === 1 ? firstWarmup : o.warmupSeconds, o.seconds));
          const lag = def.op === 'txn' ? await txnApplyLag(cluster(s.label), lg, notes) : undefined;
          const r = toRun(round, w, t.system, lg, lag);
          runs.push({
            round,
            workload: w,
            side: s.label,
            ops: r.ops,
            errors: r.errors,
            opsPerSec: r.opsPerSec,
            p50Ms: r.p50Ms,
            p99Ms: r.p99Ms,
            ...(r.serverCpuSeconds !== undefined ? { serverCpuSeconds: r.serverCpuSeconds } : {}),
            ...(r.serverCpuByThread !== undefined ? { eventLoopCpuSeconds: r.serverCpuByThread.main } : {}),
            ...(lag?.p99Ms !== undefined ? { applyLagP99Ms: lag.p99Ms } : {}),
          });
          const cpu = r.serverCpuSeconds !== undefined && r.ops > 0 ? `  CPU ${((r.serverCpuSeconds * 1000) / r.ops).toFixed(3)} ms/op` : '';
          log(`round ${round} ${w.padEnd(9)} ${s.label} ${Math.round(r.opsPerSec).toString().padStart(7)} ops/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms${cpu}  errors ${r.errors}${r.firstError ? ` (first: ${r.firstError})` : ''}`);
        }
      }
    }
    const loadEndMs = Date.now();
    for (const s of sides) {
      const changes = cluster(s.label).leaderChangesBetween(loadStartMs, loadEndMs);
      if (changes > 0) notes.set(`${s.label} leader changes`, `${changes} tablet leadership change(s) while the workloads ran (each stalls a tablet: read the ratios of those rounds with care)`);
    }
    const rows = pairRuns(o.workloads, runs);
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const header = `## tessera A/B (${new Date().toISOString()})\n\n- A: ${describeSide(o.a)}\n- B: ${describeSide(o.b)}\n- ${o.rounds} round(s) × ${o.seconds} s after ${o.warmupSeconds} s warm-up (${firstWarmup} s in round 1); each side ${notes.get('A shape') ?? ''}; values ${VALUE_BYTES} bytes; data on ${fsType ?? 'unknown fs'}; ${os.availableParallelism()} CPU core(s); ${o.loadGenerators === 'each-tree' ? "each side's load generators (and client) from its own build" : 'load generators of this build for both sides'}${sameSetup(o.a, o.b) ? '\n- A/A run: A and B are set up the same, so the ratios show the noise' : ''}`;
    const extra = [...notes].filter(([k]) => !k.endsWith('shape')).map(([k, v]) => `- ${k}: ${v}\n`).join('');
    const md = renderAbMarkdown(rows, runs, header) + (extra ? '\n' + extra : '');
    const { jsonPath, mdPath } = writeReports(o.outDir, 'ab', stamp, { options: o, rows, runs, notes: Object.fromEntries(notes) }, md);
    log('\n' + md);
    log(`wrote ${jsonPath} and ${mdPath}`);
    return { jsonPath, mdPath, runs };
  } finally {
    await Promise.all([...clusters.values()].map((c) => c.stop()));
  }
}
