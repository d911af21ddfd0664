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
  | { type: 'append'; from: NodeId; to: NodeId; term: number; prevIndex: number; prevTerm: number; entries: Entry[]; commit: number; leaseMs?: number }
  | { type: 'appendResp'; from: NodeId; to: NodeId; term: number; index: number; reject: boolean; rejectHint: number; rejectTermHint?: number }
  | { type: 'heartbeat'; from: NodeId; to: NodeId; term: number; commit: number; context?: Uint8Array }
  | { type: 'heartbeatResp'; from: NodeId; to: NodeId; term: number; context?: Uint8Array }
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
 * What the host must do, in order (the etcd Ready contract):
 * 1. persist `snapshot` (if any), `entries` and `hardState` (durably when `mustSync`);
 * 2. only then send `messages`;
 * 3. apply `snapshot`, then `committedEntries`, to the state machine;
 * 4. call `advance()`.
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

export type ProposeResult = { ok: true; index: number; term: number } | { ok: false; reason: 'notLeader' | 'transferring' | 'tooLarge' | 'confChangePending'; leader: NodeId | '' };

export interface RaftStatus {
  id: NodeId;
  role: Role;
  term: number;
  leader: NodeId | '';
  commit: number;
  applied: number;
  lastIndex: number;
  conf: ConfState;
  /** Per follower (leader only): match and next index. */
  progress?: Record<string, { match: number; next: number; state: 'probe' | 'replicate' | 'snapshot'; recentActive: boolean }>;
}
