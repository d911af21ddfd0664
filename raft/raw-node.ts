/**
 * RawNode: the synchronous API a host drives (etcd's rawnode.go). The host loop is:
 *
 *   on a timer:        node.tick()
 *   on a message:      node.step(msg)
 *   on a client write: node.propose(bytes)
 *   then, while node.hasReady():
 *     const rd = node.ready();
 *     persist rd.snapshot / rd.entries / rd.hardState (fsync when rd.mustSync);
 *     send rd.messages;
 *     apply rd.snapshot, then rd.committedEntries (conf changes via applyConfChange);
 *     serve rd.readStates once applied >= their index;
 *     node.advance(rd);
 *
 * See `Ready` in types.ts for the full contract. ready() may not be called again before advance().
 * While a Ready is outstanding (the host awaits its sync), takeEarly() hands out what need not wait
 * for that sync: committed entries an earlier Ready persisted, and a leader's appends and heartbeats.
 * The core counts committed entries as applied when it hands them out (ready() or takeEarly()): the
 * host's apply stage runs behind, in order, and tracks its own applied index.
 */
import { assert } from '../common/assert';
import type { NodeId } from '../common/ids';
import { Raft } from './raft';
import type { RaftOptions } from './raft-options';
import { resolveRaftOptions } from './raft-options';
import { Role, type ConfChange, type ConfState, type Entry, type HardState, type Message, type ProposeResult, type RaftStatus, type ReadIndexResult, type Ready, type SoftState } from './types';

export interface BasicStatus {
  id: NodeId;
  role: Role;
  term: number;
  vote: NodeId | '';
  leader: NodeId | '';
  commit: number;
  applied: number;
  lastIndex: number;
}

export class RawNode {
  private readonly raft: Raft;
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Ready | undefined;

  constructor(opts: RaftOptions) {
    this.raft = new Raft(resolveRaftOptions(opts), opts.storage, opts.rng);
    this.prevSoft = this.softState();
    this.prevHard = this.hardState();
  }

  get id(): NodeId {
    return this.raft.id;
  }

  /** Advance logical time by one tick (elections, heartbeats, check-quorum, leases). */
  tick(): void {
    this.raft.tick();
  }

  /** Feed a message from a peer. Messages not addressed to us, and replies from non-members, are dropped. */
  step(m: Message): void {
    if (m.to !== this.raft.id) return;
    const isResponse = m.type === 'appendResp' || m.type === 'heartbeatResp' || m.type === 'voteResp';
    if (isResponse && !this.raft.prs.has(m.from)) return;
    this.raft.step(m);
  }

  propose(data: Uint8Array): ProposeResult {
    return this.raft.propose(data);
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    return this.raft.proposeConfChange(cc);
  }

  /** Call when applying a committed confChange entry (decode its data with decodeConfChange). */
  applyConfChange(cc: ConfChange): ConfState {
    return this.raft.applyConfChange(cc);
  }

  /** Campaign now (pre-vote first when enabled). No-op on a leader or a non-voter. */
  campaign(): void {
    this.raft.hup('election');
  }

  /** Lead the current term without an election (its votes were assigned to this replica: Raft.leadAssignedTerm). */
  leadAssignedTerm(): boolean {
    return this.raft.leadAssignedTerm();
  }

  readIndex(context: Uint8Array): ReadIndexResult {
    return this.raft.readIndex(context);
  }

  transferLeader(to: NodeId): void {
    this.raft.transferLeader(to);
  }

  reportUnreachable(id: NodeId): void {
    this.raft.reportUnreachable(id);
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.reportSnapshot(id, ok);
  }

  /** Whether this replica is a leader holding a lease: it may serve reads from applied state. */
  hasLeaderLease(): boolean {
    return this.raft.hasLeaderLease();
  }

  /** The lease in ticks (see Raft.leaseWindow), for a host that also bounds it in wall time. */
  leaseWindow(): { fromTick: number; ticks: number } | undefined {
    return this.raft.leaseWindow();
  }

  /** Alias of hasLeaderLease() (RaftGroup's RaftCore.hasLease). */
  hasLease(): boolean {
    return this.raft.hasLeaderLease();
  }

  leaseValid(): boolean {
    return this.raft.hasLeaderLease();
  }

  status(): RaftStatus {
    return this.raft.status();
  }

  /** The cheap part of status(), without copies of the configuration or progress (hot paths, checkers). */
  basicStatus(): BasicStatus {
    const r = this.raft;
    return { id: r.id, role: r.displayRole(), term: r.term, vote: r.vote, leader: r.lead, commit: r.log.committed, applied: r.log.applied, lastIndex: r.log.lastIndex() };
  }

  /** Term of log entry `index` as this replica sees it (storage + unstable), undefined if compacted or absent. */
  logTerm(index: number): number | undefined {
    return this.raft.log.term(index);
  }

  /** First index still in the log (entries below were compacted into a snapshot). */
  firstIndex(): number {
    return this.raft.log.firstIndex();
  }

