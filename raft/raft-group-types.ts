/** The contract of RaftGroup (raft-group.ts): what it needs from the core and the host, its limits, its status. */
import type { NodeId } from '../common/ids';
import type { Logger } from '../common/log';
import type { LeaseClock } from './lease-wall-bound';
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
  /** Lead the current term at once: the host assigned this replica every voter's vote of it (RawNode.leadAssignedTerm). */
  leadAssignedTerm?(): boolean;
  hasReady(): boolean;
  ready(): Ready;
  advance(rd: Ready): void;
  /** While the outstanding Ready's sync runs: committed entries and leader messages that need not wait for it (RawNode.takeEarly). */
  takeEarly?(withEntries: boolean, withProposals?: boolean): { committedEntries: Entry[]; messages: Message[] } | undefined;
  /** Committed entries persisted and not yet handed out, at any time (RawNode.takeCommitted). */
  takeCommitted?(): Entry[];
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
  /** How to run a processing pass later in this turn (default raft-turn.ts: one setImmediate for every group). */
  schedule?(fn: () => void): void;
  /**
   * Bound the lease in wall time too: the host calls tick() every tickIntervalMs; a lease lasts at
   * most leaseTicks x tickIntervalMs of monotonic time from when its quorum tick happened. Without it
   * a leader paused (SIGSTOP) or starved of ticks would resume believing in a lease its followers
   * long stopped honouring (they elected another leader meanwhile) and serve stale reads.
   */
  leaseClock?: LeaseClock;
}

/** Proposals waiting for commit+apply before propose() answers BACKPRESSURE. */
export const PENDING_PROPOSALS_MAX = 20_000;
/** Committed entries queued for the apply stage; above this the processing pass waits for the apply stage. */
export const APPLY_QUEUE_ENTRIES_MAX = 50_000;
/** Entries handed to one applyEntries() call. */
export const APPLY_BATCH_ENTRIES_MAX = 256;
/** Ready rounds per processing pass before yielding to the event loop. */
export const READY_ROUNDS_PER_PASS_MAX = 64;
/** ReadIndex requests unanswered after this many ticks fail with TIMED_OUT (leadership lost meanwhile). */
export const READ_INDEX_TIMEOUT_TICKS = 60;

export interface RaftGroupStatus extends RaftStatus {
  appliedIndex: number;
  leaderReady: boolean;
  hasLease: boolean;
  pendingProposals: number;
  applyQueueEntries: number;
}
