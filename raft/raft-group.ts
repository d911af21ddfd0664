/**
 * RaftGroup: the host driver around one pure Raft core (RawNode). Shared by tserver tablets and the
 * master's sys catalog. It owns no timers, sockets or files: the host injects the LogStorage, a
 * `send` function, the state-machine hooks, and calls tick() on its own timer.
 *
 * Processing contract (etcd's Ready contract, with an asynchronous apply stage):
 *  1. Inputs (tick, step, propose, readIndex) only mutate the core and schedule one processing pass
 *     (raft-turn.ts by default: one setImmediate for all groups), so every proposal arriving in one event-loop turn lands in ONE
 *     Ready: one append and one storage.sync() (group commit) cover them all.
 *  2. A pass takes ready() and, in order: installs a received snapshot (after draining the apply
 *     queue), appends entries and sets the hard state, queues the committed entries for the apply
 *     stage (they were persisted by earlier passes), awaits storage.sync() when mustSync, THEN hands
 *     messages to send(), and calls advance().
 *     Passes never overlap; inputs that arrive while a pass awaits the sync are batched into the next,
 *     except what need not wait for that sync (RawNode.takeEarly): committed entries earlier passes
 *     persisted go to the apply stage at once, and a leader's appends and heartbeats (a new commit
 *     index, pipeline refills) go out at once.
 *  3. The apply stage is a separate, strictly ordered worker: it calls applyEntries(batch) one batch
 *     at a time and never reorders entries. Raft replication (persist/send) of later entries goes on
 *     while a slow batch applies, so a delay injected into one tablet's apply stalls only that
 *     tablet's state machine, never its log or other tablets. Conf-change entries are applied to the
 *     core (applyConfChange + storage.setConfState) at their position in the stream; applyEntries
 *     sees every committed entry (normal, noop, confChange) so the host can track its op-id frontier.
 *  4. appliedIndex is what the host's state machine has applied (not what the core believes); it gates
 *     proposal acknowledgement, ReadIndex reads, leader readiness and log compaction.
 *
 * Proposal outcomes are exact: propose() resolves only after the entry is committed AND applied locally; it rejects with NOT_THE_LEADER (retry-safe) when the core refused it or when its log slot
 * was overwritten by another leader's entry (so it can never commit). A proposal whose leader lost
 * leadership stays pending until its fate is known (committed under the next leader, or overwritten);
 * the caller bounds the wait with its own deadline (outcome unknown = TIMED_OUT, not retry-safe).
 *
 * A storage or apply failure is fail-stop: the group stops and reports through onFatal.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { NodeId } from '../common/ids';
import { decodeConfChange, encodeConfChange } from './conf-change';
import { ConfHistory } from './conf-history';
import { ProposalTracker, proposeError, type OpId } from './proposal-tracker';
import { APPLY_QUEUE_ENTRIES_MAX, PENDING_PROPOSALS_MAX, READY_ROUNDS_PER_PASS_MAX, type RaftCore, type RaftGroupDeps, type RaftGroupStatus } from './raft-group-types';
import { LeaseWallBound } from './lease-wall-bound';
import { ReadIndexQueue } from './read-index-queue';
import { ApplyStage } from './apply-stage';
import { FastCampaign } from './fast-campaign';
import type { LogStorage } from './wal/log-storage';
import type { ConfChange, Entry, Message, ProposeResult, Ready, Role, Snapshot } from './types';
import { STAGE_TRACE_ON, traceStage } from '../common/stage-trace';
import { mostCaughtUpOther, traceMessages } from './group-helpers';
import { flushTurnNow, scheduleRaftPass } from './raft-turn';
import { ReadyHooks } from './ready-hooks';

export type { LeaderChange, RaftCore, RaftGroupDeps, RaftGroupStatus } from './raft-group-types';
export { APPLY_BATCH_ENTRIES_MAX, APPLY_QUEUE_ENTRIES_MAX, PENDING_PROPOSALS_MAX, READ_INDEX_TIMEOUT_TICKS } from './raft-group-types';

export class RaftGroup {
  private readonly core: RaftCore;
  private readonly storage: LogStorage;
  private readonly schedule: (fn: () => void) => void;

  private stopped = false;
  private readonly fastCampaign = new FastCampaign(); // campaignSoon's retries
  private failed: unknown = undefined;
  private scheduled = false;
  private processing: Promise<void> | undefined;
  private syncing = false; // the processing pass awaits storage.sync() (inputs meanwhile may use takeEarly)
  private readonly hooks = new ReadyHooks(); // beforeNextReady
  /**
   * What went out while a sync ran (earlyCounts(): metrics, tests): committed entries handed to the apply stage, how much
   * sooner in all (ms from each hand-off to the end of that sync, the next pass's earliest), and leader message batches sent.
   */
  private readonly early = { entries: 0, savedMs: 0, sends: 0 };
  private readonly earlyDuringSync = { entries: 0, atMsSum: 0 }; // handed out during the sync now running, and the sum of their hand-off times

  private appliedIndex: number;
  private appliedTerm = 0;
  private readonly applyStage: ApplyStage; // committed entries on their way to the state machine

  private readonly pending: ProposalTracker;
  private readonly reads: ReadIndexQueue;
  private ticks = 0;
  private readonly leaseBound: LeaseWallBound; // the lease's bound in wall time (lease-wall-bound.ts)

  private role: Role;
  private leader: NodeId | '' = '';
  private term = 0;
  /** Configuration in force after each applied conf change (for snapshot metadata at a compaction index). */
  private readonly confHistory: ConfHistory;

  constructor(private readonly deps: RaftGroupDeps) {
    this.core = deps.core;
    this.storage = deps.storage;
    this.schedule = deps.schedule ?? scheduleRaftPass;
    this.leaseBound = new LeaseWallBound(deps.leaseClock);
    this.appliedIndex = deps.appliedIndex;
    this.pending = new ProposalTracker(deps.groupId, () => this.leader);
    this.reads = new ReadIndexQueue(deps.groupId);
    this.applyStage = new ApplyStage({
      groupId: deps.groupId,
      applyEntries: (es) => this.deps.applyEntries(es),
      appliedIndex: () => this.appliedIndex,
      applyConfChange: (e) => this.applyConfChange(e),
      applied: (batch) => this.onApplied(batch),
      committed: (es, behind) => this.pending.settleCommitted(es, behind),
      stopped: () => this.stopped,
      fail: (e) => this.fail(e),
    });
    const st = this.core.status();
    this.role = st.role;
    this.term = st.term;
    this.leader = st.leader;
    const init = this.storage.initialState();
    const snapIndex = this.storage.firstIndex() - 1;
    this.confHistory = new ConfHistory(snapIndex, init.conf);
    if (this.appliedIndex < snapIndex) this.appliedIndex = snapIndex;
    if (this.appliedIndex > 0) {
      try {
        this.appliedTerm = this.storage.term(this.appliedIndex);
      } catch {
        this.appliedTerm = 0;
      }
    }
    this.kick();
  }

  // ---- inputs -------------------------------------------------------------------------------

  tick(): void {
    if (this.stopped) return;
    this.ticks++;
    this.leaseBound.tick(this.ticks);
    this.core.tick();
    if (this.fastCampaign.due(this.ticks, this.leader !== '')) this.core.campaign?.();
    this.reads.expire(this.ticks);
    this.kick();
  }

  step(m: Message): void {
    if (this.stopped) return;
    if (STAGE_TRACE_ON) traceMessages('step', this.deps.groupId, [m]);
    this.core.step(m);
    // An ack may commit: what it commits goes to the apply stage now, not a loop turn later.
    if (m.type === 'appendResp' && this.role === 'LEADER') this.takeCommittedNow();
    this.kick();
  }

  /**
   * Resolves once committed and applied locally (file comment: failures); `onCommitted` runs at commit
   * (durable on a majority) if it must wait for earlier applies — or at every commit with `always`.
   */
  propose(data: Uint8Array, onCommitted?: () => void, always = false): Promise<{ index: number; term: number }> {
    const early = this.checkCanPropose();
    return early ? Promise.reject(early) : this.track(this.core.propose(data), onCommitted, always);
  }

  changeConfig(cc: ConfChange): Promise<{ index: number; term: number }> {
    const early = this.checkCanPropose();
    if (early) return Promise.reject(early);
    return this.track(this.core.proposeConfChange(cc));
  }

  /**
   * Linearizable read barrier: resolves when this replica, as leader, has applied everything
   * committed before the call. Calls in one event-loop turn share one ReadIndex round.
   */
  readIndex(): Promise<void> {
    const early = this.checkCanPropose();
    if (early) return Promise.reject(early);
    const read = this.reads.wait();
    this.kick();
    return read;
  }

  /** True while this replica leads, has applied its own no-op, and holds the leader lease. */
  hasLease(): boolean {
    if (!this.isLeaderReady() || !(this.core.hasLease?.() ?? false)) return false;
    return this.leaseBound.holds(() => this.core.leaseWindow?.(), this.ticks);
  }

  isLeader(): boolean {
    return this.role === 'LEADER';
  }

  /** Leader whose own-term entry is applied: every earlier entry is in the state machine. */
  isLeaderReady(): boolean {
    return this.role === 'LEADER' && this.appliedTerm === this.term && !this.stopped;
  }

  leaderId(): NodeId | '' {
    return this.leader;
  }

  /**
   * Campaign at once, and again every `everyTicks` ticks while no leader is known, for at most
   * `forTicks` ticks: ordinary campaigns (pre-vote first), as safe as the election timer firing early
   * (the retries: fast-campaign.ts).
   */
  campaignSoon(o: { forTicks: number; everyTicks: number }): void {
    if (this.stopped || !this.core.campaign) return;
    this.fastCampaign.start(this.ticks, o);
    this.core.campaign();
    this.kick();
  }

  /** Lead the current term at once: the host assigned this replica its every vote (Raft.leadAssignedTerm). */
  leadAssignedTerm(): boolean {
    const led = !this.stopped && (this.core.leadAssignedTerm?.() ?? false);
    if (led) this.kick();
    return led;
  }

  /** Hand leadership to `to`, or to the most caught-up other voter. */
  transferLeadership(to?: NodeId): void {
    if (this.role !== 'LEADER') throw this.notLeader();
    const target = to ?? mostCaughtUpOther(this.core.status(), this.deps.id);
    if (target === undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${this.deps.groupId}: no other voter to transfer leadership to`);
    this.core.transferLeader(target);
    this.kick();
  }

  reportUnreachable(to: NodeId): void { this.core.reportUnreachable?.(to); }

  /** The newest term this replica has seen (every election, won or not, moves it). */
  currentTerm(): number {
    return this.term;
  }

  status(): RaftGroupStatus {
    const st = this.core.status();
    return {
      ...st,
      appliedIndex: this.appliedIndex,
      leaderReady: this.isLeaderReady(),
      hasLease: this.hasLease(),
      pendingProposals: this.pending.size(),
      applyQueueEntries: this.applyStage.length(),
    };
  }

  /**
   * What went out while a sync ran (see kick()), since the group started: committed entries handed to
   * the apply stage, how many ms sooner in all (at least: to the end of the sync they did not wait
   * for), and leader message batches sent. The live object, read-only.
   */
  earlyCounts(): Readonly<{ entries: number; savedMs: number; sends: number }> {
    return this.early;
  }

  /**
   * The apply stage since the group started: applyEntries calls (batches) and the entries they
   * applied, the ms those entries waited in the queue in all (hand-out → their batch began), and
   * the ms the batches ran in all (applyEntries: the state machine's writes, and the event-loop turns
   * their awaits take). The live object, read-only.
   */
  applyCounts(): Readonly<{ batches: number; entries: number; waitMs: number; runMs: number }> {
    return this.applyStage.applyCounts();
  }

  appliedOpId(): { index: number; term: number } {
    return { index: this.appliedIndex, term: this.appliedTerm };
  }

  /**
   * Log GC: discard log entries up to `index` (clamped to the applied index), recording a snapshot
   * descriptor from createSnapshot() so a follower that needs a compacted entry gets a snapshot.
   * Returns the index actually compacted to (0 if nothing was done).
   */
  async compactLog(index: number): Promise<number> {
    const upTo = Math.min(index, this.appliedIndex);
    if (this.stopped || upTo < this.storage.firstIndex()) return 0;
    const data = await this.deps.createSnapshot(upTo);
    if (this.stopped || upTo < this.storage.firstIndex()) return 0;
    const term = this.storage.term(upTo);
    const snap: Snapshot = { meta: { index: upTo, term, conf: this.confHistory.at(upTo) }, data };
    this.storage.compact(upTo, snap);
    this.confHistory.compactTo(upTo);
    return upTo;
  }

  /**
   * Run `fn` once, right before the running pass takes its next Ready (or as it ends), so what `fn`
   * proposes joins that Ready's append and sync (ready-hooks.ts); without a running pass on the next
   * one (kicked now); on a stopped group at once. `early`: during a sync, in the next Raft turn, and
   * what it proposes goes out to the followers at once (a leader sends before its own fsync): they
   * persist it during this sync, not after it. The hooks of one loop iteration still run together.
   */
  beforeNextReady(fn: () => void, early = false): void {
    if (this.stopped) {
      fn();
      return;
    }
    this.hooks.add(fn, early && this.processing !== undefined);
    if (this.processing === undefined || early) this.kick();
  }

  /** Stop processing; pending calls fail with SHUTTING_DOWN. Does not close the storage (the host owns it). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.failAll(new DbError(ErrorCode.SHUTTING_DOWN, `${this.deps.groupId}: raft group stopped`));
    this.hooks.run(); // held proposals fail now, as any would
    await this.processing;
    await this.applyStage.idle();
  }

  // ---- internals ----------------------------------------------------------------------------

  private checkCanPropose(): DbError | undefined {
    if (this.stopped) return new DbError(ErrorCode.SHUTTING_DOWN, `${this.deps.groupId}: raft group stopped`);
    if (this.role !== 'LEADER') return this.notLeader();
    if (this.appliedTerm !== this.term) {
      // A new leader serves nothing until its own no-op is applied: before that its state machine
      // may lack committed entries of earlier terms (and its hybrid clock may not be past them).
      return new DbError(ErrorCode.LEADER_NOT_READY, `${this.deps.groupId}: leader of term ${this.term} has not yet applied its first entry`, { leaderUuid: this.deps.id });
    }
    if (this.pending.size() >= PENDING_PROPOSALS_MAX) return new DbError(ErrorCode.BACKPRESSURE, `${this.deps.groupId}: ${this.pending.size()} proposals pending`);
    return undefined;
  }

  private notLeader(): DbError {
    return new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: not the leader${this.leader ? ` (leader is ${this.leader})` : ''}`, { leaderUuid: this.leader });
  }

  private track(r: ProposeResult, onCommitted?: () => void, always = false): Promise<OpId> {
    if (!r.ok) return Promise.reject(proposeError(this.deps.groupId, r));
    const outcome = this.pending.add(r.index, r.term, onCommitted, always);
    traceStage('propose', this.deps.groupId, r.index);
    this.kick();
    return outcome;
  }

  /**
   * Schedule one processing pass (idempotent within a turn). While a pass awaits its sync, the
   * inputs of this turn get what need not wait for that sync (takeEarly): under load a sync is
   * nearly always running, and without this an acknowledgement that commits entries, or a follower
   * learning the commit index, waited out the rest of an unrelated fsync before anything was
   * applied or the new commit index went out.
   */
  private kick(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    this.schedule(() => {
      this.scheduled = false;
      if (this.stopped) return;
      if (this.processing) {
        const early = this.syncing && this.hooks.early;
        if (early) this.hooks.run();
        if (this.syncing) this.handOutEarly(early);
        return;
      }
      this.processing = this.processPass().finally(() => {
        this.processing = undefined;
        this.hooks.run();
        if (!this.stopped && (this.core.hasReady() || this.reads.hasUnissued())) this.kick();
      });
    });
  }

  private async processPass(): Promise<void> {
    try {
      for (let round = 0; round < READY_ROUNDS_PER_PASS_MAX && !this.stopped; round++) {
        this.reads.issue(this.core, this.ticks);
        this.hooks.run();
        if (!this.core.hasReady()) break;
        if (this.applyStage.length() > APPLY_QUEUE_ENTRIES_MAX) await this.applyStage.waitBelow(APPLY_QUEUE_ENTRIES_MAX / 2);
        const rd = this.core.ready();
        await this.handleReady(rd);
      }
    } catch (e) {
      this.fail(e);
    }
  }

  private async handleReady(rd: Ready): Promise<void> {
    if (rd.softState) this.onSoftState(rd.softState.role, rd.softState.leader);
    if (rd.hardState && rd.hardState.term !== this.term) {
      this.term = rd.hardState.term;
      this.notifyLeaderChange();
    }
    if (rd.snapshot) await this.installSnapshot(rd.snapshot);
    if (rd.entries.length > 0) {
      this.pending.rejectOverwritten(rd.entries);
      this.storage.append(rd.entries);
      traceStage('append', this.deps.groupId, rd.entries[rd.entries.length - 1]!.index);
    }
    if (rd.hardState) this.storage.setHardState(rd.hardState);
    // Committed entries go to the apply stage now, not after this Ready's sync: the core hands out
    // only entries an EARLIER Ready persisted (applyUpTo), so none of them waits for this fsync —
    // under load a leader's acknowledgements and a follower's apply each come one fsync sooner
    // (etcd's server applies in parallel with persisting, too).
    if (rd.committedEntries.length > 0) this.applyStage.enqueue(rd.committedEntries, performance.now());
    let late = rd.messages;
    if (rd.mustSync) {
      // A leader sends its appends and heartbeats BEFORE its own fsync, overlapping the two (Raft
      // thesis §10.2.1, as etcd does). Safe: nothing it applies or announces as committed can count
      // its own unsynced copy, because followers' acks for these entries can only move the commit
      // index that the NEXT Ready applies and sends, and that Ready comes after this sync. Votes and
      // responses (anything a follower or candidate says) still wait for the sync.
      if (this.role === 'LEADER' && rd.messages.length > 0) {
        const early = rd.messages.filter((m) => m.type === 'append' || m.type === 'heartbeat');
        if (early.length > 0) {
          late = rd.messages.filter((m) => m.type !== 'append' && m.type !== 'heartbeat');
          this.sendTraced('send', early);
          flushTurnNow();
        }
      }
      // Group commit: one sync covers every entry and hard state appended since the last one.
      this.syncing = true;
      try {
        await this.storage.sync();
      } finally {
        this.syncing = false;
        if (STAGE_TRACE_ON) traceStage('synced', this.deps.groupId, rd.entries.length > 0 ? rd.entries[rd.entries.length - 1]!.index : 0);
        const d = this.earlyDuringSync;
        if (d.entries > 0) {
          this.early.savedMs += d.entries * performance.now() - d.atMsSum;
          d.entries = 0;
          d.atMsSum = 0;
        }
      }
    }
    if (this.stopped) return;
    if (late.length > 0) {
      this.sendTraced('send', late);
      if (rd.mustSync) flushTurnNow(); // after a sync, outside a turn: a follower's ack is what its leader waits for
      for (const m of late) if (m.type === 'snapshot') this.core.reportSnapshot?.(m.to, true);
    }
    this.reads.confirm(rd.readStates);
    this.reads.serve(this.appliedIndex);
    this.core.advance(rd);
  }

  private takeCommittedNow(): void {
    if (this.syncing) this.handOutEarly();
    else if (this.applyStage.length() <= APPLY_QUEUE_ENTRIES_MAX) this.applyStage.enqueue(this.core.takeCommitted?.() ?? [], performance.now());
  }

  /** See kick(): committed entries to the apply stage (unless it is full), a leader's appends out. */
  private handOutEarly(withProposals = false): void {
    const e = this.core.takeEarly?.(this.applyStage.length() <= APPLY_QUEUE_ENTRIES_MAX, withProposals);
    if (!e) return;
    if (e.committedEntries.length > 0) {
      const at = performance.now();
      const n = e.committedEntries.length;
      this.early.entries += n;
      this.earlyDuringSync.entries += n;
      this.earlyDuringSync.atMsSum += n * at;
      this.applyStage.enqueue(e.committedEntries, at);
    }
    if (e.messages.length > 0) {
      this.early.sends++;
      this.sendTraced('send.early', e.messages);
    }
  }

  private sendTraced(stage: string, msgs: Message[]): void {
    if (STAGE_TRACE_ON) traceMessages(stage, this.deps.groupId, msgs);
    this.deps.send(msgs);
  }

  private onSoftState(role: Role, leader: NodeId | ''): void {
    const wasLeader = this.role === 'LEADER';
    const changed = role !== this.role || leader !== this.leader;
    this.role = role;
    this.leader = leader;
    if (wasLeader && role !== 'LEADER') {
      // Reads are side-effect free: fail them now so callers retry at the new leader. Proposals
      // keep waiting for their exact outcome (see file comment).
      this.reads.rejectAll(this.notLeader());
    }
    if (changed) this.notifyLeaderChange();
  }

  private notifyLeaderChange(): void {
    this.deps.onLeaderChange?.({ leader: this.leader, term: this.term, isLeader: this.role === 'LEADER', role: this.role });
  }

  private async installSnapshot(snap: Snapshot): Promise<void> {
    // Entries queued before the snapshot are at or below its index: applied first, not racing the wipe.
    await this.applyStage.waitBelow(1);
    await this.deps.installSnapshot(snap);
    this.storage.applySnapshot(snap);
    this.appliedIndex = snap.meta.index;
    this.appliedTerm = snap.meta.term;
    this.confHistory.reset(snap.meta.index, snap.meta.conf);
    this.pending.rejectCoveredBySnapshot(snap.meta.index);
  }

  /**
   * A conf change is next to apply: it takes effect in the core (and the stored conf) now, and is
   * made durable in the log before the state machine applies it or anything after it. Otherwise a
   * leader that applied an entry a majority of followers had synced, but not yet its own copy, could
   * have the databases' frontier (durable through RocksDB's own WAL with later writes) pass the
   * change while a crash drops the log's unsynced tail: the log, rebased on that frontier
   * (tserver/tablet/tablet-log.ts), would come back with the old configuration, and the change would
   * never be applied again (found by the tablet simulator, TABLET_SIM_RESTART_NEAR_CONF, seed 17).
   * Conf changes are rare: one fsync each costs nothing that matters.
   */
  private async applyConfChange(e: Entry): Promise<void> {
    const cc = decodeConfChange(e.data);
    if (cc === undefined) throw new DbError(ErrorCode.CORRUPTION, `${this.deps.groupId}: undecodable conf change at index ${e.index}`);
    const conf = this.core.applyConfChange(cc);
    this.storage.setConfState(conf);
    this.confHistory.push(e.index, conf);
    this.kick();
    await this.storage.sync();
  }

  /** The state machine applied this batch: proposals and reads waiting on it are answered. */
  private onApplied(batch: readonly Entry[]): void {
    const last = batch[batch.length - 1]!;
    this.appliedIndex = last.index;
    this.appliedTerm = last.term;
    this.pending.settleApplied(batch);
    this.reads.serve(this.appliedIndex);
  }

  private failAll(err: DbError): void {
    this.pending.rejectAll(err);
    this.reads.rejectAll(err);
    this.applyStage.notifyDrain();
  }

  private fail(e: unknown): void {
    if (this.failed !== undefined) return;
    this.failed = e;
    this.deps.log?.error({ err: e, group: this.deps.groupId }, 'raft group failed; stopping the replica');
    this.stopped = true;
    // What was proposed here may still commit through the other replicas: the outcome of every
    // pending call is unknown (SHUTTING_DOWN, like a stop: clients retry only idempotent work).
    this.failAll(new DbError(ErrorCode.SHUTTING_DOWN, `${this.deps.groupId}: replica stopped after a failure (outcome unknown): ${e instanceof Error ? e.message : String(e)}`, { outcome: 'unknown' }));
    if (this.deps.onFatal) this.deps.onFatal(e);
    else
      setImmediate(() => {
        throw e;
      });
  }
}

/** Re-exported so hosts encode conf changes the way the group decodes them. */
export { encodeConfChange };
