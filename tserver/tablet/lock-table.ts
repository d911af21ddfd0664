/**
 * In-memory per-key exclusive locks on a tablet leader. INSERT/UPDATE check whether a row exists and
 * then propose; holding the row's lock from the check until the write is applied makes that
 * check-then-write atomic against other writers of the same row on this leader. (A new leader starts
 * with an empty table: every earlier write is applied before it serves, see RaftGroup readiness.)
 *
 * Keys are acquired in sorted order, so two multi-row writes can never deadlock.
 *
 * Before its keys, every request enters the tablet gate: shared (writes, row read locks) or
 * exclusive (a serializable scan's tablet lock, which must not race any write's conflict check).
 * Waiters enter in arrival order; with no exclusive request around, entering is a counter.
 */
import { DbError, ErrorCode } from '../../common/errors';

/** Requests waiting for locks in one tablet before new ones get BACKPRESSURE. */
export const LOCK_WAITERS_MAX = 10_000;

export type Release = () => void;

/** A queue's head when its holder took the key at once (nobody to wake). */
const HELD = (): void => undefined;
export type GateMode = 'shared' | 'exclusive';

export class LockTable {
  /** key → queue of waiters; the head holds the lock. */
  private readonly queues = new Map<string, Array<() => void>>();
  private waiters = 0;
  private sharedHolders = 0;
  private exclusiveHeld = false;
  private readonly gateQueue: Array<{ mode: GateMode; enter: () => void }> = [];

  async acquire(keys: readonly string[], mode: GateMode = 'shared'): Promise<Release> {
    const sorted = [...new Set(keys)].sort();
    if (this.waiters >= LOCK_WAITERS_MAX) throw new DbError(ErrorCode.BACKPRESSURE, `${this.waiters} writes waiting for row locks`);
    this.waiters++;
    const held: string[] = [];
    try {
      const gate = this.enterGate(mode);
      if (gate) await gate;
      try {
        // A free key is taken at once: awaiting each of a 160-row write's keys was a share of a
        // mutateRows row's cost on the leader (docs/rows.md); only a held key waits.
        for (const k of sorted) {
          const wait = this.lockOne(k);
          if (wait) await wait;
          held.push(k);
        }
      } catch (e) {
        for (const k of held) this.unlockOne(k);
        this.leaveGate(mode);
        throw e;
      }
    } finally {
      this.waiters--;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const k of held) this.unlockOne(k);
      this.leaveGate(mode);
    };
  }

  /** Holders of the tablet gate (tests, console). */
  gateState(): { shared: number; exclusive: boolean; waiting: number } {
    return { shared: this.sharedHolders, exclusive: this.exclusiveHeld, waiting: this.gateQueue.length };
  }

  /** Undefined: entered at once; else a promise that resolves once entered. */
  private enterGate(mode: GateMode): Promise<void> | undefined {
    if (this.gateQueue.length === 0 && !this.exclusiveHeld && (mode === 'shared' || this.sharedHolders === 0)) {
      if (mode === 'shared') this.sharedHolders++;
      else this.exclusiveHeld = true;
      return undefined;
    }
    return new Promise((enter) => this.gateQueue.push({ mode, enter }));
  }

  private leaveGate(mode: GateMode): void {
    if (mode === 'shared') this.sharedHolders--;
    else this.exclusiveHeld = false;
    // Admit waiters in arrival order: shared ones together, an exclusive one alone.
    while (this.gateQueue.length > 0 && !this.exclusiveHeld) {
      const next = this.gateQueue[0]!;
      if (next.mode === 'exclusive' && this.sharedHolders > 0) break;
      this.gateQueue.shift();
      if (next.mode === 'shared') this.sharedHolders++;
      else this.exclusiveHeld = true;
      next.enter();
    }
  }

  size(): number {
    return this.queues.size;
  }

  /** Undefined: `k` was free and is held now; else a promise that resolves once it is held. */
  private lockOne(k: string): Promise<void> | undefined {
    const q = this.queues.get(k);
    if (!q) {
      this.queues.set(k, [HELD]);
      return undefined;
    }
    return new Promise((resolve) => q.push(resolve));
  }

  private unlockOne(k: string): void {
    const q = this.queues.get(k);
    if (!q) return;
    q.shift();
    const next = q[0];
    if (next) next();
    else this.queues.delete(k);
  }
}
