/**
 * The timestamp oracle (Percolator, OSDI 2010 §2.3): strictly increasing timestamps served from
 * memory, below a high-water mark that is persisted — through the sys-catalog Raft group — before
 * anything below it is handed out. A new leader (or a restarted master) starts at the persisted mark,
 * so time never goes backwards across failovers and restarts; what the old leader reserved and never
 * handed out is skipped, not reused.
 *
 * A timestamp is (wall ms << 18) | logical, as TiKV's TSO: it stays near wall time (a lock's start
 * timestamp tells its age) and gives 262 144 timestamps per ms before the logical part carries over
 * into the next ms (harmless: the counter just runs ahead of the wall clock).
 *
 * This is the pure core plus its store seam; master-server.ts wires the store to the sys catalog
 * and only serves while the sys-catalog leader holds its lease (a deposed leader still serving from
 * memory could hand out timestamps below the new leader's).
 */
import { DbError, ErrorCode } from '../common/errors';

import { tsFromWallMs } from '../common/oracle-ts';

export { ORACLE_LOGICAL_BITS, tsFromWallMs, wallMsOfTs } from '../common/oracle-ts';
/** Timestamps one GetTimestamps may ask for (the client batches below this). */
export const ORACLE_BATCH_MAX = 1 << 16;

export interface OracleStore {
  /** The high-water mark as applied (a ready leader has applied every committed entry). */
  persistedBound(): bigint;
  /** Replicate a higher mark; resolves once it is committed and applied. */
  persist(bound: bigint): Promise<void>;
}

export interface TimestampOracleDeps {
  store: OracleStore;
  nowMs(): number;
}

export interface TimestampOracleOptions {
  /** Wall time each reservation covers beyond what is asked (fewer Raft entries, a bigger jump after a failover). */
  rangeMs: number;
}

export interface OracleStatus {
  /** Next timestamp to hand out (0 before this leader served its first). */
  nextTs: bigint;
  /** Persisted high-water mark, exclusive. */
  boundTs: bigint;
  served: number;
  reservations: number;
  /** Timestamps handed out per second over the last RATE_WINDOW_SEC whole seconds. */
  ratePerSec: number;
}

/** Whole seconds the console's rate averages over. */
export const RATE_WINDOW_SEC = 10;

export class TimestampOracle {
  private nextTs = 0n;
  private boundTs = 0n;
  /** False until this leadership read the persisted mark (after a reset: a new term or a restart). */
  private primed = false;
  /** Bumped by reset(): a reservation finishing after it belongs to an older leadership. */
  private generation = 0;
  private reserving: Promise<void> | undefined;
  private served = 0;
  private reservations = 0;
  /** Timestamps served per wall second, the newest RATE_WINDOW_SEC + 1 seconds (for the console's rate). */
  private readonly perSecond: Array<{ sec: number; n: number }> = [];

  constructor(
    private readonly deps: TimestampOracleDeps,
    private readonly opts: TimestampOracleOptions,
  ) {}

  /** Leadership changed: forget the in-memory range (the next leader may have moved the mark). */
  reset(): void {
    this.primed = false;
    this.generation++;
    this.nextTs = 0n;
    this.boundTs = 0n;
  }

  status(): OracleStatus {
    const now = Math.floor(this.deps.nowMs() / 1000);
    const done = this.perSecond.filter((b) => b.sec < now && b.sec >= now - RATE_WINDOW_SEC).reduce((x, b) => x + b.n, 0);
    return { nextTs: this.nextTs, boundTs: this.boundTs, served: this.served, reservations: this.reservations, ratePerSec: done / RATE_WINDOW_SEC };
  }

  /** `count` timestamps [first, first + count), each above every one handed out before. */
  async getTimestamps(count: number): Promise<bigint> {
    if (!Number.isInteger(count) || count < 1 || count > ORACLE_BATCH_MAX) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `GetTimestamps count must be 1..${ORACLE_BATCH_MAX}, not ${count}`);
    }
    const n = BigInt(count);
    for (let round = 0; ; round++) {
      if (!this.primed) {
        // Everything below the persisted mark may have been handed out by an earlier leader.
        const b = this.deps.store.persistedBound();
        this.nextTs = b;
        this.boundTs = b;
        this.primed = true;
      }
      const first = this.candidate();
      if (first + n <= this.boundTs) {
        this.nextTs = first + n;
        this.served += count;
        this.countRate(count);
        this.maybePrefetch();
        return first;
      }
      if (round > 3) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'timestamp oracle could not reserve a range (leadership changing?)');
      await this.reserve(first + n);
    }
  }

  private countRate(count: number): void {
    const sec = Math.floor(this.deps.nowMs() / 1000);
    const last = this.perSecond[this.perSecond.length - 1];
    if (last && last.sec === sec) last.n += count;
    else {
      this.perSecond.push({ sec, n: count });
      if (this.perSecond.length > RATE_WINDOW_SEC + 1) this.perSecond.shift();
    }
  }

  private candidate(): bigint {
    const floor = tsFromWallMs(this.deps.nowMs());
    return this.nextTs > floor ? this.nextTs : floor;
  }

  private rangeTs(): bigint {
    return tsFromWallMs(this.opts.rangeMs);
  }

  /** Reserve ahead while half a range is left, so requests rarely wait for a Raft round. */
  private maybePrefetch(): void {
    if (this.reserving) return;
    if (this.boundTs - this.candidate() > this.rangeTs() / 2n) return;
    this.reserve(this.candidate()).catch(() => undefined);
  }

  /** One reservation at a time; callers that need more wait and look again. */
  private reserve(atLeast: bigint): Promise<void> {
    if (this.reserving) return this.reserving;
    const bound = atLeast + this.rangeTs();
    const gen = this.generation;
    this.reserving = this.deps.store
      .persist(bound)
      .then(() => {
        // Only raise the in-memory bound once the mark is durable and applied, and never after a
        // reset in between (a new leadership reads the mark again).
        if (this.primed && gen === this.generation) {
          const applied = this.deps.store.persistedBound();
          if (applied > this.boundTs) this.boundTs = applied;
          this.reservations++;
        }
      })
      .finally(() => (this.reserving = undefined));
    return this.reserving;
  }
}
