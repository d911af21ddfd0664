/**
 * A distributed transaction as the client runs it (docs/architecture.md §Transactions, YugabyteDB's client/transaction.cc):
 *
 *   const txn = await client.beginTransaction({ isolation: 'snapshot' });
 *   await txn.table('accounts').update({ id: 1n, balance: 90n });
 *   await txn.table('accounts').update({ id: 2n, balance: 110n });
 *   const { commitHt } = await txn.commit();
 *
 * begin: pick a status tablet of the system table `transactions` at random, CreateTransaction on its
 * leader (the answer's read_ht is the snapshot every read of the transaction uses), then heartbeat
 * every `transactionHeartbeatUsec` so the coordinator does not expire it. Every tablet operation
 * carries a TxnContextPB; written tablets become participants. commit: CommitTransaction with the
 * participants; the coordinator replicates COMMITTED, answers with the commit hybrid time and then
 * has each participant apply. Conflicts, aborts, expiry and read restarts end the transaction with a
 * DbError (TXN_CONFLICT, TXN_ABORTED, TXN_EXPIRED, READ_RESTART); the caller retries the whole
 * transaction, never a single operation that may have applied.
 *
 * Read time and read restarts: CreateTransaction answers the read time (picked by the status
 * tablet's clock) and its uncertainty limit readHt + max_clock_skew_usec; every read of the
 * transaction, on every tablet, sends the same pair. A read that meets a version inside the window
 * gets READ_RESTART with the version's time. While no operation has used the read time yet (no read
 * result handed to the caller, no write sent), the transaction moves its read time there (same
 * limit) and the read is sent again, transparently; afterwards the transaction ends with
 * READ_RESTART (retryable: run the transaction again). YugabyteDB restarts the statement/transaction
 * the same way (its read time is per transaction for snapshot isolation).
 */
import { DbError, ErrorCode } from '../common/errors';
import { txnCoordinatorMethods, type TxnContextPB } from '../rpc';
import type { CallOptions, ReadOptions, Row, ScanOptions } from './client-types';
import { Deadline } from './retry-policy';
import { Table } from './table';
import { commitSingleTablet, DeferredWrites, fastPathRefused, sendDeferred, type DeferredWrite } from './fast-path';
import type { TxnBinding } from './txn-binding';
import { createTxnRecord, newTxnId, UNKNOWN_OUTCOME_CODES } from './txn-record';
import { settleUnknownCommit } from './commit-settle';
import type { CommitResult, IsolationLevel, TransactionDeps, TransactionOptions, TransactionState } from './transaction-types';

export { newTxnId } from './txn-record';
export type { CommitResult, IsolationLevel, TransactionDeps, TransactionOptions, TransactionState } from './transaction-types';

/** Participant tablets one transaction may touch (a bound on what a commit request carries). */
export const TXN_PARTICIPANTS_MAX = 100_000;
/** Table handles per transaction. */
const TXN_TABLES_MAX = 1000;
/** Codes that end a transaction: it cannot commit any more. */
/**
 * Heartbeats of one transaction unanswered at once; also how many periods one may take before it is
 * given up (a later one is on its way by then).
 */
const HEARTBEATS_IN_FLIGHT_MAX = 3;
/**
 * A transaction started without CreateTransaction heartbeats first after this many periods: until
 * then no record is needed (its status tablet treats it as pending while the id is creatable, 10
 * periods by default: transaction_max_missed_heartbeat_periods), and a shorter transaction never
 * costs its status tablet a heartbeat nor the PENDING record's Raft entry that the first one writes.
 */
const LAZY_FIRST_HEARTBEAT_PERIODS = 3;
const ENDING_CODES: ReadonlySet<string> = new Set<string>([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED, ErrorCode.TXN_EXPIRED, ErrorCode.TXN_NOT_FOUND, ErrorCode.READ_RESTART]);


