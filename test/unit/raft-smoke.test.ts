import { describe, expect, it } from 'vitest';
import { NodeId, SeededRng } from '../../common';
import { RawNode } from '../../raft';
import type { Message } from '../../raft';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';

function cluster(n: number): { nodes: RawNode[]; stores: MemoryLogStorage[] } {
  const ids = Array.from({ length: n }, (_, i) => NodeId(`n${i + 1}`));
  const stores = ids.map(() => {
    const s = new MemoryLogStorage();
    s.setConfState({ voters: ids, learners: [] });
    return s;
  });
  const rng = new SeededRng(1);
  const nodes = ids.map((id, i) => new RawNode({ id, storage: stores[i]!, rng: rng.fork() }));
  return { nodes, stores };
}

function stabilize(nodes: RawNode[], stores: MemoryLogStorage[], applied: Map<string, string[]>): void {
  for (let round = 0; round < 100; round++) {
    const out: Message[] = [];
    let any = false;
    nodes.forEach((n, i) => {
      while (n.hasReady()) {
        any = true;
        const rd = n.ready();
        if (rd.entries.length) stores[i]!.append(rd.entries);
        if (rd.hardState) stores[i]!.setHardState(rd.hardState);
        out.push(...rd.messages);
        for (const e of rd.committedEntries) {
          const l = applied.get(n.id) ?? [];
          l.push(`${e.index}/${e.term}/${e.type}`);
          applied.set(n.id, l);
        }
        n.advance(rd);
      }
    });
    for (const m of out) nodes.find((x) => x.id === m.to)?.step(m);
    if (!any && out.length === 0) return;
  }
}

describe('raft smoke', () => {
  it('raft: three nodes elect one leader and commit a proposal everywhere', () => {
    const { nodes, stores } = cluster(3);
    const applied = new Map<string, string[]>();
    nodes[0]!.campaign();
    stabilize(nodes, stores, applied);
    expect(nodes.map((n) => n.status().role)).toEqual(['LEADER', 'FOLLOWER', 'FOLLOWER']);
    const r = nodes[0]!.propose(new Uint8Array([1, 2, 3]));
    expect(r.ok).toBe(true);
    stabilize(nodes, stores, applied);
    for (const n of nodes) expect(applied.get(n.id)).toEqual(['1/1/noop', '2/1/normal']);
  });
});
