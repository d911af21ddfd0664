/**
 * A split child's first term is led by the SPLIT entry's named replica without an election
 * (docs/splitting.md, tserver/split-children.ts): the Raft rule on its own, then three tablet
 * managers wired in-process that split a tablet for real.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Flags } from '../../common/flags';
import { NodeId } from '../../common/ids';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import { partitionHash } from '../../common/partition-hash';
import { bytesOfHex } from '../../common/key-bounds';
import { MemoryEngine } from '../../docdb';
import { RawNode, type Message } from '../../raft';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';
import type { TabletManager } from '../../tserver/tablet-manager';
import { testTabletManager } from './tablet-manager-harness';
import { SplitService } from '../../tserver/split-service';
import { childPartitions } from '../../tserver/split-apply';
import { SPLIT_CHILD_TERM, SplitChildren } from '../../tserver/split-children';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';

const ids = ['a', 'b', 'c'].map(NodeId);

/** A replica's storage as a split child starts it: base snapshot at index 1, the first term's vote assigned to `leader`. */
function childStorage(leader: string): MemoryLogStorage {
  const s = new MemoryLogStorage({ trackDurability: true });
  const conf = { voters: [...ids], learners: [] };
  s.setConfState(conf);
  s.applySnapshot({ meta: { index: 1, term: 1, conf }, data: new Uint8Array(0) });
  s.setHardState({ term: SPLIT_CHILD_TERM, vote: NodeId(leader), commit: 1 });
  void s.sync();
  return s;
}

describe('split child: the first term without an election (Raft)', () => {
  it('raft: the replica every vote was assigned to leads the term at once, commits with one follower, and nobody else can win that term', () => {
    const stores = new Map(ids.map((id) => [id as string, childStorage('a')]));
    const nodes = new Map(ids.map((id, i) => [id as string, new RawNode({ id, storage: stores.get(id)!, rng: new SeededRng(i + 1), preVote: true, checkQuorum: true })]));
    const queue: Message[] = [];
    const pump = (cut: (m: Message) => boolean): void => {
      for (let round = 0; round < 50; round++) {
        for (const [id, raw] of nodes) {
          while (raw.hasReady()) {
            const rd = raw.ready();
            const s = stores.get(id)!;
            s.append(rd.entries);
            if (rd.hardState) s.setHardState(rd.hardState);
            void s.sync();
            queue.push(...rd.messages);
            raw.advance(rd);
          }
        }
        const q = queue.splice(0);
        if (q.length === 0) return;
        for (const m of q) if (!cut(m)) nodes.get(m.to)!.step(m);
      }
    };
    // Not the assigned one: refused, no state change.
    expect(nodes.get('b')!.leadAssignedTerm()).toBe(false);
    expect(nodes.get('b')!.status().role).toBe('FOLLOWER');
    expect(nodes.get('a')!.leadAssignedTerm()).toBe(true);
    expect(nodes.get('a')!.status()).toMatchObject({ role: 'LEADER', term: SPLIT_CHILD_TERM });
    // c is not there yet (its child still being built): b's ack alone commits the leader's no-op.
    pump((m) => m.to === 'c' || m.from === 'c');
    expect(nodes.get('a')!.status().commit).toBe(2);
    expect(nodes.get('b')!.status()).toMatchObject({ role: 'FOLLOWER', term: SPLIT_CHILD_TERM, leader: 'a' });
    // A vote for another candidate in that term is refused by a replica that recorded its vote for a.
    const before = queue.length;
    nodes.get('c')!.step({ type: 'vote', from: NodeId('b'), to: NodeId('c'), term: SPLIT_CHILD_TERM, lastIndex: 1, lastTerm: 1, pre: false, transfer: false });
    const rd = nodes.get('c')!.ready();
    expect(rd.messages.slice(before)).toEqual([expect.objectContaining({ type: 'voteResp', to: 'b', reject: true })]);
    nodes.get('c')!.advance(rd);
    // Followers still building their copies do not depose it at the first check-quorum tick; silence
    // for a second election timeout does (then the replicas elect as usual, at a later term).
    const lone = new RawNode({ id: NodeId('a'), storage: childStorage('a'), rng: new SeededRng(5), preVote: true, checkQuorum: true, electionTicks: 10, heartbeatTicks: 1 });
    expect(lone.leadAssignedTerm()).toBe(true);
    for (let i = 0; i < 10; i++) lone.tick();
    expect(lone.status().role).toBe('LEADER');
    for (let i = 0; i < 10; i++) lone.tick();
    expect(lone.status()).toMatchObject({ role: 'FOLLOWER', term: SPLIT_CHILD_TERM });
    // Once it appended in the term, the leader never leads it again "at once" (restarted on its synced log).
    const again = new RawNode({ id: NodeId('a'), storage: stores.get('a')!, rng: new SeededRng(9), preVote: true, checkQuorum: true });
    expect(again.leadAssignedTerm()).toBe(false);
    expect(again.status().role).toBe('FOLLOWER');
  });
});