export class Transaction implements TxnBinding {
  private stateValue: TransactionState = 'pending';
  /** Why the transaction ended (thrown by every later operation). */
  private endError: DbError | undefined;
  private readonly participantSet = new Set<string>();
  private readonly tables = new Map<string, Table>();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  /** Heartbeats sent and not yet answered (at most HEARTBEATS_IN_FLIGHT_MAX). */
  private heartbeatsInFlight = 0;
  readonly registersReads: boolean;
  /** The snapshot every read uses; moves forward only while readTimeFixed is false. */
  private readHtValue: bigint;
  /** Set once a read result reached the caller or a write was sent at readHtValue. */
  private readTimeFixed = false;
  /** Read restarts absorbed by moving the read time (console/tests). */
  readRestarts = 0;
  /** Blind writes kept back until the commit (deferWrites), else undefined. */
  private readonly deferred: DeferredWrites | undefined;
  /** Deferred writes being sent as intents (flushDeferred). */
  private flushing: Promise<void> | undefined;
  /** How the commit went: 'single-tablet' (fast path) or 'distributed' (tests, benchmarks). */
  commitPath: 'single-tablet' | 'distributed' | undefined;
  /** The status record being created (a deferWrites transaction creates it at its first need). */
  private creating: Promise<void> | undefined;
  /**
   * Started without CreateTransaction (txn_lazy_status_record) and no heartbeat has been answered
   * yet: the status tablet may hold no record, and the commit's first attempt and the heartbeats ask
   * it to create one (docs/transactions.md, "A status record without its own round trip").
   */
  private recordMayBeMissing = false;
  /** When the transaction began (performance.now()), for LAZY_FIRST_HEARTBEAT_PERIODS. */
  private readonly begunMs = performance.now();

  private constructor(
    private readonly deps: TransactionDeps,
    private txnIdValue: string,
    /** The status tablet holding the transaction's record; undefined while it has none. */
    private statusTabletValue: string | undefined,
    readonly isolation: IsolationLevel,
    readonly priority: number,
    /** The read time CreateTransaction answered (the transaction's start time; never moves); 0n without a record. */
    private startHtValue: bigint,
    /** Upper end of the uncertainty window (undefined: none, e.g. max_clock_skew_usec = 0). */
    private globalLimitValue: bigint | undefined,
    deferWrites = false,
  ) {
    this.deferred = deferWrites ? new DeferredWrites() : undefined;
    this.registersReads = isolation === 'serializable';
    this.readHtValue = startHtValue;
  }

  get txnId(): string {
    return this.txnIdValue;
  }

  /** The status tablet of the transaction's record; undefined while it has none (deferWrites, nothing but blind writes so far). */
  get statusTablet(): string | undefined {
    return this.statusTabletValue;
  }

  /** The read time CreateTransaction answered; 0n while the transaction has no status record. */
  get startHt(): bigint {
    return this.startHtValue;
  }

  get globalLimitHt(): bigint | undefined {
    return this.globalLimitValue;
  }

  /** Whether the transaction has a record on a status tablet (created at begin, or lazily: see begin). */
  get hasStatusRecord(): boolean {
    return this.statusTabletValue !== undefined;
  }

  /** The read time every read of the transaction uses (see the file comment on restarts). */
  get readHt(): bigint {
    return this.readHtValue;
  }

  /**
   * Create the transaction on a status tablet and start heartbeating. A `deferWrites` transaction
   * creates its record lazily (YugabyteDB creates it at the first write that needs one): nothing is
   * sent at begin, and a transaction whose blind writes commit by the single-tablet fast path never
   * has one (no CreateTransaction, no AbortTransaction; the tablet picks its read time under the
   * write's row locks). Its first read, write sent as intents, or distributed commit creates the
   * record first (flushDeferred), and the read time is the record's, as for any transaction.
   */
  static async begin(deps: TransactionDeps, o: TransactionOptions = {}): Promise<Transaction> {
    const isolation = o.isolation ?? 'snapshot';
    if (isolation !== 'snapshot' && isolation !== 'serializable') throw new DbError(ErrorCode.INVALID_ARGUMENT, `isolation must be 'snapshot' or 'serializable', got ${String(isolation)}`);
    const priority = o.priority ?? Math.random();
    if (!Number.isFinite(priority)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'priority must be a finite number');
    if (o.deferWrites === true) return new Transaction(deps, newTxnId(), undefined, isolation, priority, 0n, undefined, true);
    const r = await createTxnRecord(deps, isolation, priority, newTxnId(), new Deadline(o.timeoutMs ?? deps.timeoutMs));
    const txn = new Transaction(deps, r.txnId, r.statusTablet, isolation, priority, r.readHt, r.globalLimitHt, false);
    txn.recordMayBeMissing = r.lazy;
    txn.startHeartbeats();
    return txn;
  }

