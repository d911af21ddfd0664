/**
 * What a tablet replica knows of the transactions with intents on it (docs/architecture.md
 * §Participant side): their status tablets, the outcomes it applied itself (APPLY_TXN → committed,
 * REMOVE_TXN → aborted), the committed ones whose intents it has not moved yet, the aborted ones to
 * clean up, and the wait queue of operations blocked by pending ones. Readers and conflict
 * resolution ask it how another transaction's intents stand: local knowledge first, then the status
 * tablet (through the tserver's PeerTxnEnv).
 */
import { DbError, ErrorCode } from '../../../common/errors';
import type { HybridClock } from '../../../common/hybrid-clock';
import type { HybridTime } from '../../../common/hybrid-time';
import type { TxnId } from '../../../common/ids';
import type { DocDbApi, RowOp, StatusResolver } from '../../../docdb';
import { OUTCOME_LIMITS, OutcomeMemory } from '../outcome-memory';
import { WaitQueue } from '../wait-queue';
import { resolvePlainWriteConflicts, type ConflictDeps } from './conflict-resolution';
import type { PeerTxnEnv, TxnStatusInfo } from './txn-env';

/** Non-transactional reads see no other transaction's intents (they are not committed for them). */
export const NO_TXN_STATUS: StatusResolver = () => Promise.resolve({ status: 'PENDING' });

export interface TxnParticipantDeps {
  tabletId: string;
  clock: HybridClock;
  db(): DocDbApi;
  /** Status lookups / aborts of other transactions (absent: every other txn reads as pending). */
  txnEnv?: PeerTxnEnv;
}

export class TxnParticipant {
  /** txn id → status tablet, for every transaction with intents on this replica. */
  private readonly statusTablets = new Map<TxnId, string>();
  /** When this replica first applied intents of each transaction in statusTablets (performance.now; absent: before start). */
  private readonly firstSeen = new Map<TxnId, number>();
  /** Outcomes this replica applied (APPLY_TXN → committed, REMOVE_TXN → aborted): local knowledge. */
  private readonly outcomes = new OutcomeMemory();
  /** Committed transactions whose intents this replica has not moved yet (never evicted until done). */
  private readonly pendingApplies = new Map<TxnId, HybridTime>();
  /** Aborted transactions whose intents the leader should remove (found by conflict checks). */
  readonly cleanupQueue = new Set<TxnId>();
  /** Operations waiting for pending transactions to finish (enable_wait_queues). */
  readonly waitQueue = new WaitQueue();

  constructor(private readonly deps: TxnParticipantDeps) {}

  /** The transactions with intents in the (newly opened) databases. */
  async load(): Promise<void> {
    this.statusTablets.clear();
    this.firstSeen.clear();
    for (const t of await this.deps.db().listTransactions()) this.statusTablets.set(t.meta.txnId, t.meta.statusTablet);
  }

  /** Transactions with intents here not yet applied or removed, as of the entries applied so far. */
  count(): number {
    return this.statusTablets.size;
  }

  hasIntents(txnId: TxnId): boolean {
    return this.statusTablets.has(txnId);
  }

  /** Intents of `txnId` (status tablet `statusTablet`) were applied here. */
  intentsApplied(txnId: TxnId, statusTablet: string): void {
    if (!this.statusTablets.has(txnId)) this.firstSeen.set(txnId, performance.now());
    this.statusTablets.set(txnId, statusTablet);
    // Proposed before this replica applied the transaction's REMOVE (a write racing the abort):
    // these intents come after the removal, so the sweep removes them again (no status RPC needed).
    if (this.outcomes.get(txnId)?.status === 'ABORTED') this.queueCleanup(txnId);
  }

  /** APPLY_TXN applied: committed at `commitHt`; waiters on it try again. */
  committed(txnId: TxnId, commitHt: HybridTime): void {
    this.outcomes.remember(txnId, { status: 'COMMITTED', commitHt, priority: 0 });
    this.waitQueue.wake(txnId);
  }

  /** REMOVE_TXN applied: aborted for certain; waiters on it try again. */
  removed(txnId: TxnId): void {
    this.outcomes.remember(txnId, { status: 'ABORTED', priority: 0 });
    this.waitQueue.wake(txnId);
    this.cleanupQueue.delete(txnId);
  }

  /** `txnId` has no intents here any more (moved to RegularDB, or removed). */
  forget(txnId: TxnId): void {
    this.statusTablets.delete(txnId);
    this.firstSeen.delete(txnId);
  }

  /** Its intents are being moved off the apply path: readers resolve them as committed at commitHt meanwhile. */
  applyStarted(txnId: TxnId, commitHt: HybridTime): void {
    this.pendingApplies.set(txnId, commitHt);
  }

  applyEnded(txnId: TxnId): void {
    this.pendingApplies.delete(txnId);
  }

  queueCleanup(txnId: TxnId): void {
    if (this.cleanupQueue.size < OUTCOME_LIMITS.max) this.cleanupQueue.add(txnId);
  }

