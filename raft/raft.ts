/**
 * The Raft state machine (etcd's raft.go): roles, elections, replication, commit, ReadIndex, leases,
 * leadership transfer and membership. Synchronous and pure: inputs are tick() and step(); outputs
 * are `msgs`, `readStates` and the log's unstable/committed parts, collected by RawNode into a Ready.
 * The state and the transitions all parts share (roles, membership, quorum, lease, sending) are in raft-state.ts.
 */
import type { NodeId } from '../common/ids';
import { BOOTSTRAP_TERM } from './bootstrap';
import { confChangeError, encodeConfChange } from './conf-change';
import { Progress } from './progress';
import { PENDING_READ_INDEX_MAX } from './read-only';
import type { ConfChange, Entry, Message, ProposeResult, ReadIndexResult, Snapshot } from './types';
import { EntryType, Role } from './types';
import type { Outgoing } from './raft-state';
import { RaftState } from './raft-state';
import { entryBytes } from './wal/log-bounds';

type AppendMsg = Extract<Message, { type: 'append' }>;
type AppendRespMsg = Extract<Message, { type: 'appendResp' }>;
type HeartbeatMsg = Extract<Message, { type: 'heartbeat' }>;
type HeartbeatRespMsg = Extract<Message, { type: 'heartbeatResp' }>;
type VoteMsg = Extract<Message, { type: 'vote' }>;
type VoteRespMsg = Extract<Message, { type: 'voteResp' }>;
type SnapshotMsg = Extract<Message, { type: 'snapshot' }>;

type CampaignKind = 'pre' | 'election' | 'transfer';

export class Raft extends RaftState {
  // ---------------------------------------------------------------- ticks