// ---------------------------------------------------------------- three tablet managers

const dirs: string[] = [];
const managers: TabletManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const uuids = ['ts1', 'ts2', 'ts3'];
const peers = uuids.map((u, i) => ({ uuid: u, rpcAddress: `127.0.0.1:${i + 1}`, memberType: 'VOTER' as const }));

function parentMeta(): TabletMeta {
  return {
    tabletId: 'parent',
    tableId: 'tbl',
    tableName: 'demo',
    schema: { columns: [{ name: 'k', id: 0, type: 'int64', nullable: false }, { name: 'v', id: 1, type: 'string', nullable: true }], hashColumns: ['k'], rangeColumns: [] },
    partition: { start: 0, end: 65536 },
    peers,
    schemaVersion: 0,
  };
}

/** Three managers whose Raft messages reach each other (asynchronously) unless `down` holds the receiver. */
class Cluster {
  readonly ms = new Map<string, TabletManager>();
  readonly down = new Set<string>();
  readonly engines = new Map<string, Map<string, MemoryEngine>>();
  constructor(readonly root: string) {
    for (const u of uuids) this.start(u);
  }

  start(uuid: string): TabletManager {
    const engines = this.engines.get(uuid) ?? new Map<string, MemoryEngine>();
    this.engines.set(uuid, engines);
    const m = testTabletManager(path.join(this.root, uuid), {
      selfUuid: uuid,
      selfAddress: peers.find((p) => p.uuid === uuid)!.rpcAddress,
      seed: uuids.indexOf(uuid) + 11,
      send: (g, msgs) => setImmediate(() => msgs.forEach((x) => !this.down.has(x.to) && !this.down.has(uuid) && this.ms.get(x.to)?.dispatch(g, x))),
      engines,
    });
    this.ms.set(uuid, m);
    managers.push(m);
    return m;
  }

  async stop(uuid: string): Promise<void> {
    const m = this.ms.get(uuid)!;
    this.down.add(uuid);
    await m.stop();
    managers.splice(managers.indexOf(m), 1);
  }

  /** Ticks every live manager until `f` holds (bounded). */
  async until(f: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 2000; i++) {
      if (f()) return;
      for (const [u, m] of this.ms) if (!this.down.has(u)) m.tickAll();
      await new Promise((r) => setTimeout(r, 2));
    }
    throw new Error(`never: ${what}`);
  }
}

function child(m: TabletManager, id: string): TabletPeer | undefined {
  return m.has(id) ? m.get(id) : undefined;
}