  /**
   * Transactions with intents here and their status tablets (participant cleanup sweep): those
   * whose first intents this replica applied at least `minAgeMs` ago (or before its start), without
   * an outcome known here (a committed one waiting for its apply is not a cleanup candidate).
   */
  withIntents(minAgeMs = 0): Array<[TxnId, string]> {
    const bornBefore = performance.now() - minAgeMs;
    const out: Array<[TxnId, string]> = [];
    for (const [id, st] of this.statusTablets) {
      if (minAgeMs > 0 && (this.firstSeen.get(id) ?? 0) > bornBefore) continue;
      if (this.localOutcome(id) !== undefined) continue;
      out.push([id, st]);
    }
    return out;
  }

  localOutcome(txnId: TxnId): TxnStatusInfo | undefined {
    const pendingCommitHt = this.pendingApplies.get(txnId);
    if (pendingCommitHt !== undefined) return { status: 'COMMITTED', commitHt: pendingCommitHt, priority: 0 };
    return this.outcomes.get(txnId);
  }

  /**
   * A transaction this replica removed (REMOVE_TXN applied: it is aborted for certain) writes or
   * locks nothing more here: its client learns the abort now instead of at its next heartbeat or
   * commit, and no intents are left behind after the removal.
   */
  checkNotRemoved(txnId: TxnId): void {
    if (this.outcomes.get(txnId)?.status === 'ABORTED') throw new DbError(ErrorCode.TXN_ABORTED, `transaction ${txnId} was aborted (tablet ${this.deps.tabletId} removed its intents)`, { txnId });
  }

  /**
   * A status tablet answers ABORTED for an id it has no record of — and it drops the record of a
   * COMMITTED transaction once every participant leader applied it. So a remote ABORTED is checked
   * against this replica's own knowledge AFTER the answer arrived: when the transaction was forgotten
   * as committed, this replica (a participant whose leader applied the APPLY entry, or a ready leader,
   * which applied every committed entry) already knows it committed. Without this re-check, a reader
   * that met the intents just before they were applied skipped them as aborted and returned the old
   * value (a stale read), and a writer ignored them (a lost update) — found by tessera verify.
   */
  private settleRemote(txnId: TxnId, st: TxnStatusInfo): TxnStatusInfo {
    if (st.status !== 'ABORTED') return st;
    const local = this.localOutcome(txnId);
    return local?.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: local.commitHt, priority: st.priority } : st;
  }

  /** The transaction environment with remote answers settled against local knowledge (settleRemote). */
  private settledEnv(env: PeerTxnEnv): PeerTxnEnv {
    return {
      getStatus: async (txnId, statusTablet, readHt) => this.settleRemote(txnId, await env.getStatus(txnId, statusTablet, readHt)),
      // This tablet holds the victim's intents: the coordinator then removes them here at once
      // (REMOVE), instead of the participant sweep a few seconds later.
      abort: async (txnId, statusTablet) => this.settleRemote(txnId, await env.abort(txnId, statusTablet, this.deps.tabletId)),
      known: (txnId) => env.known?.(txnId),
    };
  }

  /** How readers resolve other transactions' intents: local knowledge, then the status tablet. */
  statusResolver(): StatusResolver {
    const env = this.deps.txnEnv;
    return async (txnId, readHt) => {
      const local = this.localOutcome(txnId);
      if (local) return local.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: local.commitHt } : { status: local.status };
      const st = this.statusTablets.get(txnId);
      if (!env || !st) return { status: 'PENDING' };
      const a = this.settleRemote(txnId, await env.getStatus(txnId, st, readHt));
      return a.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: a.commitHt } : { status: a.status };
    };
  }

  /** What a non-transactional read or check resolves intents with: statusResolver, or (no transaction support) nothing committed. */
  readResolver(): StatusResolver {
    return this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS;
  }

  /** What conflict resolution needs from this replica; undefined without transaction support. */
  conflictDeps(): ConflictDeps | undefined {
    const env = this.deps.txnEnv;
    if (!env) return undefined;
    return {
      env: this.settledEnv(env),
      statusTabletOf: (id) => this.statusTablets.get(id),
      localOutcome: (id) => this.localOutcome(id),
      queueCleanup: (id) => this.queueCleanup(id),
    };
  }

  /**
   * A plain write meets other transactions' intents on its keys (under the row locks, which every
   * transactional write of this leader also takes): committed ones order before it (the clock
   * passes their commit time, so the write's time is above it), pending ones are aborted, and an
   * unsettled one fails the write with a retryable TXN_CONFLICT (resolvePlainWriteConflicts).
   */
  async orderAfterIntents(ops: RowOp[]): Promise<void> {
    const conflicts = await this.deps.db().findIntentConflicts(ops);
    if (conflicts.length === 0) return;
    const deps = this.conflictDeps();
    if (!deps) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.deps.tabletId}: the write meets a transaction's intents`, {}, { retryable: true });
    const after = await resolvePlainWriteConflicts(conflicts, this.deps.clock.now(), deps);
    if (after > 0n) this.deps.clock.update(after);
  }
}
