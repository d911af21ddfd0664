/**
 * Throughput of the pure Raft core alone: 3 replicas over MemoryLogStorage in one process, messages
 * delivered in-process, 100-byte proposals in batches of 1, 16 and 128. No disk, no network: this is
 * the ceiling the core puts on a group, not a system figure (bench/raft-bench.ts measures that).
 *   npx tsc -b && node dist/test/sim/core-throughput.js
 */
import { NodeId, SeededRng } from '../../common';
import type { Message } from '../../raft';
import { bootstrapStorage, RawNode } from '../../raft';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';

const ids = ['a', 'b', 'c'].map(NodeId);
const stores = new Map<string, MemoryLogStorage>();
const nodes = new Map<string, RawNode>();
for (const id of ids) {
  const s = new MemoryLogStorage();
  bootstrapStorage(s, ids);
  stores.set(id, s);
  nodes.set(id, new RawNode({ id, storage: s, rng: new SeededRng(1), maxInflightMsgs: 256 }));
}
let applied = 0;

function pump(): void {
  let queue: Message[] = [];
  for (let round = 0; round < 1000; round++) {
    let any = false;
    for (const id of ids) {
      const n = nodes.get(id)!;
      const s = stores.get(id)!;
      while (n.hasReady()) {
        any = true;
        const rd = n.ready();
        if (rd.entries.length > 0) s.append(rd.entries);
        if (rd.hardState) s.setHardState(rd.hardState);
        queue.push(...rd.messages);
        if (id === 'a') for (const e of rd.committedEntries) if (e.type === 'normal') applied++;
        n.advance(rd);
      }
    }
    const cur = queue;
    queue = [];
    for (const m of cur) {
      any = true;
      nodes.get(m.to)!.step(m);
    }
    if (!any) return;
  }
}

const leader = nodes.get('a')!;
leader.campaign();
pump();
const data = new Uint8Array(100);
for (const batch of [1, 16, 128]) {
  applied = 0;
  const total = 200_000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < total; i += batch) {
    for (let j = 0; j < batch; j++) leader.propose(data);
    pump();
    // Keep memory flat: compact every replica a little behind its applied index.
    if (i % 20_000 === 0) {
      for (const id of ids) {
        const s = stores.get(id)!;
        const ap = nodes.get(id)!.basicStatus().applied - 10;
        if (ap >= s.firstIndex()) s.compact(ap);
      }
    }
  }
  const sec = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(`batch ${batch}: ${Math.round(applied / sec)} committed entries/s`);
}
