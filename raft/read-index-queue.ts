/**
 * The ReadIndex reads of one RaftGroup (raft-group.ts): callers of one event-loop turn wait together,
 * share one ReadIndex round of the core, and are answered once the state machine has applied the
 * index the leader confirmed (Raft thesis §6.4), or fail after READ_INDEX_TIMEOUT_TICKS.
 */
import { DbError, ErrorCode } from '../common/errors';
import { PENDING_PROPOSALS_MAX, READ_INDEX_TIMEOUT_TICKS } from './raft-group-types';
import type { RaftCore } from './raft-group-types';
import type { ReadState } from './types';

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

export class ReadIndexQueue {
  /** Reads not yet handed to the core (the next processing pass issues them as one round). */
  private waiters: ReadWaiter[] = [];
  private readonly batches = new Map<string, ReadBatch>();
  private seq = 0;

  constructor(private readonly groupId: string) {}

  /** A read waiting to be issued; BACKPRESSURE beyond PENDING_PROPOSALS_MAX. */
  wait(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.waiters.length + this.batches.size >= PENDING_PROPOSALS_MAX) {
        reject(new DbError(ErrorCode.BACKPRESSURE, `${this.groupId}: too many pending reads`));
        return;
      }
      this.waiters.push({ resolve, reject });
    });
  }

  hasUnissued(): boolean {
    return this.waiters.length > 0;
  }

  /** Ask the core for one read index covering every waiting read. */
  issue(core: Pick<RaftCore, 'readIndex'>, tick: number): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    const ctx = new Uint8Array(8);
    new DataView(ctx.buffer).setFloat64(0, ++this.seq);
    const r = core.readIndex(ctx);
    if (!r.ok) {
      const err =
        r.reason === 'notLeader'
          ? new DbError(ErrorCode.NOT_THE_LEADER, `${this.groupId}: not the leader`, { leaderUuid: r.leader })
          : r.reason === 'leaderNotReady'
            ? new DbError(ErrorCode.LEADER_NOT_READY, `${this.groupId}: leader not ready`, { leaderUuid: r.leader })
            : new DbError(ErrorCode.BACKPRESSURE, `${this.groupId}: too many pending reads`);
      for (const w of waiters) w.reject(err);
      return;
    }
    this.batches.set(ctxKey(ctx), { waiters, issuedTick: tick });
  }

  /** The core confirmed these rounds' read indexes. */
  confirm(readStates: readonly ReadState[]): void {
    for (const rs of readStates) {
      const b = this.batches.get(ctxKey(rs.context));
      if (b) b.index = rs.index;
    }
  }

  /** Answer every confirmed round whose index the state machine has applied. */
  serve(appliedIndex: number): void {
    for (const [k, b] of this.batches) {
      if (b.index === undefined || b.index > appliedIndex) continue;
      this.batches.delete(k);
      for (const w of b.waiters) w.resolve();
    }
  }

  /** Fail the rounds unanswered for READ_INDEX_TIMEOUT_TICKS (leadership was lost meanwhile). */
  expire(tick: number): void {
    for (const [k, b] of this.batches) {
      if (tick - b.issuedTick < READ_INDEX_TIMEOUT_TICKS) continue;
      this.batches.delete(k);
      const err = new DbError(ErrorCode.TIMED_OUT, `${this.groupId}: read index not confirmed within ${READ_INDEX_TIMEOUT_TICKS} ticks`);
      for (const w of b.waiters) w.reject(err);
    }
  }

  /** Fail every read, issued or not. */
  rejectAll(err: DbError): void {
    for (const w of this.waiters) w.reject(err);
    this.waiters = [];
    for (const b of this.batches.values()) for (const w of b.waiters) w.reject(err);
    this.batches.clear();
  }
}

function ctxKey(c: Uint8Array): string {
  return Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('latin1');
}
