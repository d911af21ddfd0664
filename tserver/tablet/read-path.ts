/**
 * The leader's read path (docs/architecture.md §Read path): under the leader lease, else after a
 * ReadIndex round, at a read time below which no write can land later (the MVCC clock's safe time),
 * with the uncertainty window of docs/architecture.md §DocDB; a serializable transaction reads at
 * the time of the read locks it took (IntentWrites.serializableReadTime).
 */
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import type { TxnId } from '../../common/ids';
import { hashKeyLockOfRange, type CellReadOptions, type CellReadResult, type DocDbApi, type DocKey, type ReadLocks, type Row, type ScanOptions, type ScanResult, type TxnMeta } from '../../docdb';
import type { MvccClock } from './mvcc-clock';
import type { TxnParticipant } from './participant/txn-participant';
import { uncertaintyLimit } from './participant/uncertainty';
import { visibleChecksum, type VisibleChecksum } from './visible-checksum';

export interface ReadPathDeps {
  flags: Flags;
  clock: HybridClock;
  db(): DocDbApi;
  mvcc: MvccClock;
  participant: TxnParticipant;
  checkServing(): void;
  /** The leader lease holds (no ReadIndex round needed). */
  hasLease(): boolean;
  /** One ReadIndex round (errors carry the leader hint). */
  readIndex(): Promise<void>;
  serializableReadTime(txn: TxnMeta, reads: ReadLocks, propagated: HybridTime | undefined, deadlineMonoMs: number | undefined): Promise<HybridTime>;
  /** The table has range columns (a scan confined to one hash key then locks that hash key). */
  hasRangeColumns(): boolean;
  metrics: { readOps: number; scanOps: number };
  /** SERVICE_UNAVAILABLE unless the replica is RUNNING (replica-local reads: any role). */
  checkRunning(): void;
  /** The Raft index this replica applied. */
  appliedIndex(): number;
}

export type ReadResult = { rows: Array<Row | undefined>; readHt: HybridTime; globalLimitHt: HybridTime | undefined };
export type ScanPage = ScanResult & { readHt: HybridTime; globalLimitHt: HybridTime | undefined };
export interface ScanRequest {
  startKey?: Uint8Array;
  endKey?: Uint8Array;
  limit?: number;
  columns?: number[];
  readHt?: HybridTime;
  globalLimitHt?: HybridTime;
  propagatedHt?: HybridTime;
  txnId?: TxnId;
  /** Response size budget (DocDB ScanOptions.maxBytes). */
  maxBytes?: number;
  /** A server-side filter (docs/filters.md), fresh for this call. */
  filter?: ScanOptions['filter'];
}

export class ReadPath {
  constructor(private readonly deps: ReadPathDeps) {}

  /**
   * Leader-only consistency gate for reads: lease, else a ReadIndex round; then pick the read time.
   *
   * Uncertainty window (YugabyteDB's ReadHybridTime::global_limit): when this leader picks the read
   * time, the limit is readHt + max_clock_skew_usec, because a write acknowledged before this read
   * began may carry a hybrid time up to the skew bound above our clock (another node's clock, e.g. a
   * status tablet's commit time). A requested read time keeps the requested limit (a restarted or
   * continued read, a transaction); a requested time without a limit is an explicit snapshot and
   * has no window.
   */
  private async readTime(requested: HybridTime | undefined, propagated: HybridTime | undefined, requestedLimit?: HybridTime): Promise<{ readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    this.deps.checkServing();
    if (propagated) this.deps.clock.update(propagated);
    if (!this.deps.hasLease()) await this.deps.readIndex();
    // Writes answered at Raft commit (write-path.ts proposeWrite) are visible to every read after.
    await this.deps.mvcc.waitForAnswered();
    if (!requested) {
      const readHt = this.deps.mvcc.safeTime();
      return { readHt, globalLimitHt: this.globalLimitFor(readHt) };
    }
    const globalLimitHt = requestedLimit !== undefined && requestedLimit > requested ? requestedLimit : undefined;
    this.deps.clock.update(requested);
    await this.deps.mvcc.waitForSafeTime(requested);
    return { readHt: requested, globalLimitHt };
  }

  /** readHt + max_clock_skew_usec (physical part; at least readHt). */
  globalLimitFor(readHt: HybridTime): HybridTime | undefined {
    return uncertaintyLimit(readHt, this.deps.flags.get(MAX_CLOCK_SKEW_USEC));
  }

  /**
   * Rows at one read time. Throws READ_RESTART (details.restartHt) when a version lies in the
   * uncertainty window (readHt, globalLimitHt]: the caller reads again at restartHt, same limit.
   */
  async read(keys: DocKey[], opts: { columns?: number[]; readHt?: HybridTime; globalLimitHt?: HybridTime; propagatedHt?: HybridTime; txnId?: TxnId; maxBytes?: number }): Promise<ReadResult> {
    const { readHt, globalLimitHt } = await this.readTime(opts.readHt, opts.propagatedHt, opts.globalLimitHt);
    const rows: Array<Row | undefined> = [];
    const resolveStatus = this.deps.participant.readResolver();
    const maxBytes = opts.maxBytes ?? Infinity;
    let bytes = 0;
    for (const k of keys) {
      // The answer is a prefix of the keys: once the rows read reach maxBytes, the rest is left for
      // the caller to ask again (at least one key is always answered).
      if (rows.length > 0 && bytes >= maxBytes) break;
      rows.push(
        await this.deps.db().getRow(k, {
          readHt,
          resolveStatus,
          ...(globalLimitHt !== undefined ? { globalLimitHt } : {}),
          ...(opts.txnId ? { txnId: opts.txnId } : {}),
          ...(opts.columns?.length ? { columns: opts.columns } : {}),
        }),
      );
      bytes += rowBytesApprox(rows[rows.length - 1]);
    }
    this.deps.metrics.readOps++;
    return { rows, readHt, globalLimitHt };
  }

