/**
 * `client.table(name)`: row operations on one table. Writes of one row are one Raft entry on one
 * tablet; upsertMany groups rows per tablet (one RPC per tablet per chunk, bounded concurrency), so
 * a whole chunk is atomic on its tablet. Scans walk the tablets in partition order at one read time.
 *
 * Bound to a transaction (`txn.table(name)`), every call carries the TxnContextPB: writes become
 * intents, reads happen at the transaction's read time and see its own intents. Writes then are never
 * resent after an unknown outcome, and the transaction ends on TXN_* codes and READ_RESTART.
 *
 * Read restarts (uncertainty window, tserver/tablet/participant/uncertainty.ts): a read whose leader picked
 * the read time gets back (readHt, globalLimitHt); a version in that window fails the read with
 * READ_RESTART and its restart time. Outside a transaction the read is sent again at the restart time
 * with the same limit (at most READ_RESTARTS_MAX times; a scan restarts only while none of its rows
 * reached the caller, `scan()` collects and so always can). Inside one the transaction decides
 * (client/transaction.ts: the read time moves only while no operation has used it).
 */
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { DbError, ErrorCode } from '../common/errors';
import { tabletServerMethods, type RowOpPB, type TxnContextPB } from '../rpc';
import type { AggregateInto, AggregateSpec, BatchOptions, ColumnValue, ReadOptions, Row, ScanOptions, CallOptions } from './client-types';
import { finalValues } from '../common/scan-aggregate';
import { tabletForRoute, type MetaCache, type RowRoute } from './meta-cache';
import { backoffMs, Deadline } from './retry-policy';
import { isSchemaMismatch, readTimeMoved, restartOf, SERVER_PICKS, type ReadTime } from './read-time';
import { SCAN_PAGE_MAX, scanLinePass, scanPass, scanPlan, type LinePage, type ScanDeps, type ScanPlan } from './table-scan';
import type { TabletInvoker } from './tablet-invoker';
import { PLAIN_WRITE_RETRY_CODES, SPLIT_FATAL_CODES, TurnBatcher } from './turn-batcher';
import { READ_FATAL_CODES, TXN_FATAL_CODES, type TxnBinding } from './txn-binding';
import type { TableLocations } from './meta-cache';
import type { TxnWriteCoalescer } from './txn-write-coalescer';
import { batchConcurrency, writeChunks } from './write-chunks';
import { RowOps, type MutateRowsResult, type RowCheck, type RowLock, type RowMutationSpec, type RowOpOptions } from './row-ops';
import { CellOps, type CellDelete, type CellPut, type CellReadOptions, type CellRowResult } from './cells';

export { WRITE_BYTES_PER_RPC_MAX } from './write-size';
export { COALESCED_ROWS_MAX } from './turn-batcher';

/** Read restarts of one read or scan at most (each raises the read time; the limit stays). */
export const READ_RESTARTS_MAX = 32;

export class Table {
  /** This turn's coalesced blind writes and point reads (batchWrites). */
  private readonly batcher: TurnBatcher;

  constructor(
    readonly name: string,
    private readonly cache: MetaCache,
    private readonly invoker: TabletInvoker,
    private readonly defaultTimeoutMs: number,
    private readonly txn?: TxnBinding,
    /** Coalesce blind single-row writes per tablet per event-loop turn (never inside a transaction). */
    private readonly batchWrites = false,
    /** Inside a transaction: coalesce its writes with other transactions' writes to the same tablet. */
    private readonly txnWrites?: TxnWriteCoalescer,
    /** Row requests per tablet in flight at most (ConnectOptions.rowRequestsInflightMax; default: the coalescers'). */
    private readonly rowRequestsInflightMax?: number,
  ) {
    this.batcher = new TurnBatcher(name, invoker);
  }

  /** Run one operation, letting the transaction (if any) see its failure. */
  private async guard<T>(wasWrite: boolean, f: () => Promise<T>, flushFirst = true): Promise<T> {
    if (!this.txn) return f();
    try {
      // Writes the transaction kept back go first: this operation must see them, in their order
      // (flushFirst false: this is one of them being sent).
      if (flushFirst && this.txn.flushDeferred) await this.txn.flushDeferred();
      return await f();
    } catch (e) {
      throw this.txn.failed(e, wasWrite);
    }
  }

