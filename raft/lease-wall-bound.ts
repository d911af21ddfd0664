/**
 * The wall-time bound of a leader's lease (RaftGroupDeps.leaseClock): the core counts a lease in
 * ticks; a lease also lasts at most its ticks x tickIntervalMs of monotonic time from when its quorum
 * tick happened, so a leader paused (SIGSTOP) or starved of ticks does not resume believing in a
 * lease its followers long stopped honouring.
 */
/** Ticks whose monotonic times are remembered for the wall-time lease bound. */
const TICK_TIMES_KEPT = 1024;

export interface LeaseClock {
  tickIntervalMs: number;
  nowMs?: () => number;
}

export class LeaseWallBound {
  /** Monotonic ms of recent ticks (index: tick count mod TICK_TIMES_KEPT). */
  private readonly tickTimes: number[] = [];
  private readonly createdMs: number;

  constructor(private readonly clock: LeaseClock | undefined) {
    this.createdMs = this.nowMs();
  }

  /** Tick number `ticks` happened now. */
  tick(ticks: number): void {
    if (this.clock) this.tickTimes[ticks % TICK_TIMES_KEPT] = this.nowMs();
  }

  /**
   * Whether the core's lease (asked only when there is a clock) still holds in wall time at tick
   * `ticks`. Without a clock the tick count alone decides: true.
   */
  holds(window: () => { fromTick: number; ticks: number } | undefined, ticks: number): boolean {
    const lc = this.clock;
    if (!lc) return true;
    const w = window();
    if (!w || ticks - w.fromTick >= TICK_TIMES_KEPT) return false;
    const startedMs = this.tickTimes[w.fromTick % TICK_TIMES_KEPT] ?? this.createdMs;
    return this.nowMs() - startedMs < w.ticks * lc.tickIntervalMs;
  }

  private nowMs(): number {
    return this.clock?.nowMs?.() ?? performance.now();
  }
}