  /** Create the status record if the transaction has none yet (one creation at a time). */
  private async ensureRecord(): Promise<void> {
    while (this.creating) await this.creating.catch(() => undefined);
    if (this.statusTabletValue !== undefined) return;
    this.checkUsable();
    const run = createTxnRecord(this.deps, this.isolation, this.priority, this.txnIdValue, new Deadline(this.deps.timeoutMs)).then((r) => {
      this.txnIdValue = r.txnId;
      this.statusTabletValue = r.statusTablet;
      this.startHtValue = r.readHt;
      this.readHtValue = r.readHt;
      this.globalLimitValue = r.globalLimitHt;
      this.recordMayBeMissing = r.lazy;
      // Ended while the record was being created (closed, aborted): drop the record at once.
      if (this.endError) this.sendAbort(new Deadline(this.deps.timeoutMs)).catch(() => undefined);
      else this.startHeartbeats();
    });
    this.creating = run;
    try {
      await run;
    } finally {
      this.creating = undefined;
    }
  }

  get state(): TransactionState {
    return this.stateValue;
  }

  /** Tablets written so far (and, serializable, read): the commit reaches each of them. */
  participants(): string[] {
    return [...this.participantSet];
  }

  /** A table handle whose operations run inside this transaction (same API as client.table). */
  table(name: string): Table {
    let t = this.tables.get(name);
    if (!t) {
      if (this.tables.size >= TXN_TABLES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `a transaction uses at most ${TXN_TABLES_MAX} tables`);
      t = new Table(name, this.deps.cache, this.deps.invoker, this.deps.timeoutMs, this, false, this.deps.txnWrites);
      this.tables.set(name, t);
    }
    return t;
  }

  insert(table: string, row: Row, o?: CallOptions): Promise<void> {
    return this.table(table).insert(row, o);
  }
  upsert(table: string, row: Row, o?: CallOptions): Promise<void> {
    return this.table(table).upsert(row, o);
  }
  update(table: string, row: Row, o?: CallOptions): Promise<void> {
    return this.table(table).update(row, o);
  }
  delete(table: string, key: Row, o?: CallOptions): Promise<void> {
    return this.table(table).delete(key, o);
  }
  get(table: string, key: Row, o?: ReadOptions): Promise<Row | undefined> {
    return this.table(table).get(key, o);
  }
  scan(table: string, o?: ScanOptions): Promise<Row[]> {
    return this.table(table).scan(o);
  }

  // ---- TxnBinding (used by Table) -----------------------------------------------------------------

  context(): TxnContextPB {
    this.checkUsable();
    // flushDeferred, which every operation but a deferred write awaits first, created the record.
    if (this.statusTabletValue === undefined) throw new DbError(ErrorCode.INTERNAL, `transaction ${this.txnIdValue}: an operation ran before its status record was created`);
    return {
      txnId: this.txnId,
      statusTablet: this.statusTablet,
      isolation: this.isolation,
      priority: this.priority,
      startHt: this.startHtValue,
      readHt: this.readHtValue,
      ...(this.globalLimitHt !== undefined ? { globalLimitHt: this.globalLimitHt } : {}),
    };
  }

  deferWrite(w: DeferredWrite): boolean {
    this.checkUsable();
    return this.deferred !== undefined && this.deferred.add(w);
  }

  async flushDeferred(): Promise<void> {
    // Every operation but a deferred write needs the status record (its read time, its intents).
    if (this.statusTabletValue === undefined) {
      try {
        await this.ensureRecord();
      } catch (e) {
        throw this.failed(e, false);
      }
    }
    // Concurrent operations all wait for the writes in flight: each must see them.
    while (this.flushing) await this.flushing.catch(() => undefined);
    if (!this.deferred || this.deferred.size === 0) return;
    const run = sendDeferred(this.deferred.take());
    this.flushing = run;
    try {
      await run;
    } catch (e) {
      throw this.failed(e, true);
    } finally {
      this.flushing = undefined;
    }
  }

