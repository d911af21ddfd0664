/**
 * DocDB of one tablet replica: RegularDB + IntentsDB over two KvEngines, implementing DocDbApi.
 * Knows nothing of Raft beyond recording op ids as frontiers.
 *
 * Glossary: *intent* = provisional record of a running transaction; *apply* (intents applied) = moving
 * a committed transaction's intents into RegularDB — not Raft's "applied"; *frontier* = newest Raft op
 * id a database holds; *history cutoff* = oldest time reads may still use after GC.
 */
import { DbError, ErrorCode } from '../common/errors';
import { Flags } from '../common/flags';
import { htAddMicros, type HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import { applyGroupOps, applyIntents, applyIntentsMany, applyNowOps, applyPendingOps, DeferredCleanup, flushDeferredCleanup, markApplyPending, removeIntents, type ApplyHooks, type InPlaceApply } from './apply';
import { OP_ID_ZERO, opIdMax } from './frontier';
import { findConflicts } from './conflict';
import type {
  ApplyItem,
  ApplyMark,
  ApplyProgress,
  Conflict,
  DbSizes,
  DocDbApi,
  DocKey,
  OpId,
  ReadLocks,
  ReadOptions,
  Row,
  RowOp,
  ScanOptions,
  ScanResult,
  StatusResolver,
  TxnMeta,
} from './doc-db-api';
import { APPLY_CLEANUP_DELAY_MS, DOCDB_POINT_READ_AHEAD_BYTES, DOCDB_POINT_READ_ITERATORS, DOCDB_ROW_CACHE_BYTES, TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC, TXN_LONE_INTENT_META, TXN_MAX_APPLY_BATCH_RECORDS, TXN_PACKED_INTENTS } from './docdb-flags';
import { FrontierDb, type WriteCounts } from './frontier-db';
import { gcRegular, type GcResult } from './gc';
import { IntentAwareReader, readRestart } from './intent-aware-reader';
import { RowCache } from './row-cache';
import { PointReads } from './point-reads';
import { assembleRow, type CellVersion, type ColumnTtls } from './row-assembler';
import { DEFAULT_CELL_RULES, type CellReadOptions, type CellReadResult, type CellRules } from './cell-versions';
import { readCellRows } from './cell-reader';
import { IntentsDb } from './intents-db';
import type { KvEngine, KvOp } from './kv-engine';
import { ReaderRegistry } from './reader-registry';
import { HT_UNKNOWN } from './version-bounds';
import { RegularDb } from './regular-db';
import { contentChecksum, type ContentChecksum } from './content-checksum';
import { TxnLocks } from './txn-locks';
import { REGULAR_DATA_END, REGULAR_DATA_START, encodeRowDocKey } from './storage-keys';
import { prefixEnd, type ApplyState } from './txn-records';
import { listIntentTxns } from './txn-listing';
import { filteredScan } from './filters/filtered-scan';
import type { CellFilter } from './filters/evaluator';

export interface DocDbDeps {
  regular: KvEngine;
  intents: KvEngine;
  /** Flag values of the owning server (apply chunk size, history retention). */
  flags?: Flags;
}

export interface DocDbOptions {
  hooks?: ApplyHooks;
  /** Budget of IntentsDB's in-memory intent index (tests: 0 = conflict checks always iterate). */
  intentIndexBytesMax?: number;
  /** Bounds on rows' newest version times for write-write checks (tests: false = always iterate). */
  versionBounds?: boolean;
}

/** A plain write checks intents as a snapshot-isolation writer that owns none of them. */
const NON_TXN_WRITER: TxnMeta = { txnId: '' as TxnId, statusTablet: '', isolation: 'snapshot', priority: Number.POSITIVE_INFINITY, startHt: 0n };

/**
 * Records a committed transaction may have for writeRegularMany to apply it inside the batch of its
 * APPLY entry (more: it is marked pending, and the apply worker moves it off the ordered apply path,
 * so later entries and reads of the tablet do not wait for it).
 */
export const APPLY_IN_BATCH_RECORDS_MAX = 1024;

/** Transactions listed at most by listTransactions() (the console shows the first ones). */
const LIST_TRANSACTIONS_MAX = 100_000;

export class DocDb implements DocDbApi {
  private readonly readers = new ReaderRegistry();
  private readonly txnLocks = new TxnLocks();
  private closed = false;
  /** See setSchemaColumns (undefined: no column of the table was ever dropped). */
  private schemaColumns: ReadonlySet<number> | undefined;
  /** Column id → family rules (docs/cells.md); undefined: every column in the default family. */
  private cellRules: ReadonlyMap<number, CellRules> | undefined;
  /** Derived from cellRules: the family TTL row reads apply (row-assembler.ts ColumnTtls). */
  private columnTtls: ColumnTtls | undefined;

  /** Parsed committed rows for point reads while no intents are held (see row-cache.ts). */
  readonly rowCache: RowCache;
  /** Point reads of rows the row cache misses, on reused iterators (point-reads.ts). */
  readonly pointReads: PointReads;

  private constructor(
    readonly regularDb: RegularDb,
    readonly intentsDb: IntentsDb,
    private readonly flags: Flags,
    private readonly options: DocDbOptions,
  ) {
    this.rowCache = new RowCache(() => this.flags.get(DOCDB_ROW_CACHE_BYTES));
    this.pointReads = new PointReads(regularDb.db.engine, this.rowCache, () => this.flags.get(DOCDB_POINT_READ_ITERATORS), () => this.flags.get(DOCDB_POINT_READ_AHEAD_BYTES));
    regularDb.db.writeObserver = this.rowCache;
  }

  static async open(deps: DocDbDeps, options: DocDbOptions = {}): Promise<DocDb> {
    const regular = await RegularDb.open(await FrontierDb.open(deps.regular), { versionBounds: options.versionBounds });
    const flags = deps.flags ?? new Flags();
    const d = new DocDb(regular, await IntentsDb.open(await FrontierDb.open(deps.intents), { indexBytesMax: options.intentIndexBytesMax, packRows: () => flags.get(TXN_PACKED_INTENTS), loneMeta: () => flags.get(TXN_LONE_INTENT_META) }), flags, options);
    d.adoptApplyGroups();
    return d;
  }

  /**
   * Apply-group records found at open (a crash came before their deferred intent deletes): each
   * transaction of theirs whose intents are still on disk becomes an unfinished apply again, as
   * if it had an apply state (in memory: resumeApplies finishes it, then deletes the records).
   */
  private adoptApplyGroups(): void {
    for (const g of this.regularDb.storedApplyGroups) {
      this.applyGroupSeq = Math.max(this.applyGroupSeq, Number(g.key.readBigUInt64BE(9)) + 1);
      for (const e of g.entries) {
        const stored = this.intentsDb.storedMeta(e.txnId);
        if (stored === undefined || this.regularDb.applyState(e.txnId) !== undefined) continue;
        this.regularDb.setApplyState({ meta: stored.meta, commitHt: e.commitHt, opId: e.opId, recordsApplied: 0 });
      }
    }
  }

  /**
   * The column ids of the table's current schema (ALTER TABLE), or undefined for a table never altered.
   * Versions of any other column id are a dropped column's: reads ignore them and gc() deletes them.
   * The owner sets this at open and at every schema change, before any write of an added column.
   */
  setSchemaColumns(columnIds: readonly number[] | undefined): void {
    this.schemaColumns = columnIds === undefined ? undefined : new Set(columnIds);
  }

  setCellFamilies(rules: ReadonlyMap<number, CellRules> | undefined): void {
    this.cellRules = rules;
    const ttls = new Map<number, number>();
    for (const [id, r] of rules ?? []) if (r.ttlSec > 0 && r.minVersions === 0) ttls.set(id, r.ttlSec * 1000);
    this.columnTtls = ttls.size > 0 ? ttls : undefined;
  }

  private readonly rulesOf = (columnId: number): CellRules => this.cellRules?.get(columnId) ?? DEFAULT_CELL_RULES;

  async readCells(opts: CellReadOptions): Promise<CellReadResult> {
    this.checkReadTime(opts.readHt);
    const release = this.readers.register(opts.readHt);
    try {
      return await readCellRows(this.regularDb.db.engine, opts, this.rulesOf, this.schemaColumns);
    } finally {
      release();
    }
  }

  private readerOptions<O extends ReadOptions>(opts: O): O & { schemaColumns?: ReadonlySet<number>; columnTtls?: ColumnTtls } {
    if (this.schemaColumns === undefined && this.columnTtls === undefined) return opts;
    return { ...opts, ...(this.schemaColumns ? { schemaColumns: this.schemaColumns } : {}), ...(this.columnTtls ? { columnTtls: this.columnTtls } : {}) };
  }

  writeRegular(ops: readonly RowOp[], ht: HybridTime, opId: OpId): Promise<void> {
    return this.regularDb.writeRows(ops, ht, opId);
  }

  async writeRegularMany(batches: ReadonlyArray<{ ops: readonly RowOp[]; ht: HybridTime; opId: OpId }>, marks: readonly ApplyItem[] = [], applyNow = false): Promise<ApplyMark[]> {
    if (marks.length === 0) {
      await this.regularDb.writeRowsMany(batches);
      return [];
    }
    const deferred = applyNow && this.flags.get(APPLY_CLEANUP_DELAY_MS) > 0 ? this.deferredCleanup : undefined;
    const chunk = this.flags.get(TXN_MAX_APPLY_BATCH_RECORDS);
    return this.txnLocks.runMany(marks.map((m) => m.txnId), async () => {
      const extra: KvOp[] = [];
      const done: Array<() => void> = [];
      const inPlace: InPlaceApply[] = [];
      let opId: OpId = OP_ID_ZERO;
      const out = marks.map((m): ApplyMark => {
        const now = deferred ? applyNowOps(this.regularDb, this.intentsDb, m.txnId, m.commitHt, m.opId, Math.min(chunk, APPLY_IN_BATCH_RECORDS_MAX)) : undefined;
        if (now) {
          opId = opIdMax(opId, m.opId);
          for (const o of now.ops) extra.push(o);
          inPlace.push(now);
          return 'applied';
        }
        const w = applyPendingOps(this.regularDb, this.intentsDb, m.txnId, m.commitHt, m.opId);
        if (w === undefined) return 'none';
        for (const o of w.ops) extra.push(o);
        done.push(w.done);
        opId = opIdMax(opId, m.opId);
        return 'pending';
      });
      if (inPlace.length > 0 && deferred) {
        // One apply-group record for the batch's in-place applies, not an apply state each (apply.ts).
        const g = applyGroupOps(inPlace, this.applyGroupSeq++, deferred);
        extra.push(g.op);
        done.push(g.done);
      }
      await this.regularDb.writeRowsMany(batches, { ops: extra, opId });
      for (const d of done) d();
      return out;
    });
  }

  /** Keeps apply-group record keys of one op id apart (txn-records.ts applyGroupKey). */
  private applyGroupSeq = 0;

  writeIntents(txn: TxnMeta, ops: readonly RowOp[], ht: HybridTime, opId: OpId, reads?: ReadLocks): Promise<void> {
    return this.txnLocks.run(txn.txnId, () => this.intentsDb.writeIntents(txn, ops, ht, opId, reads));
  }

  writeIntentsMany(items: ReadonlyArray<{ txn: TxnMeta; ops: readonly RowOp[]; ht: HybridTime; opId: OpId; reads?: ReadLocks }>): Promise<void> {
    return this.txnLocks.runMany(items.map((i) => i.txn.txnId), () => this.intentsDb.writeIntentsMany(items));
  }

  /** Clean-ups of applies waiting for a RegularDB sync (apply_cleanup_delay_ms). */
  private readonly deferredCleanup = new DeferredCleanup();

  /**
   * See applyIntentsMany in apply.ts: with apply_cleanup_delay_ms > 0 the intent deletes wait
   * (deferredAgeMs, flushDeferred); the apply-state deletes always ride along with later writes.
   */
  async applyIntentsMany(items: readonly ApplyItem[]): Promise<void> {
    const chunk = this.flags.get(TXN_MAX_APPLY_BATCH_RECORDS);
    const deferred = this.flags.get(APPLY_CLEANUP_DELAY_MS) > 0 ? this.deferredCleanup : undefined;
    await this.txnLocks.runMany(items.map((i) => i.txnId), () =>
      applyIntentsMany(
        this.regularDb,
        this.intentsDb,
        items,
        chunk,
        this.options.hooks ?? {},
        (txnId, commitHt, opId) => applyIntents(this.regularDb, this.intentsDb, txnId, commitHt, opId, chunk, Number.MAX_SAFE_INTEGER, this.options.hooks ?? {}),
        deferred,
      ),
    );
  }

  deferredAgeMs(): number {
    return this.deferredCleanup.ageMs(performance.now());
  }

  /** Write every deferred clean-up: the waiting intent deletes (after a sync), then the apply-state deletes. */
  async flushDeferred(): Promise<void> {
    await flushDeferredCleanup(this.regularDb, this.intentsDb, this.deferredCleanup);
    await this.regularDb.db.flushRiders();
  }

  async syncDurable(): Promise<void> {
    await Promise.all([this.regularDb.db.syncBarrier(), this.intentsDb.db.syncBarrier()]);
  }

  /**
   * Conflicts for `txn` writing `ops`. Without `resolveStatus` every conflicting intent of another
   * transaction is reported (the caller resolves their status); with it, committed ones become
   * `committedAfterRead` when they committed after `readHt` and aborted ones are ignored.
   */
  findConflicts(txn: TxnMeta, ops: readonly RowOp[], readHt: HybridTime, reads?: ReadLocks, resolveStatus?: StatusResolver): Promise<Conflict[]> {
    // A write-write check below the history floor could miss a version GC collected (e.g. a row
    // deleted after the read time, whose tombstone and versions are gone).
    if (ops.length > 0) {
      try {
        this.checkReadTime(readHt);
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return findConflicts(this.regularDb, this.intentsDb, txn, ops, readHt, resolveStatus, false, reads);
  }

  holdsReadLocks(txnId: TxnId, reads: ReadLocks): boolean {
    return this.intentsDb.holdsReadLocks(txnId, reads);
  }

  findIntentConflicts(ops: readonly RowOp[]): Promise<Conflict[]> {
    return findConflicts(this.regularDb, this.intentsDb, NON_TXN_WRITER, ops, 0n, undefined, true);
  }

  /**
   * Apply a committed transaction's intents at `commitHt`. Runs chunk after chunk (yielding between
   * them) until done, or until `chunksMax` chunks when given (then `done` is false; call again).
   */
  applyIntents(txnId: TxnId, commitHt: HybridTime, opId: OpId, chunkRecordsMax?: number, chunksMax?: number): Promise<ApplyProgress> {
    return this.txnLocks.run(txnId, () => applyIntents(
      this.regularDb,
      this.intentsDb,
      txnId,
      commitHt,
      opId,
      chunkRecordsMax ?? this.flags.get(TXN_MAX_APPLY_BATCH_RECORDS),
      chunksMax ?? Number.MAX_SAFE_INTEGER,
      this.options.hooks ?? {},
    ));
  }

  removeIntents(txnId: TxnId, opId: OpId): Promise<void> {
    return this.txnLocks.run(txnId, () => removeIntents(this.intentsDb, txnId, opId, this.flags.get(TXN_MAX_APPLY_BATCH_RECORDS)));
  }

  async listTransactions(): Promise<Array<{ meta: TxnMeta; intentCount: number; applying?: { commitHt: HybridTime } }>> {
    const byId = await listIntentTxns(this.intentsDb, LIST_TRANSACTIONS_MAX, this.deferredCleanup.heads());
    for (const s of await this.applyStates()) {
      const t = byId.get(s.meta.txnId) ?? { meta: s.meta, intentCount: 0 };
      t.applying = { commitHt: s.commitHt };
      byId.set(s.meta.txnId, t);
    }
    // Applied, their intents still on disk until the deferred clean-up: shown (and kept from GC) as applying.
    for (const [id, t] of byId) {
      const commitHt = t.applying === undefined ? this.deferredCleanup.commitHtOf(id) : undefined;
      if (commitHt !== undefined) t.applying = { commitHt };
    }
    return [...byId.values()];
  }

  /**
   * A digest of the provisional records of the transactions this replica holds that no APPLY or
   * REMOVE reached yet (IntentsDb.pendingDigest): equal on replicas at the same Raft applied index.
   * Committed transactions still being applied are left out (each replica moves them on its own schedule).
   */
  pendingIntentsDigest(): Promise<{ sha256: string; txns: number; records: number }> {
    return this.intentsDb.pendingDigest((id) => this.regularDb.applyState(id) !== undefined || this.deferredCleanup.commitHtOf(id) !== undefined);
  }

  /** Durably note that `txnId` committed at `commitHt` and must be applied (see apply.ts). */
  markApplyPending(txnId: TxnId, commitHt: HybridTime, opId: OpId): Promise<boolean> {
    return markApplyPending(this.regularDb, this.intentsDb, txnId, commitHt, opId);
  }

  /** Unfinished applies (persisted apply states): resume each with applyIntents(txnId, commitHt, opId). */
  applyStates(): Promise<ApplyState[]> {
    return Promise.resolve(this.regularDb.allApplyStates().slice(0, LIST_TRANSACTIONS_MAX));
  }

  /** Finish every apply a crash interrupted. Returns how many were resumed. */
  async resumeApplies(): Promise<number> {
    const states = await this.applyStates();
    for (const s of states) await this.applyIntents(s.meta.txnId, s.commitHt, s.opId);
    // Every transaction of the apply-group records found at open is applied now: the records go.
    const groups = this.regularDb.storedApplyGroups;
    if (groups.some((g) => g.entries.some((e) => this.regularDb.applyState(e.txnId) !== undefined))) return states.length; // more than one listing: the next restart goes on
    const done = groups.splice(0);
    if (done.length > 0) await this.regularDb.db.write(done.map((g) => ({ type: 'del' as const, key: g.key })), this.regularDb.db.frontier);
    return states.length;
  }

  async getRow(key: DocKey, opts: ReadOptions): Promise<Row | undefined> {
    this.checkReadTime(opts.readHt);
    const k = encodeRowDocKey(key);
    const readIntents = this.intentsDb.intentCount > 0;
    const cache = !readIntents && this.rowCache.enabled ? this.rowCache : undefined;
    const hex = cache ? k.toString('hex') : '';
    let hit: { key: DocKey; versions: CellVersion[] } | undefined = cache?.get(hex);
    const release = hit ? undefined : this.readers.register(opts.readHt);
    try {
      // A miss: read on a reused iterator when it can tell the row as it is now (point-reads.ts).
      hit ??= cache ? await this.pointReads.read(k, hex, key) : undefined;
      if (hit) {
        const res = assembleRow(hit.key, hit.versions, opts.readHt, opts.globalLimitHt, opts.columns, this.schemaColumns, undefined, this.columnTtls);
        if (res.type === 'restart') throw readRestart(opts.readHt, res.restartHt, opts.globalLimitHt);
        return res.type === 'row' ? res.row : undefined;
      }
      const token = cache ? cache.token() : -1;
      let seen = false;
      const onRow = cache
        ? (_b: Buffer, rowKey: DocKey, versions: CellVersion[]): void => {
            seen = true;
            cache.fill(token, hex, rowKey, versions);
          }
        : undefined;
      const r = await new IntentAwareReader(this.regularDb.db.engine, this.intentsDb.db.engine, this.readerOptions(opts), readIntents, onRow).read({ start: k, end: prefixEnd(k), limit: 1 });
      // No version at all: the row is absent at every read time until a write (which invalidates).
      if (cache && !seen) cache.fill(token, hex, key, []);
      return r.rows[0];
    } finally {
      release?.();
    }
  }

  async scan(opts: ScanOptions): Promise<ScanResult> {
    this.checkReadTime(opts.readHt);
    const release = this.readers.register(opts.readHt);
    try {
      if (opts.filter) return await this.scanFiltered(opts, opts.filter);
      return await new IntentAwareReader(this.regularDb.db.engine, this.intentsDb.db.engine, this.readerOptions(opts), this.intentsDb.intentCount > 0).read({ start: opts.startKey, end: opts.endKey, limit: opts.limit, maxBytes: opts.maxBytes });
    } finally {
      release();
    }
  }

  /** A scan with a server-side filter (docdb/filters/filtered-scan.ts): the reader resolves every column, the filter picks. */
  private scanFiltered(opts: ScanOptions, filter: CellFilter): Promise<ScanResult> {
    const { columns, ...all } = opts;
    const readIntents = this.intentsDb.intentCount > 0;
    const reader = new IntentAwareReader(this.regularDb.db.engine, this.intentsDb.db.engine, this.readerOptions(all), readIntents);
    return filteredScan(
      { regular: this.regularDb.db.engine, intents: this.intentsDb.db.engine, readIntents, reader },
      { range: { start: opts.startKey, end: opts.endKey, limit: opts.limit, maxBytes: opts.maxBytes }, filter, seekHints: opts.filterSeekHints !== false, ...(columns?.length ? { columns } : {}) },
    );
  }

  frontier(): Promise<{ regular: OpId; intents: OpId }> {
    return Promise.resolve({ regular: this.regularDb.db.frontier, intents: this.intentsDb.db.frontier });
  }

  async sizes(): Promise<DbSizes> {
    const r = await this.regularDb.db.engine.stats();
    const i = await this.intentsDb.db.engine.stats();
    return {
      regulardb: { memtableBytes: r.memtableBytes, sstBytes: r.sstBytes, rowCache: { rows: this.rowCache.size, bytes: this.rowCache.usedBytes, hits: this.rowCache.metrics.hits, misses: this.rowCache.metrics.misses } },
      intentsdb: { memtableBytes: i.memtableBytes, sstBytes: i.sstBytes, intentCount: this.intentsDb.intentCount },
    };
  }

  writeCounts(): { regulardb: WriteCounts; intentsdb: WriteCounts } {
    return { regulardb: { ...this.regularDb.db.writeCounts }, intentsdb: { ...this.intentsDb.db.writeCounts } };
  }

  /** Digest of RegularDB's data (keys with versions, values) for comparing replicas. */
  regularChecksum(): Promise<ContentChecksum> {
    return contentChecksum(this.regularDb.db.engine, REGULAR_DATA_START, REGULAR_DATA_END);
  }

  /** Keep reads at `readHt` possible until the returned function is called (caps GC's cutoff). */
  registerReader(readHt: HybridTime): () => void {
    return this.readers.register(readHt);
  }

  /** The history cutoff for "now": now minus timestamp_history_retention_interval_sec. */
  historyCutoff(nowHt: HybridTime): HybridTime {
    const c = htAddMicros(nowHt, -BigInt(this.flags.get(TIMESTAMP_HISTORY_RETENTION_INTERVAL_SEC)) * 1_000_000n);
    return c > 0n ? c : 0n;
  }

  async compact(historyCutoffHt: HybridTime): Promise<void> {
    await this.gc(historyCutoffHt);
  }

  historyFloor(): HybridTime {
    return this.regularDb.historyFloor;
  }

  rowVersions(key: DocKey): ReturnType<RegularDb['rowVersions']> {
    return this.regularDb.rowVersions(encodeRowDocKey(key));
  }

  /** A read below the history floor could miss versions GC dropped: refused. */
  private checkReadTime(readHt: HybridTime): void {
    const floor = this.regularDb.historyFloor;
    if (readHt < floor) throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, `read time ${readHt} is below the history cutoff ${floor} (versions older than timestamp_history_retention_interval_sec may have been collected)`, { readHt: String(readHt), historyFloorHt: String(floor) });
  }

  newestVersionHt(): HybridTime | undefined {
    const s = this.regularDb.versionBoundStats();
    return s === undefined || s.max === HT_UNKNOWN ? undefined : s.max;
  }

  /**
   * A hybrid time at or below every version RegularDB holds: HT_UNKNOWN while none was ever written,
   * 0 when unknown (version bounds off, or data written before the bound was kept).
   */
  oldestVersionBound(): HybridTime {
    return this.regularDb.oldestVersionBound();
  }

  /** False while the table was never altered (no dropped column's values can be stored). */
  mayHoldDroppedColumns(): boolean {
    return this.schemaColumns !== undefined;
  }

  /**
   * compact() with figures: the cutoff actually used (capped by active readers) and what was dropped,
   * every version of a dropped column included (setSchemaColumns). `opts.compactRange` (default
   * true): ask RocksDB to compact both databases afterwards, so the space is reclaimed at once; a
   * periodic pass leaves that to RocksDB's own compactions (a CompactRange rewrites every file and
   * holds the thread pool meanwhile).
   */
  async gc(historyCutoffHt: HybridTime, opts: { compactRange?: boolean; startKey?: Uint8Array; rowsMax?: number } = {}): Promise<GcResult & { cutoffHt: HybridTime }> {
    let cutoffHt = this.readers.cap(historyCutoffHt);
    // Unapplied transactions: their versions will enter RegularDB at their commit time, possibly
    // below the cutoff; GC must not drop a tombstone that would hide them. A transaction not yet
    // applying commits after its start time, so the cutoff may reach that start time; one being
    // applied (in chunks) writes its remaining versions AT its commit time, so the cutoff stays one
    // tick below it — else GC could drop a row tombstone the first chunk applied, and a version of
    // the same row with a lower write id, applied by a later chunk, came back (found by the DocDB
    // model test: upsert then delete of one row in one transaction, applied one record per chunk).
    for (const t of await this.listTransactions()) {
      const floor = t.applying ? t.applying.commitHt - 1n : t.meta.startHt;
      if (floor < cutoffHt) cutoffHt = floor;
    }
    const db = this.regularDb.db;
    // Durable before the first delete: reads below it are refused from now on.
    await this.regularDb.raiseHistoryFloor(cutoffHt);
    const compact = opts.compactRange !== false;
    const r = await gcRegular(db.engine, cutoffHt, (ops) => db.write(ops, db.frontier), this.schemaColumns, compact, {
      rulesOf: this.rulesOf,
      ...(opts.startKey ? { startKey: opts.startKey } : {}),
      ...(opts.rowsMax ? { rowsMax: opts.rowsMax } : {}),
    });
    if (compact && r.resumeKey === undefined) await this.intentsDb.db.engine.compactRange();
    return { ...r, cutoffHt };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Deferred clean-ups (a crash would leave them for a resume at open: the same versions again).
    await this.flushDeferred().catch(() => undefined);
    this.pointReads.close();
    await this.regularDb.db.engine.close();
    await this.intentsDb.db.engine.close();
  }
}
