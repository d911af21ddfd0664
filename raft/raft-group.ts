/**
 * RaftGroup: the host driver around one pure Raft core (RawNode). Shared by tserver tablets and the
 * master's sys catalog. It owns no timers, sockets or files: the host injects the LogStorage, a
 * `send` function, the state-machine hooks, and calls tick() on its own timer.
 *
 * Processing contract (etcd's Ready contract, with an asynchronous apply stage):
 *  1. Inputs (tick, step, propose, readIndex) only mutate the core and schedule one processing pass
 *     (setImmediate by default), so every proposal arriving in one event-loop turn lands in ONE Ready:
 *     one append and one storage.sync() (group commit) cover them all.
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
 * Proposal outcomes are exact: propose() resolves only after the entry is committed AND applied
 * locally; it rejects with NOT_THE_LEADER (retry-safe) when the core refused it or when its log slot
 * was overwritten by another leader's entry (so it can never commit). A proposal whose leader lost
 * leadership stays pending until its fate is known (committed under the next leader, or overwritten);
 * the caller bounds the wait with its own deadline (outcome unknown = TIMED_OUT, not retry-safe).
 *
 * A storage or apply failure is fail-stop: the group stops and reports through onFatal.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { NodeId } from '../common/ids';
import type { Logger } from '../common/log';
import { decodeConfChange, encodeConfChange } from './conf-change';
import type { LogStorage } from './wal/log-storage';
import type { ConfChange, ConfState, Entry, Message, ProposeResult, RaftStatus, ReadIndexResult, Ready, Role, Snapshot } from './types';

/** What the group needs from the pure core (raft/raw-node.ts implements it). */
export interface RaftCore {
  tick(): void;
  step(m: Message): void;
  propose(data: Uint8Array): ProposeResult;
  proposeConfChange(cc: ConfChange): ProposeResult;
  /** Apply a committed conf change; returns the configuration now in force. */
  applyConfChange(cc: ConfChange): ConfState;
  readIndex(context: Uint8Array): ReadIndexResult;
  transferLeader(to: NodeId): void;
  /** Start an election now (pre-vote first when enabled); no-op on a leader or a non-voter. */
  campaign?(): void;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  /** While the outstanding Ready's sync runs: committed entries and leader messages that need not wait for it (RawNode.takeEarly). */
  takeEarly?(withEntries: boolean): { committedEntries: Entry[]; messages: Message[] } | undefined;
  status(): RaftStatus;
  /** True while this leader holds a lease: no other leader can exist, lease reads are safe. */
  hasLease?(): boolean;
  /** The lease in ticks (start tick, length), to bound it in wall time too. */
  leaseWindow?(): { fromTick: number; ticks: number } | undefined;
  reportSnapshot?(to: NodeId, ok: boolean): void;
  reportUnreachable?(to: NodeId): void;
}

export interface LeaderChange {
  leader: NodeId | '';
  term: number;
  isLeader: boolean;
  role: Role;
}

export interface RaftGroupDeps {
  /** This replica's id in the group. */
  id: NodeId;
  /** For log lines: tablet id or "sys.catalog". */
  groupId: string;
  storage: LogStorage;
  core: RaftCore;
  /** Index the state machine already holds (its frontier); the core's Config.applied must agree. */
  appliedIndex: number;
  send(msgs: Message[]): void;
  /** Apply committed entries, in order. The next batch is passed only after this resolves. */
  applyEntries(entries: readonly Entry[]): Promise<void>;
  /** Leader: a small descriptor of the state machine at `index` (<= applied) to put in a Raft snapshot. */
  createSnapshot(index: number): Promise<Uint8Array>;
  /** Follower: make the state machine equal to the snapshot (fetch its data, wipe, load). */
  installSnapshot(snap: Snapshot): Promise<void>;
  onLeaderChange?(c: LeaderChange): void;
  /** Storage or state-machine failure: the replica must stop (default: rethrow, crashing the process). */
  onFatal?(e: unknown): void;
  log?: Logger;
  /** How to run a processing pass later in this turn (default setImmediate). */
  schedule?(fn: () => void): void;
  /**
   * Bound the lease in wall time too: the host calls tick() every tickIntervalMs; a lease lasts at
   * most leaseTicks x tickIntervalMs of monotonic time from when its quorum tick happened. Without it
   * a leader paused (SIGSTOP) or starved of ticks would resume believing in a lease its followers
   * long stopped honouring (they elected another leader meanwhile) and serve stale reads.
   */
  leaseClock?: { tickIntervalMs: number; nowMs?: () => number };
}

