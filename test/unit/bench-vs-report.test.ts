/** The side-by-side benchmark's pure aggregation: medians over rounds, ratios paired by round, CPU per 1,000 ops. */
import { describe, expect, it } from 'vitest';
import { aggregate, renderMarkdown, spread, type VsRun } from '../../bench/vs-report';

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

  it('bench report: a skipped workload keeps its row with its note', () => {
    const rows = aggregate(['put-c64', 'txn2-c64'], [run(1, 'tessera', 10)], new Map([['txn2-c64', 'skipped: no transactions']]));
    expect(rows.map((r) => r.workload)).toEqual(['put-c64', 'txn2-c64']);
    const md = renderMarkdown(rows, [], '# t');
    expect(md).toContain('| txn2-c64 |');
    expect(md).toContain('skipped: no transactions');
  });
});
