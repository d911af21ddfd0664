/**
 * A read repeated every `everyMs` while a measured window runs (the apply-lag collector, the activity
 * sampler): a read still running when the next tick comes makes that tick skip rather than pile up
 * reads on servers that are already slow, and stop() waits for the read in flight.
 */
export class PeriodicRead {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;

  constructor(
    private readonly read: () => Promise<void>,
    private readonly everyMs: number,
  ) {}

  /** Start ticking; `now`: also read at once (else the first read is one period later). */
  start(now = false): void {
    if (now) this.tick();
    this.timer = setInterval(() => this.tick(), this.everyMs);
  }

  private tick(): void {
    if (this.inFlight) return;
    this.inFlight = this.read().finally(() => (this.inFlight = undefined));
  }

  /** Stop ticking and wait for the read in flight, if any. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
