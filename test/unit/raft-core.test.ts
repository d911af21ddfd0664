/** Focused tests of the Raft core's parts and rules (the scenario transcripts cover whole protocols). */
import { describe, expect, it } from 'vitest';
import { NodeId, SeededRng } from '../../common';
import type { Message, RaftOptions } from '../../raft';
import { applyToConfState, bootstrapStorage, committedIndex, confChangeError, decodeConfChange, encodeConfChange, RawNode } from '../../raft';
import { Inflights } from '../../raft/inflights';
import { Progress } from '../../raft/progress';
import { MemoryLogStorage } from '../../raft/wal/memory-log-storage';

const n = NodeId;

/** A tiny host: nodes over MemoryLogStorage, a message queue, and a filter to cut links. */
class Group {
  readonly nodes = new Map<string, RawNode>();
  readonly stores = new Map<string, MemoryLogStorage>();
  queue: Message[] = [];
  cut: (m: Message) => boolean = () => false;

  constructor(ids: string[], opts: Partial<RaftOptions> = {}) {
    const rng = new SeededRng(7);
    for (const id of ids) {
      const s = new MemoryLogStorage({ trackDurability: true });
      bootstrapStorage(s, ids.map(n));
      void s.sync();
      this.stores.set(id, s);
      this.nodes.set(id, new RawNode({ id: n(id), storage: s, rng: rng.fork(), ...opts }));
    }
  }

  node(id: string): RawNode {
    return this.nodes.get(id)!;
  }

  /** Process Readies and deliver messages until quiet; returns every message sent. */
  stabilize(): Message[] {
    const all: Message[] = [];
    for (let round = 0; round < 100; round++) {
      let any = false;
      for (const [id, raw] of this.nodes) {
        while (raw.hasReady()) {
          any = true;
          const rd = raw.ready();
          const s = this.stores.get(id)!;
          if (rd.snapshot) s.applySnapshot(rd.snapshot);
          s.append(rd.entries);
          if (rd.hardState) s.setHardState(rd.hardState);
          void s.sync();
          this.queue.push(...rd.messages);
          all.push(...rd.messages);
          for (const e of rd.committedEntries) {
            if (e.type === 'confChange') s.setConfState(raw.applyConfChange(decodeConfChange(e.data)!));
          }
          raw.advance(rd);
        }
      }
      const q = this.queue;
      this.queue = [];
      for (const m of q) {
        any = true;
        if (!this.cut(m)) this.nodes.get(m.to)?.step(m);
      }
      if (!any) return all;
    }
    throw new Error('no fixpoint');
  }

  elect(id: string): void {
    this.node(id).campaign();
    this.stabilize();
    expect(this.node(id).status().role).toBe('LEADER');
  }
}

describe('raft parts', () => {
  it('inflights: a full window refuses more until acks free it', () => {
    const f = new Inflights(3);
    f.add(5, 10);
    f.add(7, 10);
    f.add(9, 10);
    expect(f.full()).toBe(true);
    f.freeLE(7);
    expect(f.size()).toBe(1);
    expect(f.full()).toBe(false);
    f.freeFirstOne();
    expect(f.size()).toBe(0);
  });

  it('progress: a stale rejection is ignored, a current one backs off to the hint', () => {
    const p = new Progress(11, false, 4, 0);
    p.match = 5;
    expect(p.maybeDecrTo(9, 3)).toBe(false); // probe waits for the rejection of prevIndex 10
    expect(p.maybeDecrTo(10, 7)).toBe(true);
    expect(p.next).toBe(8);
    p.becomeReplicate();
    expect(p.maybeDecrTo(4, 4)).toBe(false); // below match: stale
  });

  it('quorum: committed index is the highest index a majority holds', () => {
    const ids = ['a', 'b', 'c', 'd', 'e'].map(n);
    const m: Record<string, number> = { a: 9, b: 7, c: 7, d: 3, e: 1 };
    expect(committedIndex(ids, (id) => m[id]!)).toBe(7);
    expect(committedIndex(ids.slice(0, 4), (id) => m[id]!)).toBe(7);
    expect(committedIndex([], () => 1)).toBe(0);
  });

  it('conf change: round trip, validation, and total application', () => {
    const cc = { type: 'promoteLearner', node: n('x') } as const;
    expect(decodeConfChange(encodeConfChange(cc))).toEqual(cc);
    expect(decodeConfChange(new TextEncoder().encode('{"type":"bogus","node":"x"}'))).toBeUndefined();
    const conf = { voters: [n('a')], learners: [n('x')] };
    expect(confChangeError(conf, { type: 'removeNode', node: n('a') })).toMatch(/last voter/);
    expect(applyToConfState(conf, cc)).toEqual({ voters: [n('a'), n('x')], learners: [] });
    // An inapplicable change is a no-op, never a crash: every replica must apply the same log.
    expect(applyToConfState(conf, { type: 'addVoter', node: n('a') })).toEqual(conf);
  });
});