  fixReadTime(): void {
    this.readTimeFixed = true;
  }

  restartRead(usedReadHt: bigint, restartHt: bigint): boolean {
    if (this.endError) return false;
    // Another read already moved the read time: this one simply reads again at the new time.
    if (usedReadHt !== this.readHtValue) return true;
    if (this.readTimeFixed) return false;
    if (restartHt > this.readHtValue) {
      this.readHtValue = restartHt;
      // The commit (and every later operation) must come after the new read time.
      this.deps.invoker.observeHt(restartHt);
    }
    this.readRestarts++;
    return true;
  }

  acceptRead(usedReadHt: bigint): boolean {
    // Serializable reads run at the time each tablet picks under its read locks, not at readHt.
    if (this.registersReads) return true;
    if (usedReadHt !== this.readHtValue) return false;
    this.readTimeFixed = true;
    return true;
  }

  addParticipant(tabletId: string): void {
    if (this.participantSet.has(tabletId)) return;
    if (this.participantSet.size >= TXN_PARTICIPANTS_MAX) throw this.end(new DbError(ErrorCode.INVALID_ARGUMENT, `transaction ${this.txnId} touches more than ${TXN_PARTICIPANTS_MAX} tablets`));
    this.participantSet.add(tabletId);
  }

  failed(e: unknown, wasWrite: boolean): Error {
    const err = DbError.from(e);
    if (this.endError) return this.endError;
    if (err.code === ErrorCode.READ_RESTART) {
      return this.end(
        new DbError(
          ErrorCode.READ_RESTART,
          `transaction ${this.txnId} must restart: ${err.message}; its read time ${this.readHtValue} was already used, so it cannot move (retry the transaction)`,
          { ...err.details, txnId: this.txnId },
          { cause: err },
        ),
      );
    }
    if (ENDING_CODES.has(err.code)) return this.end(err);
    // A write whose outcome is unknown may have left intents the transaction cannot account for.
    if (wasWrite && UNKNOWN_OUTCOME_CODES.has(err.code)) return this.end(new DbError(ErrorCode.TXN_ABORTED, `transaction ${this.txnId} aborted: a write's outcome is unknown (${err.code}: ${err.message})`, { cause: err.code }, { cause: err }));
    return err;
  }

  // ---- commit / abort -----------------------------------------------------------------------------

  /**
   * Commit: the coordinator replicates COMMITTED and answers with the commit hybrid time. A commit
   * whose answer was lost is settled by asking the coordinator for the status, never by guessing.
   */
  async commit(o?: CallOptions): Promise<CommitResult> {
    this.checkUsable();
    const d = new Deadline(o?.timeoutMs ?? this.deps.timeoutMs);
    const fast = await this.commitFastPath(d);
    if (fast) return fast;
    await this.flushDeferred();
    this.checkUsable();
    const statusTablet = this.statusTabletValue!;
    this.stateValue = 'committing';
    this.commitPath = 'distributed';
    const m = txnCoordinatorMethods();
    const req = { statusTablet, txnId: this.txnId, participantTablets: this.participants(), propagatedHt: this.deps.invoker.propagatedHt };
    try {
      let commitHt: bigint;
      try {
        // One attempt waits at most rpcSingleCallTimeoutMs: a hung status tablet leader (paused, a
        // stuck disk) then costs one such wait, and the outcome is settled with the new leader.
        // Only the first attempt may create a lazily started transaction's record: a resend (settleUnknownCommit) never does.
        const r = await this.deps.statusTablets.call(statusTablet, m.commitTransaction, this.recordMayBeMissing ? { ...req, createIfMissing: true } : req, d, false, true);
        commitHt = BigInt(r.commitHt ?? 0n);
      } catch (e) {
        const err = DbError.from(e);
        if (!UNKNOWN_OUTCOME_CODES.has(err.code)) throw err;
        commitHt = await settleUnknownCommit(this.deps.statusTablets, req, this.startHt, d, err);
      }
      if (commitHt === 0n) throw new DbError(ErrorCode.INTERNAL, `CommitTransaction of ${this.txnId} answered without a commit time`);
      this.deps.invoker.observeHt(commitHt);
      this.stateValue = 'committed';
      if (this.deps.commits) this.deps.commits.distributed++;
      this.stopHeartbeats();
      return { commitHt };
    } catch (e) {
      const err = DbError.from(e);
      this.end(ENDING_CODES.has(err.code) ? err : new DbError(err.code, `commit of transaction ${this.txnId} failed: ${err.message}`, { ...err.details, txnId: this.txnId }, { cause: err, retryable: false }));
      throw this.endError!;
    }
  }

