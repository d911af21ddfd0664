/**
 * TransactionCoordinator: the transaction records of one status tablet (a tablet of the system table
 * `transactions`). Records change only through TXN_STATUS Raft entries; every replica keeps the map
 * (fed by the tablet's apply stage) and a RegularDB row per record, so a restart rebuilds the map
 * from DocDB. Only the leader answers RPCs, tracks heartbeats (memory only), expires silent
 * transactions, and drives APPLY/REMOVE to the participants of finished transactions until every
 * participant leader acknowledged — then it replicates FORGOTTEN, and an unknown id reads ABORTED.
 *
 * A new transaction's record starts on the leader only ("unreplicated"): CreateTransaction answers
 * without a Raft round, and the record first goes through Raft with the commit (COMMITTED), an
 * abort (ABORTED) or the transaction's first heartbeat (PENDING: a transaction that lives longer than
 * one heartbeat period becomes durable and survives a leader change). Most transactions thus cost
 * one Raft entry on the status tablet instead of two. Why it is safe: a transaction commits only
 * through a COMMITTED entry proposed by a leader holding its record. An unreplicated record lives on
 * one leader in one term and is dropped when that leadership ends; a COMMITTED entry the old leader
 * managed to replicate to a majority is in the new leader's log and applied before that leader is
 * ready. So a ready leader without any record of a transaction knows it can never commit (it answers
 * ABORTED, as for a forgotten or never-created id), and a later commit of it fails with TXN_ABORTED,
 * which the client retries as a new transaction. Expiry of an unreplicated record simply drops it.
 * A requested leadership transfer (leader balancing, `tessera stepdown`) first replicates every
 * leader-only record and, for an election timeout, replicates new ones at once, so only unplanned
 * leader changes abort short transactions.
 *
 * A new leader resets every heartbeat to "now" (it never saw the old ones) and re-drives every
 * COMMITTED/ABORTED record (recovery after kill -9 of the old leader).
 *
 * "No record" thus means "never committed" or "committed, applied everywhere and forgotten" (a client
 * whose commit answer was lost is settled from the record row's history: record-history.ts) — or, for
 * a transaction started without CreateTransaction, "not created yet" (lazy-records.ts).
 */
import { notFound, type TxnInfo } from './coordinator-answers';
import { ForgetBatcher } from './forget-batcher';
import { driveParticipants } from './participant-driver';
export { parseIsolation, type TxnInfo } from './coordinator-answers';
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import type { Logger } from '../../common/log';
import { Isolation } from '../../docdb';
import type { TabletEvents, TabletPeer } from '../tablet/tablet-peer';
import type { TabletOp } from '../tablet/tablet-op';
import { TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS, TEST_FAIL_BEFORE_COMMIT_MS, TEST_INJECT_TXN_GET_STATUS_DELAY_MS, TRANSACTION_CHECK_INTERVAL_MS, TRANSACTION_HEARTBEAT_USEC, TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS, TXN_STATUS_AT_RAFT_COMMIT } from './txn-flags';
import { decodeRecordPayload, decodeRecordRow, encodeForgetPayload, encodeRecordPayload, forgottenIds, RECORD_COLUMN_ID, RecordStatus, type TxnRecord } from '../tablet/participant/txn-record';
import { recordHistory } from './record-history';
import { LazyRecords, type UnknownAnswer } from './lazy-records';

/** Records one status tablet holds before CreateTransaction answers SERVICE_UNAVAILABLE. */
export const TXN_RECORDS_MAX = 100_000;
/** Participants one transaction may name. */
export const TXN_PARTICIPANTS_MAX = 100_000;
/** How long after a requested leadership transfer began new records are replicated at once. */
const TRANSFER_HOLD_MS = 5_000;

export interface CoordinatorDeps {
  peer: TabletPeer;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  /** UpdateTransaction to a participant tablet's leader; resolves once it acknowledged. */
  updateParticipant(tabletId: string, txnId: TxnId, type: 'APPLY' | 'REMOVE', commitHt: HybridTime, timeoutMs: number): Promise<void>;
  nowMs?(): number;
}

