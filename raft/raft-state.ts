/**
 * The state of the Raft state machine (raft.ts) and the transitions every part of it uses: terms,
 * votes and roles, membership and progress, quorum checks, commit, the lease, and the leader's
 * outgoing appends, snapshots and heartbeats. Raft (raft.ts) adds the inputs: ticks, elections,
 * message handling, host requests.
 */
import { assert } from '../common/assert';
import type { NodeId } from '../common/ids';
import type { Rng } from '../common/rng';
import { BOOTSTRAP_TERM } from './bootstrap';
import { Progress } from './progress';
import { committedIndex, majority, voteResult } from './quorum';
import type { ResolvedRaftOptions } from './raft-options';
import { RaftLog } from './raft-log';
import { ReadOnly } from './read-only';
import { applyToConfState } from './conf-change';
import type { ConfChange, ConfState, Entry, Message, RaftStatus, ReadState } from './types';
import { EntryType, Role } from './types';
import { entryBytes } from './wal/log-bounds';
import type { LogStorage } from './wal/log-storage';

type Distribute<T> = T extends unknown ? Omit<T, 'from' | 'term'> & { term?: number } : never;
/** A message as its sender builds it: send() fills in `from` and (unless set) `term`. */
export type Outgoing = Distribute<Message>;

export class RaftState {
  readonly id: NodeId;
  term = 0;
  vote: NodeId | '' = '';
  lead: NodeId | '' = '';
  role: Role = Role.follower;
  readonly log: RaftLog;
  voters: NodeId[] = [];
  learners: NodeId[] = [];
  /** Every member's progress; meaningful only on a leader (elsewhere it is the member list). */
  readonly prs = new Map<NodeId, Progress>();
  msgs: Message[] = [];
  readStates: ReadState[] = [];

  protected readonly votes = new Map<NodeId, boolean>();
  protected electionElapsed = 0;
  protected heartbeatElapsed = 0;
  protected randomizedElectionTimeout: number;
  leadTransferee: NodeId | '' = '';
  /** Index of the last conf change appended by this leader; none may be proposed until it is applied. */
  protected pendingConfIndex = 0;
  /** Bytes of entries this leader appended that are not yet applied (proposal backpressure). */
  protected uncommittedBytes = 0;
  protected readonly readOnly = new ReadOnly();
  /** Ticks since this replica started: the clock of leases (never persisted, never compared across nodes). */
  protected tickCount = 0;
  /** Heartbeat acks for heartbeats sent before this tick do not count toward the lease. */
  protected leaseFloorTick = 0;
  /**
   * A restarted replica may have acknowledged a leader's heartbeat just before it went down; it must
   * not help elect a new leader until that lease can have expired, so it refuses votes for this many
   * ticks. A replica still at the bootstrap term (or a new, empty one) cannot have acked a leader:
   * leaders are elected at terms above BOOTSTRAP_TERM.
   */
  protected readonly startupLeaseTicks: number;
  /** Proposals appended since the last broadcast: one append per follower carries all of them. */
  protected bcastPending = false;

  constructor(
    protected readonly opts: ResolvedRaftOptions,
    storage: LogStorage,
    protected readonly rng: Rng,
  ) {
    this.id = opts.id;
    this.log = new RaftLog(storage, opts.applied, opts.maxCommittedBytesPerReady);
    const { hardState, conf } = storage.initialState();
    if (hardState.commit > 0) {
      assert(hardState.commit <= this.log.lastIndex(), `raft ${this.id}: stored commit ${hardState.commit} beyond last index ${this.log.lastIndex()}`);
      this.log.commitTo(hardState.commit);
    }
    // The host applied only committed entries, all of them in this (synced) log; the stored commit can
    // lag them because commit-only hard-state changes are not fsynced (RawNode.ready's mustSync).
    if (this.log.applied > this.log.committed && this.log.applied <= this.log.lastIndex()) this.log.commitTo(this.log.applied);
    assert(this.log.applied <= this.log.committed, `raft ${this.id}: applied ${this.log.applied} beyond commit ${this.log.committed}`);
    this.setConf(conf);
    this.randomizedElectionTimeout = opts.electionTicks;
    this.becomeFollower(hardState.term, '');
    this.vote = hardState.vote;
    this.startupLeaseTicks = opts.checkQuorum && hardState.term > BOOTSTRAP_TERM ? opts.electionTicks : 0;
  }

  // ---------------------------------------------------------------- membership

  protected promotable(): boolean {
    return this.voters.includes(this.id);
  }

  confState(): ConfState {
    return { voters: [...this.voters], learners: [...this.learners] };
  }

  protected setConf(cs: ConfState): void {
    const members = new Set<NodeId>([...cs.voters, ...cs.learners]);
    for (const id of [...this.prs.keys()]) if (!members.has(id)) this.prs.delete(id);
    for (const id of members) {
      const isLearner = !cs.voters.includes(id);
      const pr = this.prs.get(id);
      if (pr) pr.isLearner = isLearner;
      else {
        const p = this.newProgress(isLearner);
        // A new member counts as active so the leader may send it a snapshot right away.
        p.recentActive = true;
        this.prs.set(id, p);
      }
    }
    this.voters = [...cs.voters];
    this.learners = [...cs.learners];
  }