  async scan(opts: ScanRequest): Promise<ScanPage> {
    const { readHt, globalLimitHt } = await this.readTime(opts.readHt, opts.propagatedHt, opts.globalLimitHt);
    const r = await this.deps.db().scan({
      readHt,
      ...(globalLimitHt !== undefined ? { globalLimitHt } : {}),
      resolveStatus: this.deps.participant.readResolver(),
      ...(opts.txnId ? { txnId: opts.txnId } : {}),
      ...(opts.startKey?.length ? { startKey: opts.startKey } : {}),
      ...(opts.endKey?.length ? { endKey: opts.endKey } : {}),
      ...(opts.limit ? { limit: opts.limit } : {}),
      ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}),
      ...(opts.columns?.length ? { columns: opts.columns } : {}),
      ...(opts.filter ? { filter: opts.filter } : {}),
    });
    this.deps.metrics.scanOps++;
    return { readHt, globalLimitHt, ...r }; // spread last: see update-batcher.ts
  }

  /** Cell reads (docs/cells.md, tserver/cell-service.ts): DocDB's at the read time read() would pick, or the requested one. */
  async readCells(opts: Omit<CellReadOptions, 'readHt'> & { readHt?: HybridTime; propagatedHt?: HybridTime }): Promise<CellReadResult & { readHt: HybridTime }> {
    const { readHt } = await this.readTime(opts.readHt, opts.propagatedHt);
    const r = await this.deps.db().readCells({ ...opts, readHt });
    this.deps.metrics.readOps++;
    return { ...r, readHt };
  }

  /** A serializable transaction's point read: read locks on `keys`, then the rows at their time. */
  async readSerializable(keys: DocKey[], txn: TxnMeta, opts: { columns?: number[]; propagatedHt?: HybridTime; maxBytes?: number; deadlineMonoMs?: number }): Promise<ReadResult> {
    const { deadlineMonoMs, ...o } = opts;
    const readHt = await this.deps.serializableReadTime(txn, { rows: keys, tablet: false }, opts.propagatedHt, deadlineMonoMs);
    return this.read(keys, { ...o, readHt, txnId: txn.txnId });
  }

  /** A serializable transaction's scan: the tablet's read lock, then the page at its time. */
  async scanSerializable(txn: TxnMeta, opts: Omit<ScanRequest, 'readHt' | 'globalLimitHt' | 'txnId'> & { deadlineMonoMs?: number }): Promise<ScanPage> {
    const { deadlineMonoMs, ...o } = opts;
    // Confined to one hash key: lock that hash key (its one row, for a table without range columns),
    // not the tablet, so writes of other hash keys go on.
    const hashKey = hashKeyLockOfRange(opts.startKey, opts.endKey);
    const reads: ReadLocks = !hashKey ? { rows: [], tablet: true } : this.deps.hasRangeColumns() ? { rows: [], tablet: false, hashKeys: [hashKey] } : { rows: [hashKey], tablet: false };
    const readHt = await this.deps.serializableReadTime(txn, reads, opts.propagatedHt, deadlineMonoMs);
    return this.scan({ ...o, readHt, txnId: txn.txnId });
  }
  /**
   * Digest of the rows this replica shows at `readHt` (default: now; visible-checksum.ts), with the
   * Raft index it had applied; `stable` is false when entries were applied while the scan ran (ask
   * again). A transaction pending at readHt commits above it (the status tablet's clock moves past
   * every read time it answers), so the digest at a time no later than now is final for everything
   * the replica applied.
   */
  async visibleChecksum(at?: HybridTime): Promise<VisibleChecksum & { intents: { sha256: string; txns: number; records: number }; appliedIndex: number; stable: boolean }> {
    const readHt = at ?? this.deps.clock.now();
    this.deps.checkRunning();
    const before = this.deps.appliedIndex();
    const c = await visibleChecksum((o) => this.deps.db().scan(o), this.deps.participant.readResolver(), readHt);
    const intents = await this.deps.db().pendingIntentsDigest();
    const after = this.deps.appliedIndex();
    return { ...c, intents, appliedIndex: after, stable: before === after };
  }

  /** This replica's rows visible at `readHt` from `startKey`, `limit` at most (console pages that count a tablet's data). */
  scanVisible(readHt: HybridTime, limit: number, startKey?: Uint8Array): Promise<ScanResult> {
    this.deps.checkRunning();
    return this.deps.db().scan({ readHt, resolveStatus: this.deps.participant.readResolver(), limit, ...(startKey ? { startKey } : {}) });
  }
}

/**
 * About the bytes `row` takes in a response (its values; a string counted at its UTF-8 length when
 * long, else at its worst case of 3 bytes per UTF-16 unit, which is cheap to know): what a read's
 * size budget adds up.
 */
function rowBytesApprox(row: Row | undefined): number {
  if (row === undefined) return 16;
  let n = 32;
  for (const v of row.columns.values()) {
    if (typeof v === 'string') n += v.length > 1024 ? Buffer.byteLength(v, 'utf8') : v.length * 3;
    else if (v instanceof Uint8Array) n += v.byteLength;
    else n += 9;
  }
  return n;
}
