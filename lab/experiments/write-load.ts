/**
 * A write load for experiments: W sequential writers upserting fresh keys (writer w writes w, w+W,
 * w+2W, …) until stopped. Every acknowledged write is recorded with its time, so an experiment can
 * check that none was lost and measure the longest stall of a writer (a writer blocked on a tablet
 * without a leader shows a gap between two acknowledgements).
 */
import type { TesseraClient } from '../../client/tessera-client';

/** Bound on one write (including the client's retries), so a writer never hangs for ever. */
export const LOAD_WRITE_TIMEOUT_MS = 30_000;
/** Bound on acknowledged writes recorded (a writer stops at the limit). */
export const LOAD_ACKS_MAX = 1_000_000;

export interface Ack {
  id: bigint;
  value: string;
  atMs: number;
}

export interface WriteLoadResult {
  acks: Ack[];
  /** Writes that failed (outcome unknown: they may or may not have been applied). */
  failures: number;
  /** Per writer, the acknowledgement times (ms since the load's start). */
  ackTimesByWriter: number[][];
}

export class WriteLoad {
  private stopped = false;
  private readonly acks: Ack[] = [];
  private failures = 0;
  private readonly times: number[][] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly client: TesseraClient,
    private readonly table: string,
    private readonly writers: number,
    private readonly t0: number,
    /** Per-write bound; a short one lets a writer move on from a write stuck at a cut-off old leader. */
    private readonly writeTimeoutMs = LOAD_WRITE_TIMEOUT_MS,
    /** Keys start here (a second load on the same table writes keys of its own). */
    private readonly firstId = 0,
  ) {}

  start(): void {
    this.running = Promise.all(Array.from({ length: this.writers }, (_, w) => this.writer(w))).then(() => undefined);
  }

  /** Acknowledged so far (a snapshot). */
  ackCount(): number {
    return this.acks.length;
  }

  private async writer(w: number): Promise<void> {
    const mine: number[] = [];
    this.times[w] = mine;
    for (let i = 0; !this.stopped && this.acks.length < LOAD_ACKS_MAX; i++) {
      const id = BigInt(this.firstId + w + i * this.writers);
      const value = `w${w}-${i}`;
      try {
        await this.client.table(this.table).upsert({ id, v: value }, { timeoutMs: this.writeTimeoutMs });
        const atMs = performance.now() - this.t0;
        this.acks.push({ id, value, atMs });
        mine.push(atMs);
      } catch {
        this.failures++;
      }
    }
  }

  async stop(): Promise<WriteLoadResult> {
    this.stopped = true;
    await this.running;
    return { acks: [...this.acks], failures: this.failures, ackTimesByWriter: this.times.map((t) => [...t]) };
  }
}

/**
 * The longest gap between consecutive acknowledgements of any writer that overlaps [fromMs, toMs]: a
 * writer is stalled while its write waits on a tablet without a leader, which may be a few writes after
 * the fault (the writes before it went to other tablets).
 */
export function longestStall(ackTimesByWriter: readonly number[][], fromMs: number, toMs: number): number {
  let worst = 0;
  for (const times of ackTimesByWriter) {
    for (let i = 1; i < times.length; i++) {
      const a = times[i - 1]!;
      const b = times[i]!;
      if (b >= fromMs && a <= toMs) worst = Math.max(worst, b - a);
    }
  }
  return worst;
}