/** Ticks whose monotonic times are remembered for the wall-time lease bound. */
const TICK_TIMES_KEPT = 1024;

/** Proposals waiting for commit+apply before propose() answers BACKPRESSURE. */
export const PENDING_PROPOSALS_MAX = 20_000;
/** Committed entries queued for the apply stage; above this the processing pass waits for the apply stage. */
export const APPLY_QUEUE_ENTRIES_MAX = 50_000;
/** Entries handed to one applyEntries() call. */
export const APPLY_BATCH_ENTRIES_MAX = 256;
/** Ready rounds per processing pass before yielding to the event loop. */
const READY_ROUNDS_PER_PASS_MAX = 64;
/** ReadIndex requests unanswered after this many ticks fail with TIMED_OUT (leadership lost meanwhile). */
export const READ_INDEX_TIMEOUT_TICKS = 60;

interface PendingProposal {
  term: number;
  resolve: (r: { index: number; term: number }) => void;
  reject: (e: DbError) => void;
}

interface ReadWaiter {
  resolve: () => void;
  reject: (e: DbError) => void;
}

interface ReadBatch {
  waiters: ReadWaiter[];
  issuedTick: number;
  /** Set once the core answered with a ReadState. */
  index?: number;
}

export interface RaftGroupStatus extends RaftStatus {
  appliedIndex: number;
  leaderReady: boolean;
  hasLease: boolean;
  pendingProposals: number;
  applyQueueEntries: number;
}

export class RaftGroup {
  private readonly core: RaftCore;
  private readonly storage: LogStorage;
  private readonly schedule: (fn: () => void) => void;

  private stopped = false;
  /** campaignSoon's retries: until the tick `untilTick`, every `everyTicks` ticks while no leader is known. */
  private fastCampaign: { untilTick: number; everyTicks: number; lastTick: number } | undefined;
  private failed: unknown = undefined;
  private scheduled = false;
  private processing: Promise<void> | undefined;
  /** The processing pass is awaiting storage.sync() (inputs meanwhile may use takeEarly). */
  private syncing = false;
  /**
   * What went out while a sync ran (earlyCounts(): metrics, tests): committed entries handed to the apply stage, how
   * much sooner in all (ms from each hand-off to the end of that sync, when the next pass would have
   * handed it out at the earliest), and leader message batches sent.
   */
  private readonly early = { entries: 0, savedMs: 0, sends: 0 };
  /** Entries handed out early during the sync now running, and the sum of their hand-off times. */
  private readonly earlyDuringSync = { entries: 0, atMsSum: 0 };

  private appliedIndex: number;
  private appliedTerm = 0;
  private readonly applyQueue: Entry[] = [];
  /** When each applyQueue entry was handed to the apply stage (performance.now(), ms), in step with it. */
  private readonly applyQueueAt: number[] = [];
  /** The apply stage since the group started: see applyCounts(). */
  private readonly applyStats = { batches: 0, entries: 0, waitMs: 0, runMs: 0 };
  private applying: Promise<void> | undefined;
  private applyDrainWaiters: Array<() => void> = [];

  private readonly pending = new Map<number, PendingProposal>();
  private readWaiters: ReadWaiter[] = [];
  private readonly readBatches = new Map<string, ReadBatch>();
  private readSeq = 0;
  private ticks = 0;
  /** Monotonic ms of recent ticks (index: tick count mod TICK_TIMES_KEPT), for leaseClock. */
  private readonly tickTimes: number[] = [];
  private readonly createdMs: number;

  private role: Role;
  private leader: NodeId | '' = '';
  private term = 0;
  /** Configuration in force after each applied conf change (for snapshot metadata at a compaction index). */
  private confHistory: Array<{ index: number; conf: ConfState }>;