  private get fatal(): ReadonlySet<string> | undefined {
    return this.txn ? TXN_FATAL_CODES : undefined;
  }

  /** Read-time fields of a read on tablet `tabletId`: the transaction's, else `rt` (readHt 0: the leader picks). */
  private readFields(tabletId: string, rt: ReadTime): { readHt: bigint; globalLimitHt?: bigint; txn?: TxnContextPB } {
    if (!this.txn) return rt.readHt !== 0n && rt.globalLimitHt !== 0n ? { readHt: rt.readHt, globalLimitHt: rt.globalLimitHt } : { readHt: rt.readHt };
    if (this.txn.registersReads) this.txn.addParticipant(tabletId);
    return { readHt: this.txn.readHt, txn: this.txn.context() };
  }

  /**
   * A read failed: the read time to try again with, or throw. READ_RESTART outside a transaction:
   * the restart time with the same limit; inside one: whatever the transaction allows.
   */
  private onReadError(e: unknown, rt: ReadTime, restarts: number): ReadTime {
    const x = restartOf(e);
    if (x === undefined || restarts >= READ_RESTARTS_MAX) throw this.txn ? this.txn.failed(e, false) : e;
    if (this.txn) {
      if (!this.txn.restartRead(x.readHt, x.restartHt)) throw this.txn.failed(e, false);
      return rt;
    }
    this.invoker.observeHt(x.restartHt);
    return { readHt: x.restartHt, globalLimitHt: x.globalLimitHt > x.restartHt ? x.globalLimitHt : 0n };
  }

  private get readFatal(): ReadonlySet<string> {
    return this.txn ? TXN_FATAL_CODES : READ_FATAL_CODES;
  }

  private deadline(o?: CallOptions): Deadline {
    return new Deadline(o?.timeoutMs ?? this.defaultTimeoutMs);
  }

  /**
   * Run `f` with the table's schema as this client knows it. ALTER TABLE changes it under running
   * clients: a tablet refuses a request built with another version (SCHEMA_VERSION_MISMATCH, nothing
   * done), and a row may name a column added since this client loaded the table. Then the schema is
   * loaded again (or, for a tablet still behind the client's version, waited for) and `f` runs again
   * from the start, until the deadline.
   */
  private async withSchema<T>(d: Deadline, f: (loc: TableLocations) => Promise<T>): Promise<T> {
    const state = { reloadedForColumn: false, attempt: 0 };
    for (;;) {
      const loc = await this.cache.get(this.name, d);
      try {
        return await f(loc);
      } catch (e) {
        await this.afterSchemaError(e, loc, d, state);
      }
    }
  }

  /** Throws `e` unless it is a schema change the operation can retry after (see withSchema). */
  private async afterSchemaError(e: unknown, loc: TableLocations, d: Deadline, state: { reloadedForColumn: boolean; attempt: number }): Promise<void> {
    if (!(e instanceof DbError)) throw e;
    const mine = loc.schema.version;
    if (e.code === ErrorCode.SCHEMA_VERSION_MISMATCH) {
      const theirs = Number(e.details['tabletVersion'] ?? -1);
      if (theirs > mine) {
        // Newer schema on the tablet: load it (unless a concurrent call already did).
        if ((this.cache.cachedSchemaVersion(this.name) ?? -1) <= mine) this.cache.invalidate(this.name);
      } else {
        // The tablet has not applied this version yet (its leader replicates it): wait a little.
        await new Promise((r) => setTimeout(r, backoffMs(Math.min(state.attempt++, 5))));
      }
    } else if (e.code === ErrorCode.TABLET_SPLIT) {
      // A batch or a scan met a split parent: route again with the children (docs/splitting.md).
      if (this.cache.cachedLoadedAtMs(this.name) === loc.loadedAtMs) this.cache.invalidate(this.name);
      await new Promise((r) => setTimeout(r, backoffMs(Math.min(state.attempt++, 5))));
    } else if (e.code === ErrorCode.INVALID_ARGUMENT && e.details['unknownColumn'] === true && !state.reloadedForColumn) {
      state.reloadedForColumn = true;
      if ((this.cache.cachedSchemaVersion(this.name) ?? -1) <= mine) this.cache.invalidate(this.name);
    } else throw e;
    if (d.expired()) throw d.timedOut(`operation on table ${this.name} (its schema changed)`, e);
  }

