/**
 * Options of one Raft replica. Time is counted in ticks (the host calls tick() every
 * raft_heartbeat_interval_ms or so); randomness comes from the injected Rng so a seed replays exactly.
 */
import { assert } from '../common/assert';
import type { NodeId } from '../common/ids';
import type { Rng } from '../common/rng';
import type { LogStorage } from './wal/log-storage';

export interface RaftOptions {
  id: NodeId;
  /** Read side of the durable log; the host appends into it while handling a Ready. */
  storage: LogStorage;
  /** Last index the host's state machine has applied (it will not be handed out again). */
  applied?: number;
  /** A follower campaigns after [electionTicks, 2*electionTicks) ticks without a leader. */
  electionTicks?: number;
  /** A leader sends heartbeats every heartbeatTicks ticks. Must be < electionTicks. */
  heartbeatTicks?: number;
  /** Pre-vote (thesis §9.6): a partitioned node cannot inflate terms and disrupt a healthy group. */
  preVote?: boolean;
  /**
   * Check-quorum: a leader steps down when no quorum answered within electionTicks, and a replica that
   * heard from a leader within electionTicks ignores vote requests (the "in lease" rule leases rest on).
   */
  checkQuorum?: boolean;
  /** Bytes of entries per append message (at least one entry is always sent). */
  maxSizePerMsgBytes?: number;
  /** Append messages in flight per follower before the leader stops pipelining. */
  maxInflightMsgs?: number;
  /** Bytes in flight per follower (0 = no byte limit). */
  maxInflightBytes?: number;
  /** Bytes of proposed but not applied entries; beyond it proposals are refused ('overloaded'). 0 = no limit. */
  maxUncommittedBytes?: number;
  /** Bytes of committed entries handed to the host per Ready (at least one entry). */
  maxCommittedBytesPerReady?: number;
  rng: Rng;
  /**
   * A leader holds a lease while a quorum acknowledged its heartbeats sent within the last leaseTicks
   * ticks. Must be < electionTicks (the margin covers tick-rate drift between nodes). 0 disables
   * leases. Default electionTicks - 2 (at least 1). Needs checkQuorum.
   */
  leaseTicks?: number;
}

export interface ResolvedRaftOptions {
  id: NodeId;
  applied: number;
  electionTicks: number;
  heartbeatTicks: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxSizePerMsgBytes: number;
  maxInflightMsgs: number;
  maxInflightBytes: number;
  maxUncommittedBytes: number;
  maxCommittedBytesPerReady: number;
  leaseTicks: number;
}

export function resolveRaftOptions(o: RaftOptions): ResolvedRaftOptions {
  const electionTicks = o.electionTicks ?? 10;
  const heartbeatTicks = o.heartbeatTicks ?? 1;
  const checkQuorum = o.checkQuorum ?? true;
  const r: ResolvedRaftOptions = {
    id: o.id,
    applied: o.applied ?? 0,
    electionTicks,
    heartbeatTicks,
    preVote: o.preVote ?? true,
    checkQuorum,
    maxSizePerMsgBytes: o.maxSizePerMsgBytes ?? 1024 * 1024,
    maxInflightMsgs: o.maxInflightMsgs ?? 256,
    maxInflightBytes: o.maxInflightBytes ?? 0,
    maxUncommittedBytes: o.maxUncommittedBytes ?? 0,
    maxCommittedBytesPerReady: o.maxCommittedBytesPerReady ?? 4 * 1024 * 1024,
    leaseTicks: checkQuorum ? (o.leaseTicks ?? Math.max(1, electionTicks - 2)) : 0,
  };
  assert(String(r.id).length > 0, 'raft: id must be non-empty');
  assert(r.heartbeatTicks > 0 && r.electionTicks > r.heartbeatTicks, 'raft: need 0 < heartbeatTicks < electionTicks');
  assert(r.maxInflightMsgs > 0, 'raft: maxInflightMsgs must be positive');
  assert(r.maxSizePerMsgBytes > 0 && r.maxCommittedBytesPerReady > 0, 'raft: byte limits must be positive');
  assert(r.leaseTicks >= 0 && r.leaseTicks < r.electionTicks, 'raft: need 0 <= leaseTicks < electionTicks');
  return r;
}