describe('split child: the first term without an election (tablet managers)', () => {
  it('split: the proposer leads both children in their first term at once (no election), followers follow it; after a restart elections are ordinary', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-leader-'));
    dirs.push(root);
    const c = new Cluster(root);
    for (const m of c.ms.values()) await m.createTablet(parentMeta());
    await c.until(() => [...c.ms.values()].some((m) => m.get('parent').isLeaderReady()), 'a parent leader');
    const leaderUuid = uuids.find((u) => c.ms.get(u)!.get('parent').isLeaderReady())!;
    const lm = c.ms.get(leaderUuid)!;
    const parent = lm.get('parent');
    const rows = Array.from({ length: 200 }, (_, i) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: { hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] }, columns: [{ columnId: 1, value: `v${i}` }] } }));
    await parent.write({ ops: rows });
    const svc = new SplitService({ manager: () => lm });
    const { splitPoint } = await svc.split({ tabletId: 'parent' });
    const parts = childPartitions(parent.meta, { hash: splitPoint!.hash! });
    const children = ['left', 'right'].map((id, i) => ({ tabletId: id, partition: { start: parts[i]!.start, end: parts[i]!.end, keyStart: bytesOfHex(parts[i]!.keyStart), keyEnd: bytesOfHex(parts[i]!.keyEnd) } }));
    await svc.split({ tabletId: 'parent', children, peers });
    for (const id of ['left', 'right']) {
      await c.until(() => child(lm, id)?.isLeaderReady() ?? false, `${id} ready on the named leader`);
      expect(lm.get(id).currentTerm()).toBe(SPLIT_CHILD_TERM);
      await c.until(() => uuids.every((u) => child(c.ms.get(u)!, id)?.raftGroup().leaderId() === leaderUuid), `${id} followed everywhere`);
      // Nobody campaigned: every replica is still in the first term.
      for (const u of uuids) expect(c.ms.get(u)!.get(id).currentTerm()).toBe(SPLIT_CHILD_TERM);
    }
    // The children serve: a write to the left child commits.
    const left = lm.get('left');
    const key = rows.find((r) => r.op.key.hash < parts[0]!.end)!.op.key;
    await left.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key, columns: [{ columnId: 1, value: 'after' }] } }] });
    // The named leader restarts: its child reopens as a follower (never leads its first term again)
    // and the group goes on under an ordinary election, at a later term.
    await c.stop(leaderUuid);
    c.down.delete(leaderUuid);
    const back = c.start(leaderUuid);
    await back.openAll();
    expect(back.get('left').raftGroup().isLeader()).toBe(false);
    await c.until(() => uuids.some((u) => child(c.ms.get(u)!, 'left')?.isLeaderReady() ?? false), 'left leads again');
    const now = uuids.find((u) => c.ms.get(u)!.get('left').isLeaderReady())!;
    expect(c.ms.get(now)!.get('left').currentTerm()).toBeGreaterThan(SPLIT_CHILD_TERM);
    const got = await c.ms.get(now)!.get('left').read([key], { columns: [1] });
    expect(got.rows[0]?.columns.get(1)).toBe('after');
  }, 60_000);
});

describe('split child: building', () => {
  it('split: raft messages for a child still being built are kept and delivered when it opens; its log holds the first term\'s vote for the named leader', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-build-'));
    dirs.push(root);
    const wals = new Map<string, MemoryLogStorage>();
    const stepped: Message[] = [];
    let opened!: () => void;
    const gate = new Promise<void>((r) => (opened = r));
    const meta: TabletMeta = { ...parentMeta(), tabletId: 'left', partition: { start: 0, end: 100 } };
    const children = new SplitChildren({
      tabletsDir: root,
      selfUuid: 'ts2',
      selfAddress: '127.0.0.1:2',
      flags: new Flags(),
      log: silentLogger(),
      openEngine: async () => new MemoryEngine(),
      openWal: async (dir) => {
        const w = new MemoryLogStorage();
        wals.set(dir, w);
        return w;
      },
      openPeer: async () => {
        await gate; // the child's open takes a while: messages arrive meanwhile
        return { raftGroup: () => ({ leadAssignedTerm: () => true }), step: (m: Message) => void stepped.push(m) } as unknown as TabletPeer;
      },
      peer: () => undefined,
      addressOf: () => undefined,
    });
    const m: Message = { type: 'heartbeat', from: NodeId('ts1'), to: NodeId('ts2'), term: SPLIT_CHILD_TERM, commit: 1 } as unknown as Message;
    expect(children.keep('left', m)).toBe(false); // not being built: the transport drops it
    const building = children.create([meta], new MemoryEngine(), { leader: 'ts1', campaign: false });
    expect(children.keep('left', m)).toBe(true); // registered as being built before its first await
    expect(stepped).toEqual([]);
    opened();
    const [built] = await building;
    expect(stepped).toEqual([m]);
    expect(built!.led).toBe(false); // this replica is not the named one
    expect(children.keep('left', m)).toBe(false);
    const wal = wals.get(path.join(root, 'left', 'wal'))!;
    expect(wal.initialState().hardState).toMatchObject({ term: SPLIT_CHILD_TERM, vote: 'ts1' });
    expect(fs.existsSync(path.join(root, 'left', 'meta.json'))).toBe(true);
  });
});