describe('raft rules', () => {
  it('raft: a leader pipelines at most maxInflightMsgs appends to a silent follower', () => {
    const g = new Group(['1', '2', '3'], { maxInflightMsgs: 2, maxSizePerMsgBytes: 1 });
    g.elect('1');
    g.cut = (m) => m.to === '3' || m.from === '3';
    const sent: Message[] = [];
    for (let i = 0; i < 6; i++) {
      g.node('1').propose(new Uint8Array([i]));
      sent.push(...g.stabilize());
    }
    const toSilent = sent.filter((m) => m.type === 'append' && m.to === '3' && m.entries.length > 0);
    expect(toSilent.length).toBe(2);
    const toLive = sent.filter((m) => m.type === 'append' && m.to === '2' && m.entries.length > 0);
    expect(toLive.length).toBeGreaterThanOrEqual(6);
  });

  it('raft: a commit-only append to a caught-up follower asks no answer; a follower that must reject still answers', () => {
    const g = new Group(['1', '2', '3']);
    g.elect('1');
    for (let i = 0; i < 5; i++) {
      g.node('1').propose(new Uint8Array([i]));
      const sent = g.stabilize();
      const appends = sent.filter((m): m is Extract<Message, { type: 'append' }> => m.type === 'append');
      // Entries always want an answer; a commit-only append to a follower whose ack the leader has
      // seen does not, and gets none (one whose ack is still on its way is asked, to be safe).
      for (const m of appends) if (m.noAck) expect(m.entries).toHaveLength(0);
      expect(appends.some((m) => m.noAck)).toBe(true);
      const answers = sent.filter((m) => m.type === 'appendResp');
      expect(answers).toHaveLength(appends.filter((m) => !m.noAck).length);
      for (const id of ['2', '3']) expect(g.node(id).status().commit).toBe(g.node('1').status().commit);
    }
    // A follower whose log does not match answers with a rejection even when told not to answer.
    const f = g.node('2');
    const last = f.status().commit;
    f.step({ type: 'append', from: n('1'), to: n('2'), term: f.status().term, prevIndex: last, prevTerm: 99, entries: [], commit: last, noAck: true });
    const rd = f.ready();
    expect(rd.messages).toMatchObject([{ type: 'appendResp', reject: true }]);
    f.advance(rd);
  });

  it('raft: an append message respects maxSizePerMsgBytes but carries at least one entry', () => {
    const g = new Group(['1', '2'], { maxSizePerMsgBytes: 100 });
    g.elect('1');
    g.cut = (m) => m.to === '2';
    for (let i = 0; i < 5; i++) g.node('1').propose(new Uint8Array(60));
    g.stabilize();
    g.cut = () => false;
    g.node('1').reportUnreachable(n('2'));
    g.node('1').tick();
    const sent = g.stabilize();
    for (const m of sent) if (m.type === 'append') expect(m.entries.length).toBeLessThanOrEqual(1);
    expect(g.node('2').status().commit).toBe(g.node('1').status().commit);
  });

  it('raft: proposals beyond maxUncommittedBytes are refused as overloaded', () => {
    const g = new Group(['1', '2', '3'], { maxUncommittedBytes: 200 });
    g.elect('1');
    g.cut = () => true;
    const results = Array.from({ length: 10 }, () => g.node('1').propose(new Uint8Array(50)));
    expect(results.filter((r) => r.ok).length).toBeLessThan(10);
    expect(results.some((r) => !r.ok && r.reason === 'overloaded')).toBe(true);
    expect(g.node('1').propose(new Uint8Array(500))).toMatchObject({ ok: false, reason: 'tooLarge' });
  });

  it('raft: fast back-off skips a divergent term in one round trip (not one entry per round trip)', () => {
    const g = new Group(['1', '2', '3']);
    g.elect('1');
    // 3 is cut off while 1 appends many entries of its term that never reach anyone.
    g.cut = () => true;
    for (let i = 0; i < 20; i++) g.node('1').propose(new Uint8Array([i]));
    g.stabilize();
    g.cut = (m) => m.to === '1' || m.from === '1';
    for (let i = 0; i < 30 && g.node('2').status().role !== 'LEADER'; i++) {
      g.node('3').tick();
      g.node('2').tick();
      g.stabilize();
    }
    if (g.node('3').status().role === 'LEADER') throw new Error('test setup: 3 won instead of 2');
    expect(g.node('2').status().role).toBe('LEADER');
    // The new leader appends as many entries of its own term: both logs now diverge over ~20 indexes.
    for (let i = 0; i < 25; i++) g.node('2').propose(new Uint8Array([99]));
    g.stabilize();
    // 2 restarts and is re-elected: its fresh progress for 1 starts probing at its own (long) last index.
    g.nodes.set('2', new RawNode({ id: n('2'), storage: g.stores.get('2')!, rng: new SeededRng(2) }));
    const leads = (): string | undefined => ['2', '3'].find((id) => g.node(id).status().role === 'LEADER');
    for (let i = 0; i < 60 && leads() === undefined; i++) {
      g.node('3').tick();
      g.node('2').tick();
      g.stabilize();
    }
    const leader = leads();
    expect(leader).toBeDefined();
    g.cut = () => false;
    // A heartbeat round un-pauses the probe to 1 (its earlier appends were lost).
    g.node(leader!).tick();
    const sent = g.stabilize();
    const rejects = sent.filter((m) => m.type === 'appendResp' && m.from === '1' && m.reject);
    expect(rejects.length).toBeLessThanOrEqual(2);
    expect(rejects.length).toBeGreaterThan(0);
    expect(g.node('1').status().lastIndex).toBe(g.node(leader!).status().lastIndex);
  });

  it('raft: a candidate that applies its own removal stops campaigning; the votes in flight do not make it leader', () => {
    const g = new Group(['1', '2', '3']);
    g.node('1').campaign();
    expect(g.node('1').status().role).not.toBe('FOLLOWER');
    // The apply stage reaches the entry that removed node 1 while its vote requests are out.
    g.node('1').applyConfChange({ type: 'removeNode', node: n('1') });
    expect(g.node('1').status().role).toBe('FOLLOWER');
    g.stabilize();
    expect(g.node('1').status().role).not.toBe('LEADER');
  });

  it('raft: ReadIndex is refused until the new leader commits an entry of its term', () => {
    const g = new Group(['1', '2', '3']);
    g.node('1').campaign();
    // Deliver votes but hold back the no-op's acknowledgements.
    g.cut = (m) => m.type === 'appendResp';
    g.stabilize();
    expect(g.node('1').status().role).toBe('LEADER');
    expect(g.node('1').readIndex(new Uint8Array([1]))).toMatchObject({ ok: false, reason: 'leaderNotReady' });
    expect(g.node('1').hasLeaderLease()).toBe(false);
  });

  it('raft: after sending timeoutNow the old leader never claims a lease again in that term', () => {
    const g = new Group(['1', '2', '3']);
    g.elect('1');
    g.node('1').tick();
    g.stabilize();
    expect(g.node('1').hasLeaderLease()).toBe(true);
    // timeoutNow is lost; the transfer is abandoned after an election timeout.
    g.cut = (m) => m.type === 'timeoutNow';
    g.node('1').transferLeader(n('2'));
    g.stabilize();
    for (let i = 0; i < 12; i++) {
      g.node('1').tick();
      g.stabilize();
    }
    expect(g.node('1').status().role).toBe('LEADER');
    expect(g.node('1').status().leadTransferee).toBeUndefined();
    expect(g.node('1').hasLeaderLease()).toBe(false);
  });

  it('raft: a restarted voter refuses votes for an election timeout (it may have acked a lease)', () => {
    const g = new Group(['1', '2', '3']);
    g.elect('1');
    const s3 = g.stores.get('3')!;
    // Restart node 3 from its storage; node 2 campaigns at once and asks it.
    g.nodes.set('3', new RawNode({ id: n('3'), storage: s3, rng: new SeededRng(3) }));
    g.cut = (m) => m.from === '1' || m.to === '1';
    g.node('2').campaign();
    g.stabilize();
    expect(g.node('2').status().role).not.toBe('LEADER');
    for (let i = 0; i < 10; i++) g.node('3').tick();
    g.node('2').campaign();
    g.stabilize();
    expect(g.node('2').status().role).toBe('LEADER');
  });
});