  constructor(private readonly deps: RaftGroupDeps) {
    this.core = deps.core;
    this.storage = deps.storage;
    this.schedule = deps.schedule ?? ((fn) => void setImmediate(fn));
    this.createdMs = deps.leaseClock?.nowMs?.() ?? performance.now();
    this.appliedIndex = deps.appliedIndex;
    const st = this.core.status();
    this.role = st.role;
    this.term = st.term;
    this.leader = st.leader;
    const init = this.storage.initialState();
    const snapIndex = this.storage.firstIndex() - 1;
    this.confHistory = [{ index: snapIndex, conf: init.conf }];
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
    if (this.deps.leaseClock) this.tickTimes[this.ticks % TICK_TIMES_KEPT] = this.nowMs();
    this.core.tick();
    this.campaignTick();
    this.expireReads();
    this.kick();
  }

  step(m: Message): void {
    if (this.stopped) return;
    this.core.step(m);
    this.kick();
  }

  /** Resolves once the entry is committed and applied locally (see the file comment for failures). */
  propose(data: Uint8Array): Promise<{ index: number; term: number }> {
    const early = this.checkCanPropose();
    if (early) return Promise.reject(early);
    return this.track(this.core.propose(data));
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
    return new Promise<void>((resolve, reject) => {
      if (this.readWaiters.length + this.readBatches.size >= PENDING_PROPOSALS_MAX) {
        reject(new DbError(ErrorCode.BACKPRESSURE, `${this.deps.groupId}: too many pending reads`));
        return;
      }
      this.readWaiters.push({ resolve, reject });
      this.kick();
    });
  }

  /** True while this replica leads, has applied its own no-op, and holds the leader lease. */
  hasLease(): boolean {
    if (!this.isLeaderReady() || !(this.core.hasLease?.() ?? false)) return false;
    const lc = this.deps.leaseClock;
    if (!lc) return true;
    const w = this.core.leaseWindow?.();
    if (!w || this.ticks - w.fromTick >= TICK_TIMES_KEPT) return false;
    const startedMs = this.tickTimes[w.fromTick % TICK_TIMES_KEPT] ?? this.createdMs;
    return this.nowMs() - startedMs < w.ticks * lc.tickIntervalMs;
  }