  hasReady(): boolean {
    const r = this.raft;
    r.flush();
    if (r.msgs.length > 0 || r.readStates.length > 0) return true;
    if (r.log.unstable.entries.length > 0 || r.log.unstable.snapshot !== undefined) return true;
    if (r.log.hasNextCommittedEnts()) return true;
    if (!softEqual(this.softState(), this.prevSoft)) return true;
    return !hardEqual(this.hardState(), this.prevHard);
  }

  ready(): Ready {
    assert(this.outstanding === undefined, 'raft: ready() called again before advance()');
    const r = this.raft;
    r.flush();
    const rd: Ready = {
      entries: r.log.unstable.entries.slice(),
      committedEntries: this.handOutCommitted(),
      messages: r.msgs,
      readStates: r.readStates,
      mustSync: false,
    };
    const snap = r.log.unstable.snapshot;
    if (snap) rd.snapshot = snap;
    r.msgs = [];
    r.readStates = [];
    const soft = this.softState();
    if (!softEqual(soft, this.prevSoft)) {
      rd.softState = soft;
      this.prevSoft = soft;
    }
    const hard = this.hardState();
    const prev = this.prevHard;
    if (!hardEqual(hard, prev)) {
      rd.hardState = hard;
      this.prevHard = hard;
    }
    // As etcd/raft's MustSync: entries, a snapshot, term and vote must be durable before messages go
    // out; a commit-only change need not be (it is written and rides on the next sync). A restart
    // whose stored commit lags what the host applied raises commit to applied (see Raft's constructor).
    rd.mustSync = rd.entries.length > 0 || rd.snapshot !== undefined || hard.term !== prev.term || hard.vote !== prev.vote;
    this.outstanding = rd;
    return rd;
  }

  /**
   * Only while a Ready is outstanding, its sync still running: the committed entries that became
   * ready since (the commit index moved on an acknowledgement, or a follower learnt it) among those
   * EARLIER Readys persisted — never the outstanding Ready's own entries, which are not yet stable
   * here — unless `withEntries` is false (the host's apply stage is full); and, on a leader, the
   * appends and heartbeats queued since (a leader may send before its own fsync: its own progress
   * counts only entries it persisted, so no commit index it announces rests on its unsynced copy).
   * Everything else (responses, votes, snapshots, hard and soft state) waits for the next Ready.
   * Returns undefined when there is nothing to hand out.
   */
  takeEarly(withEntries: boolean, withProposals = false): { committedEntries: Entry[]; messages: Message[] } | undefined {
    assert(this.outstanding !== undefined, 'raft: takeEarly() without an outstanding Ready');
    const r = this.raft;
    // `withProposals`: the appends of proposals made since go out now too, not with the next Ready.
    if (withProposals) r.flush();
    const committedEntries = withEntries ? this.handOutCommitted() : [];
    let messages: Message[] = [];
    if (r.role === Role.leader && r.msgs.length > 0) {
      const rest: Message[] = [];
      for (const m of r.msgs) (m.type === 'append' || m.type === 'heartbeat' ? messages : rest).push(m);
      r.msgs = rest;
    }
    if (committedEntries.length === 0 && messages.length === 0) return undefined;
    return { committedEntries, messages };
  }

  /**
   * Committed entries ready to apply (persisted, not yet handed out), at any time — with or without
   * an outstanding Ready: a leader's host takes them as soon as an acknowledgement moved the commit
   * index, instead of with the next Ready (the new commit index still goes out with that Ready).
   */
  takeCommitted(): Entry[] {
    return this.handOutCommitted();
  }

  /** Committed entries ready to apply (persisted, not yet handed out), now counted as applied. */
  private handOutCommitted(): Entry[] {
    const log = this.raft.log;
    const ents = log.nextCommittedEnts();
    const last = ents[ents.length - 1];
    if (last) {
      log.appliedTo(last.index);
      this.raft.onApplied(ents);
    }
    return ents;
  }

  /** The host finished everything `rd` asked (persisted, sent; committed entries handed to its apply stage). */
  advance(rd: Ready): void {
    assert(this.outstanding === rd, 'raft: advance() with a Ready that is not the outstanding one');
    this.outstanding = undefined;
    const log = this.raft.log;
    if (rd.snapshot) {
      log.unstable.stableSnapTo(rd.snapshot.meta.index);
      if (rd.snapshot.meta.index > log.applied) log.appliedTo(rd.snapshot.meta.index);
    }
    const last = rd.entries[rd.entries.length - 1];
    if (last) log.unstable.stableTo(last.index, last.term);
    this.raft.onPersisted();
  }

  private softState(): SoftState {
    return { leader: this.raft.lead, role: this.raft.displayRole() };
  }

  private hardState(): HardState {
    return { term: this.raft.term, vote: this.raft.vote, commit: this.raft.log.committed };
  }
}

function softEqual(a: SoftState, b: SoftState): boolean {
  return a.leader === b.leader && a.role === b.role;
}

function hardEqual(a: HardState, b: HardState): boolean {
  return a.term === b.term && a.vote === b.vote && a.commit === b.commit;
}
