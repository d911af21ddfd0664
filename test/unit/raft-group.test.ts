import { describe, expect, it } from 'vitest';
import { RaftGroup } from '../../raft/raft-group';
import { RawNode } from '../../raft/raw-node';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';
import type { Entry, Message } from '../../raft/types';
import { NodeId } from '../../common/ids';
import { SeededRng } from '../../common/rng';
import { DbError, ErrorCode } from '../../common/errors';

interface Node {
  id: NodeId;
  group: RaftGroup;
  storage: MemoryLogStorage;
  applied: Entry[];
}

/** Three groups wired through an in-memory hand-off; `cut` holds ids whose traffic is dropped. */
function cluster(seed = 1, clock?: { now: number; tickMs: number }, applyGate?: (id: string) => Promise<void>, fatals?: Array<{ id: string; e: unknown }>) {
  const ids = ['a', 'b', 'c'].map(NodeId);
  const cut = new Set<string>();
  /** Messages to these ids wait in `gate` until the test releases them. */
  const holdTo = new Set<string>();
  const gate: Array<() => void> = [];
  const nodes = new Map<string, Node>();
  for (const id of ids) {
    const storage = new MemoryLogStorage();
    storage.setConfState({ voters: ids, learners: [] });
    const core = new RawNode({ id, storage, rng: new SeededRng(seed * 31 + id.charCodeAt(0)), electionTicks: 10, heartbeatTicks: 1 });
    const applied: Entry[] = [];
    const group = new RaftGroup({
      id,
      groupId: 'g1',
      storage,
      core,
      appliedIndex: 0,
      send: (msgs: Message[]) => {
        for (const m of msgs) {
          if (cut.has(m.from) || cut.has(m.to)) continue;
          const deliver = () => nodes.get(m.to)?.group.step(m);
          if (holdTo.has(m.to)) gate.push(deliver);
          else setImmediate(deliver);
        }
      },
      applyEntries: async (ents) => {
        if (applyGate) await applyGate(id);
        for (const e of ents) applied.push(e);
      },
      createSnapshot: async () => new Uint8Array(),
      installSnapshot: async () => undefined,
      ...(clock ? { leaseClock: { tickIntervalMs: clock.tickMs, nowMs: () => clock.now } } : {}),
      ...(fatals ? { onFatal: (e: unknown) => fatals.push({ id, e }) } : {}),
    });
    nodes.set(id, { id, group, storage, applied });
  }
  const tickAll = () => {
    if (clock) clock.now += clock.tickMs;
    for (const n of nodes.values()) n.group.tick();
  };
  const until = async (cond: () => boolean, maxTicks = 500): Promise<void> => {
    for (let i = 0; i < maxTicks; i++) {
      if (cond()) return;
      tickAll();
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
    }
    throw new Error('condition not reached');
  };
  const leader = (): Node | undefined => [...nodes.values()].find((n) => n.group.isLeaderReady() && !cut.has(n.id));
  return { nodes, cut, holdTo, gate, until, leader, tickAll };
}

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/**
 * A cluster whose leader applied 'warm', then had its fsyncs held: each sync() waits in `held` until
 * the test releases it. `normal()`: the leader's applied normal entries, as text.
 */
async function leaderWithHeldSyncs() {
  const c = cluster(5);
  await c.until(() => c.leader() !== undefined);
  const l = c.leader()!;
  await l.group.propose(bytes('warm'));
  const held: Array<() => void> = [];
  const realSync = l.storage.sync.bind(l.storage);
  l.storage.sync = () => new Promise<void>((resolve) => held.push(() => void realSync().then(resolve)));
  const normal = () => l.applied.filter((e) => e.type === 'normal').map((e) => text(e.data));
  return { c, l, held, realSync, normal };
}