describe('RawNode.takeEarly', () => {
  /**
   * A host whose syncs take a while: a node's Ready stays outstanding over many steps, during which
   * messages arrive and takeEarly() is called. Random schedules (seeded), checked against the rules:
   * every committed entry is handed out once per node, in log order, whether by ready() or
   * takeEarly(); neither ever hands out an entry not yet persisted here (takeEarly() none of the
   * outstanding Ready's) and takeEarly() gives messages only on a leader, only appends and heartbeats; replicas agree on
   * every entry they handed out.
   */
  function run(seed: number): { handedEarly: number; sentEarly: number; applied: number } {
    const rng = new SeededRng(seed);
    const ids = ['a', 'b', 'c'];
    const g = new Group(ids, { electionTicks: 10, heartbeatTicks: 1 });
    const outstanding = new Map<string, ReturnType<RawNode['ready']>>();
    const applied = new Map<string, Array<{ index: number; term: number; data: string }>>(ids.map((id) => [id, []]));
    const queue: Message[] = [];
    let handedEarly = 0;
    let sentEarly = 0;
    /** Per node: the last index whose Ready's sync finished (what is persisted there). */
    const synced = new Map<string, number>(ids.map((id) => [id, g.stores.get(id)!.lastIndex()]));
    const handOut = (id: string, ents: readonly { index: number; term: number; data: Uint8Array; type: string }[]): void => {
      const list = applied.get(id)!;
      for (const e of ents) {
        expect(e.index).toBeLessThanOrEqual(synced.get(id)!);
        const prev = list[list.length - 1];
        if (prev) expect(e.index).toBe(prev.index + 1);
        list.push({ index: e.index, term: e.term, data: new TextDecoder().decode(e.data) });
        if (e.type === 'confChange') g.stores.get(id)!.setConfState(g.node(id).applyConfChange(decodeConfChange(e.data)!));
      }
    };
    let proposals = 0;
    for (let step = 0; step < 3000; step++) {
      const id = ids[rng.int(ids.length)]!;
      const raw = g.node(id);
      const s = g.stores.get(id)!;
      const rd = outstanding.get(id);
      const r = rng.int(10);
      if (r < 2) {
        raw.tick();
      } else if (r < 4 && queue.length > 0) {
        const m = queue.splice(rng.int(queue.length), 1)[0]!;
        if (!rng.chance(0.05)) g.node(m.to).step(m);
      } else if (r < 5) {
        if (raw.status().role === 'LEADER' && proposals < 400) raw.propose(new TextEncoder().encode(`p${proposals++}`));
      } else if (r < 7 && rd === undefined && raw.hasReady()) {
        const next = raw.ready();
        if (next.snapshot) s.applySnapshot(next.snapshot);
        s.append(next.entries);
        if (next.hardState) s.setHardState(next.hardState);
        handOut(id, next.committedEntries);
        // As RaftGroup: a leader's appends and heartbeats go before its own sync, the rest after.
        if (raw.status().role === 'LEADER') {
          queue.push(...next.messages.filter((m) => m.type === 'append' || m.type === 'heartbeat'));
          next.messages = next.messages.filter((m) => m.type !== 'append' && m.type !== 'heartbeat');
        }
        outstanding.set(id, next);
      } else if (r < 8 && rd !== undefined) {
        // The sync finished: messages go out, the Ready is done.
        void s.sync();
        const last = rd.entries[rd.entries.length - 1];
        if (last) synced.set(id, last.index);
        queue.push(...rd.messages);
        raw.advance(rd);
        outstanding.delete(id);
      } else if (rd !== undefined) {
        const e = raw.takeEarly(rng.chance(0.8));
        if (!e) continue;
        const first = rd.entries[0]?.index ?? Infinity;
        for (const x of e.committedEntries) expect(x.index).toBeLessThan(first);
        if (e.messages.length > 0) {
          expect(raw.status().role).toBe('LEADER');
          for (const m of e.messages) expect(['append', 'heartbeat']).toContain(m.type);
          sentEarly += e.messages.length;
        }
        handedEarly += e.committedEntries.length;
        handOut(id, e.committedEntries);
        queue.push(...e.messages);
      }
    }
    // Replicas agree on every index that more than one handed out.
    const byIndex = new Map<number, string>();
    for (const list of applied.values()) {
      for (const e of list) {
        const k = `${e.term}:${e.data}`;
        const seen = byIndex.get(e.index);
        if (seen === undefined) byIndex.set(e.index, k);
        else expect(k).toBe(seen);
      }
    }
    return { handedEarly, sentEarly, applied: Math.max(...[...applied.values()].map((l) => l.length)) };
  }

  it('hands out each committed entry once, in order, never one still being persisted; replicas agree', () => {
    let early = 0;
    let sent = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const r = run(seed);
      early += r.handedEarly;
      sent += r.sentEarly;
      expect(r.applied).toBeGreaterThan(0);
    }
    // The schedules did exercise the early path.
    expect(early).toBeGreaterThan(50);
    expect(sent).toBeGreaterThan(50);
  });

  it('refuses to run without an outstanding Ready', () => {
    const g = new Group(['a', 'b', 'c']);
    expect(() => g.node('a').takeEarly(true)).toThrow(/outstanding/);
  });
});