  private nowMs(): number {
    return this.deps.leaseClock?.nowMs?.() ?? performance.now();
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
   * `forTicks` ticks (YugabyteDB: a split child on the parent leader's server starts an election
   * immediately instead of waiting out an election timeout). Each attempt is an ordinary campaign —
   * a pre-vote first when enabled — so it is as safe as the election timer firing early: a peer that
   * hears from a leader, or whose log is ahead, refuses it. The retries cover peers that did not
   * host the group yet when the first votes went out (their messages were dropped).
   */
  campaignSoon(o: { forTicks: number; everyTicks: number }): void {
    if (this.stopped || !this.core.campaign) return;
    this.fastCampaign = { untilTick: this.ticks + o.forTicks, everyTicks: Math.max(1, o.everyTicks), lastTick: this.ticks };
    this.core.campaign();
    this.kick();
  }

  private campaignTick(): void {
    const f = this.fastCampaign;
    if (!f) return;
    if (this.leader !== '' || this.ticks >= f.untilTick) {
      this.fastCampaign = undefined;
      return;
    }
    if (this.ticks - f.lastTick < f.everyTicks) return;
    f.lastTick = this.ticks;
    this.core.campaign?.();
  }

  /** Hand leadership to `to`, or to the most caught-up other voter. */
  transferLeadership(to?: NodeId): void {
    if (this.role !== 'LEADER') throw this.notLeader();
    let target = to;
    if (target === undefined) {
      const st = this.core.status();
      let best = -1;
      for (const v of st.conf.voters) {
        if (v === this.deps.id) continue;
        const m = st.progress?.[v]?.match ?? -1;
        if (m > best) {
          best = m;
          target = v;
        }
      }
      if (target === undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${this.deps.groupId}: no other voter to transfer leadership to`);
    }
    this.core.transferLeader(target);
    this.kick();
  }

  reportUnreachable(to: NodeId): void {
    this.core.reportUnreachable?.(to);
  }

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
      pendingProposals: this.pending.size,
      applyQueueEntries: this.applyQueue.length,
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
    return this.applyStats;
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
    const snap: Snapshot = { meta: { index: upTo, term, conf: this.confAt(upTo) }, data };
    this.storage.compact(upTo, snap);
    // Only the newest configuration at or below the compaction point is still needed.
    let keep = 0;
    for (let i = 0; i < this.confHistory.length; i++) if (this.confHistory[i]!.index <= upTo) keep = i;
    this.confHistory = this.confHistory.slice(keep);
    return upTo;
  }

  /** Stop processing; pending calls fail with SHUTTING_DOWN. Does not close the storage (the host owns it). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.failAll(new DbError(ErrorCode.SHUTTING_DOWN, `${this.deps.groupId}: raft group stopped`));
    await this.processing;
    await this.applying;
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
    if (this.pending.size >= PENDING_PROPOSALS_MAX) return new DbError(ErrorCode.BACKPRESSURE, `${this.deps.groupId}: ${this.pending.size} proposals pending`);
    return undefined;
  }

  private notLeader(): DbError {
    return new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: not the leader${this.leader ? ` (leader is ${this.leader})` : ''}`, { leaderUuid: this.leader });
  }

  private track(r: ProposeResult): Promise<{ index: number; term: number }> {
    if (!r.ok) return Promise.reject(this.proposeError(r));
    return new Promise((resolve, reject) => {
      this.pending.set(r.index, { term: r.term, resolve, reject });
      this.kick();
    });
  }

  private proposeError(r: Extract<ProposeResult, { ok: false }>): DbError {
    const details = { leaderUuid: r.leader };
    switch (r.reason) {
      case 'notLeader':
        return new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: not the leader`, details);
      case 'transferring':
        return new DbError(ErrorCode.LEADER_NOT_READY, `${this.deps.groupId}: leadership transfer in progress`, details);
      case 'tooLarge':
        return new DbError(ErrorCode.MESSAGE_TOO_LARGE, `${this.deps.groupId}: proposal too large`, details);
      case 'overloaded':
        return new DbError(ErrorCode.BACKPRESSURE, `${this.deps.groupId}: too many uncommitted bytes`, details);
      case 'confChangePending':
        return new DbError(ErrorCode.SERVICE_UNAVAILABLE, `${this.deps.groupId}: another configuration change is in progress`, details);
      case 'invalidConfChange':
        return new DbError(ErrorCode.INVALID_ARGUMENT, `${this.deps.groupId}: invalid configuration change`, details);
    }
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
        if (this.syncing) this.handOutEarly();
        return;
      }
      this.processing = this.processPass().finally(() => {
        this.processing = undefined;
        if (!this.stopped && (this.core.hasReady() || this.readWaiters.length > 0)) this.kick();
      });
    });
  }

  private async processPass(): Promise<void> {
    try {
      for (let round = 0; round < READY_ROUNDS_PER_PASS_MAX && !this.stopped; round++) {
        this.issueReads();
        if (!this.core.hasReady()) break;
        if (this.applyQueue.length > APPLY_QUEUE_ENTRIES_MAX) await this.waitApplyBelow(APPLY_QUEUE_ENTRIES_MAX / 2);
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
      this.rejectOverwritten(rd.entries);
      this.storage.append(rd.entries);
    }
    if (rd.hardState) this.storage.setHardState(rd.hardState);
    // Committed entries go to the apply stage now, not after this Ready's sync: the core hands out
    // only entries an EARLIER Ready persisted (applyUpTo), so none of them waits for this fsync —
    // under load a leader's acknowledgements and a follower's apply each come one fsync sooner
    // (etcd's server applies in parallel with persisting, too).
    if (rd.committedEntries.length > 0) {
      const at = performance.now();
      for (const e of rd.committedEntries) {
        this.applyQueue.push(e);
        this.applyQueueAt.push(at);
      }
      this.startApply();
    }
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
          this.deps.send(early);
        }
      }
      // Group commit: one sync covers every entry and hard state appended since the last one.
      this.syncing = true;
      try {
        await this.storage.sync();
      } finally {
        this.syncing = false;
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
      this.deps.send(late);
      for (const m of late) if (m.type === 'snapshot') this.core.reportSnapshot?.(m.to, true);
    }
    for (const rs of rd.readStates) {
      const b = this.readBatches.get(ctxKey(rs.context));
      if (b) b.index = rs.index;
    }
    this.serveReads();
    this.core.advance(rd);
  }

  /** See kick(): committed entries to the apply stage (unless it is full), a leader's appends out. */
  private handOutEarly(): void {
    const e = this.core.takeEarly?.(this.applyQueue.length <= APPLY_QUEUE_ENTRIES_MAX);
    if (!e) return;
    if (e.committedEntries.length > 0) {
      const at = performance.now();
      for (const x of e.committedEntries) {
        this.applyQueue.push(x);
        this.applyQueueAt.push(at);
      }
      const n = e.committedEntries.length;
      this.early.entries += n;
      this.earlyDuringSync.entries += n;
      this.earlyDuringSync.atMsSum += n * at;
      this.startApply();
    }
    if (e.messages.length > 0) {
      this.early.sends++;
      this.deps.send(e.messages);
    }
  }

  private onSoftState(role: Role, leader: NodeId | ''): void {
    const wasLeader = this.role === 'LEADER';
    const changed = role !== this.role || leader !== this.leader;
    this.role = role;
    this.leader = leader;
    if (wasLeader && role !== 'LEADER') {
      // Reads are side-effect free: fail them now so callers retry at the new leader. Proposals
      // keep waiting for their exact outcome (see file comment).
      const err = this.notLeader();
      for (const w of this.readWaiters) w.reject(err);
      this.readWaiters = [];
      for (const b of this.readBatches.values()) for (const w of b.waiters) w.reject(err);
      this.readBatches.clear();
    }
    if (changed) this.notifyLeaderChange();
  }

  private notifyLeaderChange(): void {
    this.deps.onLeaderChange?.({ leader: this.leader, term: this.term, isLeader: this.role === 'LEADER', role: this.role });
  }

  /** New entries replace the log from their first index on: pending proposals there can never commit. */
  private rejectOverwritten(entries: readonly Entry[]): void {
    if (this.pending.size === 0) return;
    const first = entries[0]!.index;
    const last = entries[entries.length - 1]!.index;
    for (const [index, p] of this.pending) {
      if (index < first) continue;
      const e = index <= last ? entries[index - first] : undefined;
      if (e && e.term === p.term) continue;
      this.pending.delete(index);
      p.reject(new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: proposal at index ${index} was replaced by another leader's entry`, { leaderUuid: this.leader }));
    }
  }

