/**
 * Human units and step charts (rpc/svg-chart.ts) as the consoles and experiment reports show them,
 * and the pure figures intents-apply checks (lab/experiments/intents-apply-figures.ts).
 */
import { describe, expect, it } from 'vitest';
import { humanBytes, svgStepChart } from '../../rpc/svg-chart';
import { randomRowValue, regularGrowth, spreadOf, type Snapshot } from '../../lab/experiments/intents-apply-figures';
import type { ReplicaRow } from '../../lab/tablet-view';

describe('human units and step charts', () => {
  it('humanBytes: three significant digits and a binary unit letter, as YugabyteDB mem-trackers print', () => {
    expect([0, 880, 1023, 1024, 1260, 33 * 1024 * 1024, 128 * 1024 * 1024, 1.5 * 1024 ** 3].map(humanBytes)).toEqual(['0B', '880B', '1023B', '1.00K', '1.23K', '33.0M', '128M', '1.50G']);
  });

  it('svgStepChart: each series holds its value until the next sample, x ticks in seconds, markers drawn with their labels', () => {
    const svg = svgStepChart([{ name: 'n0', points: [[0, 0], [2000, 1024 * 1024], [9000, 0]] }], { markers: [{ x: 4000, label: 'commit' }], width: 500, height: 200 });
    const d = /<path [^>]*d="([^"]+)"/.exec(svg)![1]!;
    // Move, then for each later sample a horizontal run and a vertical step: no sloped segment.
    expect(d).toMatch(/^M[\d.]+,[\d.]+(H[\d.]+V[\d.]+){2}$/);
    expect(svg).toContain('>0 s<');
    expect(svg).toContain('>8 s<');
    expect(svg).not.toMatch(/Ki ms|ms</);
    expect(svg).toContain('>commit<');
    expect(svg).toContain('>1.00M<');
  });
});

describe('intents-apply figures', () => {
  const row = (intentsMem: number, regularMem: number): ReplicaRow => ({ tabletId: 't', table: 'demo', role: 'FOLLOWER', term: 1, leaderUuid: '', commitIndex: 1, appliedIndex: 1, regulardb: { memtableBytes: regularMem, sstBytes: 0 }, intentsdb: { memtableBytes: intentsMem, sstBytes: 0, intentCount: 1 } });
  const snap = (node: string, r: ReplicaRow): Snapshot => new Map([[node, new Map([['t', r]])]]);

  it('randomRowValue: the asked length of printable ASCII, prefixed by the row number, different each time', () => {
    const v = randomRowValue(7, 4096);
    expect(v.length).toBe(4096);
    expect(v.startsWith('7:')).toBe(true);
    expect(/^[\x20-\x7e]+$/.test(v)).toBe(true);
    expect(randomRowValue(7, 4096)).not.toBe(v);
  });

  it('spreadOf and regularGrowth: the relative spread of replicas, and RegularDB growth against the IntentsDB memtable it came from', () => {
    expect(spreadOf([100, 100, 95])).toBeCloseTo(0.05);
    expect(spreadOf([])).toBe(0);
    const g = regularGrowth(snap('n1', row(1000, 10)), snap('n1', row(1000, 1010)), snap('n1', row(1000, 10)), 'n1');
    expect(g).toEqual([{ id: 't', grewBytes: 1000, intentsBytes: 1000, ratio: 1 }]);
  });
});
