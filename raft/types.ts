/**
 * Raft types shared by the pure core (raft/), the WAL (raft/wal/) and the host (tserver/tablet,
 * master sys catalog). Payloads are opaque bytes: Raft never knows what it replicates.
 *
 * Glossary: "Raft commit" = an entry is durable on a majority (commitIndex). "Applied (Raft)" = the
 * host executed a committed entry against its state machine. Neither is a transaction commit.
 */
import type { NodeId } from '../common/ids';

export const EntryType = {
  /** Host payload. */
  normal: 'normal',
  /** Empty entry a new leader appends to commit entries of earlier terms (and to start its lease). */
  noop: 'noop',
  /** Payload is an encoded ConfChange. */
  confChange: 'confChange',
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  data: Uint8Array;
}

export interface HardState {
  term: number;
  vote: NodeId | '';
  commit: number;
}

export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
}

export type ConfChange =
  | { type: 'addVoter'; node: NodeId }
  | { type: 'addLearner'; node: NodeId }
  | { type: 'promoteLearner'; node: NodeId }
  | { type: 'removeNode'; node: NodeId };

export interface SnapshotMeta {
  index: number;
  term: number;
  conf: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  /** Host state machine image; opaque to Raft. */
  data: Uint8Array;
}

/** Raft messages, a union on `type`; `from`, `to`, `term` on all. */
export type Message =
  /**
   * `noAck`: the leader needs no answer — the append carries no entries, only a new commit index for
   * a follower in replicate state, whose answers to the appends that carried the entries tell the
   * leader everything this answer would (see Raft.sendAppend). A follower still answers when it must
   * reject.
   */
  | { type: 'append'; from: NodeId; to: NodeId; term: number; prevIndex: number; prevTerm: number; entries: Entry[]; commit: number; leaseMs?: number; noAck?: boolean }
  | { type: 'appendResp'; from: NodeId; to: NodeId; term: number; index: number; reject: boolean; rejectHint: number; rejectTermHint?: number }
  | { type: 'heartbeat'; from: NodeId; to: NodeId; term: number; commit: number; context?: Uint8Array; leaseTick?: number }
  | { type: 'heartbeatResp'; from: NodeId; to: NodeId; term: number; context?: Uint8Array; leaseTick?: number }
  | { type: 'vote'; from: NodeId; to: NodeId; term: number; lastIndex: number; lastTerm: number; pre: boolean; transfer: boolean }
  | { type: 'voteResp'; from: NodeId; to: NodeId; term: number; reject: boolean; pre: boolean }
  | { type: 'snapshot'; from: NodeId; to: NodeId; term: number; snapshot: Snapshot }
  | { type: 'timeoutNow'; from: NodeId; to: NodeId; term: number };

export type MessageType = Message['type'];

export interface ReadState {
  /** Reads that asked with this context may be served once appliedIndex >= index. */
  index: number;
  context: Uint8Array;
}

export const Role = { follower: 'FOLLOWER', candidate: 'CANDIDATE', preCandidate: 'PRE_CANDIDATE', leader: 'LEADER', learner: 'LEARNER' } as const;
export type Role = (typeof Role)[keyof typeof Role];

export interface SoftState {
  leader: NodeId | '';
  role: Role;
}

/**
 * The Ready contract (etcd's, with one addition for single-voter safety). ready() returns everything
 * the core wants done since the last advance(); the host must, in this order:
 * 1. persist: if `snapshot` is set, storage.applySnapshot(snapshot); then storage.append(entries)
 *    (an entry at index i replaces every stored entry >= i); then storage.setHardState(hardState) when
 *    set; and when `mustSync`, make all of it durable (storage.sync()) before step 2. mustSync is set
 *    whenever entries, a snapshot or any hard-state field changed: a vote, an append acknowledgement and
 *    a commit index are only ever exposed once durable.
 * 2. only then send `messages` (they may acknowledge the entries just persisted, or carry the vote
 *    just recorded). Messages may be dropped, duplicated or reordered by the network: Raft copes.
 * 3. apply to the state machine: `snapshot` (if any) first, then `committedEntries` in order; for a
 *    confChange entry call applyConfChange(decodeConfChange(data)) (and storage.setConfState). Entries
 *    handed out here are always already persisted locally, so a one-voter group never applies — or
 *    reports committed — an entry before it is durable (etcd #14370). `readStates` may be served once
 *    the applied index reaches their index.
 * 4. call advance(rd). ready() may not be called again before advance(); inputs (step, tick, propose)
 *    between ready() and advance() are allowed and show up in the next Ready.
 * Entries and snapshots are shared with the core: never mutate them.
 */
export interface Ready {
  softState?: SoftState;
  hardState?: HardState;
  entries: Entry[];
  snapshot?: Snapshot;
  committedEntries: Entry[];
  messages: Message[];
  readStates: ReadState[];
  mustSync: boolean;
}

/**
 * Why a proposal was refused (nothing was appended; the caller may retry elsewhere or later):
 * notLeader: this replica does not lead; transferring: leadership is moving away; tooLarge: one entry
 * exceeds maxUncommittedBytes; overloaded: uncommitted bytes are at the limit (backpressure);
 * confChangePending: a conf change is appended but not yet applied; invalidConfChange: the change makes
 * no sense against the current configuration (unknown node, removing the last voter, ...).
 */
export type ProposeRejectReason = 'notLeader' | 'transferring' | 'tooLarge' | 'confChangePending' | 'overloaded' | 'invalidConfChange';
export type ProposeResult = { ok: true; index: number; term: number } | { ok: false; reason: ProposeRejectReason; leader: NodeId | '' };

/**
 * readIndex() outcome. Accepted requests come back later as a ReadState with the same context (or are
 * silently dropped when leadership changes: the caller times out and retries). leaderNotReady: the
 * leader has not yet committed an entry of its own term, so its commit index may be stale.
 */
export type ReadIndexResult = { ok: true } | { ok: false; reason: 'notLeader' | 'leaderNotReady' | 'overloaded'; leader: NodeId | '' };

export interface RaftStatus {
  id: NodeId;
  role: Role;
  term: number;
  leader: NodeId | '';
  commit: number;
  applied: number;
  lastIndex: number;
  conf: ConfState;
  /** Leader only: the node leadership is being transferred to, if any. */
  leadTransferee?: NodeId;
  /** Per follower (leader only): match and next index. */
  progress?: Record<string, { match: number; next: number; state: 'probe' | 'replicate' | 'snapshot'; recentActive: boolean }>;
}
