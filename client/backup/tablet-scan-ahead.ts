/**
 * A whole-table scan as one scan per tablet, consumed in partition order (so rows come out exactly as
 * one scanRows gives them: the digest an import recomputes is the same) while the scans of the next
 * `aheadTablets` tablets already run into buffers of `bufferRows` rows each. An export spends most of
 * its time waiting for the tservers to read and answer pages; this lets the leaders of several
 * tablets read at once. Memory: (1 + aheadTablets) buffers (each one page over `bufferRows` at most).
 */
import type { ScanOptions } from '../client-types';
import type { TesseraClient } from '../tessera-client';
import type { LinePage } from '../table-scan';

class Pump<T> {
  private q: T[] = [];
  private queued = 0;
  private done = false;
  private stopped = false;
  private err: unknown;
  private wakeConsumer: (() => void) | undefined;
  private wakeProducer: (() => void) | undefined;

  /** `sizeOf`: the rows an item holds (a page: its length), counted against `bufferRows`. */
  constructor(gen: AsyncGenerator<T>, bufferRows: number, private readonly sizeOf: (t: T) => number) {
    void this.run(gen, bufferRows);
  }

  private async run(gen: AsyncGenerator<T>, bufferRows: number): Promise<void> {
    try {
      for await (const r of gen) {
        this.q.push(r);
        this.queued += this.sizeOf(r);
        this.wakeConsumer?.();
        while (this.queued >= bufferRows && !this.stopped) await new Promise<void>((res) => (this.wakeProducer = res));
        if (this.stopped) break;
      }
    } catch (e) {
      this.err = e;
    } finally {
      this.done = true;
      this.wakeConsumer?.();
    }
  }

  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.q.length > 0) {
        const batch = this.q;
        this.q = [];
        this.queued = 0;
        this.wakeProducer?.();
        this.wakeProducer = undefined;
        yield* batch;
        continue;
      }
      if (this.err !== undefined) throw this.err;
      if (this.done) return;
      await new Promise<void>((res) => (this.wakeConsumer = res));
      this.wakeConsumer = undefined;
    }
  }

  /** The consumer gave up: end the scan (its generator is returned, closing it). */
  stop(): void {
    this.stopped = true;
    this.wakeProducer?.();
  }
}

/** The items of `n` sources in order 0..n-1, sources i+1..i+ahead already pulled into buffers of `bufferRows` (counted by `sizeOf`). */
export async function* orderedAhead<T>(n: number, open: (i: number) => AsyncGenerator<T>, aheadTablets: number, bufferRows: number, sizeOf: (t: T) => number = () => 1): AsyncGenerator<T> {
  const pumps = new Map<number, Pump<T>>();
  try {
    for (let i = 0; i < n; i++) {
      for (let j = i; j < Math.min(n, i + 1 + aheadTablets); j++) if (!pumps.has(j)) pumps.set(j, new Pump(open(j), bufferRows, sizeOf));
      yield* pumps.get(i)!.drain();
      pumps.delete(i);
    }
  } finally {
    for (const p of pumps.values()) p.stop();
  }
}

/** Slices each tablet of a hash table is read in, side by side (a tablet server works on one page of a scan at a time). */
export const SCAN_SLICES_PER_TABLET = 2;

/**
 * The table's rows in scanRows' order, a page of export lines at a time (Table.scanLinePages): each
 * tablet of a hash table read as SCAN_SLICES_PER_TABLET hash-code slices, and the slices after the
 * one being consumed already read into buffers — `aheadTablets` tablets' worth of them.
 */
export async function* scanLinesAhead(client: TesseraClient, table: string, o: ScanOptions, aheadTablets = 2, bufferRows = 20_000): AsyncGenerator<LinePage & { tablet: number }> {
  const loc = await client.tableLocations(table);
  const hashed = loc.schema.hash.length > 0;
  const sources: Array<{ tablet: number; slice?: { from: number; to: number } }> = [];
  loc.tablets.forEach((t, i) => {
    if (!hashed) return void sources.push({ tablet: i });
    const step = Math.ceil((t.end - t.start) / SCAN_SLICES_PER_TABLET);
    for (let from = t.start; from < t.end; from += step) sources.push({ tablet: i, slice: { from, to: Math.min(t.end, from + step) } });
  });
  async function* source(k: number): AsyncGenerator<LinePage & { tablet: number }> {
    const { tablet, slice } = sources[k]!;
    for await (const page of client.table(table).scanLinePages({ ...o, tabletOrdinal: tablet, ...(slice ? { hashSlice: slice } : {}) })) yield { ...page, tablet };
  }
  const ahead = hashed ? aheadTablets * SCAN_SLICES_PER_TABLET + (SCAN_SLICES_PER_TABLET - 1) : aheadTablets;
  yield* orderedAhead(sources.length, source, ahead, bufferRows, (page) => page.rows);
}
