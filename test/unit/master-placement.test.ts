import { createTabletPeers } from '../../master/catalog-round';
import fc from 'fast-check';
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

  it('placement: a FAILED replica on a live tserver is replaced like a dead one — when a spare tserver exists and the leader is not the failed one', () => {
    const tablets: TabletView[] = [
      { id: 't1', replicas: ['a', 'b', 'c'], leader: 'a', failed: ['b'] },
      { id: 't2', replicas: ['a', 'b', 'c'], leader: 'b', failed: ['b'] },
      { id: 't3', replicas: ['a', 'b', 'c'], leader: 'c', failed: [] },
    ];
    expect(planReplacements([ts('a', true, 3), ts('b', true, 3), ts('c', true, 3), ts('d', true, 0)], tablets, 10)).toEqual([{ type: 'replace', tabletId: 't1', dead: 'b', target: 'd' }]);
    // No spare: nothing to plan (the round re-creates it in place).
    expect(planReplacements([ts('a'), ts('b'), ts('c')], tablets, 10)).toEqual([]);
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

  it('placement: leaders are balanced per table first, then across the cluster', () => {
    // Cluster-wide 2/2/2 already, but table X is led 2/1/0 and table Y 0/1/2: both tables are lopsided.
    const initial: TabletView[] = [
      { id: 'x1', table: 'X', replicas: ['a', 'b', 'c'], leader: 'a' },
      { id: 'x2', table: 'X', replicas: ['a', 'b', 'c'], leader: 'a' },
      { id: 'x3', table: 'X', replicas: ['a', 'b', 'c'], leader: 'b' },
      { id: 'y1', table: 'Y', replicas: ['a', 'b', 'c'], leader: 'c' },
      { id: 'y2', table: 'Y', replicas: ['a', 'b', 'c'], leader: 'c' },
      { id: 'y3', table: 'Y', replicas: ['a', 'b', 'c'], leader: 'b' },
    ];
    const first = planLeaderMoves([ts('a'), ts('b'), ts('c')], initial, 1);
    expect(first).toEqual([{ type: 'stepdown', tabletId: 'x1', from: 'a', to: 'c' }]);
    const tablets = settle(initial, ['a', 'b', 'c']).tablets;
    for (const table of ['X', 'Y']) expect(leadersOf(tablets.filter((t) => t.table === table), ['a', 'b', 'c'])).toEqual([1, 1, 1]);
    expect(leadersOf(tablets, ['a', 'b', 'c'])).toEqual([2, 2, 2]);
    // Without table names the old cluster-wide rule holds: 2/2/2 needs no move.
    const untagged = initial.map(({ table: _table, ...rest }) => rest);
    expect(planLeaderMoves([ts('a'), ts('b'), ts('c')], untagged, 10)).toEqual([]);
  });

  it('placement: leader balancing always settles (no ping-pong), with every table and the cluster within one where replicas allow', () => {
    const servers = ['a', 'b', 'c', 'd', 'e'];
    const arb = fc.array(
      fc.record({ table: fc.constantFrom('X', 'Y', 'Z'), replicas: fc.shuffledSubarray(servers, { minLength: 3, maxLength: 3 }), leaderIdx: fc.nat(2) }),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(arb, fc.integer({ min: 1, max: 4 }), (specs, movesMax) => {
        const tablets: TabletView[] = specs.map((s, i) => ({ id: `t${String(i).padStart(2, '0')}`, table: s.table, replicas: s.replicas, leader: s.replicas[s.leaderIdx]! }));
        const { tablets: end, rounds } = settle(tablets, servers, movesMax);
        expect(rounds).toBeLessThan(500);
        // Settled: no tablet could still even out its table by moving to one of its replicas.
        for (const t of end) {
          const same = end.filter((x) => x.table === t.table);
          for (const to of t.replicas) {
            const n = (u: string): number => same.filter((x) => x.leader === u).length;
            expect(n(t.leader) - n(to)).toBeLessThan(2);
          }
        }
        // With every tablet on all of a, b, c: each table and the cluster within one.
        if (end.every((t) => ['a', 'b', 'c'].every((u) => t.replicas.includes(u)))) {
          const spread = (c: number[]): number => Math.max(...c) - Math.min(...c);
          expect(spread(leadersOf(end, ['a', 'b', 'c']))).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Apply planLeaderMoves rounds until it plans nothing; the rounds it took. */
function settle(tablets: TabletView[], servers: string[], movesMax = 2): { tablets: TabletView[]; rounds: number } {
  let cur = tablets.map((t) => ({ ...t }));
  for (let rounds = 0; rounds < 1000; rounds++) {
    const moves = planLeaderMoves(servers.map((u) => ts(u)), cur, movesMax);
    if (moves.length === 0) return { tablets: cur, rounds };
    cur = cur.map((t) => {
      const m = moves.find((x) => x.type === 'stepdown' && x.tabletId === t.id);
      return m && m.type === 'stepdown' ? { ...t, leader: m.to } : t;
    });
  }
  return { tablets: cur, rounds: 1000 };
}

function leadersOf(tablets: readonly TabletView[], servers: string[]): number[] {
  return servers.map((u) => tablets.filter((t) => t.leader === u).length);
}

describe('master: the peer list of a CreateTablet', () => {
  const addr = (u: string): string => `${u}:9100`;
  it('master: a replica added to a running group is created as a learner of its own list (ADD_VOTER through the log makes it a voter); at the tablet\'s creation every replica is a voter', () => {
    expect(createTabletPeers([], ['a', 'b', 'c'], 'b', addr).map((p) => `${p.uuid}:${p.memberType}`)).toEqual(['a:VOTER', 'b:VOTER', 'c:VOTER']);
    // c died; d replaces it: d must not believe it is a voter of {a, b, d}, a configuration no log holds.
    expect(createTabletPeers(['a', 'b', 'c'], ['a', 'b', 'd'], 'd', addr).map((p) => `${p.uuid}:${p.memberType}`)).toEqual(['a:VOTER', 'b:VOTER', 'c:VOTER', 'd:LEARNER']);
    // A voter of the group created again on its host (its replica was lost) rejoins as what Raft says it is.
    expect(createTabletPeers(['a', 'b', 'c'], ['a', 'b', 'c'], 'c', addr).find((p) => p.uuid === 'c')?.memberType).toBe('VOTER');
    expect(createTabletPeers(['a'], ['a', 'b'], 'b', addr)[1]).toEqual({ uuid: 'b', rpcAddress: 'b:9100', memberType: 'LEARNER' });
  });
});
