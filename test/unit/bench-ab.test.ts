/**
 * The paired A/B benchmark's pure parts (bench/ab-stats.ts, bench/ab-bench.ts parseAbArgs): ratios
 * paired by round, which side "wins" for throughput vs cost, the sign test, the rendering, and option
 * checking. The end-to-end run is in test/integration/bench-smoke.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSide, parseAbArgs } from '../../bench/ab-bench';
import { pairRuns, ratioSpread, renderAbMarkdown, signTestP, type AbRun } from '../../bench/ab-stats';

const run = (round: number, side: 'A' | 'B', opsPerSec: number, cpuSeconds?: number): AbRun => ({
  round,
  workload: 'txn2-c64',
  side,
  opsPerSec,
  ops: opsPerSec * 5,
  errors: 0,
  p50Ms: 10,
  p99Ms: side === 'A' ? 40 : 30,
  ...(cpuSeconds !== undefined ? { serverCpuSeconds: cpuSeconds } : {}),
});

describe('bench A/B statistics', () => {
  it('sign test: exact two-sided binomial tail', () => {
    expect(signTestP(6, 6)).toBeCloseTo(2 / 64, 12);
    expect(signTestP(0, 6)).toBeCloseTo(2 / 64, 12);
    expect(signTestP(5, 6)).toBeCloseTo((2 * 7) / 64, 12);
    expect(signTestP(3, 6)).toBe(1);
    expect(signTestP(0, 0)).toBe(1);
  });

  it('ratios pair by round: B/A of the same round, not of sorted figures', () => {
    // A is slow in round 2 (the machine's slow minute) and B too: the paired ratio stays ~1.1.
    const runs = [run(1, 'A', 1000), run(1, 'B', 1100), run(2, 'B', 550), run(2, 'A', 500), run(3, 'A', 900), run(3, 'B', 990)];
    const [row] = pairRuns(['txn2-c64'], runs);
    expect(row?.rounds).toBe(3);
    expect(row?.opsRatio?.median).toBeCloseTo(1.1, 12);
    expect(row?.opsRatio?.min).toBeCloseTo(1.1, 12);
    expect(row?.opsRatio?.bBetter).toBe(3);
    expect(row?.opsRatio?.signP).toBeCloseTo(0.25, 12);
    expect(row?.a.opsPerSec).toBe(900);
    expect(row?.b.opsPerSec).toBe(990);
  });

  it('for CPU per op and latency, B wins below 1; a round without CPU figures is left out', () => {
    const runs = [run(1, 'A', 1000, 2), run(1, 'B', 1000, 1.5), run(2, 'A', 1000, 2), run(2, 'B', 1000, 2.2), run(3, 'A', 1000), run(3, 'B', 1000, 1)];
    const [row] = pairRuns(['txn2-c64'], runs);
    expect(row?.cpuRatio?.rounds).toBe(2);
    expect(row?.cpuRatio?.bBetter).toBe(1);
    expect(row?.cpuRatio?.min).toBeCloseTo(0.75, 12);
    expect(row?.cpuRatio?.max).toBeCloseTo(1.1, 12);
    expect(row?.a.cpuMsPerOp).toBeCloseTo(0.4, 12);
    expect(row?.p99Ratio?.bBetter).toBe(3);
    // ops/s equal in every round: all ties, no winner, p = 1.
    expect(row?.opsRatio).toMatchObject({ median: 1, bBetter: 0, signP: 1 });
  });

  it('the event loops\' CPU per op pairs like the whole CPU, and is n/a without it', () => {
    const loop = (r: AbRun, s: number): AbRun => ({ ...r, eventLoopCpuSeconds: s });
    // Round 1: A 1.2 s, B 0.9 s over 5,000 ops each → 0.75; round 2: A 1.0, B 1.1 → 1.1.
    const runs = [loop(run(1, 'A', 1000, 2), 1.2), loop(run(1, 'B', 1000, 1.5), 0.9), loop(run(2, 'A', 1000, 2), 1.0), loop(run(2, 'B', 1000, 2.2), 1.1)];
    const [row] = pairRuns(['txn2-c64'], runs);
    expect(row?.loopCpuRatio?.rounds).toBe(2);
    expect(row?.loopCpuRatio?.min).toBeCloseTo(0.75, 12);
    expect(row?.loopCpuRatio?.max).toBeCloseTo(1.1, 12);
    expect(row?.loopCpuRatio?.bBetter).toBe(1);
    expect(renderAbMarkdown([row!], runs, '## h')).toContain('| B/A event-loop CPU per op |');
    expect(renderAbMarkdown([row!], runs, '## h')).toContain('| 1 of 2 (p 1.000) | 0.925 (0.750–1.100) |');
    const [none] = pairRuns(['txn2-c64'], [run(1, 'A', 1000, 2), run(1, 'B', 1000, 2)]);
    expect(none?.loopCpuRatio).toBeUndefined();
  });

  it('an unpaired run (the other side failed) is not in the ratios', () => {
    const r = ratioSpread([{ a: 100, b: 120 }, { a: undefined, b: 50 }, { a: 0, b: 10 }], true);
    expect(r).toMatchObject({ rounds: 1, median: 1.2, bBetter: 1 });
    expect(ratioSpread([{ a: undefined, b: 1 }], true)).toBeUndefined();
  });

  it('renders the summary and one line per round and workload', () => {
    const runs = [run(1, 'A', 1000, 2), run(1, 'B', 1100, 1.8), run(2, 'B', 1050, 1.9), run(2, 'A', 1000, 2)];
    const md = renderAbMarkdown(pairRuns(['txn2-c64'], runs), runs, '## head');
    expect(md).toContain('| txn2-c64 | 2 | 1000 | 1075 | 1.075 (1.050–1.100) | 2 of 2 (p 0.500) |');
    expect(md).toContain('| 1 | txn2-c64 | 1000 | 1100 | 1.100 | 0.40 | 0.33 | 0.818 |');
    expect(md).toContain('| 2 | txn2-c64 | 1000 | 1050 | 1.050 |');
  });
});

describe('bench A/B options', () => {
  it('defaults: this build on both sides (an A/A run), txn2-c64, 6 rounds', () => {
    const o = parseAbArgs([]);
    expect(o.workloads).toEqual(['txn2-c64']);
    expect(o.rounds).toBe(6);
    expect(o.a.tree).toBe(o.b.tree);
    expect(describeSide(o.a)).toBe('this build');
    expect(o.loadGenerators).toBe('this-build');
  });

  it('--load-generators: each side\'s own build drives it (a client change), or this build for both', () => {
    expect(parseAbArgs(['--load-generators', 'each-tree']).loadGenerators).toBe('each-tree');
    expect(parseAbArgs(['--load-generators=this-build']).loadGenerators).toBe('this-build');
    expect(() => parseAbArgs(['--load-generators', 'mine'])).toThrow(/'this-build' or 'each-tree', got 'mine'/);
  });

  it('per-side flags and node options, checked', () => {
    const o = parseAbArgs(['--b-tserver-flag', 'heartbeat_interval_ms=300', '--b-node-option=--max-semi-space-size=64', '--rounds=4']);
    expect(o.b.tserverFlags).toEqual(['--heartbeat_interval_ms=300']);
    expect(o.b.nodeOptions).toEqual(['--max-semi-space-size=64']);
    expect(o.a.tserverFlags).toEqual([]);
    expect(describeSide(o.b)).toBe('this build, tserver flags --heartbeat_interval_ms=300, node options --max-semi-space-size=64');
    expect(() => parseAbArgs(['--b-tserver-flag', 'no_such_flag=1'])).toThrow(/no_such_flag/);
    expect(() => parseAbArgs(['--b-node-option', 'max-semi-space-size=64'])).toThrow(/Node.js option/);
    expect(() => parseAbArgs(['--b-flavour', 'x'])).toThrow(/unknown option '--b-flavour'/);
    expect(() => parseAbArgs(['--workloads', 'txn9'])).toThrow(/unknown 'txn9'/);
    expect(() => parseAbArgs(['--rounds'])).toThrow(/needs a value/);
    expect(() => parseAbArgs(['--host-base-a', '80'])).toThrow(/overlap/);
  });

  it('--b-tree must hold a build', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ab-tree-'));
    try {
      expect(() => parseAbArgs(['--b-tree', dir])).toThrow(/no dist\/cli\/main.js there/);
      fs.mkdirSync(path.join(dir, 'dist', 'cli'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'dist', 'cli', 'main.js'), '');
      const o = parseAbArgs(['--b-tree', dir, '--b-tserver-flag', 'flag_of_a_newer_build=1']);
      expect(o.b.tree).toBe(dir);
      // Another build's flags are its own to check: passed through as given.
      expect(o.b.tserverFlags).toEqual(['--flag_of_a_newer_build=1']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