  /**
   * The single-tablet fast path (client/fast-path.ts): taken when every write was kept back, they
   * all fall in one tablet and the transaction holds nothing anywhere (no intents, no read locks).
   * Undefined: not taken (or refused by the tablet: enable_txn_fast_path off), commit the distributed way.
   */
  private async commitFastPath(d: Deadline): Promise<CommitResult | undefined> {
    const where = this.deferred?.singleTablet();
    if (!this.deferred || !where || this.participantSet.size > 0) return undefined;
    this.checkUsable();
    // Without a record the transaction never read: no read time either, the tablet picks it.
    const ctx: TxnContextPB = this.statusTabletValue === undefined ? { txnId: this.txnIdValue, isolation: this.isolation, priority: this.priority } : this.context();
    this.stateValue = 'committing';
    let commitHt: bigint;
    try {
      const ops = this.deferred.ops();
      const alone = (requestId?: number): Promise<bigint> => commitSingleTablet(this.deps.invoker, where, ops, ctx, d, requestId);
      // With batchWrites, concurrent transactions' fast-path commits to one tablet share a Write RPC.
      commitHt = this.deps.txnWrites ? await this.deps.txnWrites.write(where.table, where.tabletId, where.schemaVersion, ops, ctx, d, alone, true) : await alone();
    } catch (e) {
      this.stateValue = 'pending';
      if (fastPathRefused(e)) return undefined;
      const err = DbError.from(e);
      // After an unknown outcome the tablet may have committed it: say so, as the distributed commit does.
      const unknown = UNKNOWN_OUTCOME_CODES.has(err.code) && err.code !== ErrorCode.INTERNAL;
      this.end(ENDING_CODES.has(err.code) ? err : new DbError(unknown ? ErrorCode.TIMED_OUT : err.code, `single-tablet commit of transaction ${this.txnId} failed: ${err.message}`, { ...err.details, txnId: this.txnId, ...(unknown ? { outcome: 'unknown' } : {}) }, { cause: err, retryable: false }));
      throw this.endError!;
    }
    this.deferred.take();
    this.deps.invoker.observeHt(commitHt);
    this.stateValue = 'committed';
    this.commitPath = 'single-tablet';
    if (this.deps.commits) this.deps.commits.singleTablet++;
    this.stopHeartbeats();
    // The status tablet's record (if a read created one) was never needed: a leader-only one is
    // dropped without a Raft entry.
    if (this.statusTabletValue !== undefined) this.sendAbort(new Deadline(this.deps.timeoutMs)).catch(() => undefined);
    return { commitHt };
  }

  /** Abort: the coordinator records ABORTED and has the participants remove the intents. Idempotent. */
  async abort(o?: CallOptions): Promise<void> {
    if (this.stateValue === 'committed') throw new DbError(ErrorCode.INVALID_ARGUMENT, `transaction ${this.txnId} is already committed`);
    if (this.stateValue === 'aborted') return;
    this.end(new DbError(ErrorCode.TXN_ABORTED, `transaction ${this.txnId} was aborted by the client`));
    this.stateValue = 'aborted';
    this.deferred?.take();
    await this.sendAbort(new Deadline(o?.timeoutMs ?? this.deps.timeoutMs));
  }

