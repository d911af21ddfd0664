/**
 * A tablet replica's MVCC clock (docs/architecture.md §Write path, §Read path): the hybrid times of
 * its entries and the safe time reads pick.
 *
 * Every entry gets a hybrid time strictly above every earlier one of the tablet (nextHt); every
 * replica's clock moves past each entry it applies (observe), so a future leader assigns larger
 * times. The leader's safe time is just below the oldest WRITE proposed but not yet applied, so a
 * read never picks a time a later write can land at.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridClock } from '../../common/hybrid-clock';
import { htMax, type HybridTime } from '../../common/hybrid-time';

export interface MvccClockDeps {
  clock: HybridClock;
  tabletId: string;
}

/** Rounds (of up to 10 ms each) a read at a requested time waits for the safe time to reach it. */
const SAFE_TIME_WAIT_ROUNDS = 1000;

export class MvccClock {
  /** Highest hybrid time assigned to or applied by an entry of this tablet. */
  private lastWriteHt: HybridTime = 0n;
  /** Hybrid times proposed but not yet applied, in increasing order (for the safe time). */
  private readonly inflightHts: HybridTime[] = [];
  private readonly inflightDone = new Set<HybridTime>();
  /** Highest time of a WRITE answered at Raft commit, before its apply here (WritePath, markAcked). */
  private ackedHt: HybridTime = 0n;
  /** Reads waiting for the safe time (woken after every applied batch). */
  private applyWaiters: Array<() => void> = [];

  constructor(private readonly deps: MvccClockDeps) {}

  /** A fresh hybrid time for an entry of this tablet, above every earlier one. */
  nextHt(): HybridTime {
    let ht = this.deps.clock.now();
    if (ht <= this.lastWriteHt) ht = this.lastWriteHt + 1n;
    this.lastWriteHt = ht;
    return ht;
  }

  /** An entry at `ht` is applied (or replayed) here: the clock and the tablet's last time move past it. */
  observe(ht: HybridTime): void {
    this.deps.clock.update(ht);
    this.lastWriteHt = htMax(this.lastWriteHt, ht);
  }

  /** A WRITE at `ht` was proposed: the safe time stays below it until markApplied(ht). */
  addInflight(ht: HybridTime): void {
    this.inflightHts.push(ht);
  }

  /** The WRITE at `ht` is applied here, or its proposal failed. */
  markApplied(ht: HybridTime): void {
    if (this.inflightHts.length === 0) return;
    this.inflightDone.add(ht);
    while (this.inflightHts.length > 0 && this.inflightDone.has(this.inflightHts[0]!)) this.inflightDone.delete(this.inflightHts.shift()!);
  }

  /** The WRITE at `ht` was answered at Raft commit: leader reads wait for its apply (waitForAnswered). */
  markAcked(ht: HybridTime): void {
    if (ht > this.ackedHt) this.ackedHt = ht;
  }

  /**
   * Before a leader read picks its time: wait until the safe time has reached every write already
   * answered (a write answered at commit may still be unapplied here; it is committed, so the wait
   * is its apply, not a Raft round). Without it a read that follows an answered write could pick a
   * time below it (the safe time), or miss it inside its uncertainty window.
   */
  waitForAnswered(): Promise<void> | undefined {
    return this.safeTime() < this.ackedHt ? this.waitForSafeTime(this.ackedHt) : undefined;
  }

  /** A read time no write can later land at or below. */
  safeTime(): HybridTime {
    const now = this.deps.clock.now();
    const oldest = this.inflightHts[0];
    return oldest !== undefined && oldest <= now ? oldest - 1n : now;
  }

  /** Wait (bounded) until every write that could land at or below `requested` is applied. */
  async waitForSafeTime(requested: HybridTime): Promise<void> {
    for (let i = 0; i < SAFE_TIME_WAIT_ROUNDS && this.safeTime() < requested; i++) {
      await new Promise<void>((r) => {
        this.applyWaiters.push(r);
        setTimeout(r, 10);
      });
    }
    if (this.safeTime() < requested) throw new DbError(ErrorCode.TIMED_OUT, `tablet ${this.deps.tabletId}: safe time did not reach the requested read time`);
  }

  /** A batch of entries was applied: waiting reads look at the safe time again. */
  wakeWaiters(): void {
    const ws = this.applyWaiters;
    this.applyWaiters = [];
    for (const w of ws) w();
  }
}
