import { describe, expect, it } from 'vitest';
import { placeNewTablets, planLeaderMoves, planReplacements, type TServerLoad, type TabletView } from '../../master/placement';

const ts = (uuid: string, alive = true, tablets = 0, leaders = 0): TServerLoad => ({ uuid, alive, tablets, leaders });

describe('master placement', () => {
  it('placement: new tablets spread evenly over live tservers, never on dead ones', () => {
    const p = placeNewTablets([ts('a'), ts('b'), ts('c'), ts('d', false), ts('e', true, 10)], 3, 6);
    expect(p).toHaveLength(6);
    const count = new Map<string, number>();
    for (const r of p) {
      expect(new Set(r).size).toBe(3);
      for (const u of r) count.set(u, (count.get(u) ?? 0) + 1);
    }
    expect(count.has('d')).toBe(false);
    expect(count.has('e')).toBe(false); // 10 tablets already: a, b, c reach 6 first
    expect([...count.values()]).toEqual([6, 6, 6]);
    // the first replica rotates, so first leaders do not pile up on one server
    expect(new Set(p.map((r) => r[0])).size).toBe(3);
  });

  it('placement: not enough live tservers places nothing', () => {
    expect(placeNewTablets([ts('a'), ts('b', false)], 2, 1)).toEqual([]);
  });

  it('placement: a dead replica is replaced by the least loaded live tserver not hosting the tablet', () => {
    const tablets: TabletView[] = [
      { id: 't1', replicas: ['a', 'b', 'c'], leader: 'a' },
      { id: 't2', replicas: ['a', 'b', 'd'], leader: 'b' },
    ];
    const moves = planReplacements([ts('a', true, 2), ts('b', true, 2), ts('c', false, 1), ts('d', true, 5), ts('e', true, 0)], tablets, 10);
    expect(moves).toEqual([{ type: 'replace', tabletId: 't1', dead: 'c', target: 'e' }]);
  });

  it('placement: no replacement without a live leader or a spare tserver, and at most movesMax', () => {
    expect(planReplacements([ts('a'), ts('b'), ts('c', false)], [{ id: 't', replicas: ['a', 'b', 'c'], leader: 'a' }], 5)).toEqual([]);
    expect(planReplacements([ts('a', false), ts('b'), ts('c'), ts('d')], [{ id: 't', replicas: ['a', 'b', 'c'], leader: 'a' }], 5)).toEqual([]);
    const many: TabletView[] = Array.from({ length: 5 }, (_, i) => ({ id: `t${i}`, replicas: ['a', 'b', 'c'], leader: 'a' }));
    expect(planReplacements([ts('a'), ts('b'), ts('c', false), ts('d')], many, 2)).toHaveLength(2);
  });

  it('placement: leaders move from the busiest tserver until no gap of 2 remains', () => {
    const tablets: TabletView[] = Array.from({ length: 6 }, (_, i) => ({ id: `t${i}`, replicas: ['a', 'b', 'c'], leader: 'a' }));
    const moves = planLeaderMoves([ts('a'), ts('b'), ts('c')], tablets, 100);
    expect(moves.every((m) => m.type === 'stepdown' && m.from === 'a')).toBe(true);
    expect(moves).toHaveLength(4); // 6/0/0 -> 2/2/2
    expect(planLeaderMoves([ts('a'), ts('b'), ts('c')], tablets, 1)).toHaveLength(1);
    const balanced: TabletView[] = [
      { id: 'x', replicas: ['a', 'b', 'c'], leader: 'a' },
      { id: 'y', replicas: ['a', 'b', 'c'], leader: 'b' },
    ];
    expect(planLeaderMoves([ts('a'), ts('b'), ts('c')], balanced, 10)).toEqual([]);
  });
});
