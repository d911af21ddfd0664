/**
 * End to end over real files: three RawNodes on FileLogStorage + LazyWalFs, driven deterministically
 * (no timers), then power loss on one node and on all nodes. Every entry the leader saw committed
 * must still be in every log after the restarts (the NATS-2025 case: acks before fsync lose data).
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { NodeId } from '../../common/ids';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { RawNode } from '../../raft/raw-node';
import type { Message } from '../../raft/types';
import { FileLogStorage } from '../../raft/wal/file-log-storage';
import { LazyWalFs } from '../../raft/wal/lazy-wal-fs';

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-raft-'));
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));
const IDS = ['n1', 'n2', 'n3'] as NodeId[];

interface Replica {
  id: NodeId;
  lazy: LazyWalFs;
  storage: FileLogStorage;
  node: RawNode;
}

async function openReplica(id: NodeId, lazy: LazyWalFs, seed: number, bootstrap: boolean): Promise<Replica> {
  const storage = await FileLogStorage.open(path.join(ROOT, id), { fs: lazy, logger: silentLogger(), onFatal: (e) => { throw e; } });
  if (bootstrap) {
    storage.setConfState({ voters: IDS, learners: [] });
    await storage.sync();
  }
  return { id, lazy, storage, node: new RawNode({ id, storage, rng: new SeededRng(seed), electionTicks: 10, heartbeatTicks: 1 }) };
}

/** Run every replica's Ready loop and deliver messages until nothing is left (bounded). */
async function drive(rs: Replica[]): Promise<void> {
  const byId = new Map(rs.map((r) => [r.id, r]));
  for (let iter = 0; iter < 2000; iter++) {
    const outbox: Message[] = [];
    let busy = false;
    for (const r of rs) {
      while (r.node.hasReady()) {
        busy = true;
        const rd = r.node.ready();
        if (rd.snapshot) r.storage.applySnapshot(rd.snapshot);
        if (rd.entries.length > 0) r.storage.append(rd.entries);
        if (rd.hardState) r.storage.setHardState(rd.hardState);
        if (rd.mustSync) await r.storage.sync();
        outbox.push(...rd.messages);
        r.node.advance(rd);
      }
    }
    for (const m of outbox) byId.get(m.to)?.node.step(m);
    if (!busy && outbox.length === 0) return;
  }
  throw new Error('cluster did not quiesce within 2000 rounds');
}

async function electSomeone(rs: Replica[]): Promise<Replica> {
  for (let t = 0; t < 200; t++) {
    const l = rs.find((r) => r.node.status().role === 'LEADER');
    if (l) return l;
    for (const r of rs) r.node.tick();
    await drive(rs);
  }
  throw new Error('no leader within 200 ticks');
}

async function proposeAll(leader: Replica, rs: Replica[], texts: string[]): Promise<void> {
  for (const t of texts) expect(leader.node.propose(new TextEncoder().encode(t)).ok).toBe(true);
  await drive(rs);
}

function normalPayloads(r: Replica): string[] {
  const s = r.storage;
  return s
    .entries(s.firstIndex(), s.lastIndex() + 1)
    .filter((e) => e.type === 'normal')
    .map((e) => new TextDecoder().decode(e.data));
}

describe('raft over FileLogStorage', () => {
  it('wal+raft: every committed entry survives a power loss on one node and then on all nodes', async () => {
    let rs = await Promise.all(IDS.map((id, k) => openReplica(id, new LazyWalFs(), k + 1, true)));
    rs[0]!.node.campaign();
    await drive(rs);
    let leader = await electSomeone(rs);
    const written = Array.from({ length: 20 }, (_, k) => `v${k}`);
    await proposeAll(leader, rs, written);
    const committed = leader.node.status().commit;
    expect(committed).toBeGreaterThanOrEqual(21);

    // Power loss on a follower: it comes back with its whole acknowledged log and catches up.
    const f = rs.find((r) => r !== leader)!;
    f.lazy.crash();
    const f2 = await openReplica(f.id, f.lazy, 42, false);
    expect(f2.storage.lastIndex()).toBeGreaterThanOrEqual(committed);
    expect(f2.storage.initialState().hardState.term).toBe(leader.node.status().term);
    rs = rs.map((r) => (r === f ? f2 : r));
    await proposeAll(leader, rs, ['w0', 'w1']);
    for (const r of rs) expect(normalPayloads(r)).toEqual([...written, 'w0', 'w1']);

    // Power loss everywhere at once.
    for (const r of rs) r.lazy.crash();
    rs = await Promise.all(rs.map((r, k) => openReplica(r.id, r.lazy, 100 + k, false)));
    for (const r of rs) expect(normalPayloads(r).slice(0, 22)).toEqual([...written, 'w0', 'w1']);
    leader = await electSomeone(rs);
    await proposeAll(leader, rs, ['after']);
    for (const r of rs) expect(normalPayloads(r)).toEqual([...written, 'w0', 'w1', 'after']);
    for (const r of rs) await r.storage.close();
  });
});
