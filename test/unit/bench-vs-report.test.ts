/**
 * The benchmarks' pure parts: the side-by-side aggregation (medians over rounds, ratios paired by
 * round, CPU per 1,000 ops), the apply-lag join of the tservers' txn-applies records, the big-txn and
 * load renderings, and section option parsing.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BenchCluster } from '../../bench/bench-cluster';
import { ApplyLagAccumulator, ApplyLagCollector, applyLagOf, measureApplyLag, parseApplies, parseCommits, type ApplyRecord, type CommitRecord } from '../../bench/apply-lag';
import { BIG_TXN_TARGETS, renderBigTxn } from '../../bench/big-txn';
import { LOAD_DEFAULTS, renderLoad } from '../../bench/load-bench';
import { checkSectionArgs, sectionArgs, sectionNumber } from '../../bench/section-args';
import { parseVsArgs, portablePaths } from '../../bench/vs-etcd';
import { aggregate, perSecondSpread, renderMarkdown, spread, type VsRun } from '../../bench/vs-report';
import { SecondCounter } from '../../bench/vs-loadgen';

const run = (round: number, system: 'tessera' | 'etcd', opsPerSec: number, cpu?: number): VsRun => ({
  round,
  workload: 'put-c64',
  system,
  ops: opsPerSec * 10,
  errors: 0,
  seconds: 10,
  opsPerSec,
  p50Ms: 1,
  p99Ms: 2,
  ...(cpu !== undefined ? { serverCpuSeconds: cpu } : {}),
});

describe('bench vs-report', () => {
  it('bench report: median of an even count is the mean of the middle two', () => {
    expect(spread([4, 1, 3, 2])).toEqual({ median: 2.5, min: 1, max: 4 });
    // 1-second rates: completions per whole second of the window, the partial last second left out.
    const c = new SecondCounter(1_000);
    for (const t of [1_000, 1_500, 1_999, 2_000, 3_700, 3_999, 4_200]) c.add(t);
    c.add(900); // before the window: not counted
    expect(c.counts(4_500)).toEqual([3, 1, 2]);
    expect(c.counts(1_800)).toEqual([]);
    expect(new SecondCounter(0).counts(3_000)).toEqual([0, 0, 0]); // nothing completed: a stall shows as zeros
    expect(perSecondSpread([3, 1, 2])).toEqual({ median: 2, min: 1, max: 3 });
    expect(perSecondSpread([5])).toBeUndefined();
    expect(perSecondSpread(undefined)).toBeUndefined();
  });

  it('bench report: ratio pairs the systems by round, not by sorted position', () => {
    const runs = [run(1, 'tessera', 100), run(1, 'etcd', 50), run(2, 'tessera', 300), run(2, 'etcd', 300), run(3, 'tessera', 90), run(3, 'etcd', 100)];
    const [row] = aggregate(['put-c64'], runs);
    expect(row?.ratio).toEqual({ median: 1, min: 0.9, max: 2 });
    expect(row?.tessera?.opsPerSec.median).toBe(100);
  });

  it('bench report: CPU per 1,000 ops is total CPU over total ops, and n/a when a round lacks it', () => {
    const [ok] = aggregate(['put-c64'], [run(1, 'tessera', 100, 2), run(2, 'tessera', 300, 2)]);
    expect(ok?.tessera?.serverCpuSecPer1kOps).toBeCloseTo((4 / 4000) * 1000);
    const [partial] = aggregate(['put-c64'], [run(1, 'tessera', 100, 2), run(2, 'tessera', 300)]);
    expect(partial?.tessera?.serverCpuSecPer1kOps).toBeUndefined();
    expect(renderMarkdown([partial!], [], '# t')).toContain('n/a');
  });

  it('bench report: cores busy is server + load-generator CPU per wall second, median over rounds', () => {
    const withClient = (r: VsRun, client: number): VsRun => ({ ...r, clientCpuSeconds: client });
    // 10 s rounds: (12 + 3) / 10 = 1.5, (16 + 4) / 10 = 2.0, (8 + 2) / 10 = 1.0 cores.
    const [row] = aggregate(['put-c64'], [withClient(run(1, 'tessera', 100, 12), 3), withClient(run(2, 'tessera', 100, 16), 4), withClient(run(3, 'tessera', 100, 8), 2)]);
    expect(row?.tessera?.coresBusy).toEqual({ median: 1.5, min: 1, max: 2 });
    expect(renderMarkdown([row!], [], '# t')).toContain('| 1.50 / n/a |');
    // A round without a client CPU sample: no figure rather than a low one.
    const [partial] = aggregate(['put-c64'], [withClient(run(1, 'tessera', 100, 12), 3), run(2, 'tessera', 100, 16)]);
    expect(partial?.tessera?.coresBusy).toBeUndefined();
  });

  it('bench report: kernel share and thread wake-ups per op are sums over rounds, in their own table, n/a when a round lacks them', () => {
    const timed = (r: VsRun, sys: number, wakeups: number): VsRun => ({ ...r, serverSystemCpuSeconds: sys, serverWakeups: wakeups });
    // 1,000 + 3,000 ops; CPU 2 + 2 s of which 0.5 + 1.5 s in the kernel; 10,000 + 2,000 wake-ups.
    const [row] = aggregate(['put-c64'], [timed(run(1, 'tessera', 100, 2), 0.5, 10_000), timed(run(2, 'tessera', 300, 2), 1.5, 2_000), timed(run(1, 'etcd', 100, 1), 0.1, 400)]);
    expect(row?.tessera?.serverKernelShare).toBeCloseTo(0.5);
    expect(row?.tessera?.serverWakeupsPerOp).toBeCloseTo(3);
    expect(row?.etcd?.serverKernelShare).toBeCloseTo(0.1);
    expect(row?.etcd?.serverWakeupsPerOp).toBeCloseTo(0.4);
    const md = renderMarkdown([row!], [], '# t');
    expect(md).toContain('| servers, per operation | tessera CPU ms | kernel share | thread wake-ups | cores busy by process | event-loop delay p99 / max ms | etcd CPU ms | kernel share | thread wake-ups | cores busy by process |');
    expect(md).toContain('| put-c64 | 1.000 | 50 % | 3.0 | n/a | n/a | 1.000 | 10 % | 0.4 | n/a |');
    // A round without the figures: none rather than a partial sum.
    const [partial] = aggregate(['put-c64'], [timed(run(1, 'tessera', 100, 2), 0.5, 10_000), run(2, 'tessera', 300, 2)]);
    expect(partial?.tessera?.serverKernelShare).toBeUndefined();
    expect(partial?.tessera?.serverWakeupsPerOp).toBeUndefined();
    expect(renderMarkdown([partial!], [], '# t')).not.toContain('| servers, per operation |');
  });

  it('bench report: server CPU by kind of thread is per operation over all rounds, with shares; none when a round lacks it', () => {
    const threads = (r: VsRun, main: number, rocksdb: number, other: number): VsRun => ({ ...r, serverCpuByThread: { main, rocksdb, other } });
    // 2,000 ops in two rounds: main 1.2 + 0.8 s, rocksdb 0.1 + 0.1 s, other 0.5 + 0.3 s → 1, 0.1 and 0.4 ms per op.
    const [row] = aggregate(['put-c64'], [threads(run(1, 'tessera', 100, 1.8), 1.2, 0.1, 0.5), threads(run(2, 'tessera', 100, 1.2), 0.8, 0.1, 0.3)]);
    const t = row?.tessera?.serverCpuMsPerOpByThread;
    expect([t?.main, t?.rocksdb, t?.other].map((x) => Number(x?.toFixed(3)))).toEqual([1, 0.1, 0.4]);
    const md = renderMarkdown([row!], [], '# t');
    expect(md).toContain('| tessera server CPU ms per operation, by thread | event loops (main threads: JavaScript) |');
    expect(md).toContain('| put-c64 | 1.000 (67 %) | 0.100 (7 %) | 0.400 (27 %) |');
    const [partial] = aggregate(['put-c64'], [threads(run(1, 'tessera', 100, 1.8), 1.2, 0.1, 0.5), run(2, 'tessera', 100, 1.2)]);
    expect(partial?.tessera?.serverCpuMsPerOpByThread).toBeUndefined();
    expect(renderMarkdown([partial!], [], '# t')).not.toContain('by thread');
  });

  it('bench report: cores busy by process is the CPU of each server over all rounds per second measured, none when a round lacks it', () => {
    const procs = (r: VsRun, master: number, ts: number[]): VsRun => ({ ...r, serverSystemCpuSeconds: 0, serverWakeups: 0, serverCpuByProcess: [{ name: 'master', seconds: master }, ...ts.map((seconds, i) => ({ name: `ts${i}`, seconds }))] });
    // Two 10 s rounds: master 0.2 + 0.4 s, ts0 6 + 8 s, ts1 2 + 2 s → 0.03, 0.70 and 0.20 cores.
    const [row] = aggregate(['put-c64'], [procs(run(1, 'tessera', 100, 8.2), 0.2, [6, 2]), procs(run(2, 'tessera', 100, 10.4), 0.4, [8, 2])]);
    expect(row?.tessera?.serverCoresByProcess?.map((p) => [p.name, Number(p.cores.toFixed(2))])).toEqual([
      ['master', 0.03],
      ['ts0', 0.7],
      ['ts1', 0.2],
    ]);
    expect(renderMarkdown([row!], [], '# t')).toContain('| master 0.03 · ts0 0.70 · ts1 0.20 |');
    const [partial] = aggregate(['put-c64'], [procs(run(1, 'tessera', 100, 8.2), 0.2, [6, 2]), run(2, 'tessera', 100, 10.4)]);
    expect(partial?.tessera?.serverCoresByProcess).toBeUndefined();
  });

  it('bench report: the event-loop delay is the worst tserver per round, median over rounds, none for a system without it', () => {
    const looped = (r: VsRun, p99Ms: number, maxMs: number): VsRun => ({ ...r, serverSystemCpuSeconds: 0, serverWakeups: 0, loopDelay: { p50Ms: 1, p99Ms, maxMs } });
    const [row] = aggregate(['put-c64'], [looped(run(1, 'tessera', 100, 2), 20, 40), looped(run(2, 'tessera', 100, 2), 10, 30), looped(run(3, 'tessera', 100, 2), 30, 50), { ...run(1, 'etcd', 100, 1), serverSystemCpuSeconds: 0, serverWakeups: 0 }]);
    expect(row?.tessera?.loopDelayP99Ms).toEqual({ median: 20, min: 10, max: 30 });
    expect(row?.tessera?.loopDelayMaxMs).toEqual({ median: 40, min: 30, max: 50 });
    expect(row?.etcd?.loopDelayP99Ms).toBeUndefined();
    expect(renderMarkdown([row!], [], '# t')).toMatch(/\| put-c64 \| [^|]+ \| [^|]+ \| [^|]+ \| n\/a \| 20\.0 \/ 40\.0 \| [^|]+ \| [^|]+ \| [^|]+ \| n\/a \|/);
  });

  it('bench report: a skipped workload keeps its row with its note', () => {
    const rows = aggregate(['put-c64', 'txn2-c64'], [run(1, 'tessera', 10)], new Map([['txn2-c64', 'skipped: no transactions']]));
    expect(rows.map((r) => r.workload)).toEqual(['put-c64', 'txn2-c64']);
    const md = renderMarkdown(rows, [], '# t');
    expect(md).toContain('| txn2-c64 |');
    expect(md).toContain('skipped: no transactions');
  });

  it('bench report: transaction rows get a table with commit() and apply lag, medians over rounds', () => {
    const txn = (round: number, commitP50Ms: number, lagP50: number | undefined, complete: number, incomplete: number): VsRun => ({
      ...run(round, 'tessera', 100),
      workload: 'txn2-c16',
      commitP50Ms,
      commitP99Ms: commitP50Ms * 2,
      applyLag: { complete, incomplete, ...(lagP50 !== undefined ? { p50Ms: lagP50, p99Ms: lagP50 * 3, maxMs: lagP50 * 4, firstP50Ms: lagP50 / 5, firstP99Ms: lagP50 / 2 } : {}) },
    });
    const [row] = aggregate(['txn2-c16'], [txn(1, 10, 5, 100, 1), txn(2, 30, undefined, 0, 7), txn(3, 20, 7, 50, 0)]);
    expect(row?.tessera?.commitP50Ms?.median).toBe(20);
    expect(row?.tessera?.applyLag).toEqual({
      p50Ms: { median: 6, min: 5, max: 7 },
      p99Ms: { median: 18, min: 15, max: 21 },
      maxMs: 28,
      firstP50Ms: { median: 1.2, min: 1, max: 1.4 },
      firstP99Ms: { median: 3, min: 2.5, max: 3.5 },
      complete: 150,
      incomplete: 8,
    });
    const md = renderMarkdown([row!], [], '# t');
    expect(md).toContain('| transactions (tessera) |');
    expect(md).toContain('| txn2-c16 | 100 | 1.00 | 2.00 | 20.00 | 40.00 | 6.00 | 18.00 | 28.00 | 1.20 / 3.00 | 150 / 8 |');
    // Non-transaction rows do not get the table.
    expect(renderMarkdown(aggregate(['put-c64'], [run(1, 'tessera', 10)]), [], '# t')).not.toContain('transactions (tessera)');
    // No round had stages: no stage table.
    expect(md).not.toContain('apply lag by stage');
  });

  it('bench report: commits by path are summed over rounds in the transactions table; other processes\' cores are a median', () => {
    const txn = (round: number, singleTablet: number, distributed: number, otherCores: number): VsRun => ({
      ...run(round, 'tessera', 100),
      workload: 'txn1-c16',
      commitP50Ms: 5,
      commitP99Ms: 9,
      otherCores,
      commitPaths: { singleTablet, distributed, warmupSingleTablet: 10, warmupDistributed: round },
    });
    const [row] = aggregate(['txn1-c16'], [txn(1, 900, 0, 0.1), txn(2, 1100, 2, 0.9), txn(3, 1000, 1, 0.5)]);
    expect(row?.tessera?.commitPaths).toEqual({ singleTablet: 3000, distributed: 3, warmupSingleTablet: 30, warmupDistributed: 6 });
    expect(row?.tessera?.otherCores?.median).toBe(0.5);
    const md = renderMarkdown([row!], [], '# t');
    expect(md).toContain('| 3,000 / 3 (30 / 6) |');
    expect(md).toMatch(/\| txn1-c16 \| 100 \|.*\| 0 \/ n\/a \| 0\.50 \/ n\/a \|/);
    // Paired with put-c16 of the same round: 100/50, 100/400, 100/100.
    const puts = [run(1, 'tessera', 50), run(2, 'tessera', 400), run(3, 'tessera', 100)].map((r) => ({ ...r, workload: 'put-c16' }));
    const [paired] = aggregate(['txn1-c16'], [txn(1, 900, 0, 0.1), txn(2, 1100, 2, 0.9), txn(3, 1000, 1, 0.5), ...puts]);
    expect(paired?.perPut).toEqual({ median: 1, min: 0.25, max: 2 });
    expect(renderMarkdown([paired!], [], '# t')).toContain('| 3,000 / 3 (30 / 6) | 1.00 (0.25–2.00) |');
    expect(row?.perPut).toBeUndefined();
  });

  it('bench report: the apply lag\'s stages are medians of the rounds that had them, in their own table', () => {
    const stages = (x: number) => ({ txns: 10, commitRoundP50Ms: x, commitRoundP99Ms: 2 * x, toFirstP50Ms: 3 * x, toFirstP99Ms: 4 * x, spreadP50Ms: 5 * x, spreadP99Ms: 6 * x, otherTabletP50Ms: 7 * x, otherTabletP99Ms: 8 * x, followersP50Ms: 9 * x, followersP99Ms: 10 * x });
    const txn = (round: number, x: number | undefined): VsRun => ({
      ...run(round, 'tessera', 100),
      workload: 'txn2-c64',
      applyLag: { complete: 10, incomplete: 0, p50Ms: 1, p99Ms: 2, maxMs: 3, ...(x !== undefined ? { stages: stages(x) } : {}) },
    });
    const [row] = aggregate(['txn2-c64'], [txn(1, 1), txn(2, undefined), txn(3, 3), txn(4, 2)]);
    expect(row?.tessera?.applyLag?.stages).toMatchObject({ txns: 30, commitRoundP50Ms: { median: 2, min: 1, max: 3 }, spreadP99Ms: { median: 12, min: 6, max: 18 } });
    const md = renderMarkdown([row!], [], '# t');
    expect(md).toContain('| apply lag by stage (tessera) |');
    expect(md).toContain('| txn2-c64 | 2.00 / 4.00 | 6.00 / 8.00 | 10.00 / 12.00 | 14.00 / 16.00 | 18.00 / 20.00 | 30 |');
  });
});

describe('bench apply lag', () => {
  const rec = (uuid: string, tabletId: string, txnId: string, commitMicros: number, appliedMicros: number): ApplyRecord => ({ uuid, tabletId, txnId, commitMicros, appliedMicros });
  const full = (txnId: string, commit: number, applied: (replica: number, tablet: number) => number): ApplyRecord[] =>
    ['a', 'b'].flatMap((tab, ti) => ['t0', 't1', 't2'].map((u, ri) => rec(u, tab, txnId, commit, applied(ri, ti))));
  const f = { replicationFactor: 3, minTablets: 2 };

  it('bench apply lag: lag is the last replica of any participant tablet, minus the commit time', () => {
    const r = applyLagOf(full('x', 1_000_000, (ri, ti) => 1_000_000 + 1000 * (ri + 1) + 10_000 * ti), f);
    expect(r.complete).toBe(1);
    expect(r.incomplete).toBe(0);
    expect(r.maxMs).toBe(13);
    expect(r.p50Ms).toBeCloseTo(13, 1);
    // The quickest replica (replica 0 of tablet a) applied 1 ms after the commit.
    expect(r.firstP50Ms).toBeCloseTo(1, 2);
    expect(r.firstP99Ms).toBeCloseTo(1, 2);
  });

  it('bench apply lag: first-replica and last-replica lags are percentiles over transactions', () => {
    // 100 transactions; transaction i: quickest replica at i ms, slowest at 10·i ms after its commit.
    const records = Array.from({ length: 100 }, (_, i) => full(`t${i}`, 0, (ri, ti) => (ri === 0 && ti === 0 ? (i + 1) * 1000 : (i + 1) * 10_000))).flat();
    const r = applyLagOf(records, f);
    expect(r.complete).toBe(100);
    expect(r.firstP50Ms).toBeCloseTo(50, 0);
    expect(r.firstP99Ms).toBeCloseTo(99, 0);
    expect(r.p50Ms).toBeCloseTo(500, -1);
    expect(r.maxMs).toBe(1000);
  });

  it('bench apply lag: a transaction missing a replica or a tablet is incomplete, and has no lag', () => {
    const missingReplica = full('x', 0, () => 5000).slice(1);
    const oneTablet = full('y', 0, () => 5000).filter((r) => r.tabletId === 'a');
    const r = applyLagOf([...missingReplica, ...oneTablet], f);
    expect(r).toEqual({ complete: 0, incomplete: 2 });
    // A repeated record of one replica does not stand in for another replica.
    const dup = [...full('z', 0, () => 1000).filter((x) => x.uuid !== 't2'), rec('t0', 'a', 'z', 0, 1000), rec('t0', 'b', 'z', 0, 1000)];
    expect(applyLagOf(dup, f).incomplete).toBe(1);
  });

  it('bench apply lag: only transactions committed in the window (or named) count', () => {
    const records = [...full('early', 100, () => 2000), ...full('in', 1_000, () => 3000), ...full('late', 9_000, () => 9500)];
    expect(applyLagOf(records, { ...f, commitFromMicros: 500, commitToMicros: 5000 })).toMatchObject({ complete: 1, incomplete: 0, maxMs: 2 });
    expect(applyLagOf(records, { ...f, txnIds: new Set(['late']) })).toMatchObject({ complete: 1, maxMs: 0.5 });
  });

  it('bench apply lag: the spread splits into the later tablet and the followers behind their own tablet', () => {
    // Transaction i (k = i+1 ms): tablet 'a' applied at k (leader) and 2k, 2k (followers); tablet 'b'
    // at 3k, 3k, 7k. The later tablet's quickest is 2k after the earlier's; the most any follower
    // trails its own tablet's quickest is 4k (in 'b'); the whole spread is 6k.
    const records: ApplyRecord[] = [];
    const commits: CommitRecord[] = [];
    for (let i = 0; i < 100; i++) {
      const k = (i + 1) * 1000;
      commits.push({ uuid: 't0', tabletId: 's', txnId: `t${i}`, commitMicros: 0, committedMicros: 0 });
      records.push(...full(`t${i}`, 0, (ri, ti) => (ti === 0 ? (ri === 0 ? k : 2 * k) : ri === 2 ? 7 * k : 3 * k)));
    }
    const g = applyLagOf(records, f, commits).stages;
    expect(g?.txns).toBe(100);
    expect(g?.spreadP50Ms).toBeCloseTo(300, 0);
    expect(g?.otherTabletP50Ms).toBeCloseTo(100, 0);
    expect(g?.otherTabletP99Ms).toBeCloseTo(198, 0);
    expect(g?.followersP50Ms).toBeCloseTo(200, 0);
    expect(g?.followersP99Ms).toBeCloseTo(396, 0);
  });

  it('bench apply lag: with the status tablets\' commit records the lag splits into the commit round, commit point → first replica, and first → last', () => {
    // 100 transactions committed at 0; transaction i: its first status replica applied COMMITTED at
    // (i+1) ms (another one later), the quickest participant replica 2·(i+1) ms after that, the
    // slowest 3·(i+1) ms after the quickest.
    const commit = (u: string, txnId: string, committedMicros: number): CommitRecord => ({ uuid: u, tabletId: 's', txnId, commitMicros: 0, committedMicros });
    const records: ApplyRecord[] = [];
    const commits: CommitRecord[] = [];
    for (let i = 0; i < 100; i++) {
      const k = (i + 1) * 1000;
      commits.push(commit('t1', `t${i}`, k + 5000), commit('t0', `t${i}`, k));
      records.push(...full(`t${i}`, 0, (ri, ti) => (ri === 0 && ti === 0 ? 3 * k : 6 * k)));
    }
    // A commit record of a transaction that is not complete, and one of no known transaction: ignored.
    commits.push(commit('t0', 'gone', 1));
    records.push(...full('partial', 0, () => 1000).slice(1));
    const r = applyLagOf(records, f, commits);
    expect(r.complete).toBe(100);
    expect(r.stages?.txns).toBe(100);
    expect(r.stages?.commitRoundP50Ms).toBeCloseTo(50, 0);
    expect(r.stages?.commitRoundP99Ms).toBeCloseTo(99, 0);
    expect(r.stages?.toFirstP50Ms).toBeCloseTo(100, 0);
    expect(r.stages?.spreadP50Ms).toBeCloseTo(150, 0);
    expect(r.stages?.spreadP99Ms).toBeCloseTo(297, 0);
    // Taken apart: tablet 'a' has its quickest replica at 3k and the others at 6k, tablet 'b' all at 6k.
    expect(r.stages?.otherTabletP50Ms).toBeCloseTo(150, 0);
    expect(r.stages?.followersP50Ms).toBeCloseTo(150, 0);
    // Without commit records (an older server): no stages, the rest unchanged.
    const plain = applyLagOf(records, f);
    expect(plain.stages).toBeUndefined();
    expect(plain.p50Ms).toBe(r.p50Ms);
  });

  it('bench apply lag: the commit records of a console answer are parsed, absent ones are none, malformed ones rejected', () => {
    expect(parseCommits({ uuid: 'u1', applies: [], commits: [{ tabletId: 's', txnId: 'x', commitMicros: 1, committedMicros: 2 }] })).toEqual([{ uuid: 'u1', tabletId: 's', txnId: 'x', commitMicros: 1, committedMicros: 2 }]);
    expect(parseCommits({ uuid: 'u1', applies: [] })).toEqual([]);
    expect(() => parseCommits({ uuid: 'u', commits: {} })).toThrow(/not a list/);
    expect(() => parseCommits({ uuid: 'u', commits: [{ tabletId: 's', txnId: 'x' }] })).toThrow(/malformed commit record/);
  });

  it('bench apply lag: the console answer is parsed, and a malformed one rejected', () => {
    expect(parseApplies({ uuid: 'u1', applies: [{ tabletId: 't', txnId: 'x', commitMicros: 1, appliedMicros: 2, lagMs: 0.001 }] })).toEqual([{ uuid: 'u1', tabletId: 't', txnId: 'x', commitMicros: 1, appliedMicros: 2 }]);
    expect(() => parseApplies({ applies: [] })).toThrow(/uuid/);
    expect(() => parseApplies({ uuid: 'u', applies: [{ tabletId: 't' }] })).toThrow(/malformed/);
  });

  it('bench apply lag: records fed twice, in overlapping batches, count once', () => {
    const records = Array.from({ length: 10 }, (_, i) => full(`t${i}`, 0, (ri, ti) => (i + 1) * 1000 + ri * 100 + ti * 10)).flat();
    const once = new ApplyLagAccumulator();
    once.add(records);
    const overlapping = new ApplyLagAccumulator();
    overlapping.add(records.slice(0, 40));
    overlapping.add(records.slice(20));
    overlapping.add(records.slice(10, 30));
    expect(overlapping.applyCount).toBe(60);
    expect(overlapping.figures(f)).toEqual(once.figures(f));
    expect(once.figures(f)).toMatchObject({ complete: 10, incomplete: 0 });
  });

  it('bench apply lag: a window longer than the replicas\' rings is measured whole when a collector reads it while it runs', async () => {
    // Three fake consoles, each keeping only its newest RING applies, as a tserver's ring does.
    const RING = 120;
    const uuids = ['u0', 'u1', 'u2'];
    const rings = uuids.map(() => [] as Array<{ tabletId: string; txnId: string; commitMicros: number; appliedMicros: number }>);
    const servers = await Promise.all(
      uuids.map(
        (uuid, i) =>
          new Promise<http.Server>((resolve) => {
            const srv = http.createServer((req, res) => {
              const since = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('since'));
              res.setHeader('content-type', 'application/json');
              res.end(JSON.stringify({ uuid, applies: rings[i]!.filter((r) => r.appliedMicros >= since), commits: [] }));
            });
            srv.listen(0, '127.0.0.1', () => resolve(srv));
          }),
      ),
    );
    const consoles = servers.map((s) => `127.0.0.1:${(s.address() as AddressInfo).port}`);
    const startMicros = Date.now() * 1000;
    const collector = new ApplyLagCollector(consoles, startMicros, 25);
    collector.start();
    let produced = 0;
    try {
      // 300 transactions of 2 tablets, 3 at a time every 5 ms: each ring holds only the last 60.
      while (produced < 300) {
        for (let k = 0; k < 3; k++, produced++) {
          const now = Date.now() * 1000;
          for (const ring of rings) {
            for (const tabletId of ['a', 'b']) {
              ring.push({ tabletId, txnId: `x${produced}`, commitMicros: now - 1000, appliedMicros: now });
              if (ring.length > RING) ring.shift();
            }
          }
        }
        await new Promise((r) => setTimeout(r, 5));
      }
      const got = await collector.stop();
      expect(got.lastError).toBeUndefined();
      expect(got.reads).toBeGreaterThan(0);
      const window = { ...f, commitFromMicros: startMicros - 1000 };
      // Read only at the end, the rings have lost the window's first transactions.
      const endOnly = await measureApplyLag(consoles, startMicros, window, 1_000);
      expect(endOnly.complete).toBe(RING / 2);
      // With what the collector read while the window ran: every transaction, complete.
      const whole = await measureApplyLag(consoles, got.sinceMicros, window, 1_000, collector.acc);
      expect(whole).toMatchObject({ complete: 300, incomplete: 0 });
      expect(whole.p50Ms).toBeCloseTo(1, 1);
    } finally {
      await collector.stop();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
  });
});

describe('bench big-txn, load and section options', () => {
  it('bench big-txn: figures are printed next to the targets', () => {
    const md = renderBigTxn({
      rows: 100,
      rowBytes: 1024 * 1024,
      rowsPerRpc: 4,
      participants: 3,
      writeIntentsMs: 3000,
      commitMs: 6000,
      commitToAllAppliedMs: 7000,
      applyLagMs: 900,
      appliedEverywhere: true,
      tservers: [{ rpcAddress: 'h:1', beforeBytes: 100 * 1024 * 1024, peakSampledBytes: 2 * 1024 * 1024 * 1024, hwmBytes: 2 * 1024 * 1024 * 1024 }],
      targets: BIG_TXN_TARGETS,
    });
    expect(md).toContain('| commit() | 6000 ms | ≤ 5000 ms (OVER target) |');
    expect(md).toContain('| h:1 | 100 MiB | 2048 MiB | 2048 MiB | ≤ 1024 MiB (OVER target) |');
  });

  it('bench load: rows/s and total time, and an early end says why', () => {
    const md = renderLoad({ params: { ...LOAD_DEFAULTS }, rowsLoaded: 500_000, seconds: 900, rowsPerSec: 555.5, batches: 100, retriedBatches: 2, error: 'stopped at --max-seconds 900', targetSeconds: 60 });
    expect(md).toContain('| rows/s | 556 |');
    expect(md).toContain('ended early: stopped at --max-seconds 900');
  });

  it('bench sections: options after the section name, env fallback, unknown options rejected', () => {
    const args = sectionArgs('load', ['node', 'cli', 'bench', 'load', '--rows', '20000', '--in-flight=2']);
    expect(args).toEqual(['--rows', '20000', '--in-flight=2']);
    expect(sectionNumber(args, 'rows', 'BENCH_TEST_UNSET_ROWS', 1, 1)).toBe(20000);
    expect(sectionNumber(args, 'in-flight', 'BENCH_TEST_UNSET_INFLIGHT', 1, 1)).toBe(2);
    expect(sectionNumber(args, 'tablets', 'BENCH_TEST_UNSET_TABLETS', 3, 1)).toBe(3);
    expect(() => sectionNumber(['--rows', 'x'], 'rows', 'BENCH_TEST_UNSET_ROWS', 1, 1)).toThrow(/--rows/);
    expect(() => checkSectionArgs(['--rowz', '1'], ['rows'])).toThrow(/unknown option '--rowz'/);
  });

  it('bench --vs etcd: txn2-c16 and big-txn are in the default set, --workloads can leave big-txn out', () => {
    const d = parseVsArgs(['--vs', 'etcd']);
    expect(d.workloads).toEqual(['put-c1', 'put-c16', 'put-c64', 'read-c16', 'txn2-c16', 'txn2-c64', 'big-txn']);
    expect([d.bigTxnRows, d.bigTxnRowBytes]).toEqual([100, 1024 * 1024]);
    expect(parseVsArgs(['--vs', 'etcd', '--workloads', 'txn2-c1,txn2-c256']).workloads).toEqual(['txn2-c1', 'txn2-c256']);
    const o = parseVsArgs(['--vs', 'etcd', '--workloads', 'txn2-c16', '--big-txn-rows', '5', '--big-txn-row-bytes=65536']);
    expect(o.workloads).toEqual(['txn2-c16']);
    expect([o.bigTxnRows, o.bigTxnRowBytes]).toEqual([5, 65536]);
    expect(() => parseVsArgs(['--vs', 'etcd', '--workloads', 'big-txns'])).toThrow(/unknown 'big-txns'/);
  });

  it('bench --vs etcd: --tserver-flag adds checked flags for every tserver; unknown names, bad values and the harness\'s own flags are refused', () => {
    expect(parseVsArgs(['--vs', 'etcd']).tserverFlags).toEqual([]);
    const o = parseVsArgs(['--vs', 'etcd', '--tserver-flag', 'log_preallocate_segments=false', '--tserver-flag=--uv_threadpool_size=2']);
    expect(o.tserverFlags).toEqual(['--log_preallocate_segments=false', '--uv_threadpool_size=2']);
    expect(() => parseVsArgs(['--vs', 'etcd', '--tserver-flag', 'log_prealocate_segments=false'])).toThrow(/unknown flag --log_prealocate_segments/);
    expect(() => parseVsArgs(['--vs', 'etcd', '--tserver-flag', 'uv_threadpool_size=many'])).toThrow(/invalid value 'many' for flag --uv_threadpool_size/);
    expect(() => parseVsArgs(['--vs', 'etcd', '--tserver-flag', 'durable_wal_write'])).toThrow(/--tserver-flag must look like name=value/);
    expect(() => parseVsArgs(['--vs', 'etcd', '--tserver-flag', 'fs_data_dirs=/x'])).toThrow(/set by the benchmark itself/);
  });

  it('bench --vs etcd: round 1 warms each workload up longer (--first-warmup, default 10 s) than later rounds (--warmup)', () => {
    const d = parseVsArgs(['--vs', 'etcd']);
    expect([d.warmupSeconds, d.firstWarmupSeconds]).toEqual([3, 10]);
    const o = parseVsArgs(['--vs', 'etcd', '--warmup', '1', '--first-warmup=2']);
    expect([o.warmupSeconds, o.firstWarmupSeconds]).toEqual([1, 2]);
    expect(() => parseVsArgs(['--vs', 'etcd', '--first-warmup', '-1'])).toThrow(/first-warmup/);
  });

  it('bench cluster: counts the "became leader" lines of tserver logs in a time window, and keeps copies of the logs', async () => {
    const c = new BenchCluster();
    const line = (time: number, msg: string): string => JSON.stringify({ level: 30, time, name: 'tserver', tablet: 't1', msg });
    fs.writeFileSync(path.join(c.baseDir, 'tserver-127.0.0.1:9100.log'), [line(1000, 'became leader'), line(2000, 'became leader'), line(2500, 'following a new leader'), ''].join('\n'));
    fs.writeFileSync(path.join(c.baseDir, 'tserver-127.0.0.2:9100.log'), [line(3000, 'became leader'), '{"time":4000,"msg":"became le'].join('\n'));
    fs.writeFileSync(path.join(c.baseDir, 'master-127.0.0.1:7100.log'), line(5000, 'became leader'));
    expect(c.leaderChangesBetween(0)).toBe(3); // tserver logs only; a torn last line is skipped
    expect(c.leaderChangesBetween(2000)).toBe(2);
    expect(c.leaderChangesBetween(1000, 2999)).toBe(2);
    expect(c.leaderChangesBetween(3001)).toBe(0);
    const keep = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-logs-'));
    try {
      expect(c.saveLogs(keep).sort()).toEqual(['master-127.0.0.1:7100.log', 'tserver-127.0.0.1:9100.log', 'tserver-127.0.0.2:9100.log']);
      expect(fs.readFileSync(path.join(keep, 'master-127.0.0.1:7100.log'), 'utf8')).toContain('became leader');
    } finally {
      fs.rmSync(keep, { recursive: true, force: true });
      await c.stop();
    }
    expect(fs.existsSync(c.baseDir)).toBe(false);
  });

  it('bench reports: paths of the machine are written relative to the repository (the tree itself, and trees beside it)', () => {
    expect(portablePaths('out /srv/repo/bench/results; A: build in /srv/wt-base; other /opt/x', '/srv/repo')).toBe('out bench/results; A: build in ../wt-base; other /opt/x');
  });
});
