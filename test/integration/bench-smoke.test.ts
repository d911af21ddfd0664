/**
 * Smoke runs of the benchmarks, tiny sizes: the side-by-side run (`tessera bench --vs etcd`, ~1 s per
 * workload, 1 round, against tessera and etcd when its binary is installed; a visible skip line
 * otherwise) including the transaction apply lag and a 5 × 64 KiB big transaction, the batch load
 * section with 20,000 rows, and an A/B run of two tessera clusters (`tessera bench ab`, 2 rounds).
 * Checks that the harness runs end to end and that its JSON and Markdown outputs are well formed (every workload row, figures present and not NaN). Never asserts on speed:
 * the figures of a smoke run on a shared machine mean nothing.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findEtcd } from '../../bench/etcd-cluster';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-smoke-'));
const WORKLOADS = ['put-c1', 'put-c16', 'put-c64', 'read-c16', 'txn2-c16', 'txn2-c64'];
const TXN_WORKLOADS = new Set(['txn2-c16', 'txn2-c64']);
const RUN_TIMEOUT_MS = 240_000;
const LOAD_TIMEOUT_MS = 120_000;
const AB_TIMEOUT_MS = 180_000;
const LOAD_ROWS = 20_000;
const HAS_PROC = fs.existsSync('/proc/self/status');

interface Spread {
  median: number;
}
interface Figures {
  rounds: number;
  opsPerSec: Spread;
  commitP50Ms?: Spread;
  commitP99Ms?: Spread;
  applyLag?: { p50Ms?: Spread; p99Ms?: Spread; maxMs?: number; complete: number; incomplete: number; stages?: { txns: number; commitRoundP50Ms: Spread; toFirstP50Ms: Spread; spreadP50Ms: Spread; otherTabletP50Ms: Spread; followersP50Ms: Spread } };
  costPerOp?: Record<string, number>;
  serverKernelShare?: number;
  serverWakeupsPerOp?: number;
  loopDelayP99Ms?: Spread;
  loopDelayMaxMs?: Spread;
}
interface Row {
  workload: string;
  tessera?: Figures;
  etcd?: Figures;
  ratio?: Spread;
  note?: string;
}
interface BigTxn {
  rows: number;
  writeIntentsMs: number;
  commitMs: number;
  commitToAllAppliedMs?: number;
  applyLagMs?: number;
  appliedEverywhere: boolean;
  tservers: Array<{ peakSampledBytes?: number; hwmBytes?: number }>;
}

afterAll(() => {
  fs.rmSync(outDir, { recursive: true, force: true });
});

function runCli(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
    c.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

const isNum = (x: unknown): boolean => typeof x === 'number' && Number.isFinite(x);

describe('bench (smoke)', () => {
  it('bench: a short side-by-side run writes JSON and Markdown with every workload, txn commit and apply-lag figures and the big transaction', async () => {
    const etcd = findEtcd();
    if (!etcd) process.stdout.write('SKIP etcd side of the smoke run: etcd is not installed (.ci/etcd-setup.sh installs it)\n');
    const { code, out } = await runCli(['bench', '--vs', 'etcd', '--seconds', '1', '--warmup', '1', '--first-warmup', '1', '--rounds', '1', '--read-keys', '500', '--big-txn-rows', '5', '--big-txn-row-bytes', '65536', '--profile', 'all', '--out', outDir], RUN_TIMEOUT_MS);
    expect(code, out).toBe(0);
    const json = JSON.parse(fs.readFileSync(path.join(outDir, 'vs-etcd-latest.json'), 'utf8')) as { etcd: string; rows: Row[]; bigTxn?: BigTxn; notes: Record<string, string>; profile?: { file: string; flameGraph?: string; foldedStacks?: string; busyMs: number; areas: { name: string; ms: number }[] } };
    const md = fs.readFileSync(path.join(outDir, 'vs-etcd-latest.md'), 'utf8');
    expect(json.rows.map((r) => r.workload)).toEqual(WORKLOADS);
    expect(json.etcd).toBe(etcd ? 'ran' : 'skipped');
    // The header names the cluster's shape (the master's default: one status tablet).
    expect(md).toContain('tessera: 3 tservers, RF 3, table of 3 tablets, 1 status tablet(s)');
    // Every run counts its completions per whole second of the window (at most its operations).
    const runs = (json as unknown as { runs: Array<{ workload: string; ops: number; perSecond?: number[] }> }).runs;
    expect(runs.length).toBeGreaterThan(0);
    for (const r of runs) {
      expect(Array.isArray(r.perSecond), `${r.workload} per-second counts`).toBe(true);
      expect(r.perSecond!.reduce((a, b) => a + b, 0), `${r.workload} per-second counts`).toBeLessThanOrEqual(r.ops);
    }
    let txnsRan = false;
    for (const r of json.rows) {
      expect(md, `markdown row for ${r.workload}`).toContain(`| ${r.workload} |`);
      if (TXN_WORKLOADS.has(r.workload)) {
        // Either it ran, or it says why it was skipped (transactions not usable in this build).
        expect(r.tessera !== undefined || (r.note ?? '').startsWith('skipped'), `${r.workload}: ${r.note ?? ''}`).toBe(true);
        expect(r.etcd).toBeUndefined();
        if (!r.tessera) continue;
        txnsRan = true;
        expect(isNum(r.tessera.commitP50Ms?.median) && isNum(r.tessera.commitP99Ms?.median), `${r.workload} commit() latency`).toBe(true);
        const lag = r.tessera.applyLag;
        expect(lag, `${r.workload} apply lag (${json.notes['apply lag'] ?? ''})`).toBeDefined();
        expect(lag?.complete, `${r.workload}: some transactions applied on every replica`).toBeGreaterThan(0);
        expect(isNum(lag?.p50Ms?.median) && isNum(lag?.p99Ms?.median) && isNum(lag?.maxMs), `${r.workload} apply lag figures`).toBe(true);
        // Its stages, from the status tablets' commit points.
        expect(lag?.stages?.txns, `${r.workload} apply lag stages`).toBeGreaterThan(0);
        expect(isNum(lag?.stages?.commitRoundP50Ms.median) && isNum(lag?.stages?.toFirstP50Ms.median) && isNum(lag?.stages?.spreadP50Ms.median) && isNum(lag?.stages?.otherTabletP50Ms.median) && isNum(lag?.stages?.followersP50Ms.median), `${r.workload} stage figures`).toBe(true);
        expect(md).toContain(`| apply lag by stage (tessera) |`);
        // Counted work per transaction: about one commit each, intents written. Inexact in a 1 s
        // window: transactions in flight at its edges, and the servers' counters are scraped over HTTP
        // while the load runs, so they cover a slightly different second (0.48 seen in one CI run).
        const cost = r.tessera.costPerOp ?? {};
        expect(cost['RPCs: CommitTransaction'], `${r.workload} cost per transaction: ${JSON.stringify(cost)}`).toBeGreaterThan(0.2);
        expect(cost['RPCs: CommitTransaction'], `${r.workload} cost per transaction: ${JSON.stringify(cost)}`).toBeLessThan(2);
        expect(cost['IntentsDB puts'], `${r.workload} intents per transaction`).toBeGreaterThan(0);
        // The worst tserver's event-loop delay over the window, read from the same scrapes.
        expect(isNum(r.tessera.loopDelayP99Ms?.median) && isNum(r.tessera.loopDelayMaxMs?.median), `${r.workload} event-loop delay`).toBe(true);
        expect(r.tessera.loopDelayMaxMs!.median).toBeGreaterThanOrEqual(r.tessera.loopDelayP99Ms!.median);
        expect(md).toContain('per completed operation');
        continue;
      }
      expect(r.tessera?.rounds, `${r.workload} tessera`).toBe(1);
      expect(r.tessera?.opsPerSec.median, `${r.workload} tessera did some ops`).toBeGreaterThan(0);
      // Where the servers' CPU went (/proc): a kernel share in [0, 1] and wake-ups per op, for each system.
      const k = r.tessera?.serverKernelShare;
      expect(k !== undefined && k >= 0 && k <= 1, `${r.workload} tessera kernel share ${String(k)}`).toBe(true);
      expect(r.tessera?.serverWakeupsPerOp, `${r.workload} tessera wake-ups per op`).toBeGreaterThan(0);
      // ... and by kind of thread: the event loops did work in every workload.
      const byThread = (r.tessera as { serverCpuMsPerOpByThread?: Record<string, number> } | undefined)?.serverCpuMsPerOpByThread;
      expect(byThread?.['main'], `${r.workload} tessera event-loop CPU per op`).toBeGreaterThan(0);
      if (etcd) {
        expect(r.etcd?.serverWakeupsPerOp, `${r.workload} etcd wake-ups per op`).toBeGreaterThan(0);
        expect(r.etcd?.rounds, `${r.workload} etcd`).toBe(1);
        expect(r.ratio?.median, `${r.workload} ratio`).toBeGreaterThan(0);
      } else {
        expect(r.etcd).toBeUndefined();
      }
    }
    expect(md).toContain('peak RSS');
    expect(md).toContain('| servers, per operation | tessera CPU ms | kernel share | thread wake-ups |');
    expect(md).toContain('| tessera server CPU ms per operation, by thread | event loops (main threads: JavaScript) |');
    // Leadership changes while the load ran are counted from the tservers' info logs (any number).
    expect(json.notes['leader changes']).toMatch(/^\d+ tablet leadership change\(s\) in tessera while the workloads ran \(big-txn/);
    expect(md).toContain('- leader changes: ');
    if (txnsRan) {
      expect(md).toContain('| transactions (tessera) |');
      expect(md).not.toMatch(/\| NaN|NaN \|/);
      const b = json.bigTxn;
      expect(b, `big transaction (${json.notes['big-txn'] ?? ''})`).toBeDefined();
      expect(b?.rows).toBe(5);
      expect(isNum(b?.writeIntentsMs) && isNum(b?.commitMs) && isNum(b?.applyLagMs) && isNum(b?.commitToAllAppliedMs), 'big-txn times').toBe(true);
      expect(b?.appliedEverywhere).toBe(true);
      expect(b?.tservers).toHaveLength(3);
      if (HAS_PROC) for (const t of b?.tservers ?? []) expect(t.peakSampledBytes ?? 0, 'big-txn tserver RSS').toBeGreaterThan(0);
      expect(md).toContain('Big transaction');
    }
    // --profile: tserver 0's CPU profile, its tables appended to the report.
    expect(json.profile?.busyMs, 'profile busy time').toBeGreaterThan(0);
    expect(fs.existsSync(path.join(outDir, json.profile?.file ?? 'none')), 'the profile file').toBe(true);
    expect(json.profile?.areas.some((a) => a.name === 'tessera raft/' && a.ms > 0), 'raft code in the profile').toBe(true);
    expect(md).toContain("### Where tserver 0 spent its time (V8 CPU profile of its main thread, whole run)");
    // ... and its flame graph: the page, and folded stacks whose frames include tessera's Raft code.
    const flame = path.join(outDir, json.profile?.flameGraph ?? 'none');
    expect(fs.readFileSync(flame, 'utf8'), 'the flame graph page').toContain('flamegraph.default()');
    const folded = fs.readFileSync(path.join(outDir, json.profile?.foldedStacks ?? 'none'), 'utf8');
    expect(folded.split('\n').some((l) => /^all;.* raft\/[^;]*\.js:\d+ \d+$/.test(l)), 'raft frames in the folded stacks').toBe(true);
    expect(md).toContain(`Flame graph: \`${json.profile?.flameGraph ?? 'none'}\``);
    expect(md).toContain('| tessera function (inclusive: itself and what it calls) | where | ms | share |');
    // --profile all: every tserver's profile, and each tessera window's busy time per second from them.
    const all = json as unknown as { profiles?: Array<{ server: string; busyMs: number; file: string }>; busyTimeline?: Array<{ label: string; servers: string[]; medianBusyMs: number[] }> };
    expect(all.profiles?.map((p) => p.server)).toEqual(['ts0', 'ts1', 'ts2']);
    for (const p of all.profiles ?? []) {
      expect(p.busyMs, `${p.server} busy time`).toBeGreaterThan(0);
      expect(fs.existsSync(path.join(outDir, p.file)), `${p.server}'s profile file`).toBe(true);
      expect(md).toContain(`### Where tserver ${p.server.slice(2)} spent its time (V8 CPU profile of its main thread, whole run)`);
    }
    // (A 1-s window can end short of one whole second: such a window has no seconds to show.)
    const tesseraWindows = runs.filter((r) => (r as { system?: string }).system === 'tessera' && (r.perSecond?.length ?? 0) > 0).length;
    expect(tesseraWindows, 'tessera windows with a whole second').toBeGreaterThan(0);
    expect(all.busyTimeline?.length, 'a busy timeline per tessera window with a whole second').toBe(tesseraWindows);
    for (const w of all.busyTimeline ?? []) {
      expect(w.servers).toEqual(['ts0', 'ts1', 'ts2']);
      expect(w.medianBusyMs.some((x) => x > 0), `${w.label}: the servers were busy in its seconds`).toBe(true);
    }
    // With /proc, each main thread's on-CPU ms stand beside its busy ms.
    expect(md).toContain(
      HAS_PROC
        ? '| main threads busy per second (V8 profiles of every tserver) | second | ops | of the median | ts0 busy / on CPU ms | ts1 busy / on CPU ms | ts2 busy / on CPU ms |'
        : '| main threads busy per second (V8 profiles of every tserver) | second | ops | of the median | ts0 busy ms | ts1 busy ms | ts2 busy ms |',
    );
  }, RUN_TIMEOUT_MS + 30_000);

  it('bench: the load section loads every row with upsertMany and reports rows/s', async () => {
    const { code, out } = await runCli(['bench', 'load', '--rows', String(LOAD_ROWS), '--out', outDir], LOAD_TIMEOUT_MS);
    expect(code, out).toBe(0);
    expect(out).toContain('rows/s');
    const r = JSON.parse(fs.readFileSync(path.join(outDir, 'load-latest.json'), 'utf8')) as { rowsLoaded: number; verifiedRows?: number; seconds: number; rowsPerSec: number; error?: string };
    expect(r.error).toBeUndefined();
    expect(r.rowsLoaded).toBe(LOAD_ROWS);
    expect(r.verifiedRows).toBe(LOAD_ROWS);
    expect(isNum(r.seconds) && isNum(r.rowsPerSec) && r.rowsPerSec > 0).toBe(true);
  }, LOAD_TIMEOUT_MS + 30_000);

  it('bench: an A/B run of two tessera clusters pairs their runs by round, alternating the order', async () => {
    const abDir = path.join(outDir, 'ab');
    const { code, out } = await runCli(['bench', 'ab', '--rounds', '2', '--seconds', '1', '--warmup', '0', '--first-warmup', '1', '--workloads', 'put-c16,txn2-c16', '--b-node-option=--max-semi-space-size=32', '--host-base-a', '212', '--host-base-b', '216', '--out', abDir], AB_TIMEOUT_MS);
    expect(code, out).toBe(0);
    const json = JSON.parse(fs.readFileSync(path.join(abDir, 'ab-latest.json'), 'utf8')) as {
      rows: Array<{ workload: string; rounds: number; a: { opsPerSec?: number; cpuMsPerOp?: number; applyLagP99Ms?: number }; b: { opsPerSec?: number; cpuMsPerOp?: number }; opsRatio?: { median: number; rounds: number; signP: number }; cpuRatio?: { rounds: number }; loopCpuRatio?: { rounds: number } }>;
      runs: Array<{ round: number; workload: string; side: string; ops: number }>;
    };
    expect(json.rows.map((r) => r.workload)).toEqual(['put-c16', 'txn2-c16']);
    for (const r of json.rows) {
      expect(r.rounds, r.workload).toBe(2);
      expect(r.opsRatio?.rounds, `${r.workload} ratio`).toBe(2);
      expect(isNum(r.opsRatio?.median) && r.opsRatio!.median > 0, `${r.workload} ratio ${String(r.opsRatio?.median)}`).toBe(true);
      expect(isNum(r.a.opsPerSec) && isNum(r.b.opsPerSec), r.workload).toBe(true);
      if (HAS_PROC) expect(r.cpuRatio?.rounds, `${r.workload} CPU ratio`).toBe(2);
      if (HAS_PROC) expect(r.loopCpuRatio?.rounds, `${r.workload} event-loop CPU ratio`).toBe(2);
    }
    expect(isNum(json.rows[1]?.a.applyLagP99Ms), 'txn apply lag of A').toBe(true);
    // A B in round 1, B A in round 2, for each workload; every run did some operations.
    const order = (round: number, w: string): string => json.runs.filter((r) => r.round === round && r.workload === w).map((r) => r.side).join('');
    expect([order(1, 'put-c16'), order(2, 'put-c16'), order(1, 'txn2-c16'), order(2, 'txn2-c16')]).toEqual(['AB', 'BA', 'AB', 'BA']);
    expect(json.runs.every((r) => r.ops > 0)).toBe(true);
    const md = fs.readFileSync(path.join(abDir, 'ab-latest.md'), 'utf8');
    expect(md).toContain('- B: this build, node options --max-semi-space-size=32');
    expect(md).toContain('| txn2-c16 | 2 |');
  }, AB_TIMEOUT_MS + 30_000);
});
