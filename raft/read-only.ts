/**
 * Pending ReadIndex requests on a leader (etcd's read_only.go, ReadOnlySafe). A request records the
 * commit index when it arrived; the leader broadcasts a heartbeat carrying the request's context; once
 * a majority answered that heartbeat, nobody else can have been leader meanwhile, so the request — and
 * every request queued before it — may read at its recorded index once applied.
 */
import type { NodeId } from '../common/ids';
import type { ReadState } from './types';

interface ReadIndexStatus {
  index: number;
  context: Uint8Array;
  acks: Set<NodeId>;
}

/** Beyond this many pending requests readIndex() answers 'overloaded'. */
export const PENDING_READ_INDEX_MAX = 4096;

export class ReadOnly {
  private readonly pending = new Map<string, ReadIndexStatus>();
  private queue: string[] = [];

  size(): number {
    return this.queue.length;
  }

  /** Returns false if a request with the same context is already pending. */
  add(index: number, context: Uint8Array, self: NodeId): boolean {
    const key = contextKey(context);
    if (this.pending.has(key)) return false;
    this.pending.set(key, { index, context, acks: new Set([self]) });
    this.queue.push(key);
    return true;
  }

  /** Record `from`'s answer to the heartbeat carrying `context`; returns the ack set (undefined if unknown). */
  recvAck(from: NodeId, context: Uint8Array): ReadonlySet<NodeId> | undefined {
    const st = this.pending.get(contextKey(context));
    if (!st) return undefined;
    st.acks.add(from);
    return st.acks;
  }

  /** Release the request with `context` and every request queued before it. */
  advance(context: Uint8Array): ReadState[] {
    const key = contextKey(context);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const out: ReadState[] = [];
    for (let i = 0; i <= at; i++) {
      const k = this.queue[i]!;
      const st = this.pending.get(k)!;
      out.push({ index: st.index, context: st.context });
      this.pending.delete(k);
    }
    this.queue = this.queue.slice(at + 1);
    return out;
  }

  /** The last pending context (heartbeats carry it so one round can confirm all requests). */
  lastPendingContext(): Uint8Array | undefined {
    const k = this.queue[this.queue.length - 1];
    return k === undefined ? undefined : this.pending.get(k)!.context;
  }

  reset(): void {
    this.pending.clear();
    this.queue = [];
  }
}

function contextKey(c: Uint8Array): string {
  return Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('latin1');
}
