/**
 * Physical time as an injectable dependency. Real code uses SystemClock; simulation and unit tests
 * use ManualClock so that time only moves when the test says so.
 */
import { TEST_CLOCK_SKEW_MS } from './common-flags';
export interface Clock {
  /** Wall-clock time in microseconds since the Unix epoch (may step backwards). */
  nowMicros(): number;
  /** Monotonic milliseconds, for timeouts and leases (never steps backwards). */
  monoMs(): number;
}

export class SystemClock implements Clock {
  /** Added to the wall clock; lets a lab skew one process's clock (TEST_clock_skew_ms). */
  offsetMs = 0;
  nowMicros(): number {
    return Math.floor((performance.timeOrigin + performance.now() + this.offsetMs) * 1000);
  }
  monoMs(): number {
    return performance.now();
  }
}

export class ManualClock implements Clock {
  constructor(
    private micros = 1_700_000_000_000_000,
    private mono = 0,
  ) {}
  nowMicros(): number {
    return this.micros;
  }
  monoMs(): number {
    return this.mono;
  }
  advanceMs(ms: number): void {
    this.micros += Math.round(ms * 1000);
    this.mono += ms;
  }
  /** Step only the wall clock (may go backwards), as NTP can. */
  setWallMicros(micros: number): void {
    this.micros = micros;
  }
}

/**
 * A SystemClock whose offset follows TEST_clock_skew_ms (set at start or at run time), so a lab can
 * skew one process's physical clock. The hybrid clock never goes backwards on its own account.
 */
export function skewableSystemClock(flags: { get(d: typeof TEST_CLOCK_SKEW_MS): number; onChange(d: typeof TEST_CLOCK_SKEW_MS, l: (v: number) => void): () => void }): SystemClock {
  const c = new SystemClock();
  c.offsetMs = flags.get(TEST_CLOCK_SKEW_MS);
  flags.onChange(TEST_CLOCK_SKEW_MS, (v) => {
    c.offsetMs = v;
  });
  return c;
}