  private async installSnapshot(snap: Snapshot): Promise<void> {
    // Entries queued before the snapshot are at or below its index: let the apply stage finish them
    // rather than racing the state-machine wipe.
    await this.waitApplyBelow(1);
    await this.deps.installSnapshot(snap);
    this.storage.applySnapshot(snap);
    this.appliedIndex = snap.meta.index;
    this.appliedTerm = snap.meta.term;
    this.confHistory = [{ index: snap.meta.index, conf: snap.meta.conf }];
    for (const [index, p] of this.pending) {
      if (index > snap.meta.index) continue;
      this.pending.delete(index);
      p.reject(new DbError(ErrorCode.TIMED_OUT, `${this.deps.groupId}: outcome of proposal ${index} unknown (replaced by a snapshot)`));
    }
  }

  private startApply(): void {
    if (this.applying || this.stopped) return;
    this.applying = this.applyLoop()
      .catch((e: unknown) => this.fail(e))
      .finally(() => {
        this.applying = undefined;
        if (this.applyQueue.length > 0 && !this.stopped) this.startApply();
        else this.notifyDrain();
      });
  }

  private async applyLoop(): Promise<void> {
    while (this.applyQueue.length > 0 && !this.stopped) {
      // A batch never spans a conf change: it takes effect in the core exactly at its position.
      let n = 0;
      while (n < this.applyQueue.length && n < APPLY_BATCH_ENTRIES_MAX) {
        const e = this.applyQueue[n]!;
        n++;
        if (e.type === 'confChange') break;
      }
      const batch = this.applyQueue.splice(0, n);
      const handedOutAt = this.applyQueueAt.splice(0, n);
      const skipBelow = this.appliedIndex;
      const fresh = batch[0]!.index <= skipBelow ? batch.filter((e) => e.index > skipBelow) : batch;
      if (fresh.length === 0) continue;
      const last = fresh[fresh.length - 1]!;
      if (last.type === 'confChange') {
        const cc = decodeConfChange(last.data);
        if (cc === undefined) throw new DbError(ErrorCode.CORRUPTION, `${this.deps.groupId}: undecodable conf change at index ${last.index}`);
        const conf = this.core.applyConfChange(cc);
        this.storage.setConfState(conf);
        this.confHistory.push({ index: last.index, conf });
        if (this.confHistory.length > 64) this.confHistory.splice(1, this.confHistory.length - 64);
        this.kick();
      }
      const start = performance.now();
      await this.deps.applyEntries(fresh);
      const st = this.applyStats;
      st.batches++;
      st.entries += fresh.length;
      st.runMs += performance.now() - start;
      for (let i = 0; i < batch.length; i++) if (batch[i]!.index > skipBelow) st.waitMs += start - handedOutAt[i]!;
      if (this.stopped) return;
      this.appliedIndex = last.index;
      this.appliedTerm = last.term;
      this.settleApplied(fresh);
      this.serveReads();
      this.notifyDrain();
    }
  }