  protected newProgress(isLearner: boolean): Progress {
    return new Progress(this.log.lastIndex() + 1, isLearner, this.opts.maxInflightMsgs, this.opts.maxInflightBytes);
  }

  /** Host applied a conf change entry: the new configuration takes effect now. */
  applyConfChange(cc: ConfChange): ConfState {
    this.setConf(applyToConfState(this.confState(), cc));
    if (this.role === Role.leader) {
      if (!this.promotable()) {
        // Removed (or never a voter): a leader outside the voters cannot count a quorum including itself.
        this.becomeFollower(this.term, '');
      } else {
        if (this.leadTransferee !== '' && !this.voters.includes(this.leadTransferee)) this.leadTransferee = '';
        // A smaller quorum may already cover more entries; new members need their first append.
        this.maybeCommit();
        this.bcastAppend();
      }
    } else if ((this.role === Role.candidate || this.role === Role.preCandidate) && !this.promotable()) {
      // Removed while campaigning (a host's apply stage reaches conf changes at any time): votes
      // still in flight could make it a leader outside the voters, which refuses proposals yet keeps
      // everyone else from campaigning (found by the simulator in an experiment that applied entries
      // while a Ready's fsync was in flight).
      this.becomeFollower(this.term, '');
    }
    return this.confState();
  }

  // ---------------------------------------------------------------- role changes

