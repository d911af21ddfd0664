/**
 * Coalescing of single-row blind writes and point reads per tablet per event-loop turn (the
 * `batchWrites` option of client.table): everything a turn queues for one tablet goes in one Write or
 * Read RPC, at most COALESCED_ROWS_MAX rows and WRITE_BYTES_PER_RPC_MAX bytes each.
 */
import { ErrorCode } from '../common/errors';
import { tabletServerMethods, type DocKeyPB, type RowOpPB, type RowPB } from '../rpc';
import type { RowRoute } from './meta-cache';
import type { Deadline } from './retry-policy';
import type { TabletInvoker } from './tablet-invoker';
import { READ_FATAL_CODES } from './txn-binding';
import { approxOpBytes, WRITE_BYTES_PER_RPC_MAX } from './write-size';

/** A plain write that met a transaction's intent and could not settle it wrote nothing: retry. */
export const PLAIN_WRITE_RETRY_CODES: ReadonlySet<string> = new Set([ErrorCode.TXN_CONFLICT]);

/** Single-row blind writes to one tablet waiting for the end of this event-loop turn (see batchWrites). */
interface WriteBatch {
  route: RowRoute;
  schemaVersion: number;
  ops: RowOpPB[];
  bytes: number;
  deadline: Deadline;
  waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }>;
}
/** A batch (several rows routed as one) that meets a split parent goes back to withSchema, which routes its rows again. */
export const SPLIT_FATAL_CODES: ReadonlySet<string> = new Set([ErrorCode.TABLET_SPLIT]);
const READ_BATCH_FATAL_CODES: ReadonlySet<string> = new Set([...READ_FATAL_CODES, ErrorCode.TABLET_SPLIT]);
/** A coalesced batch is sent as soon as it holds this many rows (the rest go in the next one). */
export const COALESCED_ROWS_MAX = 256;

/** Point reads (leader-picked time, same columns) to one tablet waiting for the end of this turn. */
interface ReadBatch {
  route: RowRoute;
  schemaVersion: number;
  keys: DocKeyPB[];
  columns: number[] | undefined;
  deadline: Deadline;
  waiters: Array<{ resolve: (r: { row: RowPB | undefined }) => void; reject: (e: unknown) => void }>;
}

/** One table's batches of the current event-loop turn; sent at its end (setImmediate) or when full. */
export class TurnBatcher {
  private readonly batches = new Map<string, WriteBatch>();
  private readonly readBatches = new Map<string, ReadBatch>();
  private flushScheduled = false;

  constructor(
    private readonly name: string,
    private readonly invoker: TabletInvoker,
  ) {}

  /** Queue a blind write for its tablet's batch of this turn; resolves with the batch. */
  enqueue(tabletId: string, route: RowRoute, schemaVersion: number, op: RowOpPB, d: Deadline): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const bytes = approxOpBytes(op);
      const slot = `${tabletId}/${schemaVersion}`;
      let b = this.batches.get(slot);
      if (b && (b.ops.length >= COALESCED_ROWS_MAX || b.bytes + bytes > WRITE_BYTES_PER_RPC_MAX)) {
        this.batches.delete(slot);
        this.sendBatch(b);
        b = undefined;
      }
      if (!b) this.batches.set(slot, (b = { route, schemaVersion, ops: [], bytes: 0, deadline: d, waiters: [] }));
      b.ops.push(op);
      b.bytes += bytes;
      // The batch must finish by the earliest deadline among its operations.
      if (d.atMs < b.deadline.atMs) b.deadline = d;
      b.waiters.push({ resolve, reject });
      this.scheduleFlush();
    });
  }

  enqueueRead(tabletId: string, route: RowRoute, schemaVersion: number, key: DocKeyPB, columns: number[] | undefined, d: Deadline): Promise<{ row: RowPB | undefined }> {
    return new Promise((resolve, reject) => {
      const slot = `${tabletId}/${schemaVersion}/${columns ? columns.join(',') : '*'}`;
      let b = this.readBatches.get(slot);
      if (b && b.keys.length >= COALESCED_ROWS_MAX) {
        this.readBatches.delete(slot);
        this.sendReadBatch(b);
        b = undefined;
      }
      if (!b) this.readBatches.set(slot, (b = { route, schemaVersion, keys: [], columns, deadline: d, waiters: [] }));
      b.keys.push(key);
      if (d.atMs < b.deadline.atMs) b.deadline = d;
      b.waiters.push({ resolve, reject });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const writes = [...this.batches.values()];
      const reads = [...this.readBatches.values()];
      this.batches.clear();
      this.readBatches.clear();
      for (const x of writes) this.sendBatch(x);
      for (const x of reads) this.sendReadBatch(x);
    });
  }

  private sendReadBatch(b: ReadBatch): void {
    this.invoker
      .call(this.name, b.route, tabletServerMethods().read, (t) => ({ tabletId: t.tabletId, keys: b.keys, columns: b.columns, propagatedHt: this.invoker.propagatedHt, readHt: 0n, schemaVersion: b.schemaVersion }), b.deadline, true, READ_BATCH_FATAL_CODES)
      .then(
        (r) => {
          this.invoker.observeHt(r.propagatedHt);
          // A tablet answers a prefix of the keys when their rows reached its answer's size budget:
          // the rest are asked for again (each get is a read of its own, at a time the leader picks).
          const answered = r.keysAnswered ? Math.min(r.keysAnswered, b.keys.length) : b.keys.length;
          b.waiters.slice(0, answered).forEach((w, i) => w.resolve({ row: r.found?.[i] ? r.rows?.[i] : undefined }));
          if (answered < b.keys.length) this.sendReadBatch({ ...b, keys: b.keys.slice(answered), waiters: b.waiters.slice(answered) });
        },
        (e: unknown) => {
          for (const w of b.waiters) w.reject(e);
        },
      );
  }

  private sendBatch(b: WriteBatch): void {
    this.invoker
      .callWrite(this.name, b.route, (t) => ({ tabletId: t.tabletId, ops: b.ops, propagatedHt: this.invoker.propagatedHt, schemaVersion: b.schemaVersion }), b.deadline, { alsoRetry: PLAIN_WRITE_RETRY_CODES, fatal: SPLIT_FATAL_CODES })
      .then(
        (r) => {
          this.invoker.observeHt(r.propagatedHt);
          for (const w of b.waiters) w.resolve();
        },
        (e: unknown) => {
          for (const w of b.waiters) w.reject(e);
        },
      );
  }
}
