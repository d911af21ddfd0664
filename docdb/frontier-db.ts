/**
 * A KvEngine plus its frontier: every batch written through `write()` also stores the op id it came
 * from, atomically, and the in-memory copy only moves forward.
 */
import type { KvEngine, KvOp } from './kv-engine';
import type { OpId, WriteCounts } from './doc-db-api';
import { decodeOpId, encodeOpId, FRONTIER_KEY, OP_ID_ZERO, opIdMax, SYNC_MARK_KEY } from './frontier';

export type { WriteCounts } from './doc-db-api';

export class FrontierDb {
  private constructor(
    readonly engine: KvEngine,
    private current: OpId,
  ) {}

  static async open(engine: KvEngine): Promise<FrontierDb> {
    const v = await engine.get(FRONTIER_KEY);
    return new FrontierDb(engine, v === undefined ? OP_ID_ZERO : decodeOpId(v));
  }

  get frontier(): OpId {
    return this.current;
  }

  readonly writeCounts: WriteCounts = { batches: 0, syncedBatches: 0, puts: 0, dels: 0, delRanges: 0 };

  private count(ops: readonly KvOp[], sync: boolean): void {
    const c = this.writeCounts;
    c.batches++;
    if (sync) c.syncedBatches++;
    for (const o of ops) {
      if (o.type === 'put') c.puts++;
      else if (o.type === 'del') c.dels++;
      else c.delRanges++;
    }
  }

  private syncWaiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private syncing = false;

  /**
   * Make every batch written so far durable, with group commit: callers arriving while a sync runs
   * share the next one (one fsync for all of them). A synced write forces the engine's write-ahead
   * log to disk up to and including it, and batches reach that log in the order they were written.
   */
  syncBarrier(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.syncWaiters.push({ resolve, reject });
      this.kickSync();
    });
  }

  private kickSync(): void {
    if (this.syncing || this.syncWaiters.length === 0) return;
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    this.syncing = true;
    const mark: KvOp[] = [{ type: 'put', key: SYNC_MARK_KEY, value: Buffer.alloc(0) }];
    this.count(mark, true);
    this.engine
      .write(mark, { sync: true })
      .then(
        () => {
          for (const w of waiters) w.resolve();
        },
        (e: unknown) => {
          for (const w of waiters) w.reject(e);
        },
      )
      .finally(() => {
        this.syncing = false;
        this.kickSync();
      });
  }

  /** Told before and after every write() (a row cache above this database keeps itself exact); `written`: the engine write succeeded. */
  writeObserver: { beginWrite(ops: readonly KvOp[]): void; endWrite(ops: readonly KvOp[], written: boolean): void } | undefined;

  /**
   * Deferred clean-ups (ops whose exact timing does not matter, only that they land after what was
   * written before they were added): they ride along with the next write instead of costing a
   * RocksDB call of their own; flushRiders() writes them when nothing else comes.
   */
  private riders: KvOp[] = [];

  addRiders(ops: readonly KvOp[]): void {
    for (const o of ops) this.riders.push(o);
  }

  get riderCount(): number {
    return this.riders.length;
  }

  async flushRiders(): Promise<void> {
    if (this.riders.length > 0) await this.write([], OP_ID_ZERO);
  }

  /** Sees (and may extend) every batch before it is written (RegularDB's version bounds). */
  prepareWrite: ((ops: KvOp[]) => void) | undefined;

  /** Write `ops` (and any riders) and the frontier max(current, opId) in one atomic batch. */
  async write(ops: KvOp[], opId: OpId, sync = false): Promise<void> {
    const f = opIdMax(this.current, opId);
    if (this.riders.length > 0) {
      for (const o of this.riders) ops.push(o);
      this.riders = [];
    }
    this.prepareWrite?.(ops);
    ops.push({ type: 'put', key: FRONTIER_KEY, value: encodeOpId(f) });
    const obs = this.writeObserver;
    this.count(ops, sync);
    obs?.beginWrite(ops);
    let written = false;
    try {
      await this.engine.write(ops, { sync });
      written = true;
    } finally {
      obs?.endWrite(ops, written);
    }
    this.current = opIdMax(this.current, f);
  }
}