  protected reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = '';
    }
    this.lead = '';
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.opts.electionTicks + this.rng.int(this.opts.electionTicks);
    this.leadTransferee = '';
    this.votes.clear();
    for (const [id, old] of this.prs) {
      const pr = this.newProgress(old.isLearner);
      if (id === this.id) {
        pr.match = this.log.persistedIndex();
        pr.recentActive = true;
      }
      this.prs.set(id, pr);
    }
    this.pendingConfIndex = 0;
    this.uncommittedBytes = 0;
    this.readOnly.reset();
    this.bcastPending = false;
  }

  becomeFollower(term: number, lead: NodeId | ''): void {
    this.reset(term);
    this.lead = lead;
    this.role = Role.follower;
  }

  protected becomeCandidate(): void {
    assert(this.role !== Role.leader, 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = Role.candidate;
  }

  protected becomePreCandidate(): void {
    assert(this.role !== Role.leader, 'leader cannot become pre-candidate');
    // Pre-vote changes neither term nor vote: a partitioned replica leaves no trace on the group.
    this.votes.clear();
    this.lead = '';
    this.role = Role.preCandidate;
  }

  protected becomeLeader(): void {
    assert(this.role === Role.candidate, 'only a candidate becomes leader');
    this.reset(this.term);
    this.lead = this.id;
    this.role = Role.leader;
    this.prs.get(this.id)?.becomeReplicate();
    // The lease starts from this term's own acks, never from anything older.
    this.leaseFloorTick = this.tickCount;
    // The no-op commits every earlier-term entry (Figure 8: only own-term entries count) and gates
    // conf changes until the leader's term has a committed entry (Ongaro's single-server fix).
    const noop: Entry = { term: this.term, index: this.log.lastIndex() + 1, type: EntryType.noop, data: new Uint8Array(0) };
    this.log.append([noop]);
    this.pendingConfIndex = noop.index;
  }

  // ---------------------------------------------------------------- quorum and commit

  protected quorumActive(): boolean {
    let active = 0;
    for (const v of this.voters) if (v === this.id || this.prs.get(v)?.recentActive) active++;
    return active >= majority(this.voters.length);
  }

  protected poll(from: NodeId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    return voteResult(this.voters, this.votes);
  }

  /** Whether this replica heard from a live leader recently enough to ignore vote requests. */
  protected inLease(): boolean {
    if (!this.opts.checkQuorum) return false;
    if (this.lead !== '' && this.electionElapsed < this.opts.electionTicks) return true;
    return this.tickCount < this.startupLeaseTicks;
  }

  protected hasVoterQuorum(ids: ReadonlySet<NodeId>): boolean {
    let n = 0;
    for (const v of this.voters) if (ids.has(v)) n++;
    return n >= majority(this.voters.length);
  }

  /** Advance commit to what a majority persisted — but only through an entry of our own term (Figure 8). */
  protected maybeCommit(): boolean {
    const mci = committedIndex(this.voters, (id) => this.prs.get(id)?.match ?? 0);
    if (mci > this.log.committed && this.log.term(mci) === this.term) {
      this.log.commitTo(mci);
      return true;
    }
    return false;
  }

  // ---------------------------------------------------------------- messages

  /** Every caller builds a fresh message: it is completed in place (no copy per message). */
  protected send(m: Outgoing): void {
    const full = m as Message;
    full.from = this.id;
    if (m.term === undefined) full.term = this.term;
    this.msgs.push(full);
  }

  /**
   * `askAck` false (broadcasts of a new commit index or of new proposals): an append that carries no
   * entries to a follower in replicate state asks no answer (noAck). Its answer would only repeat
   * what the answers to the appends that carried those entries tell; if one of those is lost, the
   * heartbeat answer path sends an append that does ask (askAck true), and a follower that does not
   * hold prevIndex rejects, which is always answered.
   */
  protected sendAppend(to: NodeId, sendIfEmpty = true, askAck = true): boolean {
    const pr = this.prs.get(to);
    if (!pr || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const last = this.log.lastIndex();
    const ents = prevTerm === undefined ? undefined : this.log.entries(pr.next, last + 1, this.opts.maxSizePerMsgBytes);
    if (prevTerm === undefined || ents === undefined) return this.sendSnapshot(to, pr);
    if (ents.length === 0 && !sendIfEmpty) return false;
    let bytes = 0;
    for (const e of ents) bytes += entryBytes(e);
    const m: Outgoing = { type: 'append', to, prevIndex, prevTerm, entries: ents, commit: this.log.committed };
    // Liveness (recentActive) still comes from heartbeat answers.
    if (ents.length === 0 && pr.state === 'replicate' && (!askAck || pr.match === prevIndex)) m.noAck = true;
    this.send(m);
    pr.sentEntries(ents.length, bytes);
    return true;
  }

  protected sendSnapshot(to: NodeId, pr: Progress): boolean {
    if (!pr.recentActive) return false;
    const snap = this.log.snapshot();
    // No snapshot covering the compacted prefix yet: the host has not produced one (retry later).
    if (!snap || snap.meta.index < this.log.firstIndex() - 1) return false;
    pr.becomeSnapshot(snap.meta.index, this.tickCount);
    this.send({ type: 'snapshot', to, snapshot: snap });
    return true;
  }

  bcastAppend(): void {
    this.bcastPending = false;
    for (const id of this.prs.keys()) if (id !== this.id) this.sendAppend(id, true, false);
  }

  /** Send the appends deferred by propose(); called when the host collects a Ready. */
  flush(): void {
    if (this.bcastPending && this.role === Role.leader) this.bcastAppend();
    this.bcastPending = false;
  }

  protected bcastHeartbeat(context?: Uint8Array): void {
    const ctx = context ?? this.readOnly.lastPendingContext();
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const hb: Outgoing = { type: 'heartbeat', to: id, commit: Math.min(pr.match, this.log.committed), leaseTick: this.tickCount };
      if (ctx !== undefined) hb.context = ctx;
      this.send(hb);
    }
  }

  protected sendTimeoutNow(to: NodeId): void {
    // From now on the target may be elected over our followers' leases — and the message may arrive
    // late, long after the transfer was abandoned — so our lease is void for the rest of this term.
    this.leaseFloorTick = Number.POSITIVE_INFINITY;
    this.send({ type: 'timeoutNow', to });
  }

  // ---------------------------------------------------------------- lease and status

  /** True while this leader may serve reads locally (see RaftOptions.leaseTicks). */
  hasLeaderLease(): boolean {
    return this.leaseWindow() !== undefined;
  }

  /**
   * The lease as ticks: it began at the tick `fromTick` (the newest tick whose heartbeats a quorum
   * acknowledged) and lasts `ticks` ticks; undefined when there is none. The host can also bound it
   * in wall time (RaftGroup: a process paused or starved of ticks must not keep its lease).
   */
  leaseWindow(): { fromTick: number; ticks: number } | undefined {
    const leaseTicks = this.opts.leaseTicks;
    if (this.role !== Role.leader || leaseTicks <= 0 || this.leadTransferee !== '') return undefined;
    if (this.log.term(this.log.committed) !== this.term) return undefined;
    const acks: number[] = [];
    for (const v of this.voters) {
      if (v === this.id) acks.push(this.tickCount);
      else {
        const t = this.prs.get(v)?.leaseAckTick ?? -1;
        acks.push(t >= this.leaseFloorTick ? t : -1);
      }
    }
    acks.sort((a, b) => b - a);
    const q = acks[majority(acks.length) - 1] ?? -1;
    return q >= 0 && this.tickCount < q + leaseTicks ? { fromTick: q, ticks: leaseTicks } : undefined;
  }

  hasPendingBroadcast(): boolean {
    return this.bcastPending;
  }

  /** The role as shown to people: a follower that is a learner shows as LEARNER. */
  displayRole(): Role {
    return this.role === Role.follower && this.learners.includes(this.id) ? Role.learner : this.role;
  }

  status(): RaftStatus {
    const role = this.displayRole();
    const s: RaftStatus = {
      id: this.id,
      role,
      term: this.term,
      leader: this.lead,
      commit: this.log.committed,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex(),
      conf: this.confState(),
    };
    if (this.role === Role.leader) {
      if (this.leadTransferee !== '') s.leadTransferee = this.leadTransferee;
      const progress: NonNullable<RaftStatus['progress']> = {};
      for (const [id, pr] of this.prs) progress[id] = { match: pr.match, next: pr.next, state: pr.state, recentActive: pr.recentActive };
      s.progress = progress;
    }
    return s;
  }
}