  /** The `transactions` system table holds the coordinators' records: never written by clients. */
  private checkWritable(): void {
    if (this.name === TRANSACTIONS_TABLE) {
      throw new DbError(ErrorCode.NOT_SUPPORTED, `table ${TRANSACTIONS_TABLE} is a system table: clients cannot write it`, { table: this.name });
    }
  }

  private async write(type: 'UPSERT' | 'INSERT' | 'UPDATE' | 'DELETE', row: Row, o?: CallOptions & { ttlMs?: number; keepBack?: boolean }): Promise<void> {
    this.checkWritable();
    const ttlMs = o?.ttlMs;
    // Row TTL (docs/cells.md): the row's liveness and every column written expire together.
    if (ttlMs !== undefined && (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `ttlMs ${String(ttlMs)} must be a positive integer`, { part: 'TTL' });
    const d = this.deadline(o);
    await this.withSchema(d, (loc) => this.writeWith(loc, type, row, d, true, ttlMs, o?.keepBack !== false));
  }

  /** mayDefer false: this is a kept-back write being sent; keepBack false: send it now, after the kept-back ones. */
  private async writeWith(loc: TableLocations, type: 'UPSERT' | 'INSERT' | 'UPDATE' | 'DELETE', row: Row, d: Deadline, mayDefer = true, ttlMs?: number, keepBack = true): Promise<void> {
    const { hash, op, key } = loc.schema.rowOp(type, row);
    if (ttlMs !== undefined && type !== 'DELETE') op.ttlMs = BigInt(ttlMs);
    const sv = loc.schema.version;
    if (this.batchWrites && !this.txn && (type === 'UPSERT' || type === 'DELETE')) {
      const t = tabletForRoute(loc, { hash, key });
      if (t) return this.batcher.enqueue(t.tabletId, { hash, key }, sv, op, d);
    }
    if (mayDefer && keepBack && this.txn?.deferWrite) {
      // By hash and key: a range table's tablets all span every hash (docs/splitting.md).
      const t = tabletForRoute(loc, { hash, key });
      // Sent later as an ordinary transactional write, encoded anew if the schema changed meanwhile.
      const send = (): Promise<void> => {
        const d2 = this.deadline(undefined);
        return this.withSchema(d2, (l) => this.writeWith(l, type, row, d2, false, ttlMs));
      };
      if (t && this.txn.deferWrite({ table: this.name, tabletId: t.tabletId, hash, schemaVersion: sv, op, send })) return;
    }
    // Kept-back writes go first, and a transaction without a status record creates it (flushDeferred).
    if (mayDefer) await this.flushTxnWrites();
    const txnCtx = this.txn?.context();
    if (this.txn && txnCtx && this.txnWrites) {
      const t = tabletForRoute(loc, { hash, key });
      if (t) {
        const coalescer = this.txnWrites;
        await this.guard(true, () => {
          this.writeTxn(t.tabletId, txnCtx); // registers the participant, fixes the read time
          return coalescer.write(this.name, t.tabletId, sv, [op], txnCtx, d, (requestId) => this.writeAlone({ hash, key }, sv, op, txnCtx, d, requestId));
        }, mayDefer);
        return;
      }
    }
    await this.guard(true, () => this.writeAlone({ hash, key }, sv, op, txnCtx, d), mayDefer);
  }

  /** One write in its own Write RPC, with the invoker's retries (`requestId`: resend that retryable request). */
  private async writeAlone(route: RowRoute, schemaVersion: number, op: RowOpPB, txnCtx: TxnContextPB | undefined, d: Deadline, requestId?: number): Promise<void> {
    // A retryable request: an INSERT or a transactional write whose answer was lost is resent, and
    // the tablet answers the copy of a write it already did (no ALREADY_EXISTS for our own row).
    const r = await this.invoker.callWrite(this.name, route, (t) => ({ tabletId: t.tabletId, ops: [op], propagatedHt: this.invoker.propagatedHt, schemaVersion, ...this.writeTxn(t.tabletId, txnCtx) }), d, {
      fatal: this.fatal,
      alsoRetry: this.txn ? undefined : PLAIN_WRITE_RETRY_CODES,
      requestIds: requestId === undefined ? undefined : [requestId],
    });
    this.invoker.observeHt(r.propagatedHt);
  }

  /** The txn field of a write to `tabletId`, registering the tablet as a participant first. */
  private writeTxn(tabletId: string, ctx: TxnContextPB | undefined): { txn?: TxnContextPB } {
    if (!this.txn || !ctx) return {};
    this.txn.addParticipant(tabletId);
    // The write's conflict and existence checks use the read time: from now on it cannot move.
    this.txn.fixReadTime();
    return { txn: ctx };
  }

  /**
   * Insert; fails with ALREADY_EXISTS when the row exists. `keepBack: false`: in a deferWrites transaction, send it at once (after the writes kept back), so
   * a duplicate key fails this call, not the commit (SQL's INSERT, docs/sql.md "Transactions").
   */
  insert(row: Row, o?: CallOptions & { ttlMs?: number; keepBack?: boolean }): Promise<void> {
    return this.write('INSERT', row, o);
  }
  /** Insert or overwrite the given columns (`ttlMs`: they and the row expire that long after the write; `keepBack: false` as for insert). */
  upsert(row: Row, o?: CallOptions & { ttlMs?: number; keepBack?: boolean }): Promise<void> {
    return this.write('UPSERT', row, o);
  }
  /** Change the given columns of an existing row; fails with NOT_FOUND when it does not exist. */
  update(row: Row, o?: CallOptions & { ttlMs?: number }): Promise<void> {
    return this.write('UPDATE', row, o);
  }
  /** Delete the row with this key (only key columns are needed). */
  delete(key: Row, o?: CallOptions): Promise<void> {
    return this.write('DELETE', key, o);
  }

  // ---- HBase's cell model (client/cells.ts, docs/cells.md) ------------------------------------------

  private cellOpsValue: CellOps | undefined;

  private cellOps(): CellOps {
    if (this.txn) throw new DbError(ErrorCode.NOT_SUPPORTED, 'cell reads and writes run outside transactions');
    this.cellOpsValue ??= new CellOps({ table: this.name, cache: this.cache, invoker: this.invoker, defaultTimeoutMs: this.defaultTimeoutMs });
    return this.cellOpsValue;
  }

  /** Put cells of one row, each at its own timestamp when given (HBase's Put); answers the write's hybrid time. */
  putCells(key: Row, puts: readonly CellPut[], o?: CallOptions & { rowTtlMs?: number }): Promise<bigint> {
    this.checkWritable();
    return this.cellOps().putCells(key, puts, o);
  }
  /** Delete markers of one row: a version, a column, a family, the row (HBase's Delete). */
  deleteCells(key: Row, deletes: readonly CellDelete[], o?: CallOptions): Promise<bigint> {
    this.checkWritable();
    return this.cellOps().deleteCells(key, deletes, o);
  }
  /** One row's cells: versions, time range, as-of, raw, projection (undefined: nothing to show). */
  getCells(key: Row, o?: CellReadOptions): Promise<CellRowResult | undefined> {
    return this.cellOps().getCells(key, o);
  }
  /** The table's rows' cells in partition order, at one read time. */
  scanCells(o?: CellReadOptions & { limit?: number }): Promise<CellRowResult[]> {
    return this.cellOps().scanCells(o);
  }

  /** The table's rows' cells page by page at one read time (bounded memory; client/cells.ts). */
  scanCellPages(o?: CellReadOptions & { pageRows?: number; pagesPerTabletMax?: number }): AsyncGenerator<CellRowResult[]> {
    return this.cellOps().scanCellPages(o);
  }

  // ---- atomic row operations and row locks (client/row-ops.ts, docs/rows.md) -----------------------

  private rowOpsValue: RowOps | undefined;

  private rowOps(): RowOps {
    if (this.txn) throw new DbError(ErrorCode.NOT_SUPPORTED, 'row operations and row locks run outside transactions (use the transaction\'s reads and writes inside one)');
    this.checkWritable();
    this.rowOpsValue ??= new RowOps({ table: this.name, cache: this.cache, invoker: this.invoker, defaultTimeoutMs: this.defaultTimeoutMs, coalesce: this.batchWrites && !this.txn, ...(this.rowRequestsInflightMax !== undefined ? { inflightMax: this.rowRequestsInflightMax } : {}) });
    return this.rowOpsValue;
  }

  /** Row-operation requests this handle sent coalesced, and the calls they carried (undefined: coalescing off). */
  rowCallStats(): { requests: number; calls: number } | undefined {
    return this.rowOpsValue?.coalescerStats();
  }

  /** Add to int64 columns of one row atomically (absent counts as 0); answers their new values. */
  async increment(key: Row, by: Record<string, bigint | number>, o?: RowOpOptions): Promise<Row> {
    return (await this.rowOps().mutateRows([{ key, increment: by }], o)).results[0] ?? {};
  }

  /** Append to string/bytes columns of one row atomically; answers their new values. */
  async append(key: Row, values: Record<string, string | Uint8Array>, o?: RowOpOptions): Promise<Row> {
    return (await this.rowOps().mutateRows([{ key, append: values }], o)).results[0] ?? {};
  }

  /** Apply `mutation` to the row if every check holds (one Raft entry); answers whether it applied. */
  async checkAndMutate(key: Row, checks: RowCheck | RowCheck[], mutation: Omit<RowMutationSpec, 'if'>, o?: RowOpOptions): Promise<boolean> {
    return (await this.rowOps().mutateRows([{ key, ...mutation, if: Array.isArray(checks) ? checks : [checks] }], o)).applied;
  }

  /** Puts, deletes, increments and appends of one row together (HBase's RowMutations). */
  async mutateRow(key: Row, mutation: RowMutationSpec, o?: RowOpOptions): Promise<MutateRowsResult> {
    return this.rowOps().mutateRows([{ key, ...mutation }], o);
  }

  /** Several rows of ONE tablet atomically (checks included); CROSS_TABLET_MUTATION when they span tablets. */
  async mutateRows(rows: ReadonlyArray<{ key: Row } & RowMutationSpec>, o?: RowOpOptions): Promise<MutateRowsResult> {
    return this.rowOps().mutateRows(rows, o);
  }

  /** Lock one row with a lease (default: the tserver's row_lock_lease_ms); ROW_LOCKED when held by another, unless `wait`. */
  lockRow(key: Row, o?: CallOptions & { leaseMs?: number; wait?: boolean; holder?: string }): Promise<RowLock> {
    return this.rowOps().lockRow(key, o);
  }

  /** Extend a held lock's lease from now; ROW_LOCK_NOT_HELD when it ended. */
  renewRowLock(lock: RowLock, o?: CallOptions & { leaseMs?: number }): Promise<RowLock> {
    return this.rowOps().renewRowLock(lock, o);
  }

  /** Release a held lock; ROW_LOCK_NOT_HELD for a wrong id or a lock that already ended. */
  unlockRow(lock: RowLock, o?: CallOptions): Promise<void> {
    return this.rowOps().unlockRow(lock, o);
  }

  /** The row with this key, or undefined. */
  /** Writes the transaction kept back go first: a read must see them (client/fast-path.ts). */
  private async flushTxnWrites(): Promise<void> {
    if (this.txn?.flushDeferred) await this.txn.flushDeferred();
  }

  async get(key: Row, o?: ReadOptions): Promise<Row | undefined> {
    await this.flushTxnWrites();
    const d = this.deadline(o);
    return this.withSchema(d, (loc) => this.getWith(loc, key, o, d));
  }

  private async getWith(loc: TableLocations, key: Row, o: ReadOptions | undefined, d: Deadline): Promise<Row | undefined> {
    const sv = loc.schema.version;
    const k = loc.schema.key(key);
    const columns = loc.schema.columnIds(o?.columns);
    let rt = SERVER_PICKS;
    let tried = 0;
    if (this.batchWrites && !this.txn) {
      // First try in this turn's batch for the tablet (one Read RPC, one read time for all of them);
      // a READ_RESTART or other failure is handled below, unbatched.
      const route = { hash: k.hash, key: loc.schema.routeKey(k) };
      const t = tabletForRoute(loc, route);
      if (t) {
        try {
          const { row } = await this.batcher.enqueueRead(t.tabletId, route, sv, loc.schema.keyPb(k), columns, d);
          return row ? loc.schema.rowFromPb(row, o?.columns) : undefined;
        } catch (e) {
          if (isSchemaMismatch(e)) throw e;
          rt = this.onReadError(e, rt, 0);
          tried = 1;
        }
      }
    }
    for (let restarts = tried; ; restarts++) {
      const at = rt;
      let r;
      try {
        r = await this.invoker.call(
          this.name,
          { hash: k.hash, key: loc.schema.routeKey(k) },
          tabletServerMethods().read,
          (t) => ({ tabletId: t.tabletId, keys: [loc.schema.keyPb(k)], columns, propagatedHt: this.invoker.propagatedHt, schemaVersion: sv, ...this.readFields(t.tabletId, at) }),
          d,
          true,
          this.readFatal,
        );
      } catch (e) {
        if (isSchemaMismatch(e)) throw e;
        rt = this.onReadError(e, rt, restarts);
        continue;
      }
      this.invoker.observeHt(r.propagatedHt);
      // The transaction's read time moved while this read was in flight: read again at the new one.
      if (this.txn && !this.txn.acceptRead(BigInt(r.readHt ?? 0n))) {
        if (restarts >= READ_RESTARTS_MAX) throw this.txn.failed(readTimeMoved(BigInt(r.readHt ?? 0n), this.txn.readHt), false);
        continue;
      }
      if (!r.found?.[0] || !r.rows?.[0]) return undefined;
      return loc.schema.rowFromPb(r.rows[0], o?.columns);
    }
  }

  /**
   * Rows in key order (partition order across tablets), all at one read time. Collects every row
   * before returning, so a read restart anywhere restarts the whole scan transparently.
   */
  async scan(o: ScanOptions = {}): Promise<Row[]> {
    await this.flushTxnWrites();
    const d = this.deadline(o);
    if (o.readHt !== undefined && this.txn) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a scan inside a transaction reads at the transaction\'s time: readHt is for reads outside one');
    return this.withSchema(d, async (loc) => {
      const plan = scanPlan(loc, o, d);
      let rt: ReadTime = o.readHt !== undefined ? { readHt: o.readHt, globalLimitHt: 0n } : SERVER_PICKS;
      for (let restarts = 0; ; restarts++) {
        const out: Row[] = [];
        try {
          for await (const page of scanPass(this.scanDeps(), plan, rt, true)) for (const row of page) out.push(row);
          return out;
        } catch (e) {
          if (isSchemaMismatch(e)) throw e;
          rt = this.onReadError(e, rt, restarts);
        }
      }
    });
  }