  private settleApplied(applied: readonly Entry[]): void {
    if (this.pending.size === 0) return;
    for (const e of applied) {
      const p = this.pending.get(e.index);
      if (!p) continue;
      this.pending.delete(e.index);
      if (p.term === e.term) p.resolve({ index: e.index, term: e.term });
      else p.reject(new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: proposal at index ${e.index} lost to another leader's entry`, { leaderUuid: this.leader }));
    }
  }

  private waitApplyBelow(n: number): Promise<void> {
    if (this.applyQueue.length < n && (n > 1 || !this.applying)) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.stopped || (this.applyQueue.length < n && (n > 1 || !this.applying))) resolve();
        else this.applyDrainWaiters.push(check);
      };
      this.applyDrainWaiters.push(check);
    });
  }

  private notifyDrain(): void {
    const ws = this.applyDrainWaiters;
    this.applyDrainWaiters = [];
    for (const w of ws) w();
  }

  private issueReads(): void {
    if (this.readWaiters.length === 0) return;
    const waiters = this.readWaiters;
    this.readWaiters = [];
    const ctx = new Uint8Array(8);
    new DataView(ctx.buffer).setFloat64(0, ++this.readSeq);
    const r = this.core.readIndex(ctx);
    if (!r.ok) {
      const err =
        r.reason === 'notLeader'
          ? new DbError(ErrorCode.NOT_THE_LEADER, `${this.deps.groupId}: not the leader`, { leaderUuid: r.leader })
          : r.reason === 'leaderNotReady'
            ? new DbError(ErrorCode.LEADER_NOT_READY, `${this.deps.groupId}: leader not ready`, { leaderUuid: r.leader })
            : new DbError(ErrorCode.BACKPRESSURE, `${this.deps.groupId}: too many pending reads`);
      for (const w of waiters) w.reject(err);
      return;
    }
    this.readBatches.set(ctxKey(ctx), { waiters, issuedTick: this.ticks });
  }

  private serveReads(): void {
    for (const [k, b] of this.readBatches) {
      if (b.index === undefined || b.index > this.appliedIndex) continue;
      this.readBatches.delete(k);
      for (const w of b.waiters) w.resolve();
    }
  }

  private expireReads(): void {
    for (const [k, b] of this.readBatches) {
      if (this.ticks - b.issuedTick < READ_INDEX_TIMEOUT_TICKS) continue;
      this.readBatches.delete(k);
      const err = new DbError(ErrorCode.TIMED_OUT, `${this.deps.groupId}: read index not confirmed within ${READ_INDEX_TIMEOUT_TICKS} ticks`);
      for (const w of b.waiters) w.reject(err);
    }
  }

  private confAt(index: number): ConfState {
    let conf = this.confHistory[0]!.conf;
    for (const c of this.confHistory) if (c.index <= index) conf = c.conf;
    return conf;
  }

  private failAll(err: DbError): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    for (const w of this.readWaiters) w.reject(err);
    this.readWaiters = [];
    for (const b of this.readBatches.values()) for (const w of b.waiters) w.reject(err);
    this.readBatches.clear();
    this.notifyDrain();
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

function ctxKey(c: Uint8Array): string {
  return Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('latin1');
}

/** Re-exported so hosts encode conf changes the way the group decodes them. */
export { encodeConfChange };
