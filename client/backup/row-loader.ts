/**
 * Bounded loading of rows into a table (an import, a point-in-time restore): rows are gathered into
 * batches of `batchRows` and written with `upsertMany`, at most `inFlight` batches at once; `add`
 * waits when that many are in flight (backpressure on the reader), so memory holds at most
 * (inFlight + 1) batches whatever the table's size. A failed write fails the next `add` or `finish`.
 */
import type { Row } from '../client-types';
import type { TesseraClient } from '../tessera-client';

export interface RowLoaderOptions {
  batchRows: number;
  inFlight: number;
  timeoutMs: number;
  /** Called with the rows loaded so far after each batch is written. */
  onBatch?: (loaded: number) => void;
}

export class RowLoader {
  private batch: Row[] = [];
  private readonly running = new Set<Promise<void>>();
  private failure: unknown;
  loaded = 0;

  constructor(
    private readonly client: TesseraClient,
    private readonly table: string,
    private readonly o: RowLoaderOptions,
  ) {}

  async add(row: Row): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    this.batch.push(row);
    if (this.batch.length >= this.o.batchRows) await this.send();
  }

  private async send(): Promise<void> {
    if (this.batch.length === 0) return;
    const rows = this.batch;
    this.batch = [];
    // The handler is attached at once: a failure is kept for the next add/finish, never unhandled.
    const p: Promise<void> = this.client
      .table(this.table)
      .upsertMany(rows, { timeoutMs: this.o.timeoutMs, concurrency: 2 })
      .then(
        () => {
          this.loaded += rows.length;
          this.o.onBatch?.(this.loaded);
        },
        (e: unknown) => {
          this.failure ??= e;
        },
      )
      .finally(() => this.running.delete(p));
    this.running.add(p);
    while (this.running.size >= this.o.inFlight) await Promise.race(this.running);
    if (this.failure !== undefined) throw this.failure;
  }

  /** Write what is left and wait for every batch; throws the first failure. */
  async finish(): Promise<number> {
    await this.send();
    await Promise.all(this.running);
    if (this.failure !== undefined) throw this.failure;
    return this.loaded;
  }
}