  /**
   * count(*), count / sum / min / max of columns over the rows a scan would return (its bounds,
   * filter, read time or transaction), computed on the tablets: only each page's partial results
   * cross the network (docs/client.md). count answers a bigint; sum, min and max null over no values.
   */
  async aggregate(specs: readonly AggregateSpec[], o: ScanOptions = {}): Promise<ColumnValue[]> {
    if (specs.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'aggregate: name at least one aggregate');
    if (o.limit !== undefined) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'aggregate: a limit does not apply (the aggregates cover every row the bounds and filter select)');
    const into: AggregateInto = { named: specs };
    const columns = [...new Set(specs.flatMap((s) => (s.column === undefined ? [] : [s.column])))];
    await this.scan({ ...o, ...(columns.length > 0 ? { columns } : {}), pageSize: SCAN_PAGE_MAX, aggregateInto: into });
    return finalValues(into.specs!, into.acc!);
  }

  /**
   * Rows in key order, page by page. A read restart before the first row reached the caller
   * restarts the scan; after that it fails with READ_RESTART (retryable: scan again).
   */
  async *scanRows(o: ScanOptions = {}): AsyncGenerator<Row> {
    for await (const page of this.scanRowPages(o)) yield* page;
  }

  /**
   * scanRows a page at a time (each page: the rows of one scan RPC, at most `pageSize`, never
   * empty): for callers that move many rows, one hand-off per page instead of per row.
   */
  scanRowPages(o: ScanOptions = {}): AsyncGenerator<Row[]> {
    return this.scanPages(o, (plan, rt) => scanPass(this.scanDeps(), plan, rt, false), (page) => page.length);
  }

  /**
   * scanRowPages with each page's rows as export-format lines the tablet servers wrote
   * (common/export-line.ts; docs/backup.md): what an export writes and digests, without a row object
   * per row on either side. Rows and order are scanRows'.
   */
  scanLinePages(o: ScanOptions = {}): AsyncGenerator<LinePage> {
    return this.scanPages(o, (plan, rt) => scanLinePass(this.scanDeps(), plan, rt), (page) => page.rows);
  }

  private async *scanPages<T>(o: ScanOptions, pass: (plan: ScanPlan, rt: ReadTime) => AsyncGenerator<T>, rowsOf: (page: T) => number): AsyncGenerator<T> {
    await this.flushTxnWrites();
    const d = this.deadline(o);
    const schemaState = { reloadedForColumn: false, attempt: 0 };
    let loc = await this.cache.get(this.name, d);
    let plan: ScanPlan | undefined;
    if (o.readHt !== undefined && this.txn) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a scan inside a transaction reads at the transaction\'s time: readHt is for reads outside one');
    let rt: ReadTime = o.readHt !== undefined ? { readHt: o.readHt, globalLimitHt: 0n } : SERVER_PICKS;
    let yielded = 0;
    for (let restarts = 0; ; restarts++) {
      try {
        plan ??= scanPlan(loc, o, d);
        for await (const page of pass(plan, rt)) {
          yielded += rowsOf(page);
          yield page;
        }
        return;
      } catch (e) {
        if (yielded > 0) throw this.txn ? this.txn.failed(e, false) : e;
        if (isSchemaMismatch(e) || (e instanceof DbError && e.details['unknownColumn'] === true)) {
          // Nothing reached the caller yet: plan again with the table's schema as it is now.
          await this.afterSchemaError(e, loc, d, schemaState);
          loc = await this.cache.get(this.name, d);
          plan = undefined;
          rt = o.readHt !== undefined ? { readHt: o.readHt, globalLimitHt: 0n } : SERVER_PICKS;
          continue;
        }
        rt = this.onReadError(e, rt, restarts);
      }
    }
  }

  private scanDeps(): ScanDeps {
    return { name: this.name, invoker: this.invoker, txn: this.txn, readFields: (tabletId, rt) => this.readFields(tabletId, rt), readFatal: this.readFatal };
  }

  /** Upsert many rows: grouped per tablet, one RPC per tablet per chunk, bounded concurrency. */
  async upsertMany(rows: readonly Row[], o: BatchOptions = {}): Promise<void> {
    await this.writeMany('UPSERT', rows, o);
  }

  async deleteMany(keys: readonly Row[], o: BatchOptions = {}): Promise<void> {
    await this.writeMany('DELETE', keys, o);
  }

  private async writeMany(type: 'UPSERT' | 'DELETE', rows: readonly Row[], o: BatchOptions): Promise<void> {
    this.checkWritable();
    if (rows.length === 0) return;
    const d = this.deadline(o);
    // After a schema change every chunk is sent again (upserts and deletes are idempotent).
    await this.withSchema(d, (loc) => this.writeManyWith(loc, type, rows, o, d));
  }

  private async writeManyWith(loc: TableLocations, type: 'UPSERT' | 'DELETE', rows: readonly Row[], o: BatchOptions, d: Deadline): Promise<void> {
    const sv = loc.schema.version;
    const chunks = writeChunks(loc, type, rows, o, this.name);
    const concurrency = batchConcurrency(o);
    let next = 0;
    await this.flushTxnWrites();
    const txnCtx = this.txn?.context();
    const worker = async (): Promise<void> => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        const r = await this.invoker.callWrite(this.name, { hash: chunk[0]!.hash, key: chunk[0]!.key }, (t) => ({ tabletId: t.tabletId, ops: chunk.map((c) => c.op), propagatedHt: this.invoker.propagatedHt, schemaVersion: sv, ...this.writeTxn(t.tabletId, txnCtx) }), d, {
          // A chunk may span both children of a split: it comes back here, and withSchema plans again.
          fatal: this.fatal ? new Set([...this.fatal, ErrorCode.TABLET_SPLIT]) : SPLIT_FATAL_CODES,
          alsoRetry: this.txn ? undefined : PLAIN_WRITE_RETRY_CODES,
        });
        this.invoker.observeHt(r.propagatedHt);
      }
    };
    await this.guard(true, () => Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker)));
  }
}
