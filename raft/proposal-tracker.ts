/**
 * The proposals of one RaftGroup (raft-group.ts) waiting for their exact outcome: resolved once their
 * entry is applied with the term they were proposed in, rejected NOT_THE_LEADER once another
 * leader's entry took their slot, TIMED_OUT (outcome unknown) once a snapshot replaced them.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { NodeId } from '../common/ids';
import type { Entry, ProposeResult } from './types';

export interface OpId {
  index: number;
  term: number;
}

interface PendingProposal {
  term: number;
  /** Called once, when the entry is committed with this term behind other applies (raft-group.ts), before it is applied. */
  onCommitted?: (() => void) | undefined;
  /** Call onCommitted at every commit, not only behind other applies (RaftGroup.propose `always`). */
  always: boolean;
  resolve: (r: OpId) => void;
  reject: (e: DbError) => void;
}

export class ProposalTracker {
  private readonly pending = new Map<number, PendingProposal>();

  constructor(
    private readonly groupId: string,
    /** The leader as known now, for the errors' leaderUuid. */
    private readonly leaderNow: () => NodeId | '',
  ) {}

  size(): number {
    return this.pending.size;
  }

  /** Wait for the outcome of the proposal the core accepted at `index` in `term`. */
  add(index: number, term: number, onCommitted?: () => void, always = false): Promise<OpId> {
    return new Promise((resolve, reject) => {
      this.pending.set(index, { term, onCommitted, always, resolve, reject });
    });
  }

  /**
   * These entries are committed (on their way to the apply stage): tell the proposals that asked
   * (onCommitted) and carry the same term — every one when `behind` (they wait for other applies),
   * else those that asked for it always. An entry of another term leaves its proposal to
   * settleApplied (rejected there).
   */
  settleCommitted(committed: readonly Entry[], behind: boolean): void {
    if (this.pending.size === 0) return;
    for (const e of committed) {
      const p = this.pending.get(e.index);
      if (!p?.onCommitted || p.term !== e.term || !(behind || p.always)) continue;
      const cb = p.onCommitted;
      p.onCommitted = undefined;
      cb();
    }
  }

  /** New entries replace the log from their first index on: pending proposals there can never commit. */
  rejectOverwritten(entries: readonly Entry[]): void {
    if (this.pending.size === 0) return;
    const first = entries[0]!.index;
    const last = entries[entries.length - 1]!.index;
    for (const [index, p] of this.pending) {
      if (index < first) continue;
      const e = index <= last ? entries[index - first] : undefined;
      if (e && e.term === p.term) continue;
      this.pending.delete(index);
      p.reject(new DbError(ErrorCode.NOT_THE_LEADER, `${this.groupId}: proposal at index ${index} was replaced by another leader's entry`, { leaderUuid: this.leaderNow() }));
    }
  }

  /** These entries are applied: answer the proposals they carry. */
  settleApplied(applied: readonly Entry[]): void {
    if (this.pending.size === 0) return;
    for (const e of applied) {
      const p = this.pending.get(e.index);
      if (!p) continue;
      this.pending.delete(e.index);
      if (p.term === e.term) p.resolve({ index: e.index, term: e.term });
      else p.reject(new DbError(ErrorCode.NOT_THE_LEADER, `${this.groupId}: proposal at index ${e.index} lost to another leader's entry`, { leaderUuid: this.leaderNow() }));
    }
  }

  /** A snapshot up to `index` replaced the log: the proposals it covers have an unknown outcome. */
  rejectCoveredBySnapshot(index: number): void {
    for (const [i, p] of this.pending) {
      if (i > index) continue;
      this.pending.delete(i);
      p.reject(new DbError(ErrorCode.TIMED_OUT, `${this.groupId}: outcome of proposal ${i} unknown (replaced by a snapshot)`));
    }
  }

  rejectAll(err: DbError): void {
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
  }
}

/** The error a caller gets for a proposal the core refused. */
export function proposeError(groupId: string, r: Extract<ProposeResult, { ok: false }>): DbError {
  const details = { leaderUuid: r.leader };
  switch (r.reason) {
    case 'notLeader':
      return new DbError(ErrorCode.NOT_THE_LEADER, `${groupId}: not the leader`, details);
    case 'transferring':
      return new DbError(ErrorCode.LEADER_NOT_READY, `${groupId}: leadership transfer in progress`, details);
    case 'tooLarge':
      return new DbError(ErrorCode.MESSAGE_TOO_LARGE, `${groupId}: proposal too large`, details);
    case 'overloaded':
      return new DbError(ErrorCode.BACKPRESSURE, `${groupId}: too many uncommitted bytes`, details);
    case 'confChangePending':
      return new DbError(ErrorCode.SERVICE_UNAVAILABLE, `${groupId}: another configuration change is in progress`, details);
    case 'invalidConfChange':
      return new DbError(ErrorCode.INVALID_ARGUMENT, `${groupId}: invalid configuration change`, details);
  }
}