  /** Abort the record on the status tablet (none: nothing of the transaction exists anywhere). */
  private async sendAbort(d: Deadline): Promise<void> {
    const statusTablet = this.statusTabletValue;
    // None, or a lazily started transaction that wrote nowhere and was never heard of: nothing to abort.
    if (statusTablet === undefined || (this.recordMayBeMissing && this.participantSet.size === 0)) return;
    const r = await this.deps.statusTablets.call(
      statusTablet,
      txnCoordinatorMethods().abortTransaction,
      { statusTablet, txnId: this.txnId, participantTablets: this.participants() },
      d,
      true,
    );
    if (r.status === 'COMMITTED') throw new DbError(ErrorCode.INVALID_ARGUMENT, `transaction ${this.txnId} had already committed`);
  }

  /** Stop heartbeats without telling the coordinator (tests; the record then expires). */
  close(): void {
    this.stopHeartbeats();
    if (this.stateValue === 'pending') this.end(new DbError(ErrorCode.TXN_ABORTED, `transaction ${this.txnId} was closed`));
  }

  // ---- internals ----------------------------------------------------------------------------------

  private checkUsable(): void {
    if (this.endError) throw this.endError;
    if (this.stateValue !== 'pending') throw new DbError(ErrorCode.INVALID_ARGUMENT, `transaction ${this.txnId} is ${this.stateValue}`);
  }

  /**
   * End the transaction with `err` (the first reason wins): stop heartbeats and, while the outcome
   * is not a commit, ask the coordinator to abort so participants drop the intents early.
   */
  private end(err: DbError): DbError {
    if (this.endError) return this.endError;
    this.endError = err;
    // Writes never sent are simply dropped: nothing of them exists anywhere.
    this.deferred?.take();
    const wasPending = this.stateValue === 'pending' || this.stateValue === 'committing';
    if (this.stateValue !== 'committed') this.stateValue = err.code === ErrorCode.TXN_ABORTED || err.code === ErrorCode.TXN_EXPIRED ? 'aborted' : 'failed';
    this.stopHeartbeats();
    if (wasPending && err.code !== ErrorCode.TXN_ABORTED) {
      // Best effort: the coordinator would abort it after missed heartbeats anyway.
      this.sendAbort(new Deadline(this.deps.timeoutMs)).catch(() => undefined);
    }
    return err;
  }

  private startHeartbeats(): void {
    this.heartbeatTimer = setInterval(() => this.heartbeat(), Math.max(1, this.deps.heartbeatMs));
    this.heartbeatTimer.unref();
  }

  private stopHeartbeats(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  /**
   * One heartbeat per period. Normally each is answered within the period; when the servers are slow
   * (a busy event loop, an overloaded machine) the next one goes out on time anyway, up to
   * HEARTBEATS_IN_FLIGHT_MAX unanswered: the coordinator expires a transaction by the gap between
   * heartbeats it *received* (docs/transactions.md, "Heartbeats under load"), and waiting for each
   * answer before sending the next would stretch that gap to two round trips. A lost one is harmless.
   */
  private heartbeat(): void {
    const statusTablet = this.statusTabletValue;
    if (this.heartbeatsInFlight >= HEARTBEATS_IN_FLIGHT_MAX || this.endError || statusTablet === undefined) return;
    if (this.recordMayBeMissing && performance.now() - this.begunMs < LAZY_FIRST_HEARTBEAT_PERIODS * this.deps.heartbeatMs) return;
    this.heartbeatsInFlight++;
    this.deps.statusTablets
      .call(statusTablet, txnCoordinatorMethods().heartbeatTransaction, { statusTablet, txnId: this.txnId, ...(this.recordMayBeMissing ? { createIfMissing: true } : {}) }, new Deadline(Math.max(100, this.deps.heartbeatMs * HEARTBEATS_IN_FLIGHT_MAX)), true)
      .then((r) => {
        if (r.status === 'PENDING') this.recordMayBeMissing = false;
        if (r.status === 'ABORTED' && this.stateValue === 'pending') this.end(new DbError(ErrorCode.TXN_ABORTED, `transaction ${this.txnId} was aborted by its coordinator (expired or lost a conflict)`));
      })
      .catch((e: unknown) => {
        const err = DbError.from(e);
        if (ENDING_CODES.has(err.code) && this.stateValue === 'pending') this.end(err);
      })
      .finally(() => {
        this.heartbeatsInFlight--;
      });
  }
}