  tick(): void {
    this.tickCount++;
    if (this.role === Role.leader) this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup('election');
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.opts.electionTicks) {
      this.electionElapsed = 0;
      if (this.opts.checkQuorum) {
        if (!this.quorumActive()) {
          this.becomeFollower(this.term, '');
          return;
        }
        for (const [id, pr] of this.prs) {
          if (id !== this.id) pr.recentActive = false;
        }
      }
      // A transfer that did not finish within an election timeout is abandoned.
      if (this.leadTransferee !== '') this.leadTransferee = '';
      this.retryLostSnapshots();
    }
    if (this.heartbeatElapsed >= this.opts.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      this.bcastHeartbeat();
    }
  }

  /** A snapshot message may be lost without the host noticing: after two election timeouts, probe again. */
  private retryLostSnapshots(): void {
    for (const pr of this.prs.values()) {
      if (pr.state === 'snapshot' && this.tickCount - pr.snapshotSentTick >= 2 * this.opts.electionTicks) pr.becomeProbe();
    }
  }

  // ---------------------------------------------------------------- elections

  /** Start an election now (host's campaign(), or the election timer). */
  hup(kind: CampaignKind): void {
    if (this.role === Role.leader || !this.promotable()) return;
    if (kind === 'election' && this.opts.preVote) this.campaign('pre');
    else this.campaign(kind);
  }

  /**
   * Lead the current term without an election, when the host assigned every voter's vote of this
   * term to this replica before any of them could cast it (a split child: every replica builds it
   * from the same SPLIT entry with term BOOTSTRAP_TERM + 1's vote for the entry's named leader —
   * docs/splitting.md). Safe as an election: no other replica can win this term. Only from the
   * base state that assignment wrote (follower, own vote, no leader, nothing after the log's base):
   * a replica that already appended in this term must never lead it again (its successor entries
   * could differ from what it sent before). False when any of that does not hold.
   */
  leadAssignedTerm(): boolean {
    if (this.role !== Role.follower || this.vote !== this.id || this.lead !== '' || !this.promotable()) return false;
    if (this.term <= BOOTSTRAP_TERM || this.log.lastIndex() !== this.log.firstIndex() - 1) return false;
    this.role = Role.candidate; // becomeLeader's precondition: this term's votes are ours
    this.becomeLeader();
    // The voters may still be building their copies: they count as active for the first check-quorum
    // period (as a new member does), so the leader is not deposed before they can answer at all.
    for (const pr of this.prs.values()) pr.recentActive = true;
    this.bcastAppend();
    return true;
  }

  private campaign(kind: CampaignKind): void {
    let voteTerm: number;
    if (kind === 'pre') {
      this.becomePreCandidate();
      voteTerm = this.term + 1;
    } else {
      this.becomeCandidate();
      voteTerm = this.term;
    }
    if (this.poll(this.id, true) === 'won') {
      // Single voter: the election is decided by our own vote.
      if (kind === 'pre') this.campaign('election');
      else this.becomeLeader();
      return;
    }
    const lastIndex = this.log.lastIndex();
    const lastTerm = this.log.lastTerm();
    for (const v of this.voters) {
      if (v === this.id) continue;
      this.send({ type: 'vote', to: v, term: voteTerm, lastIndex, lastTerm, pre: kind === 'pre', transfer: kind === 'transfer' });
    }
  }

  // ---------------------------------------------------------------- step

  step(m: Message): void {
    if (m.term > this.term) {
      if (m.type === 'vote' && !m.transfer && this.inLease()) {
        // Check-quorum "in lease": a replica that hears from its leader ignores candidates, so a node
        // that merely lost contact cannot depose a working leader (and a lease stays exclusive).
        return;
      }
      if (m.type === 'vote' && m.pre) {
        // A pre-vote never changes our term.
      } else if (m.type === 'voteResp' && m.pre && !m.reject) {
        // Our pre-vote granted at the future term; the term moves when we win.
      } else {
        const lead = m.type === 'append' || m.type === 'heartbeat' || m.type === 'snapshot' ? m.from : '';
        this.becomeFollower(m.term, lead);
      }
    } else if (m.term < this.term) {
      if ((this.opts.checkQuorum || this.opts.preVote) && (m.type === 'append' || m.type === 'heartbeat')) {
        // A stale leader (e.g. back from a partition) learns our term and steps down; without this
        // answer it would never hear a higher term while its followers ignore it.
        this.send({ type: 'appendResp', to: m.from, index: 0, reject: false, rejectHint: 0 });
      } else if (m.type === 'vote' && m.pre) {
        this.send({ type: 'voteResp', to: m.from, reject: true, pre: true });
      }
      return;
    }

    if (m.type === 'vote') {
      this.handleVote(m);
      return;
    }
    switch (this.role) {
      case Role.leader:
        this.stepLeader(m);
        return;
      case Role.candidate:
      case Role.preCandidate:
        this.stepCandidate(m);
        return;
      default:
        this.stepFollower(m);
        return;
    }
  }

  private handleVote(m: VoteMsg): void {
    const canVote = this.vote === m.from || (this.vote === '' && this.lead === '') || (m.pre && m.term > this.term);
    if (canVote && this.log.isUpToDate(m.lastIndex, m.lastTerm)) {
      this.send({ type: 'voteResp', to: m.from, term: m.term, reject: false, pre: m.pre });
      if (!m.pre) {
        this.electionElapsed = 0;
        this.vote = m.from;
      }
    } else {
      this.send({ type: 'voteResp', to: m.from, reject: true, pre: m.pre });
    }
  }

  private stepCandidate(m: Message): void {
    switch (m.type) {
      case 'append':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case 'snapshot':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case 'voteResp':
        this.handleVoteResp(m);
        return;
      default:
        return;
    }
  }

  private handleVoteResp(m: VoteRespMsg): void {
    const pre = this.role === Role.preCandidate;
    if (m.pre !== pre) return;
    const res = this.poll(m.from, !m.reject);
    if (res === 'won') {
      if (pre) this.campaign('election');
      else {
        this.becomeLeader();
        this.bcastAppend();
      }
    } else if (res === 'lost') {
      this.becomeFollower(this.term, '');
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case 'append':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case 'snapshot':
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case 'timeoutNow':
        // Leadership transfer: campaign at once, skipping pre-vote, overriding voters' leases.
        if (this.promotable()) this.campaign('transfer');
        return;
      default:
        return;
    }
  }

  private handleAppend(m: AppendMsg): void {
    if (m.prevIndex < this.log.committed) {
      this.send({ type: 'appendResp', to: m.from, index: this.log.committed, reject: false, rejectHint: 0 });
      return;
    }
    const lastNew = this.log.maybeAppend(m.prevIndex, m.prevTerm, m.commit, m.entries);
    if (lastNew !== undefined) {
      if (!(m.noAck && m.entries.length === 0)) this.send({ type: 'appendResp', to: m.from, index: lastNew, reject: false, rejectHint: 0 });
      return;
    }
    // Fast back-off: tell the leader the last index whose term could still match, and its term,
    // so it skips a whole divergent term per round trip instead of one entry.
    let hintIndex = Math.min(m.prevIndex, this.log.lastIndex());
    hintIndex = this.log.findConflictByTerm(hintIndex, m.prevTerm);
    const hintTerm = this.log.term(hintIndex) ?? 0;
    this.send({ type: 'appendResp', to: m.from, index: m.prevIndex, reject: true, rejectHint: hintIndex, rejectTermHint: hintTerm });
  }

  private handleHeartbeat(m: HeartbeatMsg): void {
    // The leader sends min(our match, its commit), so this never exceeds what we hold of its log.
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    const resp: Outgoing = { type: 'heartbeatResp', to: m.from };
    if (m.context !== undefined) resp.context = m.context;
    if (m.leaseTick !== undefined) resp.leaseTick = m.leaseTick;
    this.send(resp);
  }

  private handleSnapshot(m: SnapshotMsg): void {
    if (this.restore(m.snapshot)) {
      this.send({ type: 'appendResp', to: m.from, index: this.log.lastIndex(), reject: false, rejectHint: 0 });
    } else {
      this.send({ type: 'appendResp', to: m.from, index: this.log.committed, reject: false, rejectHint: 0 });
    }
  }

  private restore(s: Snapshot): boolean {
    if (s.meta.index <= this.log.committed) return false;
    if (this.log.matchTerm(s.meta.index, s.meta.term)) {
      // We already hold the snapshot's last entry: our log matches up to it, just commit.
      this.log.commitTo(s.meta.index);
      return false;
    }
    this.log.restore(s);
    this.setConf(s.meta.conf);
    return true;
  }

  // ---------------------------------------------------------------- leader

  private stepLeader(m: Message): void {
    const pr = this.prs.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case 'appendResp':
        pr.recentActive = true;
        this.handleAppendResp(m, pr);
        return;
      case 'heartbeatResp':
        pr.recentActive = true;
        this.handleHeartbeatResp(m, pr);
        return;
      default:
        return;
    }
  }

  private handleAppendResp(m: AppendRespMsg, pr: Progress): void {
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if ((m.rejectTermHint ?? 0) > 0) nextProbe = this.log.findConflictByTerm(m.rejectHint, m.rejectTermHint ?? 0);
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from);
      }
      return;
    }
    const oldPaused = pr.isPaused();
    if (!(pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === 'probe'))) return;
    if (pr.state === 'probe') pr.becomeReplicate();
    else if (pr.state === 'snapshot' && pr.match + 1 >= this.log.firstIndex()) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === 'replicate') pr.inflights.freeLE(m.index);

    if (this.maybeCommit()) this.bcastAppend();
    else if (oldPaused) this.sendAppend(m.from);
    // Pipeline: fill the follower's inflight window (bounded by it).
    for (let i = 0; i < this.opts.maxInflightMsgs && this.sendAppend(m.from, false); i++);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) this.sendTimeoutNow(m.from);
  }

  private handleHeartbeatResp(m: HeartbeatRespMsg, pr: Progress): void {
    pr.msgAppFlowPaused = false;
    if (m.leaseTick !== undefined && m.leaseTick >= this.leaseFloorTick && m.leaseTick <= this.tickCount) {
      pr.leaseAckTick = Math.max(pr.leaseAckTick, m.leaseTick);
    }
    // Appends may have been lost: a heartbeat reply proves the follower is alive, free a slot.
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirstOne();
    if (pr.match < this.log.lastIndex() || pr.state === 'probe') this.sendAppend(m.from);

    if (m.context === undefined || m.context.byteLength === 0) return;
    const acks = this.readOnly.recvAck(m.from, m.context);
    if (!acks || !this.hasVoterQuorum(acks)) return;
    for (const rs of this.readOnly.advance(m.context)) this.readStates.push(rs);
  }

  /** RawNode.advance: entries up to the log's persisted index are durable here. */
  onPersisted(): void {
    if (this.role !== Role.leader) return;
    const self = this.prs.get(this.id);
    if (!self) return;
    if (self.maybeUpdate(this.log.persistedIndex()) && this.maybeCommit()) this.bcastAppend();
  }

  /** RawNode.advance: these committed entries were applied; their bytes no longer count as uncommitted. */
  onApplied(ents: readonly Entry[]): void {
    if (this.role !== Role.leader || this.uncommittedBytes === 0) return;
    let b = 0;
    for (const e of ents) b += entryBytes(e);
    this.uncommittedBytes = Math.max(0, this.uncommittedBytes - b);
  }

  // ---------------------------------------------------------------- host requests

  propose(data: Uint8Array): ProposeResult {
    return this.appendProposal(EntryType.normal, data);
  }

  proposeConfChange(cc: ConfChange): ProposeResult {
    if (this.role === Role.leader && this.leadTransferee === '') {
      if (this.pendingConfIndex > this.log.applied) return { ok: false, reason: 'confChangePending', leader: this.lead };
      if (confChangeError(this.confState(), cc) !== undefined) return { ok: false, reason: 'invalidConfChange', leader: this.lead };
    }
    const r = this.appendProposal(EntryType.confChange, encodeConfChange(cc));
    if (r.ok) this.pendingConfIndex = r.index;
    return r;
  }

  private appendProposal(type: EntryType, data: Uint8Array): ProposeResult {
    if (this.role !== Role.leader || !this.prs.has(this.id)) return { ok: false, reason: 'notLeader', leader: this.lead };
    if (this.leadTransferee !== '') return { ok: false, reason: 'transferring', leader: this.lead };
    const e: Entry = { term: this.term, index: this.log.lastIndex() + 1, type, data };
    const bytes = entryBytes(e);
    const max = this.opts.maxUncommittedBytes;
    if (max > 0) {
      if (bytes > max) return { ok: false, reason: 'tooLarge', leader: this.lead };
      if (this.uncommittedBytes > 0 && this.uncommittedBytes + bytes > max) return { ok: false, reason: 'overloaded', leader: this.lead };
    }
    this.uncommittedBytes += bytes;
    this.log.append([e]);
    this.bcastPending = true;
    return { ok: true, index: e.index, term: e.term };
  }

  readIndex(context: Uint8Array): ReadIndexResult {
    if (this.role !== Role.leader) return { ok: false, reason: 'notLeader', leader: this.lead };
    // Until our own-term entry commits, our commit index may lag what an earlier leader committed.
    if (this.log.term(this.log.committed) !== this.term) return { ok: false, reason: 'leaderNotReady', leader: this.lead };
    if (this.voters.length === 1 && this.voters[0] === this.id) {
      this.readStates.push({ index: this.log.committed, context });
      return { ok: true };
    }
    if (this.readOnly.size() >= PENDING_READ_INDEX_MAX) return { ok: false, reason: 'overloaded', leader: this.lead };
    if (this.readOnly.add(this.log.committed, context, this.id)) this.bcastHeartbeat(context);
    return { ok: true };
  }

  transferLeader(to: NodeId): void {
    if (this.role !== Role.leader || to === this.id || !this.voters.includes(to)) return;
    if (this.leadTransferee === to) return;
    // The transfer must finish within one election timeout (tickHeartbeat abandons it after that).
    this.electionElapsed = 0;
    this.leadTransferee = to;
    const pr = this.prs.get(to)!;
    if (pr.match === this.log.lastIndex()) this.sendTimeoutNow(to);
    else this.sendAppend(to);
  }

  reportUnreachable(id: NodeId): void {
    const pr = this.prs.get(id);
    if (this.role === Role.leader && pr && pr.state === 'replicate') pr.becomeProbe();
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.prs.get(id);
    if (this.role !== Role.leader || !pr || pr.state !== 'snapshot') return;
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    // Wait for the follower's reply (or a heartbeat reply) before the next append.
    pr.msgAppFlowPaused = true;
  }

}