describe('RaftGroup', () => {
  it('raft-group: a proposal resolves after commit and every replica applies it in order', async () => {
    const c = cluster();
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => l.group.propose(bytes(`v${i}`))));
    expect(results.map((r) => r.index)).toEqual([...results.map((r) => r.index)].sort((a, b) => a - b));
    await c.until(() => [...c.nodes.values()].every((n) => n.applied.filter((e) => e.type === 'normal').length === 50));
    for (const n of c.nodes.values()) {
      expect(n.applied.filter((e) => e.type === 'normal').map((e) => text(e.data))).toEqual(Array.from({ length: 50 }, (_, i) => `v${i}`));
      const idx = n.applied.map((e) => e.index);
      expect(idx).toEqual([...idx].sort((a, b) => a - b));
    }
    // Proposals of one turn share one Ready: far fewer syncs than entries on the leader.
    expect(l.group.status().appliedIndex).toBeGreaterThanOrEqual(results[49]!.index);
  });

  it('raft-group: a follower rejects proposals with NOT_THE_LEADER and names the leader', async () => {
    const c = cluster(2);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await c.until(() => [...c.nodes.values()].every((n) => n.group.leaderId() === l.id));
    const f = [...c.nodes.values()].find((n) => n !== l)!;
    const err = await f.group.propose(bytes('x')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe(ErrorCode.NOT_THE_LEADER);
    expect((err as DbError).details['leaderUuid']).toBe(l.id);
  });

  it('raft-group: a deposed leader rejects its uncommitted proposals once another leader overwrites them', async () => {
    const c = cluster(3);
    await c.until(() => c.leader() !== undefined);
    const old = c.leader()!;
    c.cut.add(old.id);
    const pending = old.group.propose(bytes('lost')).then(
      () => 'resolved',
      (e: unknown) => (e instanceof DbError ? e.code : 'other'),
    );
    await c.until(() => c.leader() !== undefined && c.leader() !== old);
    const nl = c.leader()!;
    await nl.group.propose(bytes('won'));
    c.cut.clear();
    await c.until(() => old.applied.some((e) => text(e.data) === 'won'));
    expect(await pending).toBe(ErrorCode.NOT_THE_LEADER);
    for (const n of c.nodes.values()) expect(n.applied.some((e) => text(e.data) === 'lost')).toBe(false);
  });

  it('raft-group: readIndex resolves on the leader and fails on a follower', async () => {
    const c = cluster(4);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await l.group.propose(bytes('w'));
    const done = l.group.readIndex().then(() => true);
    for (let i = 0; i < 20; i++) {
      c.tickAll();
      await new Promise((res) => setImmediate(res));
    }
    expect(await done).toBe(true);
    const f = [...c.nodes.values()].find((n) => n !== l)!;
    await expect(f.group.readIndex()).rejects.toMatchObject({ code: ErrorCode.NOT_THE_LEADER });
  });

  it('raft-group: leadership transfer moves the leader and stop() fails pending calls', async () => {
    const c = cluster(5);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await c.until(() => [...c.nodes.values()].every((n) => n.group.status().appliedIndex === l.group.status().appliedIndex));
    l.group.transferLeadership();
    await c.until(() => c.leader() !== undefined && c.leader() !== l);
    for (const n of c.nodes.values()) await n.group.stop();
    await expect(l.group.propose(bytes('x'))).rejects.toMatchObject({ code: ErrorCode.SHUTTING_DOWN });
  });

  it('raft-group: an apply failure stops the replica; its pending proposals fail SHUTTING_DOWN with an unknown outcome, and they do commit through the others', async () => {
    let failOn: string | undefined;
    const fatals: Array<{ id: string; e: unknown }> = [];
    const c = cluster(7, undefined, async (id) => {
      if (id === failOn) throw new Error('simulated disk failure');
    }, fatals);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await c.until(() => [...c.nodes.values()].every((n) => n.group.status().appliedIndex === l.group.status().appliedIndex));
    failOn = l.id;
    const results = await Promise.allSettled(['x0', 'x1', 'x2'].map((v) => l.group.propose(bytes(v))));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      const err = (r as PromiseRejectedResult).reason as DbError;
      expect(err.code).toBe(ErrorCode.SHUTTING_DOWN);
      expect(err.details['outcome']).toBe('unknown');
      expect(err.message).toContain('simulated disk failure');
    }
    expect(fatals.map((f) => f.id)).toEqual([l.id]);
    // The entries were replicated before the leader's apply failed: the others elect a leader and apply them.
    const others = [...c.nodes.values()].filter((n) => n !== l);
    await c.until(() => others.every((n) => n.applied.filter((e) => e.type === 'normal').map((e) => text(e.data)).join() === 'x0,x1,x2'));
    await expect(l.group.propose(bytes('after'))).rejects.toMatchObject({ code: ErrorCode.SHUTTING_DOWN });
  });

  it('raft-group: committed entries reach the apply stage while the sync of newer entries is still running', async () => {
    const { c, l, held, realSync, normal } = await leaderWithHeldSyncs();
    const x = l.group.propose(bytes('x'));
    // x's Ready sends the appends before its own sync: the followers persist and acknowledge x.
    await c.until(() => held.length === 1 && [...c.nodes.values()].filter((n) => n !== l).every((n) => n.storage.lastIndex() >= l.storage.lastIndex()));
    const y = l.group.propose(bytes('y'));
    held.shift()!();
    // The next Ready carries y (to persist) and x (committed, persisted by the previous Ready): x is
    // applied while y's sync is still held.
    await c.until(() => held.length === 1 && normal().includes('x'));
    expect(normal()).not.toContain('y');
    expect((await x).index).toBeLessThan(l.storage.lastIndex());
    l.storage.sync = realSync;
    held.shift()!();
    await y;
    await c.until(() => normal().includes('y'));
    expect(normal().slice(-3)).toEqual(['warm', 'x', 'y']);
  });

  it('raft-group: beforeNextReady runs a hook registered during a sync right before the next Ready, so what it proposes joins that Ready (no extra round); on an idle group it kicks a pass; on a stopped one it runs at once', async () => {
    const { c, l, held, realSync, normal } = await leaderWithHeldSyncs();
    const x = l.group.propose(bytes('x'));
    await c.until(() => held.length === 1);
    // During x's sync: a direct proposal and a hook's proposal both go to the next Ready.
    const y = l.group.propose(bytes('y'));
    let z: Promise<{ index: number }> | undefined;
    let ranWhileSyncing = false;
    l.group.beforeNextReady(() => {
      ranWhileSyncing = held.length === 0; // the held sync was released: this is the next round
      z = l.group.propose(bytes('z'));
    });
    expect(z).toBeUndefined();
    held.shift()!();
    await c.until(() => held.length === 1 && z !== undefined);
    expect(ranWhileSyncing).toBe(true);
    // y and z were appended by the same Ready, before the one sync now held.
    expect(l.storage.lastIndex()).toBe((await x).index + 2);
    l.storage.sync = realSync;
    held.shift()!();
    expect([(await y).index, (await z!).index]).toEqual([(await x).index + 1, (await x).index + 2]);
    await c.until(() => normal().includes('z'));
    // Idle group: the hook runs on a pass kicked for it.
    let w: Promise<{ index: number }> | undefined;
    l.group.beforeNextReady(() => (w = l.group.propose(bytes('w'))));
    await c.until(() => w !== undefined);
    await w;
    expect(normal().slice(-4)).toEqual(['x', 'y', 'z', 'w']);
    await l.group.stop();
    let ran = false;
    l.group.beforeNextReady(() => (ran = true));
    expect(ran).toBe(true);
  });

  it('raft-group: beforeNextReady(fn, early) during a sync runs the hook in the next turn and sends what it proposes at once — the followers persist it (and can apply it) while the leader\'s sync is still held', async () => {
    const { c, l, held, realSync, normal } = await leaderWithHeldSyncs();
    const followers = [...c.nodes.values()].filter((n) => n !== l);
    const x = l.group.propose(bytes('x'));
    // No ticks from here on: no heartbeat round may carry z; only the early send does.
    const withoutTicks = async (cond: () => boolean): Promise<void> => {
      for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setImmediate(r));
      expect(cond()).toBe(true);
    };
    const appliedBy = (n: Node, v: string): boolean => n.applied.some((e) => e.type === 'normal' && text(e.data) === v);
    // x is committed by the followers and every message about it delivered: nothing else would carry z.
    await withoutTicks(() => held.length === 1 && followers.every((n) => appliedBy(n, 'x')));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    let z: Promise<{ index: number }> | undefined;
    let ranWhileSyncing = false;
    l.group.beforeNextReady(() => {
      ranWhileSyncing = held.length === 1; // x's sync is still held
      z = l.group.propose(bytes('z'));
    }, true);
    await withoutTicks(() => z !== undefined);
    expect(ranWhileSyncing).toBe(true);
    // z reached both followers' logs during x's held sync (the leader sends before its own fsync);
    // with the two of them a majority, they commit and apply x and z before the leader's sync ends.
    await withoutTicks(() => followers.every((n) => appliedBy(n, 'z')));
    expect(held.length).toBe(1);
    expect(normal()).not.toContain('z');
    l.storage.sync = realSync;
    held.shift()!();
    expect((await z!).index).toBe((await x).index + 1);
    await c.until(() => normal().includes('z'));
    expect(normal().slice(-2)).toEqual(['x', 'z']);
  });

  it('raft-group: a proposal with `always` has onCommitted called at its commit even when nothing is applying (without it, only behind other applies)', async () => {
    const c = cluster(7);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await l.group.propose(bytes('warm'));
    const calls: string[] = [];
    const a = l.group.propose(bytes('a'), () => calls.push('a'), true);
    await a;
    const b = l.group.propose(bytes('b'), () => calls.push('b'));
    await b;
    expect(calls).toEqual(['a']);
  });

  it('raft-group: entries committed while the sync of newer entries runs are applied during that sync, not after it', async () => {
    const { c, l, held, realSync, normal } = await leaderWithHeldSyncs();
    const followers = [...c.nodes.values()].filter((n) => n !== l);
    // The followers' acknowledgements of x wait at the gate.
    c.holdTo.add(l.id);
    const x = l.group.propose(bytes('x'));
    await c.until(() => held.length === 1 && followers.every((n) => n.storage.lastIndex() >= l.storage.lastIndex()) && c.gate.length >= 2);
    // x is durable on the leader now, but only the leader has said so: not committed.
    held.shift()!();
    await c.until(() => held.length === 0 && l.storage.lastIndex() > 0);
    const y = l.group.propose(bytes('y'));
    await c.until(() => held.length === 1);
    expect(normal()).not.toContain('x');
    const before = l.group.earlyCounts().entries;
    // The acknowledgements of x arrive while y's sync is held: x commits and is applied right away.
    c.holdTo.clear();
    for (const deliver of c.gate.splice(0)) deliver();
    await c.until(() => normal().includes('x'), 50);
    expect(held.length).toBe(1);
    expect(normal()).not.toContain('y');
    expect(l.group.earlyCounts().entries).toBeGreaterThan(before);
    await x;
    l.storage.sync = realSync;
    held.shift()!();
    await y;
    await c.until(() => normal().includes('y'));
    // Every entry was handed out once, in log order, on every replica.
    for (const n of c.nodes.values()) {
      await c.until(() => n.applied.some((e) => e.type === 'normal' && text(e.data) === 'y'));
      const idx = n.applied.map((e) => e.index);
      expect(idx).toEqual([...idx].sort((a, b) => a - b));
      expect(new Set(idx).size).toBe(idx.length);
      expect(n.applied.filter((e) => e.type === 'normal').map((e) => text(e.data)).slice(-3)).toEqual(['warm', 'x', 'y']);
    }
  });

  it('raft-group: the apply stage counts its calls, the entries they applied, how long entries waited for their call and how long the calls ran', async () => {
    // The leader's apply calls wait for `hold` while it is set.
    let hold: Promise<void> | undefined;
    let leaderId = '';
    let heldCalls = 0;
    const c = cluster(7, undefined, (id) => {
      if (!hold || id !== leaderId) return Promise.resolve();
      heldCalls++;
      return hold;
    });
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    leaderId = l.id;
    await l.group.propose(bytes('warm'));
    const base = { ...l.group.applyCounts() };
    expect(base.entries).toBe(l.applied.length);
    expect(base.batches).toBeGreaterThan(0);
    // x's apply call is held 60 ms; y commits meanwhile and waits in the queue for the next call.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    hold = held;
    const px = l.group.propose(bytes('x'));
    await c.until(() => heldCalls === 1);
    hold = undefined;
    const py = l.group.propose(bytes('y'));
    await c.until(() => l.group.status().applyQueueEntries > 0);
    await new Promise((r) => setTimeout(r, 60)); // the scenario: the apply call is held this long
    release();
    await Promise.all([px, py]);
    const st = l.group.applyCounts();
    expect(st.entries - base.entries).toBe(2);
    expect(st.entries).toBe(l.applied.length);
    expect(st.batches - base.batches).toBe(2);
    // x's call ran at least the 60 ms it was held; y waited for it about as long.
    expect(st.runMs - base.runMs).toBeGreaterThanOrEqual(59);
    expect(st.waitMs - base.waitMs).toBeGreaterThanOrEqual(59);
  });

  it('raft-group: with leaseClock a lease also ends in wall time — a leader whose ticks stalled (SIGSTOP, starved loop) does not resume with a lease', async () => {
    const clock = { now: 1_000, tickMs: 50 };
    const c = cluster(3, clock);
    await c.until(() => c.leader() !== undefined);
    const l = c.leader()!;
    await c.until(() => l.group.hasLease());
    // The process freezes for 2 s: no tick runs, its tick-counted lease has not moved at all ...
    clock.now += 2_000;
    // ... yet the wall-time bound voids it (the followers may have elected someone else meanwhile).
    expect(l.group.hasLease()).toBe(false);
    // Fresh heartbeats acknowledged by a quorum give a fresh lease.
    await c.until(() => l.group.hasLease());
    expect(l.group.hasLease()).toBe(true);
  });
  it('raft-group: campaignSoon elects the node well before an election timeout, retrying votes its peers missed, and cannot unseat a live leader', async () => {
    const c = cluster(7);
    const a = c.nodes.get('a')!;
    const settle = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
    };
    // The peers do not host the group yet: the first votes are lost.
    c.cut.add('b');
    c.cut.add('c');
    a.group.campaignSoon({ forTicks: 20, everyTicks: 2 });
    await settle(20);
    expect(a.group.status().role).not.toBe('LEADER');
    c.tickAll();
    c.cut.clear();
    // Election timeouts are 10..19 ticks: within 6 ticks only campaignSoon's retry can elect anyone.
    for (let t = 0; t < 6 && !a.group.isLeaderReady(); t++) {
      c.tickAll();
      await settle(20);
    }
    expect(a.group.isLeaderReady()).toBe(true);
    const term = a.group.status().term;
    // A follower's campaignSoon is an ordinary pre-vote: the others hear from their leader and refuse.
    const b = c.nodes.get('b')!;
    await c.until(() => b.group.leaderId() === 'a');
    b.group.campaignSoon({ forTicks: 20, everyTicks: 2 });
    for (let t = 0; t < 6; t++) {
      c.tickAll();
      await settle(20);
    }
    expect(a.group.isLeaderReady()).toBe(true);
    expect(a.group.status().term).toBe(term);
  });
});