export class TransactionCoordinator {
  private readonly records = new Map<TxnId, TxnRecord>();
  private readonly heartbeats = new Map<TxnId, number>();
  /** When tick() last ran (now()): a long gap is this leader's own stall. */
  private lastTickMs: number | undefined;
  private readonly createdMs = new Map<TxnId, number>();
  /** Until this time (now()), new records are replicated at once: a requested leadership transfer is under way. */
  private transferringUntilMs = 0;
  /** PENDING records created by this leader and not (yet) replicated → the term they were created in (see the file comment). */
  private readonly unreplicated = new Map<TxnId, number>();
  /** Finished transactions being driven: the participants not yet acknowledged. */
  private readonly driving = new Map<TxnId, Set<string>>();
  /** Serializes state changes per transaction (commit vs abort vs expiry). */
  private readonly txnLocks = new Map<TxnId, Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly now: () => number;
  /**
   * madeDurable: unreplicated records a heartbeat replicated as PENDING; neverCommitted: status answers
   * that proved an unknown transaction never committed; forgottenCommitAnswers: status answers (with
   * the caller's start time) that told a forgotten transaction COMMITTED from its record's history;
   * uncovered: such answers left indefinite (the transaction started below the history floor).
   */
  readonly metrics = { created: 0, madeDurable: 0, committed: 0, aborted: 0, expired: 0, forgotten: 0, applyRpcs: 0, neverCommitted: 0, forgottenCommitAnswers: 0, uncovered: 0 };

  /** What the status tablet's replica tells this coordinator (the one way from tablet to coordinator). */
  private readonly events: TabletEvents = {
    txnStatusApplied: (op) => this.onApplied(op),
    // A remote bootstrap replaced the records' source: rebuild them (the replica serves nothing meanwhile).
    snapshotInstalled: () => this.reloadAfterSnapshot(),
    beforeLeaderTransfer: () => this.beforeTransfer(),
    leaderChanged: (c) => {
      // Any change of term ends the leadership the unreplicated records belong to, even when this
      // replica is leader again in the new term.
      this.dropUnreplicated(c.isLeader ? c.term : -1);
      if (c.isLeader) this.onBecomeLeader();
      else this.driving.clear();
    },
  };

  constructor(private readonly deps: CoordinatorDeps) {
    this.now = deps.nowMs ?? (() => performance.now());
    this.lazy = new LazyRecords({ flags: deps.flags, wallMicros: () => deps.clock.wallMicros(), db: () => deps.peer.db(), replicateNew: (rec) => this.replicate(rec, deps.peer.nextHt()) });
    this.forgets = new ForgetBatcher({
      flags: deps.flags,
      isStopped: () => this.stopped,
      withTxnLock: (id, f) => this.withTxnLock(id, f),
      proposeForget: (ids) => deps.peer.proposeOp({ type: 'TXN_STATUS', txnId: ids[0]!, status: RecordStatus.FORGOTTEN, ht: deps.peer.nextHt(), payload: encodeForgetPayload(ids.slice(1)) }),
    });
  }

  get tabletId(): string {
    return this.deps.peer.tabletId;
  }

  async start(): Promise<void> {
    const peer = this.deps.peer;
    peer.attachEvents(this.events);
    await this.load();
    if (peer.isLeaderReady()) this.onBecomeLeader();
    this.timer = setInterval(() => this.tick(), this.deps.flags.get(TRANSACTION_CHECK_INTERVAL_MS));
  }

  isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.deps.peer.attachEvents(undefined);
  }

  /**
   * After a remote bootstrap: the snapshot's records were never applied through the listener, so
   * the map (and everything derived from it) is rebuilt from the new RegularDB. Without this a replica
   * that caught up by snapshot and then became leader answered "no record: ABORTED" for transactions
   * that committed (found by tessera verify right after partitions healed).
   */
  async reloadAfterSnapshot(): Promise<void> {
    this.records.clear();
    this.heartbeats.clear();
    this.createdMs.clear();
    this.driving.clear();
    this.unreplicated.clear();
    await this.load();
  }

  /** Rebuild the map from the RegularDB rows (entries applied later update it through the listener). */
  private async load(): Promise<void> {
    let start: Uint8Array | undefined;
    for (let page = 0; page < 1000; page++) {
      const r = await this.deps.peer.db().scan({ readHt: (1n << 63n) - 1n, resolveStatus: () => Promise.resolve({ status: 'PENDING' }), limit: 1000, ...(start ? { startKey: start } : {}) });
      for (const row of r.rows) {
        const id = row.key.hashed[0];
        const v = row.columns.get(RECORD_COLUMN_ID);
        if (typeof id !== 'string' || !(v instanceof Uint8Array)) continue;
        const txnId = TxnId(id);
        if (!this.records.has(txnId)) this.records.set(txnId, decodeRecordRow(txnId, v));
      }
      if (!r.resumeKey) break;
      start = r.resumeKey;
    }
    const t = this.now();
    for (const id of this.records.keys()) this.createdMs.set(id, t);
  }

  private onApplied(op: Extract<TabletOp, { type: 'TXN_STATUS' }>): void {
    if (op.status === RecordStatus.FORGOTTEN) {
      const ids = forgottenIds(op.txnId, op.payload);
      for (const id of ids) {
        this.records.delete(id);
        this.unreplicated.delete(id);
        this.heartbeats.delete(id);
        this.createdMs.delete(id);
        this.driving.delete(id);
      }
      return;
    }
    if (op.status !== 'PENDING' && op.status !== 'COMMITTED' && op.status !== 'ABORTED') return;
    const rec = decodeRecordPayload(op.txnId, op.status, op.payload);
    // A final record put in force at its commit (replicate) stays: an older PENDING entry applied after it is stale.
    if (rec.status === 'PENDING' && this.records.get(op.txnId)?.status === 'COMMITTED') return;
    this.records.set(op.txnId, rec);
    this.unreplicated.delete(op.txnId);
    if (!this.createdMs.has(op.txnId)) this.createdMs.set(op.txnId, this.now());
    if (rec.status === 'PENDING' && !this.heartbeats.has(op.txnId)) this.heartbeats.set(op.txnId, this.now());
  }

  /**
   * Drop the unreplicated records of every term but `keepTerm`: that leadership ended, and only this
   * replica knew them, so their transactions can no longer commit.
   */
  private dropUnreplicated(keepTerm: number): void {
    for (const [id, term] of this.unreplicated) if (term !== keepTerm) this.dropLocal(id);
  }

  /** Forget a record only this leader holds (nothing outside it knows the transaction). */
  private dropLocal(id: TxnId): void {
    this.unreplicated.delete(id);
    this.records.delete(id);
    this.heartbeats.delete(id);
    this.createdMs.delete(id);
  }

  /** Replicate a leader-only PENDING record (under its lock); a no-op once it is replicated or gone. */
  private makeDurable(id: TxnId): Promise<void> {
    return this.withTxnLock(id, async () => {
      const r = this.record(id);
      if (r?.status !== 'PENDING' || !this.unreplicated.has(id)) return;
      this.requireLeader();
      await this.replicate(r, this.deps.peer.nextHt());
      this.metrics.madeDurable++;
    });
  }

  /** The record of `id`, unless it is an unreplicated one of an earlier term (then it is dropped). */
  private record(id: TxnId): TxnRecord | undefined {
    const term = this.unreplicated.get(id);
    if (term !== undefined && term !== this.deps.peer.currentTerm()) this.dropUnreplicated(this.deps.peer.currentTerm());
    return this.records.get(id);
  }

  /**
   * Before a requested leadership transfer: replicate every leader-only record (the next leader then
   * knows them), and new ones at once until an election timeout has passed.
   */
  private async beforeTransfer(): Promise<void> {
    this.transferringUntilMs = this.now() + TRANSFER_HOLD_MS;
    await Promise.all([...this.unreplicated.keys()].map((id) => this.makeDurable(id)));
  }

  private onBecomeLeader(): void {
    const t = this.now();
    for (const [id, r] of this.records) if (r.status === 'PENDING') this.heartbeats.set(id, t);
  }

  private requireLeader(): void {
    if (this.stopped) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `status tablet ${this.tabletId} is stopping`);
    // Throws NOT_THE_LEADER (with hint) / LEADER_NOT_READY like every tablet operation.
    if (!this.deps.peer.isLeaderReady()) this.deps.peer.checkLeader();
  }

  private withTxnLock<T>(id: TxnId, f: () => Promise<T>): Promise<T> {
    const prev = this.txnLocks.get(id) ?? Promise.resolve();
    const run = prev.then(f, f);
    const tail = run.catch(() => undefined);
    this.txnLocks.set(id, tail);
    void tail.then(() => {
      if (this.txnLocks.get(id) === tail) this.txnLocks.delete(id);
    });
    return run;
  }

  /**
   * `atCommit`: the record is in force (the map, status answers, driving) once its entry is
   * Raft-committed, not after this leader's apply — as a committed entry it is what every replica
   * will apply, and a new leader applies it before it is ready (onApplied never takes a record back
   * to PENDING). With txn_status_at_raft_commit (default) at every commit: the leader's own apply
   * (a RocksDB write through the thread pool, queued behind the tablet's other applies) is then off
   * the path of the client's answer and of the APPLYs (docs/transactions.md, "Apply lag"); else only
   * when that apply would wait behind others and tablet_write_answer_at_commit is on.
   */
  private async replicate(rec: TxnRecord, ht: HybridTime, atCommit = false): Promise<void> {
    const op = { type: 'TXN_STATUS' as const, txnId: rec.txnId, status: rec.status, ht, payload: encodeRecordPayload(rec) };
    await this.deps.peer.proposeOp(op, undefined, undefined, atCommit ? () => this.onApplied(op) : undefined, atCommit && this.deps.flags.get(TXN_STATUS_AT_RAFT_COMMIT));
  }

  /** FORGOTTEN entries, each for every transaction finished meanwhile (forget-batcher.ts). */
  private readonly forgets: ForgetBatcher;
  /** Transactions started without CreateTransaction (lazy-records.ts). */
  readonly lazy: LazyRecords;

  /** The answer for an id without a record that a lazily started transaction may carry (undefined: not such an id). */
  private async unknownLazy(txnId: TxnId, settle: boolean, participants: string[] = []): Promise<UnknownAnswer | undefined> {
    if (!this.lazy.state(txnId)) return undefined;
    const a = await this.withTxnLock(txnId, async () => {
      const r = this.record(txnId);
      if (r) return { status: r.status as UnknownAnswer['status'], commitHt: r.commitHt, priority: r.priority, neverCommitted: r.status === 'ABORTED' };
      return this.lazy.answerUnknown(txnId, settle, participants);
    });
    if (a?.status === 'ABORTED') this.drive(txnId);
    return a;
  }

  // ---- RPCs ------------------------------------------------------------------------------------

  async create(txnId: TxnId, isolation: Isolation, priority: number, propagatedHt?: HybridTime): Promise<HybridTime> {
    this.requireLeader();
    if (propagatedHt) this.deps.clock.update(propagatedHt);
    return this.withTxnLock(txnId, async () => {
      const existing = this.record(txnId);
      if (existing) {
        if (existing.status !== 'PENDING') throw notFound(txnId);
        return existing.startHt; // a retried CreateTransaction
      }
      if (this.records.size >= TXN_RECORDS_MAX) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `status tablet ${this.tabletId} holds ${TXN_RECORDS_MAX} transactions`);
      // Checked again under the lock: a record created after leadership ended would outlive the
      // drop of unreplicated records and could be committed by a deposed leader's later term.
      this.requireLeader();
      const ht = this.deps.peer.nextHt();
      const rec: TxnRecord = { txnId, status: 'PENDING', isolation, priority, startHt: ht, commitHt: 0n, participants: [] };
      const t = this.now();
      this.heartbeats.set(txnId, t);
      this.createdMs.set(txnId, t);
      if (t < this.transferringUntilMs) {
        await this.replicate(rec, ht);
      } else {
        this.records.set(txnId, rec);
        this.unreplicated.set(txnId, this.deps.peer.currentTerm());
      }
      this.metrics.created++;
      return ht;
    });
  }

  /**
   * A heartbeat keeps a PENDING transaction alive; the first one of a transaction whose record is
   * still unreplicated replicates it (PENDING), so a longer transaction survives a leader change.
   */
  async heartbeat(txnId: TxnId, createIfMissing = false): Promise<string> {
    this.requireLeader();
    const r = this.record(txnId);
    // A lazily started transaction's first heartbeat creates its record (lazy-records.ts).
    if (!r && createIfMissing && this.lazy.state(txnId)) return this.withTxnLock(txnId, async () => this.record(txnId)?.status ?? this.lazy.createAtHeartbeat(txnId));
    if (!r) return 'ABORTED';
    if (r.status === 'PENDING') this.heartbeats.set(txnId, this.now());
    if (r.status === 'PENDING' && this.unreplicated.has(txnId)) {
      await this.makeDurable(txnId);
      return this.record(txnId)?.status ?? 'ABORTED';
    }
    return r.status;
  }

  /** `createIfMissing`: the first commit attempt of a lazily started transaction, which creates its record (lazy-records.ts). */
  async commit(txnId: TxnId, participants: string[], propagatedHt?: HybridTime, createIfMissing = false): Promise<HybridTime> {
    const delay = this.deps.flags.get(TEST_FAIL_BEFORE_COMMIT_MS);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    this.requireLeader();
    if (propagatedHt) this.deps.clock.update(propagatedHt);
    if (participants.length > TXN_PARTICIPANTS_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `at most ${TXN_PARTICIPANTS_MAX} participants`);
    const commitHt = await this.withTxnLock(txnId, async () => {
      const r = this.record(txnId) ?? (createIfMissing ? this.lazy.newRecord(txnId) : undefined);
      if (!r || r.status === 'ABORTED') throw notFound(txnId);
      if (r.status === 'COMMITTED') return r.commitHt; // a retried commit
      this.requireLeader();
      // The leader's clock already passed every read time a PENDING answer was given for.
      const ht = this.deps.peer.nextHt();
      await this.replicate({ ...r, status: 'COMMITTED', commitHt: ht, participants: [...new Set(participants)] }, ht, true);
      if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', txn: txnId, commitHt: String(ht), participants }, 'committed');
      this.metrics.committed++;
      return ht;
    });
    this.drive(txnId);
    return commitHt;
  }

  async abort(txnId: TxnId, participants: string[], why = 'client'): Promise<'ABORTED' | 'COMMITTED'> {
    this.requireLeader();
    if (!this.record(txnId)) {
      // A lazily started transaction without a record: an ABORTED record first, so it cannot be created later.
      const a = await this.unknownLazy(txnId, true, participants);
      if (a && a.status !== 'PENDING') return a.status;
    }
    const st = await this.withTxnLock(txnId, async () => {
      const r = this.record(txnId);
      if (!r) return 'ABORTED' as const;
      if (r.status === 'COMMITTED') return 'COMMITTED' as const;
      if (r.status === 'ABORTED') return 'ABORTED' as const;
      const merged = [...new Set([...r.participants, ...participants])].slice(0, TXN_PARTICIPANTS_MAX);
      // A leader-only record of a transaction that wrote nowhere (a read-only one, or one the
      // single-tablet fast path committed without it): dropping it is what its expiry would do, and
      // costs no Raft entry.
      if (merged.length === 0 && this.unreplicated.has(txnId)) {
        this.dropLocal(txnId);
        return 'FORGOTTEN' as const;
      }
      await this.replicate({ ...r, status: 'ABORTED', participants: merged }, this.deps.peer.nextHt());
      this.metrics.aborted++;
      this.deps.log.debug({ txnId, why }, 'transaction aborted');
      return 'ABORTED' as const;
    });
    if (st === 'ABORTED') this.drive(txnId);
    return st === 'FORGOTTEN' ? 'ABORTED' : st;
  }

  /**
   * The status of each transaction (ABORTED for an unknown id). `startHts` (optional, by position):
   * the caller's knowledge of a transaction's start time (a client settling a lost commit answer);
   * then a transaction forgotten after its commit is answered COMMITTED with its commit time, and
   * `neverCommitted` says whether ABORTED is definite — the record says so, or its history proves it
   * (settleFromHistory). Without it, "no record" reads ABORTED, which may also be a commit already
   * applied everywhere and forgotten (right for a reader: its intents are gone).
   */
  async getStatus(txnIds: TxnId[], readHt?: HybridTime, startHts?: readonly HybridTime[]): Promise<Array<{ txnId: TxnId; status: string; commitHt: HybridTime; priority: number; neverCommitted: boolean }>> {
    const delay = this.deps.flags.get(TEST_INJECT_TXN_GET_STATUS_DELAY_MS);
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    this.requireLeader();
    // Answer only as the proven leader (lease or ReadIndex): a deposed leader's records are stale.
    await this.deps.peer.confirmLeadership();
    // A PENDING answer promises the commit time will exceed the reader's read time.
    if (readHt) this.deps.clock.update(readHt);
    // A commit (or abort) in flight already chose its time: answering PENDING now could hide a
    // transaction that then commits below the reader's read time (a fractured read, found by the bank
    // workload). Wait for the in-flight update of that transaction to finish, then answer.
    for (const txnId of txnIds) if (this.txnLocks.has(txnId)) await this.withTxnLock(txnId, () => Promise.resolve());
    const trace = this.deps.log.isLevelEnabled('debug');
    const out: Array<{ txnId: TxnId; status: string; commitHt: HybridTime; priority: number; neverCommitted: boolean }> = [];
    for (let i = 0; i < txnIds.length; i++) {
      const txnId = txnIds[i]!;
      const r = this.record(txnId);
      if (trace) this.deps.log.debug({ trace: 'txn', txn: txnId, readHt: String(readHt ?? 0n), status: r?.status ?? 'none' }, 'get status');
      if (r) {
        out.push({ txnId, status: r.status, commitHt: r.commitHt, priority: r.priority, neverCommitted: r.status === 'ABORTED' });
        continue;
      }
      const startHt = startHts?.[i];
      const settle = startHt !== undefined && startHt > 0n;
      const lazy = await this.unknownLazy(txnId, settle);
      if (lazy) {
        if (settle) this.countSettled(lazy);
        out.push({ txnId, ...lazy });
        continue;
      }
      if (startHt === undefined || startHt <= 0n) {
        out.push({ txnId, status: 'ABORTED', commitHt: 0n, priority: 0, neverCommitted: false });
        continue;
      }
      // The caller settles a lost commit answer: a forgotten commit is told as what it was.
      const h = await recordHistory(this.deps.peer.db(), txnId, startHt);
      const a = h.committedAt !== undefined ? { status: 'COMMITTED', commitHt: h.committedAt, neverCommitted: false } : { status: 'ABORTED', commitHt: 0n, neverCommitted: h.neverCommitted };
      this.countSettled(a);
      out.push({ txnId, ...a, priority: 0 });
    }
    return out;
  }

  private countSettled(a: { status: string; neverCommitted: boolean }): void {
    if (a.status === 'COMMITTED') this.metrics.forgottenCommitAnswers++;
    else if (a.neverCommitted) this.metrics.neverCommitted++;
    else if (a.status === 'ABORTED') this.metrics.uncovered++;
  }

  // ---- background: expiry and APPLY/REMOVE driving ----------------------------------------------

  private tick(): void {
    const t = this.now();
    const last = this.lastTickMs ?? t;
    this.lastTickMs = t;
    if (this.stopped || !this.deps.peer.isLeaderReady()) return;
    const limitMs = (this.deps.flags.get(TRANSACTION_HEARTBEAT_USEC) / 1000) * this.deps.flags.get(TRANSACTION_MAX_MISSED_HEARTBEAT_PERIODS);
    // This leader's own stall (its event loop held, checks far apart): heartbeats sent meanwhile sit
    // unread in its sockets, not missed — give every pending transaction that time back rather than
    // expiring it on the first check after the stall.
    const stalledMs = t - last - 2 * this.deps.flags.get(TRANSACTION_CHECK_INTERVAL_MS);
    if (stalledMs > 0) for (const [id, hb] of this.heartbeats) this.heartbeats.set(id, hb + stalledMs);
    for (const [id, r] of this.records) {
      if (r.status === 'PENDING') {
        const hb = this.heartbeats.get(id) ?? t;
        if (!this.heartbeats.has(id)) this.heartbeats.set(id, t);
        if (t - hb > limitMs && this.unreplicated.has(id)) {
          this.metrics.expired++;
          void this.withTxnLock(id, () => {
            // Nothing outside this leader knows the record: dropping it is the abort.
            if (this.unreplicated.has(id) && this.records.get(id)?.status === 'PENDING') this.dropLocal(id);
            return Promise.resolve();
          });
        } else if (t - hb > limitMs) {
          this.metrics.expired++;
          this.deps.log.info({ txnId: id, lastHeartbeatMsAgo: Math.round(t - hb), limitMs }, 'transaction expired: no heartbeat within the limit; aborting it');
          void this.abort(id, [], 'expired').catch((err: unknown) => this.deps.log.debug({ err, txnId: id }, 'expiry abort failed; retried next check'));
        }
      } else {
        this.drive(id);
      }
    }
  }

  /** Send APPLY (committed) or REMOVE (aborted) to every participant until all acknowledged, then forget. */
  private drive(txnId: TxnId): void {
    if (this.driving.has(txnId) || this.stopped) return;
    const r = this.records.get(txnId);
    if (!r || r.status === 'PENDING') return;
    if (r.status === 'COMMITTED' && this.deps.flags.get(TEST_DISABLE_APPLY_COMMITTED_TRANSACTIONS)) return;
    const pending = new Set(r.participants);
    this.driving.set(txnId, pending);
    const stillDriving = (): boolean => !this.stopped && this.driving.get(txnId) === pending && this.deps.peer.isLeaderReady();
    void (async () => {
      const type = r.status === 'COMMITTED' ? 'APPLY' : 'REMOVE';
      await driveParticipants({ flags: this.deps.flags, log: this.deps.log, stillDriving, updateParticipant: (tablet, id, type, commitHt, timeoutMs) => this.deps.updateParticipant(tablet, id, type, commitHt, timeoutMs), onSend: () => this.metrics.applyRpcs++ }, txnId, type, r.commitHt, pending);
      if (pending.size > 0 || this.stopped || this.driving.get(txnId) !== pending) return;
      // A lazily started transaction's ABORTED record stays until no leader can create the id (lazy-records.ts).
      const holdMs = this.lazy.holdMs(r);
      if (holdMs > 0) await new Promise((res) => setTimeout(res, holdMs).unref());
      if (!stillDriving()) {
        if (this.driving.get(txnId) === pending) this.driving.delete(txnId);
        return;
      }
      try {
        await this.forgets.forget(txnId);
        this.metrics.forgotten++;
      } catch (err) {
        this.deps.log.debug({ err, txnId }, 'forgetting a finished transaction failed; retried next check');
      } finally {
        if (this.driving.get(txnId) === pending) this.driving.delete(txnId);
      }
    })();
  }

  /** How far back a lost commit answer can be settled: the history floor of this replica's RegularDB (console, tests). */
  historyFloorHt(): HybridTime {
    return this.deps.peer.db().historyFloor();
  }

  /** Records for the console (/transactions) and tests. */
  snapshot(): TxnInfo[] {
    const t = this.now();
    return [...this.records.values()].map((r) => ({
      txnId: r.txnId,
      status: r.status,
      isolation: r.isolation,
      startHt: r.startHt,
      commitHt: r.commitHt,
      ageMs: Math.round(t - (this.createdMs.get(r.txnId) ?? t)),
      participants: r.participants,
      lastHeartbeatMsAgo: Math.round(t - (this.heartbeats.get(r.txnId) ?? t)),
      replicated: !this.unreplicated.has(r.txnId),
      unacked: [...(this.driving.get(r.txnId) ?? [])],
    }));
  }
}
