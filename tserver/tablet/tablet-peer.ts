/**
 * TabletPeer: one replica of one tablet — the only place where Raft meets DocDB. It joins one
 * RaftGroup (log under DIR/wal) and one DocDb (RegularDB under DIR/regular, IntentsDB under
 * DIR/intents).
 *
 * Restart: the databases record the op id of every batch they hold (their frontier); the Raft group
 * starts with appliedIndex = the oldest frontier that still matters, and apply skips every entry the
 * target database already holds, so replay is idempotent. (An IntentsDB that holds no transaction
 * contributes nothing to replay or log GC: there is nothing of it to recover.)
 *
 * Write path (leader): row locks for INSERT/UPDATE existence checks → hybrid time from the tablet's
 * clock, strictly above every earlier write of this tablet → propose one WRITE entry → acknowledge
 * after Raft commit and local apply. Every replica applies the same entry at the same hybrid time.
 *
 * Read path (leader only): under the leader lease, else after a ReadIndex round, at a read time below
 * which no write can land later (the safe time: just below the oldest write proposed but not yet
 * applied, else the clock's now()).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import { ApplyLagLog } from './apply-lag-log';
import { visibleChecksum, type VisibleChecksum } from './visible-checksum';
import { htMax, type HybridTime } from '../../common/hybrid-time';
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import { NodeId, type TxnId } from '../../common/ids';
import type { Logger } from '../../common/log';
import type { Rng } from '../../common/rng';
import { Isolation, type ApplyItem, type DocDbApi, type DocKey, type OpId, type ReadLocks, type Row, type RowOp, type ScanOptions, type ScanResult, type StatusResolver, type TxnMeta } from '../../docdb';
import type { KvEngine } from '../../docdb';
import type { BackgroundWork } from '../../docdb';
import { RaftGroup, type LeaderChange, type RaftCore, type RaftGroupStatus } from '../../raft';
import type { RaftOptions } from '../../raft';
import type { Entry, Message, Snapshot } from '../../raft';
import type { LogStorage } from '../../raft';
import { DEFAULT_WAL_DURABILITY, type WalDurability } from '../../raft';
import { HISTORY_GC_MIN_NEW_VERSIONS_PCT, RAFT_ELECTION_TIMEOUT_TICKS, TEST_CORRUPT_TABLET_REPLICA, RAFT_HEARTBEAT_TICKS, RETRYABLE_REQUEST_TIMEOUT_SECS, RAFT_TICK_INTERVAL_MS, TEST_FAIL_TABLET_REPLICA, TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, WRITE_TIMEOUT_MS } from '../tserver-flags';
import { checkFastPathConflicts, type FastPathTxn } from './fast-path';
import { BlockedBy, resolveConflicts, resolvePlainWriteConflicts, resolveSerializableConflicts, type ConflictDeps } from './participant/conflict-resolution';
import { WaitQueue } from './wait-queue';
import { uncertaintyLimit } from './participant/uncertainty';
import { ENABLE_WAIT_QUEUES, TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS, WAIT_QUEUE_POLL_INTERVAL_MS } from './participant/participant-flags';
import { APPLY_CLEANUP_DELAY_MS } from '../../docdb';
import { hashKeyLockOfRange } from '../../docdb';
import type { ApplyMark } from '../../docdb';
import type { CellReadOptions, CellReadResult } from '../../docdb';
import type { PeerTxnEnv, TxnStatusInfo } from './participant/txn-env';
import { LockTable } from './lock-table';
import { decodeTabletOp, docKeyString, encodeTabletOp, TabletOpKind, type RequestTag, type TabletOp } from './tablet-op';
import { parseRetryableImage, RetryableRequests, type RetryableImage } from './retryable-requests';
import { OUTCOME_LIMITS, OutcomeMemory } from './outcome-memory';
import { parseTableSchema, writeTabletMeta, type TableSchema, type TabletMeta } from './tablet-meta';
import { tabletSplitError } from './tablet-split';
import { applySchemaToDocDb } from './cell-schema';
import { incrementalGc } from './incremental-gc';
import { forgottenIds, RECORD_COLUMN_ID, RecordStatus, recordKey } from './participant/txn-record';
import { makeDirs, writeFileDurablyAsync } from '../../common/fs-dirs';
import { parseRowLockImage, RowLockOps, RowLockTable, type HeldLock, type RowLockImage } from './row-locks';

export const TabletState = { BOOTSTRAPPING: 'BOOTSTRAPPING', RUNNING: 'RUNNING', FAILED: 'FAILED', DELETED: 'DELETED' } as const;
export type TabletState = (typeof TabletState)[keyof typeof TabletState];

/** What a Raft snapshot of a tablet carries: where to fetch the databases from (remote bootstrap). */
export interface SnapshotDescriptor {
  tabletId: string;
  /** Replica whose databases are copied (the leader that made the snapshot). */
  sourceUuid: string;
  index: number;
  /**
   * The source's table schema when it made the snapshot (ALTER TABLE): the CHANGE_SCHEMA entries a
   * replica skips with the compacted log reach it this way. Absent in older descriptors.
   */
  schema?: { schemaVersion: number; tableName: string; schema: TableSchema };
  /** The source's retryable requests (writes it replicated, per client). Absent in older descriptors. */
  retryable?: RetryableImage;
  /** The source's row locks (row-locks.ts). Absent in older descriptors. */
  rowLocks?: RowLockImage;
}

export type DbName = 'regular' | 'intents';

export interface TabletPeerDeps {
  dir: string;
  meta: TabletMeta;
  selfUuid: string;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  rng: Rng;
  send(msgs: Message[]): void;
  /** `durability`: the table's Raft log level (docs/durability.md). */
  openLogStorage(dir: string, opts?: { durability: WalDurability }): Promise<LogStorage>;
  openEngine(dir: string): Promise<KvEngine>;
  openDocDb(regular: KvEngine, intents: KvEngine): Promise<DocDbApi>;
  newRaftCore(opts: RaftOptions): RaftCore;
  /** Copy the source replica's databases: calls onChunk with batches of key/values, per database. */
  fetchSnapshot(desc: SnapshotDescriptor, onChunk: (db: DbName, pairs: Array<[Uint8Array, Uint8Array]>) => Promise<void>): Promise<void>;
  /** RPC address of a replica (for leader hints). */
  peerAddress(uuid: string): string | undefined;
  onLeaderChange?(tabletId: string, c: LeaderChange): void;
  /** Status lookups / aborts of other transactions (absent: every other txn reads as pending). */
  txnEnv?: PeerTxnEnv;
  /** A storage failure: the replica stops (the server decides whether the process exits). */
  onFatal(tabletId: string, e: unknown): void;
}

export interface WriteRequest {
  ops: Array<{ kind: 'UPSERT' | 'INSERT' | 'UPDATE' | 'DELETE'; op: RowOp }>;
  propagatedHt?: HybridTime;
  deadlineMs?: number;
  /** A retryable request: a copy of one replicated or running here is answered, not run again. */
  request?: RequestTag;
  /**
   * A read-modify-write (row-ops.ts): under the rows' locks, `compute` gets the rows of `keys` as
   * they are now and answers the ops to write (`ops` is ignored), or undefined to write nothing (the
   * write then resolves 0n).
   */
  computed?: {
    keys: DocKey[];
    /** false: the result does not depend on the rows (puts and deletes only): they are not read. */
    readsRows?: boolean;
    compute(rows: Array<Row | undefined>): RowOp[] | undefined;
  };
  /** Per row of the write (`computed.keys`, else `ops`), the row lock it carries (row-locks.ts). */
  heldLocks?: Array<HeldLock | undefined>;
  /** Wait (until deadlineMonoMs) for rows locked by others instead of failing ROW_LOCKED. */
  waitForLocks?: boolean;
  deadlineMonoMs?: number;
  /** The single-tablet fast path (fast-path.ts): this write commits a whole transaction. */
  fastPathTxn?: FastPathTxn;
}

const BOOTSTRAP_MARKER = 'remote-bootstrap-in-progress';
/** The retryable requests as of the last log GC (with the log after it, what a restart rebuilds them from). */
const RETRYABLE_FILE = 'retryable.json';
/** The row locks as of the last log GC (with the log after it, what a restart rebuilds them from). */
const ROW_LOCKS_FILE = 'row-locks.json';
/** Log entries read at a time when a restart rebuilds the retryable requests from the log. */
const RETRYABLE_SCAN_ENTRIES = 1024;
/** Transactional write request as the participant leader receives it. */
export interface TxnWriteRequest extends WriteRequest {
  txn: TxnMeta;
  readHt: HybridTime;
  /** performance.now() at which the caller gives up (bounds a wait-on-conflict; default: tablet_write_timeout_ms from now). */
  deadlineMonoMs?: number;
  /**
   * Coalesced with other transactions' writes in one request: instead of waiting on a conflict it
   * fails at once with TRY_AGAIN (the client sends it again alone), so it holds nobody's answer.
   */
  coalesced?: boolean;
}
/** A wait-on-conflict stops this long before the caller's deadline (the Raft round still has to run). */
const WAIT_MARGIN_MS = 100;
/** A wait-on-conflict longer than this is logged once (with its blockers). */
const LONG_WAIT_MS = 1000;
/** Told the Raft proposal of a retryable request and its entry's hybrid time (TabletPeer.deduped). */
type ProposalTracker = (proposal: Promise<unknown>, ht: HybridTime) => void;
/** A TXN_STATUS entry as applied on this replica (status tablets' coordinator listens). */
export type TxnStatusListener = (op: Extract<TabletOp, { type: 'TXN_STATUS' }>) => void;
/** One WRITE_INTENTS entry waiting in applyEntries' IntentsDB write group. */
interface IntentsGroupItem {
  txn: TxnMeta;
  ops: readonly RowOp[];
  ht: HybridTime;
  opId: OpId;
  reads?: ReadLocks;
}
/** A history GC pass put off for too few new versions runs at the next chance after this many (history_gc_min_new_versions_pct). */
const HISTORY_GC_FEW_NEW_SKIPS_MAX = 11;
/** Put-count samples a replica keeps for that decision (the oldest, at or before the last cutoff, always stays). */
const HISTORY_GC_PUT_SAMPLES_MAX = 4096;
/** Committed transactions one replica applies together at most (DocDb.applyIntentsMany). */
const APPLY_GROUP_MAX = 256;
/** A replica's Raft log fdatasyncs since it opened: how many, ms in all and the longest, and those of WAL_SLOW_SYNC_MS or more. */
export interface WalSyncTimes {
  fsyncs: number;
  syncMs: number;
  syncMaxMs: number;
  slowSyncs: number;
}

function walSyncTimes(log: { logFsyncs: number; syncMicros?: number; syncMaxMicros?: number; slowSyncs?: number }): WalSyncTimes {
  return { fsyncs: log.logFsyncs, syncMs: Math.round(log.syncMicros ?? 0) / 1000, syncMaxMs: Math.round(log.syncMaxMicros ?? 0) / 1000, slowSyncs: log.slowSyncs ?? 0 };
}

/** Non-transactional reads see no other transaction's intents (they are not committed for them). */
const NO_TXN_STATUS: StatusResolver = () => Promise.resolve({ status: 'PENDING' });

/** One WRITE / TXN_STATUS / APPLY_TXN entry waiting in applyEntries' RegularDB write group. */
interface RegularGroupItem {
  op: Extract<TabletOp, { type: 'WRITE' | 'TXN_STATUS' | 'APPLY_TXN' }>;
  opId: OpId;
  /** undefined when RegularDB already holds it (replay below the floor). */
  write: { ops: readonly RowOp[]; ht: HybridTime; opId: OpId } | undefined;
}

export class TabletPeer {
  /** Identity, schema (changed by CHANGE_SCHEMA entries) and initial peers; also in meta.json. */
  private metaValue: TabletMeta;
  state: TabletState = TabletState.BOOTSTRAPPING;
  lastError = '';
  private raft!: RaftGroup;
  private storage!: LogStorage;
  private regular!: KvEngine;
  private intents!: KvEngine;
  private docdb!: DocDbApi;

  /** Digest of this replica's RegularDB contents (equal on replicas that applied the same log). */
  regularChecksum(): Promise<{ sha256: string; entries: number; bytes: number }> {
    return this.docdb.regularChecksum();
  }

  /** This server's hybrid time now. */
  hybridNow(): HybridTime {
    return this.deps.clock.now();
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
    if (this.state !== TabletState.RUNNING) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${this.tabletId} is ${this.state}, not RUNNING`, { tabletId: this.tabletId });
    const before = this.raft.appliedOpId().index;
    const c = await visibleChecksum((o) => this.docdb.scan(o), this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS, readHt);
    const intents = await this.docdb.pendingIntentsDigest();
    const after = this.raft.appliedOpId().index;
    return { ...c, intents, appliedIndex: after, stable: before === after };
  }
  /** This replica's rows visible at `readHt` from `startKey`, `limit` at most (console pages that count a tablet's data). */
  scanVisible(readHt: HybridTime, limit: number, startKey?: Uint8Array): Promise<ScanResult> {
    if (this.state !== TabletState.RUNNING) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${this.tabletId} is ${this.state}, not RUNNING`, { tabletId: this.tabletId });
    return this.docdb.scan({ readHt, resolveStatus: this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS, limit, ...(startKey ? { startKey } : {}) });
  }
  private readonly locks = new LockTable();
  /** Operations waiting for pending transactions to finish (enable_wait_queues). */
  readonly waitQueue = new WaitQueue();
  /** Highest hybrid time assigned to or applied by a write of this tablet. */
  private lastWriteHt: HybridTime = 0n;
  /** Hybrid times proposed but not yet applied, in increasing order (for the safe time). */
  private readonly inflightHts: HybridTime[] = [];
  private readonly inflightDone = new Set<HybridTime>();
  /** Entries at or below these op ids are already in the database (restart replay / snapshot). */
  private regularFloor: OpId = { term: 0, index: 0 };
  private applyWaiters: Array<() => void> = [];
  /** IntentsDB already holds entries at or below this op id (restart replay). */
  private intentsFloor: OpId = { term: 0, index: 0 };
  /** txn id → status tablet, for every transaction with intents on this replica. */
  private readonly txnStatusTablets = new Map<TxnId, string>();
  /** When this replica first applied intents of each transaction in txnStatusTablets (performance.now; absent: before start). */
  private readonly txnFirstSeen = new Map<TxnId, number>();
  /** Outcomes this replica applied (APPLY_TXN → committed, REMOVE_TXN → aborted): local knowledge. */
  private readonly localOutcomes = new OutcomeMemory();
  /** Aborted transactions whose intents the leader should remove (found by conflict checks). */
  readonly cleanupQueue = new Set<TxnId>();
  /** Applies of committed transactions under way on this replica (a resent APPLY waits for them). */
  private readonly applying = new Map<TxnId, Promise<void>>();
  /** Committed transactions whose intents this replica has not moved yet (never evicted until done). */
  private readonly pendingApplies = new Map<TxnId, HybridTime>();
  private statusListener: TxnStatusListener | undefined;
  private snapshotListener: (() => Promise<void>) | undefined;
  /** Carries out a SPLIT entry (tserver/split-apply.ts); set by the tablet manager. */
  private splitHandler: ((op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<void>) | undefined;
  /**
   * Set by the leader just before it proposes SPLIT (docs/splitting.md): nothing more is proposed
   * after it (checkServing runs right before every proposal), so the SPLIT entry is the parent's last.
   */
  private splitPendingTerm: number | undefined;

  private newTxnHoldUntilMs = 0;

  /** Until performance.now() reaches `untilMs`, writes of transactions without intents here get TRY_AGAIN (a split drains). */
  holdNewTransactions(untilMs: number): void {
    this.newTxnHoldUntilMs = untilMs;
  }

  /** Called right after the leader proposed SPLIT (synchronously, before anything else is proposed). */
  markSplitPending(): void {
    this.splitPendingTerm = this.currentTerm();
  }
  private leaderListener: ((c: LeaderChange) => void) | undefined;
  private transferListener: (() => Promise<void>) | undefined;
  /** Per transaction applied here: commit time → end of this replica's apply (console, benchmark). */
  readonly applyLag = new ApplyLagLog();
  /**
   * On a status tablet's replica: when it applied each transaction's COMMITTED record (the commit
   * point), for /api/v1/txn-applies' `commits` (the benchmark splits the apply lag into stages).
   */
  readonly commitPoints = new ApplyLagLog();
  readonly metrics = { writeOps: 0, readOps: 0, scanOps: 0, readLocks: 0, rowsWritten: 0, entriesApplied: 0, snapshotsInstalled: 0 };
  /** History GC passes of this replica (historyGc): runs, skips, versions scanned and dropped, the last pass. */
  readonly historyGcStats = { runs: 0, skipped: 0, skippedFewNew: 0, skippedNothingOld: 0, versionsScanned: 0, versionsDropped: 0, droppedColumnVersions: 0, lastCutoffHt: 0n, lastMs: 0, lastDropped: 0 };
  /** After the last pass: its cutoff, the versions it kept, passes skipped since for too few new versions. */
  private historyGcLast: { cutoffHt: HybridTime; versionsKept: number; fewNewSkips: number } | undefined;
  /** RegularDB's put count at each history GC chance, oldest first (from the newest one at or before the last cutoff). */
  private readonly historyGcPutSamples: Array<{ atHt: HybridTime; puts: number }> = [];
  /** The history GC pass running, if any (a remote bootstrap waits for it before replacing the databases). */
  private historyGcRunning: Promise<unknown> | undefined;
  /** The schema version the last history GC pass ran under (-1: none yet). */
  private historyGcSchemaVersion = -1;
  /** Client writes this replica replicated (retryable requests), and those it is running as leader. */
  readonly retryable = new RetryableRequests();
  /** Row locks with leases (replicated state: ROW_LOCK entries). */
  readonly rowLocks = new RowLockTable();
  private rowLockOpsValue: RowLockOps | undefined;

  /** Leader side of lockRow / renewRowLock / unlockRow. */
  rowLockOps(): RowLockOps {
    this.rowLockOpsValue ??= new RowLockOps({
      tabletId: this.tabletId,
      table: this.rowLocks,
      checkServing: () => this.checkServing(),
      acquire: (keys) => this.locks.acquire(keys),
      settleIntents: (key) => this.orderAfterIntents([{ type: 'delete', key }]),
      nextHt: () => this.nextHt(),
      now: () => this.deps.clock.now(),
      propose: (op) => this.proposeOp(op),
    });
    return this.rowLockOpsValue;
  }

  private constructor(private readonly deps: TabletPeerDeps) {
    this.metaValue = deps.meta;
  }

  get meta(): TabletMeta {
    return this.metaValue;
  }

  get tabletId(): string {
    return this.meta.tabletId;
  }

  static async open(deps: TabletPeerDeps): Promise<TabletPeer> {
    const p = new TabletPeer(deps);
    try {
      await p.start();
    } catch (e) {
      // Whatever opened is closed again, so the files can be deleted and the tablet created afresh
      // in this process (RocksDB refuses a second open of a directory this process still holds).
      await p.closeOpened();
      throw e;
    }
    return p;
  }

  private async closeOpened(): Promise<void> {
    // The fields are set in order as start() gets on; those it did not reach are still undefined.
    const raft = this.raft as RaftGroup | undefined;
    const docdb = this.docdb as DocDbApi | undefined;
    const storage = this.storage as LogStorage | undefined;
    if (raft) await raft.stop().catch(() => undefined);
    if (docdb) await docdb.close().catch(() => undefined);
    else for (const e of [this.regular as KvEngine | undefined, this.intents as KvEngine | undefined]) if (e) await e.close().catch(() => undefined);
    if (storage) await storage.close().catch(() => undefined);
  }

  private async start(): Promise<void> {
    const { dir, meta } = this.deps;
    makeDirs(dir);
    if (fs.existsSync(path.join(dir, BOOTSTRAP_MARKER))) {
      // A remote bootstrap was interrupted: the databases are partial. Start empty so that the
      // leader's snapshot (which the log's base still requires) replaces them again.
      this.deps.log.warn({ tablet: meta.tabletId }, 'interrupted remote bootstrap: wiping partial databases');
      this.wipeDbDirs();
    }
    await this.openDbs();
    this.storage = await this.deps.openLogStorage(path.join(dir, 'wal'), { durability: meta.durability ?? DEFAULT_WAL_DURABILITY });
    const init = this.storage.initialState();
    if (init.conf.voters.length === 0 && init.conf.learners.length === 0 && this.storage.lastIndex() === 0) {
      const voters = meta.peers.filter((p) => p.memberType === 'VOTER').map((p) => NodeId(p.uuid));
      const learners = meta.peers.filter((p) => p.memberType === 'LEARNER').map((p) => NodeId(p.uuid));
      this.storage.setConfState({ voters, learners });
      await this.storage.sync();
    }
    await this.rebaseLogIfDbsAhead();
    const applied = await this.replayStart();
    const firstIndex = this.storage.firstIndex();
    if (applied < firstIndex - 1 && !fs.existsSync(path.join(dir, BOOTSTRAP_MARKER))) {
      this.deps.log.warn({ tablet: meta.tabletId, applied, firstIndex }, 'databases are behind the compacted log; waiting for a snapshot');
    }
    const appliedIndex = Math.min(Math.max(applied, firstIndex - 1), this.storage.lastIndex());
    this.loadRetryable(appliedIndex);
    const core = this.deps.newRaftCore({
      id: NodeId(this.deps.selfUuid),
      storage: this.storage,
      applied: appliedIndex,
      electionTicks: this.deps.flags.get(RAFT_ELECTION_TIMEOUT_TICKS),
      heartbeatTicks: this.deps.flags.get(RAFT_HEARTBEAT_TICKS),
      rng: this.deps.rng,
      maxUncommittedBytes: 256 << 20,
    });
    this.raft = new RaftGroup({
      id: NodeId(this.deps.selfUuid),
      groupId: meta.tabletId,
      storage: this.storage,
      core,
      appliedIndex,
      send: (msgs) => this.deps.send(msgs),
      applyEntries: (ents) => this.applyEntries(ents),
      createSnapshot: (index) => Promise.resolve(this.createSnapshot(index)),
      installSnapshot: (snap) => this.installSnapshot(snap),
      onLeaderChange: (c) => {
        // Leadership is what a lab user follows (elections, transfers, balancing): one line each.
        this.deps.log.info({ tablet: meta.tabletId, term: c.term, role: c.role, leader: c.leader || undefined }, c.isLeader ? 'became leader' : c.leader ? 'following a new leader' : 'no leader');
        this.deps.onLeaderChange?.(meta.tabletId, c);
        this.leaderListener?.(c);
      },
      onFatal: (e) => {
        this.state = TabletState.FAILED;
        this.lastError = e instanceof Error ? e.message : String(e);
        this.deps.onFatal(meta.tabletId, e);
      },
      leaseClock: { tickIntervalMs: this.deps.flags.get(RAFT_TICK_INTERVAL_MS) },
      log: this.deps.log,
    });
    this.state = TabletState.RUNNING;
  }

  private async openDbs(): Promise<void> {
    this.regular = await this.deps.openEngine(path.join(this.deps.dir, 'regular'));
    this.intents = await this.deps.openEngine(path.join(this.deps.dir, 'intents'));
    this.docdb = await this.deps.openDocDb(this.regular, this.intents);
    // meta.json is never behind the databases: a CHANGE_SCHEMA entry is durable there before it counts as applied.
    applySchemaToDocDb(this.docdb, this.metaValue);
    const f = await this.docdb.frontier();
    this.regularFloor = f.regular;
    this.intentsFloor = f.intents;
    await this.loadTxnState();
  }

  /**
   * The retryable requests at start: the image saved at the last log GC, then the requests of the
   * log's entries up to `appliedIndex` (those after it are applied again, which records them).
   */
  private loadRetryable(appliedIndex: number): void {
    const file = path.join(this.deps.dir, RETRYABLE_FILE);
    if (fs.existsSync(file)) {
      let v: unknown;
      try {
        v = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (e) {
        throw new DbError(ErrorCode.CORRUPTION, `cannot read ${file}: ${(e as Error).message}`);
      }
      this.retryable.restore(parseRetryableImage(v));
    }
    const locksFile = path.join(this.deps.dir, ROW_LOCKS_FILE);
    if (fs.existsSync(locksFile)) {
      try {
        this.rowLocks.restore(parseRowLockImage(JSON.parse(fs.readFileSync(locksFile, 'utf8'))));
      } catch (e) {
        throw new DbError(ErrorCode.CORRUPTION, `cannot read ${locksFile}: ${(e as Error).message}`);
      }
    }
    for (let lo = this.storage.firstIndex(); lo <= appliedIndex; lo += RETRYABLE_SCAN_ENTRIES) {
      for (const e of this.storage.entries(lo, Math.min(appliedIndex + 1, lo + RETRYABLE_SCAN_ENTRIES))) {
        // Only entries of retryable requests begin with the request tag: the others are not decoded.
        if (e.type !== 'normal') continue;
        if (e.data[0] === TabletOpKind.ROW_LOCK) {
          // Lock entries write no database: the frontier says nothing of them, the log does.
          const lock = decodeTabletOp(e.data);
          if (lock.type === 'ROW_LOCK') this.rowLocks.apply(lock, e.index);
          continue;
        }
        if (e.data[0] !== TabletOpKind.REQUEST) continue;
        const op = decodeTabletOp(e.data);
        if ((op.type === 'WRITE' || op.type === 'WRITE_INTENTS') && op.request) this.retryable.replicated(op.request, op.ht);
      }
    }
  }

  /** Status tablets of transactions with intents here; finish applies a crash interrupted. */
  private async loadTxnState(): Promise<void> {
    for (const t of await this.docdb.listTransactions()) this.txnStatusTablets.set(t.meta.txnId, t.meta.statusTablet);
    const resume = (this.docdb as { resumeApplies?: () => Promise<number> }).resumeApplies;
    if (resume) await resume.call(this.docdb);
  }

  /** Called by the coordinator of a status tablet: TXN_STATUS entries as this replica applies them. */
  setTxnStatusListener(l: TxnStatusListener | undefined): void {
    this.statusListener = l;
  }

  /**
   * Called (and awaited) after a remote bootstrap replaced this replica's databases, before it
   * serves again: state kept in memory from applied entries (a coordinator's transaction records)
   * must be rebuilt from the new databases, since the snapshot's entries were never applied here.
   */
  setSplitHandler(h: ((op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<void>) | undefined): void {
    this.splitHandler = h;
  }

  /** WRITE_INTENTS this leader proposed and has not applied yet. */
  private intentWritesInFlight = 0;

  /**
   * Transactions with intents here not yet applied or removed, as of the entries applied so far: the
   * same on every replica at a given log position (what the SPLIT entry checks).
   */
  txnsWithAppliedIntents(): number {
    return this.txnStatusTablets.size;
  }

  /** Transactions with intents here not yet applied or removed, plus intent writes in flight (a split waits for none). */
  txnsWithIntentsCount(): number {
    return this.txnStatusTablets.size + this.intentWritesInFlight;
  }

  /** This replica applied SPLIT: durable in meta.json, then every request is answered TABLET_SPLIT. */
  markSplit(children: NonNullable<TabletMeta['splitInto']>): void {
    const next: TabletMeta = { ...this.metaValue, splitInto: children };
    writeTabletMeta(this.deps.dir, next);
    this.metaValue = next;
  }

  setSnapshotListener(l: (() => Promise<void>) | undefined): void {
    this.snapshotListener = l;
  }

  setLeaderListener(l: ((c: LeaderChange) => void) | undefined): void {
    this.leaderListener = l;
  }

  /** Called before this leader hands leadership away on request (a status tablet makes its leader-only records durable). */
  setTransferListener(l: (() => Promise<void>) | undefined): void {
    this.transferListener = l;
  }

  /** Campaign now and retry briefly while no leader is known (a split child on the parent leader's server). */
  campaignSoon(o: { forTicks: number; everyTicks: number }): void {
    if (this.state === TabletState.RUNNING) this.raft.campaignSoon(o);
  }

  /** Hand leadership to `to` (or the most caught-up voter) after the transfer listener finished. */
  async transferLeadership(to?: NodeId): Promise<void> {
    if (this.transferListener) {
      try {
        await this.transferListener();
      } catch (err) {
        this.deps.log.debug({ err, tablet: this.tabletId }, 'preparing the leadership transfer failed; transferring anyway');
      }
    }
    this.raft.transferLeadership(to);
  }

  /** The database (status tablets read their records back at start). */
  db(): DocDbApi {
    return this.docdb;
  }

  /** Transactions with intents on this replica (console, participant cleanup). */
  async transactions(): Promise<Array<{ meta: TxnMeta; intentCount: number; applying?: { commitHt: HybridTime } }>> {
    if (this.state !== TabletState.RUNNING) return [];
    return this.docdb.listTransactions();
  }

  /**
   * Transactions with intents here and their status tablets (participant cleanup sweep): those
   * whose first intents this replica applied at least `minAgeMs` ago (or before its start), without
   * an outcome known here (a committed one waiting for its apply is not a cleanup candidate).
   */
  txnsWithIntents(minAgeMs = 0): Array<[TxnId, string]> {
    const bornBefore = performance.now() - minAgeMs;
    const out: Array<[TxnId, string]> = [];
    for (const [id, st] of this.txnStatusTablets) {
      if (minAgeMs > 0 && (this.txnFirstSeen.get(id) ?? 0) > bornBefore) continue;
      if (this.localOutcome(id) !== undefined) continue;
      out.push([id, st]);
    }
    return out;
  }

  /** The apply of `txnId` running in this replica's apply stage, if any. */
  applyInProgress(txnId: TxnId): Promise<void> | undefined {
    return this.applying.get(txnId);
  }

  localOutcome(txnId: TxnId): TxnStatusInfo | undefined {
    const pendingCommitHt = this.pendingApplies.get(txnId);
    if (pendingCommitHt !== undefined) return { status: 'COMMITTED', commitHt: pendingCommitHt, priority: 0 };
    return this.localOutcomes.get(txnId);
  }

  /**
   * A status tablet answers ABORTED for an id it has no record of — and it drops the record of a
   * COMMITTED transaction once every participant leader applied it. So a remote ABORTED is checked
   * against this replica's own knowledge AFTER the answer arrived: when the transaction was forgotten
   * as committed, this replica (a participant whose leader applied the APPLY entry, or a ready leader,
   * which applied every committed entry) already knows it committed. Without this re-check, a reader
   * that met the intents just before they were applied skipped them as aborted and returned the old
   * value (a stale read), and a writer ignored them (a lost update) — found by tessera verify.
   */
  private settleRemote(txnId: TxnId, st: TxnStatusInfo): TxnStatusInfo {
    if (st.status !== 'ABORTED') return st;
    const local = this.localOutcome(txnId);
    return local?.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: local.commitHt, priority: st.priority } : st;
  }

  /** The transaction environment with remote answers settled against local knowledge (settleRemote). */
  private settledEnv(env: PeerTxnEnv): PeerTxnEnv {
    return {
      getStatus: async (txnId, statusTablet, readHt) => this.settleRemote(txnId, await env.getStatus(txnId, statusTablet, readHt)),
      // This tablet holds the victim's intents: the coordinator then removes them here at once
      // (REMOVE), instead of the participant sweep a few seconds later.
      abort: async (txnId, statusTablet) => this.settleRemote(txnId, await env.abort(txnId, statusTablet, this.tabletId)),
      known: (txnId) => env.known?.(txnId),
    };
  }

  /** How readers resolve other transactions' intents: local knowledge, then the status tablet. */
  private statusResolver(): StatusResolver {
    const env = this.deps.txnEnv;
    return async (txnId, readHt) => {
      const local = this.localOutcome(txnId);
      if (local) return local.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: local.commitHt } : { status: local.status };
      const st = this.txnStatusTablets.get(txnId);
      if (!env || !st) return { status: 'PENDING' };
      const a = this.settleRemote(txnId, await env.getStatus(txnId, st, readHt));
      return a.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: a.commitHt } : { status: a.status };
    };
  }

  /** The index after which the log must be replayed into the databases. */
  /**
   * After a crash of an ASYNC or FLUSH table (docs/durability.md) the databases may hold entries the
   * log lost: they reach the OS through RocksDB's own WAL while the Raft log held them in memory or
   * never fsynced them. Replay would then skip every new entry up to the databases' frontier (they
   * look applied), silently dropping writes acknowledged after the restart. So the log is rebased on
   * the frontier, as if a snapshot at that op id had been installed: Raft continues after it, and a
   * replica further behind takes a snapshot from whichever replica leads.
   */
  private async rebaseLogIfDbsAhead(): Promise<void> {
    const f = await this.docdb.frontier();
    const ahead = f.regular.index >= f.intents.index ? f.regular : f.intents;
    const last = this.storage.lastIndex();
    if (ahead.index <= last) return;
    this.deps.log.warn({ tablet: this.tabletId, lastLogIndex: last, dbIndex: ahead.index, dbTerm: ahead.term, durability: this.walDurability() }, 'databases are ahead of the Raft log (its unsynced tail was lost): rebasing the log on their frontier');
    const conf = this.storage.initialState().conf;
    this.storage.applySnapshot({ meta: { index: ahead.index, term: ahead.term, conf }, data: this.createSnapshot(ahead.index) });
    await this.storage.sync();
  }

  private async replayStart(): Promise<number> {
    const f = await this.docdb.frontier();
    const txns = await this.docdb.listTransactions();
    return txns.length === 0 ? f.regular.index : Math.min(f.regular.index, f.intents.index);
  }

  private wipeDbDirs(): void {
    for (const d of ['regular', 'intents']) fs.rmSync(path.join(this.deps.dir, d), { recursive: true, force: true });
  }

  // ---- Raft plumbing ---------------------------------------------------------------------------

  tick(): void {
    if (this.state === TabletState.RUNNING || this.state === TabletState.BOOTSTRAPPING) this.raft?.tick();
  }

  step(m: Message): void {
    this.raft?.step(m);
  }

  raftGroup(): RaftGroup {
    return this.raft;
  }

  status(): RaftGroupStatus {
    return this.raft.status();
  }

  async sizes(): Promise<{ regulardb: { memtableBytes: number; sstBytes: number }; intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number } }> {
    if (this.state !== TabletState.RUNNING) return { regulardb: { memtableBytes: 0, sstBytes: 0 }, intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 } };
    return this.docdb.sizes();
  }

  // ---- apply stage -----------------------------------------------------------------------------

  /**
   * Fail-stop (CONVENTIONS): after a storage failure outside the Raft apply path, this replica serves
   * nothing and its Raft group stops — no votes, no leadership it could hold without serving — so the
   * other replicas elect a leader, and the master sees FAILED in the tablet report and replaces it.
   * (A failure inside the apply path stops the group itself: RaftGroup's onFatal.)
   */
  private failReplica(why: string): void {
    if (this.state === TabletState.FAILED || this.state === TabletState.DELETED) return;
    this.state = TabletState.FAILED;
    this.lastError = why;
    this.deps.log.error({ tabletId: this.tabletId, err: why }, 'tablet replica failed; stopped (the master replaces it)');
    void this.raft?.stop().catch(() => undefined);
  }

  private async applyEntries(ents: readonly Entry[]): Promise<void> {
    const inject = this.deps.flags.get(TEST_FAIL_TABLET_REPLICA);
    if (inject !== '' && (inject === '*' || inject === this.tabletId) && ents.some((e) => e.type === 'normal' && e.data.byteLength > 0)) {
      throw new DbError(ErrorCode.IO_ERROR, `TEST_fail_tablet_replica: simulated storage failure of tablet ${this.tabletId}`);
    }
    // The committed entries of one Raft ready go to the engines in as few write batches as the log
    // order allows: consecutive RegularDB writes (WRITE, TXN_STATUS rows, and the apply-pending
    // marks of APPLY_TXN) as ONE batch, the WRITE_INTENTS as ONE IntentsDB batch — one RocksDB call
    // and thread-pool hop each instead of one per entry. An APPLY_TXN waits for its own transaction's
    // intents of this batch to be written; REMOVE_TXN flushes both groups (it is rare).
    const group: RegularGroupItem[] = [];
    const intents: IntentsGroupItem[] = [];
    const requests: Array<{ request: RequestTag; ht: HybridTime }> = [];
    for (const e of ents) {
      if (e.type !== 'normal' || e.data.byteLength === 0) continue;
      const op = decodeTabletOp(e.data);
      const opId = { term: e.term, index: e.index };
      if (this.metaValue.splitInto) {
        // Nothing is proposed after SPLIT (splitPending; a new leader applies SPLIT before it serves).
        this.deps.log.error({ tablet: this.tabletId, index: e.index, type: op.type }, 'entry after SPLIT ignored');
        continue;
      }
      if ((op.type === 'WRITE' || op.type === 'WRITE_INTENTS') && op.request) requests.push({ request: op.request, ht: op.ht });
      switch (op.type) {
        case 'WRITE':
        case 'TXN_STATUS':
          this.collectRegular(op, opId, group);
          break;
        case 'WRITE_INTENTS':
          this.collectIntents(op, opId, intents);
          break;
        case 'APPLY_TXN':
          if (intents.some((i) => i.txn.txnId === op.txnId)) await this.flushIntents(intents);
          this.collectApply(op, opId, group);
          break;
        case 'APPLY_TXNS':
          // Each as its own APPLY_TXN would be, in order, all at this entry's op id.
          for (const t of op.txns) {
            if (intents.some((i) => i.txn.txnId === t.txnId)) await this.flushIntents(intents);
            this.collectApply({ type: 'APPLY_TXN', txnId: t.txnId, commitHt: t.commitHt }, opId, group);
          }
          break;
        case 'REMOVE_TXN':
          await this.flushIntents(intents);
          await this.flushRegular(group);
          await this.removeTxn(op, opId);
          break;
        case 'CHANGE_SCHEMA':
          this.changeSchema(op, opId);
          break;
        case 'ROW_LOCK':
          this.deps.clock.update(op.ht);
          this.lastWriteHt = htMax(this.lastWriteHt, op.ht);
          this.rowLocks.apply(op, opId.index);
          break;
        case 'SPLIT':
          // The children are built from the data as of this entry: everything before it written,
          // every transaction apply before it finished (the same state on every replica).
          await this.flushIntents(intents);
          await this.flushRegular(group);
          await Promise.all([...this.applying.values()].map((p) => p.catch(() => undefined)));
          await this.splitHandler?.(op, opId.index);
          this.splitPendingTerm = undefined;
          break;
      }
      this.metrics.entriesApplied++;
    }
    // The two databases' writes overlap (each costs a thread-pool hand-off and an event-loop turn);
    // nothing of the regular group counts as applied (safe time, listeners, apply marks) before the
    // intents are in — as when they ran one after the other. Within a transaction the order is kept
    // anyway: both take its lock, intents first.
    const intentsDone = this.flushIntents(intents);
    try {
      await this.flushRegular(group, intentsDone);
    } finally {
      await intentsDone;
    }
    // Remembered once written: a copy answered from here finds its rows in the databases.
    for (const r of requests) this.retryable.replicated(r.request, r.ht);
    const ws = this.applyWaiters;
    this.applyWaiters = [];
    for (const w of ws) w();
  }

  private collectRegular(op: Extract<TabletOp, { type: 'WRITE' | 'TXN_STATUS' }>, opId: OpId, group: RegularGroupItem[]): void {
    // Every replica's clock moves past the write, so a future leader assigns larger times.
    this.deps.clock.update(op.ht);
    this.lastWriteHt = htMax(this.lastWriteHt, op.ht);
    const needsWrite = opId.index > this.regularFloor.index; // else already in RegularDB (replay)
    if (op.type === 'WRITE') {
      group.push({ op, opId, write: needsWrite ? { ops: op.ops, ht: op.ht, opId } : undefined });
      return;
    }
    let write: RegularGroupItem['write'];
    if (needsWrite) {
      const rows: RowOp[] =
        op.status === RecordStatus.FORGOTTEN
          ? forgottenIds(op.txnId, op.payload).map((id) => ({ type: 'delete', key: recordKey(id) }))
          : [{ type: 'upsert', key: recordKey(op.txnId), columns: [{ columnId: RECORD_COLUMN_ID, value: Buffer.concat([Buffer.from([op.status.length]), Buffer.from(op.status, 'latin1'), Buffer.from(op.payload)]) }] }];
      write = { ops: rows, ht: op.ht, opId };
    }
    group.push({ op, opId, write });
  }

  private collectIntents(op: Extract<TabletOp, { type: 'WRITE_INTENTS' }>, opId: OpId, intents: IntentsGroupItem[]): void {
    this.deps.clock.update(op.ht);
    this.lastWriteHt = htMax(this.lastWriteHt, op.ht);
    if (opId.index <= this.intentsFloor.index) return; // already in IntentsDB (replay)
    if (!this.txnStatusTablets.has(op.txn.txnId)) this.txnFirstSeen.set(op.txn.txnId, performance.now());
    this.txnStatusTablets.set(op.txn.txnId, op.txn.statusTablet);
    // Proposed before this replica applied the transaction's REMOVE (a write racing the abort):
    // these intents come after the removal, so the sweep removes them again (no status RPC needed).
    if (this.localOutcomes.get(op.txn.txnId)?.status === 'ABORTED' && this.cleanupQueue.size < OUTCOME_LIMITS.max) this.cleanupQueue.add(op.txn.txnId);
    intents.push(op.reads ? { txn: op.txn, ops: op.ops, ht: op.ht, opId, reads: op.reads } : { txn: op.txn, ops: op.ops, ht: op.ht, opId });
  }

  private async flushIntents(intents: IntentsGroupItem[]): Promise<void> {
    if (intents.length === 0) return;
    if (this.corruptionTargeted()) this.corruptOneWrite(intents, 'provisional record (IntentsDB)');
    await this.docdb.writeIntentsMany(intents.splice(0, intents.length));
  }

  /**
   * CHANGE_SCHEMA (ALTER TABLE): the replica's schema from this entry on, durable in meta.json before
   * the entry counts as applied (the databases' frontiers may pass it; it is never replayed then). An
   * entry of an older or equal version is a no-op (replay, a repeated AlterSchema).
   */
  private changeSchema(op: Extract<TabletOp, { type: 'CHANGE_SCHEMA' }>, opId: OpId): void {
    if (op.schemaVersion <= this.metaValue.schemaVersion) return;
    const durability = op.durability ?? this.metaValue.durability;
    const next: TabletMeta = { ...this.metaValue, schema: op.schema, tableName: op.tableName, schemaVersion: op.schemaVersion, ...(durability ? { durability } : {}) };
    writeTabletMeta(this.deps.dir, next);
    this.metaValue = next;
    // ALTER TABLE ... durability: this replica's log follows from here on (docs/durability.md).
    if (durability) this.storage.setDurability?.(durability);
    // Before any later entry writes an added column; a dropped column's values are read no more.
    applySchemaToDocDb(this.docdb, next);
    this.deps.log.info({ tablet: this.tabletId, table: op.tableName, schemaVersion: op.schemaVersion, index: opId.index }, 'schema changed');
  }

  /** The Raft log level in force here: the table's, capped at FLUSH by durable_wal_write=false (docs/durability.md). */
  walDurability(): WalDurability {
    return this.storage?.durability?.() ?? this.metaValue.durability ?? DEFAULT_WAL_DURABILITY;
  }

  /** Leader: replicate the table's schema `version` (AlterSchema from the master); answers the version now applied here. */
  async alterSchema(schema: TableSchema, version: number, tableName: string, durability?: WalDurability): Promise<number> {
    this.checkServing();
    if (version > this.metaValue.schemaVersion) await this.proposeOp({ type: 'CHANGE_SCHEMA', schemaVersion: version, tableName, schema, ...(durability ? { durability } : {}) });
    return this.metaValue.schemaVersion;
  }

  /** APPLY_TXN: remember the outcome; the apply-pending mark joins the RegularDB group (flushRegular starts the apply). */
  private collectApply(op: Extract<TabletOp, { type: 'APPLY_TXN' }>, opId: OpId, group: RegularGroupItem[]): void {
    this.deps.clock.update(op.commitHt);
    if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.tabletId, txn: op.txnId, commitHt: String(op.commitHt), index: opId.index, floor: [this.regularFloor.index, this.intentsFloor.index] }, 'apply txn entry');
    this.localOutcomes.remember(op.txnId, { status: 'COMMITTED', commitHt: op.commitHt, priority: 0 });
    this.waitQueue.wake(op.txnId);
    if (opId.index <= this.regularFloor.index && opId.index <= this.intentsFloor.index) return;
    if (this.applying.has(op.txnId)) return; // a duplicate APPLY entry while the first still runs
    if (group.some((g) => g.op.type === 'APPLY_TXN' && g.op.txnId === op.txnId)) return; // a duplicate in this batch
    group.push({ op, opId, write: undefined });
  }

  /** TEST_corrupt_tablet_replica names this tablet (or every tablet). */
  private corruptionTargeted(): boolean {
    const corrupt = this.deps.flags.get(TEST_CORRUPT_TABLET_REPLICA);
    return corrupt !== '' && (corrupt === '*' || corrupt === this.tabletId);
  }

  /**
   * TEST_corrupt_tablet_replica: change the first column value of these writes (plain ones about to
   * go to RegularDB, or a transaction's about to become provisional records) that can be changed, in
   * this replica's copy only, and clear the flag once done.
   */
  private corruptOneWrite(writes: Array<{ ops: readonly RowOp[]; opId: OpId }>, what: string): void {
    for (const w of writes) {
      for (let k = 0; k < w.ops.length; k++) {
        const op = w.ops[k]!;
        if (op.type !== 'upsert') continue;
        const c = op.columns.findIndex((x) => x.value !== null);
        if (c < 0) continue;
        const v = op.columns[c]!.value;
        const wrong = typeof v === 'string' ? `${v}#corrupt` : typeof v === 'bigint' ? v + 1n : typeof v === 'number' ? v + 1 : typeof v === 'boolean' ? !v : v instanceof Uint8Array ? Buffer.concat([v, Buffer.from([0])]) : v;
        const ops = [...w.ops];
        ops[k] = { ...op, columns: op.columns.map((x, i) => (i === c ? { ...x, value: wrong } : x)) };
        w.ops = ops;
        this.deps.flags.setAtRuntime(TEST_CORRUPT_TABLET_REPLICA.name, '', true);
        this.deps.log.warn({ tablet: this.tabletId, index: w.opId.index, columnId: op.columns[c]!.columnId, what }, 'TEST_corrupt_tablet_replica: wrote one wrong value in this replica only');
        return;
      }
    }
  }

  /** `before`: writes that must be done before anything of the group counts as applied (the batch's intents). */
  private async flushRegular(group: RegularGroupItem[], before?: Promise<void>): Promise<void> {
    if (group.length === 0) return;
    const items = group.splice(0, group.length);
    const writes = items.flatMap((i) => (i.write ? [i.write] : []));
    const applies = items.flatMap((i) => (i.op.type === 'APPLY_TXN' ? [{ txnId: i.op.txnId, commitHt: i.op.commitHt, opId: i.opId }] : []));
    let marks: ApplyMark[] = [];
    if (writes.length > 0 || applies.length > 0) {
      if (items.some((i) => i.op.type === 'WRITE' && i.write)) {
        const sleepMs = this.deps.flags.get(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS);
        if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
      }
      // A small transaction is applied in this very batch (its versions and apply state), unless
      // its apply is to be delayed on this replica; any other gets an apply-pending mark here,
      // durable before any of its intents moves: a restart resumes the apply even if its entry is
      // not replayed.
      const applyNow = this.deps.flags.get(TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS) === 0;
      if (this.corruptionTargeted()) this.corruptOneWrite(items.flatMap((i) => (i.op.type === 'WRITE' && i.write ? [i.write] : [])), 'version (RegularDB)');
      marks = await this.docdb.writeRegularMany(writes, applies, applyNow);
    }
    if (before) await before;
    for (const i of items) {
      if (i.op.type === 'WRITE') {
        if (i.write) this.markApplied(i.op.ht);
      } else if (i.op.type === 'TXN_STATUS') {
        // A COMMITTED record's entry time is its commit hybrid time.
        if (i.op.status === 'COMMITTED') this.commitPoints.record(i.op.txnId, i.op.ht, this.deps.clock.wallMicros());
        this.statusListener?.(i.op);
      }
    }
    let appliedNow = false;
    applies.forEach((a, k) => {
      if (marks[k] === 'pending') this.startApply(a);
      else if (marks[k] === 'applied') {
        appliedNow = true;
        this.noteApplied(a, this.deps.clock.wallMicros());
      }
    });
    // Their clean-ups (intent deletes, apply-state deletes) follow later, shared (as the worker's).
    if (appliedNow && !this.flushDeferredIfDue() && this.applyWorker === undefined) this.scheduleDeferredFlush();
  }

  /** A transaction's intents are applied on this replica: the lag log, and it no longer has intents here. */
  private noteApplied(a: ApplyItem, markedMicros: number): void {
    this.applyLag.record(a.txnId, a.commitHt, this.deps.clock.wallMicros(), markedMicros);
    this.txnStatusTablets.delete(a.txnId);
    this.txnFirstSeen.delete(a.txnId);
  }

  /**
   * Move a committed transaction's intents OFF the ordered apply path: later entries of this tablet,
   * lease and ReadIndex reads on this replica do not wait for it, and readers meanwhile resolve the
   * intents through pendingApplies as committed at commitHt (docs/architecture.md §Apply path: reads at any leader already
   * return the committed rows while this replica still holds only intents). Applies queued together
   * run together (DocDb.applyIntentsMany: two RocksDB batches for the whole group).
   */
  private startApply(a: ApplyItem): void {
    this.pendingApplies.set(a.txnId, a.commitHt);
    const markedMicros = this.deps.clock.wallMicros();
    // The lab's defining knob: only this replica's apply of this transaction waits.
    const sleepMs = this.deps.flags.get(TEST_INJECT_SLEEP_BEFORE_APPLYING_INTENTS_MS);
    const run = (async (): Promise<void> => {
      if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
      if (this.state !== TabletState.RUNNING) return; // closed: the persisted apply state resumes at open
      await this.queueApply(a);
      this.noteApplied(a, markedMicros);
    })();
    this.applying.set(a.txnId, run);
    run
      .catch((e: unknown) => {
        // A storage failure is fail-stop for this replica (CONVENTIONS): stop serving it.
        this.failReplica(`apply of ${a.txnId} failed: ${e instanceof Error ? e.message : String(e)}`);
      })
      .finally(() => {
        this.pendingApplies.delete(a.txnId);
        if (this.applying.get(a.txnId) === run) this.applying.delete(a.txnId);
      });
  }

  /** Applies waiting for the apply worker, and the worker (one per replica) while it runs. */
  private applyQueue: Array<ApplyItem & { resolve: () => void; reject: (e: unknown) => void }> = [];
  private applyWorker: Promise<void> | undefined;

  private queueApply(a: ApplyItem): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.applyQueue.push({ txnId: a.txnId, commitHt: a.commitHt, opId: a.opId, resolve, reject }); // not { ...a, resolve, reject }: see update-batcher.ts
      this.applyWorker ??= this.runApplyWorker().finally(() => (this.applyWorker = undefined));
    });
  }

  private async runApplyWorker(): Promise<void> {
    for (;;) {
      if (this.applyQueue.length === 0) {
        // Nothing follows: the deferred clean-ups (intent deletes, apply-state deletes) ride along
        // with this replica's next writes, or get written after apply_cleanup_delay_ms.
        this.scheduleDeferredFlush();
        return;
      }
      const items = this.applyQueue.splice(0, APPLY_GROUP_MAX);
      try {
        if (this.state === TabletState.RUNNING) await this.docdb.applyIntentsMany(items);
        for (const i of items) i.resolve();
      } catch (e) {
        for (const i of items) i.reject(e);
      }
      // Under steady load the worker never runs out of work: clean-ups that waited long enough are
      // written beside the next applies.
      this.flushDeferredIfDue();
    }
  }

  private deferredTimer: NodeJS.Timeout | undefined;
  private deferredFlush: Promise<void> | undefined;

  /**
   * Write the deferred clean-ups of the applies (DocDb.flushDeferred: the intent deletes after one
   * RegularDB sync, then the apply-state deletes) apply_cleanup_delay_ms after the oldest of them,
   * unless later writes carried them. Nothing depends on their timing (a restart resumes an apply
   * whose intents are still there: the same versions again); written at once, they cost a sync and
   * RocksDB batches per apply when transactions come one at a time.
   */
  private scheduleDeferredFlush(): void {
    if (this.deferredTimer) return;
    const waitMs = Math.max(0, this.deps.flags.get(APPLY_CLEANUP_DELAY_MS) - this.docdb.deferredAgeMs());
    this.deferredTimer = setTimeout(() => {
      this.deferredTimer = undefined;
      this.startDeferredFlush();
    }, waitMs);
    this.deferredTimer.unref();
  }

  /** A flush was asked for while one ran (what was deferred meanwhile needs another). */
  private deferredFlushAgain = false;

  /** Start writing the deferred clean-ups when the oldest waited apply_cleanup_delay_ms; true if due. */
  private flushDeferredIfDue(): boolean {
    if (this.docdb.deferredAgeMs() < this.deps.flags.get(APPLY_CLEANUP_DELAY_MS)) return false;
    this.startDeferredFlush();
    return true;
  }

  private startDeferredFlush(): void {
    if (this.state !== TabletState.RUNNING) return;
    if (this.deferredFlush) {
      this.deferredFlushAgain = true;
      return;
    }
    this.deferredFlush = this.docdb
      .flushDeferred()
      .catch((e: unknown) => {
        // A storage failure is fail-stop for this replica (CONVENTIONS), as in the apply itself.
        if (this.state !== TabletState.RUNNING) return;
        this.failReplica(`writing the clean-ups of applied transactions failed: ${e instanceof Error ? e.message : String(e)}`);
      })
      .finally(() => {
        this.deferredFlush = undefined;
        if (this.deferredFlushAgain) {
          this.deferredFlushAgain = false;
          this.startDeferredFlush();
        }
      });
  }

  /** Before the databases close: no timer left, no deferred flush running. */
  private async cancelDeferredFlush(): Promise<void> {
    if (this.deferredTimer) clearTimeout(this.deferredTimer);
    this.deferredTimer = undefined;
    this.deferredFlushAgain = false;
    while (this.deferredFlush) await this.deferredFlush;
  }

  private async removeTxn(op: Extract<TabletOp, { type: 'REMOVE_TXN' }>, opId: OpId): Promise<void> {
    if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.tabletId, txn: op.txnId, index: opId.index }, 'remove txn entry');
    this.localOutcomes.remember(op.txnId, { status: 'ABORTED', priority: 0 });
    this.waitQueue.wake(op.txnId);
    this.cleanupQueue.delete(op.txnId);
    if (opId.index <= this.intentsFloor.index) return;
    await this.docdb.removeIntents(op.txnId, opId);
    this.txnStatusTablets.delete(op.txnId);
    this.txnFirstSeen.delete(op.txnId);
  }

  /**
   * Propose one tablet op as leader and wait (bounded) until it is Raft-committed and applied here.
   * Used by the coordinator (TXN_STATUS) and the participant (APPLY_TXN / REMOVE_TXN).
   */
  async proposeOp(op: TabletOp, timeoutMs?: number, onProposed?: (proposal: Promise<unknown>) => void): Promise<void> {
    this.checkServing();
    const proposal = this.raft.propose(encodeTabletOp(op));
    onProposed?.(proposal);
    const ms = timeoutMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, `tablet ${this.tabletId}: ${op.type} not committed within ${ms} ms (outcome unknown)`)), ms);
    });
    try {
      await Promise.race([proposal, timeout]);
    } catch (e) {
      throw this.withLeaderHint(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A fresh hybrid time for an entry of this tablet, above every earlier one. */
  nextHt(): HybridTime {
    let ht = this.deps.clock.now();
    if (ht <= this.lastWriteHt) ht = this.lastWriteHt + 1n;
    this.lastWriteHt = ht;
    return ht;
  }

  /** The replica's current Raft term. */
  currentTerm(): number {
    return this.raft.currentTerm();
  }

  isLeaderReady(): boolean {
    return this.state === TabletState.RUNNING && this.raft.isLeader() && this.raft.isLeaderReady();
  }

  /**
   * Transactional write (participant leader): row locks → conflict resolution against other
   * transactions' intents and newer committed versions → one WRITE_INTENTS entry; acknowledged after
   * Raft commit and local apply (every replica then holds the intents in its IntentsDB).
   *
   * Serializable: no snapshot to compare with — the write takes {SW} intents (and a read lock on each
   * row an INSERT/UPDATE checks), orders after committed conflicting transactions, and checks
   * existence at the current time (see serializableReadTime).
   */
  async writeIntents(req: TxnWriteRequest): Promise<HybridTime> {
    // A split waiting for intents to drain: transactions already here may finish, new ones wait.
    if (performance.now() < this.newTxnHoldUntilMs && !this.txnStatusTablets.has(req.txn.txnId)) {
      throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${this.tabletId} is about to split: new transactions wait`);
    }
    return this.deduped(req.request, (track) => this.waitingOnConflict(req.deadlineMonoMs, (wait) => this.writeIntentsOnce(req, wait, track), req.coalesced === true));
  }

  /**
   * Run a client write once, whatever copies of it arrive (retryable requests): a copy of a request
   * this replica replicated answers its hybrid time, a copy of one running here waits for it. The
   * running request's outcome is its Raft proposal's (exact: applied, or never), or its failure
   * before it proposed — not the caller's timeout, after which the entry may still commit.
   */
  private deduped(request: RequestTag | undefined, run: (track: ProposalTracker) => Promise<HybridTime>): Promise<HybridTime> {
    if (!request) return run(() => undefined);
    this.checkServing();
    const seen = this.retryable.check(request, this.tabletId);
    if (seen.kind === 'replicated') return Promise.resolve(seen.ht);
    if (seen.kind === 'running') return seen.result;
    let proposed = false;
    let settle!: { resolve: (ht: HybridTime) => void; reject: (e: unknown) => void };
    const outcome = new Promise<HybridTime>((resolve, reject) => (settle = { resolve, reject }));
    outcome.catch(() => undefined);
    this.retryable.start(request, outcome);
    const result = run((proposal, ht) => {
      proposed = true;
      proposal.then(
        () => settle.resolve(ht),
        (e: unknown) => settle.reject(this.withLeaderHint(e)),
      );
    });
    result.then(
      // A read-modify-write whose condition failed wrote nothing (0n): a copy runs it again.
      (ht) => {
        if (!proposed) settle.resolve(ht);
      },
      (e: unknown) => {
        if (!proposed) settle.reject(e);
      },
    );
    return result;
  }

  /**
   * Run `attempt` (row locks → conflict resolution → Raft entry). Under enable_wait_queues a pending
   * transaction that outranks this one blocks it (BlockedBy): it waits in the wait queue with no lock
   * held — woken when this tablet applies or removes a blocker, or after wait_queue_poll_interval_ms —
   * and tries again from the start; near the caller's deadline it stops waiting and fails with
   * TXN_CONFLICT (nothing written), as fail-on-conflict would have at once.
   */
  private async waitingOnConflict<T>(deadlineMonoMs: number | undefined, attempt: (wait: boolean) => Promise<T>, coalesced = false): Promise<T> {
    const start = performance.now();
    const end = deadlineMonoMs ?? start + this.deps.flags.get(WRITE_TIMEOUT_MS);
    let warned = false;
    for (;;) {
      const wait = this.deps.flags.get(ENABLE_WAIT_QUEUES);
      try {
        return await attempt(wait);
      } catch (e) {
        if (!(e instanceof BlockedBy)) throw e;
        if (coalesced) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${this.tabletId}: blocked by pending transaction(s) ${e.blockers.join(', ')}; send this write alone to wait for them`, { otherTxnId: e.blockers[0] });
        if (!warned && performance.now() - start > LONG_WAIT_MS) {
          warned = true;
          this.deps.log.info({ tablet: this.tabletId, blockers: e.blockers, waitedMs: Math.round(performance.now() - start) }, 'waiting long for pending transactions');
        }
        const left = end - performance.now() - WAIT_MARGIN_MS;
        const waited = left > 0 && (await this.waitQueue.wait(e.blockers, Math.min(left, this.deps.flags.get(WAIT_QUEUE_POLL_INTERVAL_MS))));
        if (!waited) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.tabletId}: waited for pending transaction(s) ${e.blockers.join(', ')} until the request's deadline`, { otherTxnId: e.blockers[0] });
      }
    }
  }

  /**
   * A transaction this replica removed (REMOVE_TXN applied: it is aborted for certain) writes or
   * locks nothing more here: its client learns the abort now instead of at its next heartbeat or
   * commit, and no intents are left behind after the removal.
   */
  private checkNotRemoved(txnId: TxnId): void {
    if (this.localOutcomes.get(txnId)?.status === 'ABORTED') throw new DbError(ErrorCode.TXN_ABORTED, `transaction ${txnId} was aborted (tablet ${this.tabletId} removed its intents)`, { txnId });
  }

  private async writeIntentsOnce(req: TxnWriteRequest, wait: boolean, track?: ProposalTracker): Promise<HybridTime> {
    this.checkServing();
    this.checkNotRemoved(req.txn.txnId);
    if (req.propagatedHt) this.deps.clock.update(req.propagatedHt);
    const release = await this.locks.acquire(req.ops.map((o) => docKeyString(o.op.key)));
    // As in writeOnce: intents whose entry timed out keep their rows locked until it settles, or the
    // next writer's conflict check would miss them.
    let unsettled: Promise<unknown> | undefined;
    try {
      const ops = req.ops.map((o) => o.op);
      this.rowLocks.check(this.tabletId, ops.map((o) => o.key), undefined, this.deps.clock.now());
      const serializable = req.txn.isolation === Isolation.SERIALIZABLE;
      const checked = req.ops.filter((o) => o.kind === 'INSERT' || o.kind === 'UPDATE').map((o) => o.op.key);
      const reads: ReadLocks | undefined = serializable && checked.length > 0 ? { rows: checked, tablet: false } : undefined;
      const conflicts = await this.docdb.findConflicts(req.txn, ops, serializable ? this.deps.clock.now() : req.readHt, reads);
      const env = this.deps.txnEnv;
      if (conflicts.length > 0) {
        if (!env) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.tabletId}: conflicting transaction`);
        if (serializable) {
          const after = await resolveSerializableConflicts(req.txn, this.deps.clock.now(), conflicts, this.conflictDeps(env), wait);
          if (after > 0n) this.deps.clock.update(after);
        } else await resolveConflicts(req.txn, req.readHt, conflicts, this.conflictDeps(env), wait);
      }
      const existsAt = serializable ? this.deps.clock.now() : req.readHt;
      for (const o of req.ops) {
        if (o.kind !== 'INSERT' && o.kind !== 'UPDATE') continue;
        const row = await this.docdb.getRow(o.op.key, { readHt: existsAt, txnId: req.txn.txnId, resolveStatus: this.statusResolver() });
        if (o.kind === 'INSERT' && row) throw new DbError(ErrorCode.ALREADY_EXISTS, `tablet ${this.tabletId}: row already exists`);
        if (o.kind === 'UPDATE' && !row) throw new DbError(ErrorCode.NOT_FOUND, `tablet ${this.tabletId}: row does not exist`);
      }
      const ht = this.nextHt();
      if (this.deps.log.isLevelEnabled('debug')) this.deps.log.debug({ trace: 'txn', tablet: this.tabletId, txn: req.txn.txnId, readHt: String(req.readHt), ht: String(ht), keys: ops.map((o) => docKeyString(o.key)), conflicts: conflicts.map((c) => (c.type === 'intent' ? `intent:${c.txnId}` : `committed:${c.commitHt}`)) }, 'write intents');
      const op: TabletOp = reads ? { type: 'WRITE_INTENTS', txn: req.txn, ht, ops, reads } : { type: 'WRITE_INTENTS', txn: req.txn, ht, ops };
      if (req.request) op.request = req.request;
      this.intentWritesInFlight++;
      try {
        await this.proposeOp(op, req.deadlineMs, (p) => {
          unsettled = p;
          track?.(p, ht);
        });
        unsettled = undefined;
      } finally {
        this.intentWritesInFlight--;
      }
      this.metrics.writeOps++;
      this.metrics.rowsWritten += req.ops.length;
      return ht;
    } finally {
      releaseWhenSettled(release, unsettled);
    }
  }

  /**
   * The read time of a serializable transaction's read (YugabyteDB's serializable isolation): take
   * read locks — a strong read intent on each row read, or for a scan on the whole tablet (the
   * tablet gate held exclusively meanwhile, so no write's conflict check races it) — resolving
   * conflicts with other transactions' write intents (higher priority wins; committed ones are
   * ordered before), replicate them in a WRITE_INTENTS entry, and read at that entry's hybrid time.
   * From then until the transaction ends no other transaction can write what was read, so every
   * read of the transaction sees what its commit time would: two-phase locking, with no snapshot
   * and no read restarts. Locks the transaction already holds here are not taken again: the read
   * runs at the current time.
   */
  private serializableReadTime(txn: TxnMeta, reads: ReadLocks, propagated: HybridTime | undefined, deadlineMonoMs: number | undefined): Promise<HybridTime> {
    return this.waitingOnConflict(deadlineMonoMs, (wait) => this.serializableReadTimeOnce(txn, reads, propagated, wait));
  }

  private async serializableReadTimeOnce(txn: TxnMeta, reads: ReadLocks, propagated: HybridTime | undefined, wait: boolean): Promise<HybridTime> {
    this.checkServing();
    this.checkNotRemoved(txn.txnId);
    if (propagated) this.deps.clock.update(propagated);
    // A scan's lock (tablet or hash key) covers rows no write has locked yet: it takes the tablet
    // gate exclusively while it checks and replicates, so no write's conflict check races it.
    const scan = reads.tablet || (reads.hashKeys?.length ?? 0) > 0;
    const release = await this.locks.acquire(reads.rows.map((k) => docKeyString(k)), scan ? 'exclusive' : 'shared');
    try {
      if (this.docdb.holdsReadLocks(txn.txnId, reads)) return this.deps.clock.now();
      const conflicts = await this.docdb.findConflicts(txn, [], this.deps.clock.now(), reads);
      if (conflicts.length > 0) {
        const env = this.deps.txnEnv;
        if (!env) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.tabletId}: conflicting transaction`);
        const after = await resolveSerializableConflicts(txn, this.deps.clock.now(), conflicts, this.conflictDeps(env), wait);
        if (after > 0n) this.deps.clock.update(after);
      }
      const ht = this.nextHt();
      await this.proposeOp({ type: 'WRITE_INTENTS', txn, ht, ops: [], reads });
      this.metrics.readLocks++;
      return ht;
    } finally {
      release();
    }
  }

  /** A serializable transaction's point read: read locks on `keys`, then the rows at their time. */
  async readSerializable(
    keys: DocKey[],
    txn: TxnMeta,
    opts: { columns?: number[]; propagatedHt?: HybridTime; maxBytes?: number; deadlineMonoMs?: number },
  ): Promise<{ rows: Array<Row | undefined>; readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    const { deadlineMonoMs, ...o } = opts;
    const readHt = await this.serializableReadTime(txn, { rows: keys, tablet: false }, opts.propagatedHt, deadlineMonoMs);
    return this.read(keys, { ...o, readHt, txnId: txn.txnId });
  }

  /** A serializable transaction's scan: the tablet's read lock, then the page at its time. */
  async scanSerializable(
    txn: TxnMeta,
    opts: { startKey?: Uint8Array; endKey?: Uint8Array; limit?: number; columns?: number[]; propagatedHt?: HybridTime; maxBytes?: number; deadlineMonoMs?: number; filter?: ScanOptions['filter'] },
  ): Promise<ScanResult & { readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    const { deadlineMonoMs, ...o } = opts;
    // Confined to one hash key: lock that hash key (its one row, for a table without range columns),
    // not the tablet, so writes of other hash keys go on.
    const hashKey = hashKeyLockOfRange(opts.startKey, opts.endKey);
    const reads: ReadLocks = !hashKey ? { rows: [], tablet: true } : this.meta.schema.rangeColumns.length > 0 ? { rows: [], tablet: false, hashKeys: [hashKey] } : { rows: [hashKey], tablet: false };
    const readHt = await this.serializableReadTime(txn, reads, opts.propagatedHt, deadlineMonoMs);
    return this.scan({ ...o, readHt, txnId: txn.txnId });
  }

  private markApplied(ht: HybridTime): void {
    if (this.inflightHts.length === 0) return;
    this.inflightDone.add(ht);
    while (this.inflightHts.length > 0 && this.inflightDone.has(this.inflightHts[0]!)) this.inflightDone.delete(this.inflightHts.shift()!);
  }

  // ---- snapshots (remote bootstrap) -------------------------------------------------------------

  private createSnapshot(index: number): Uint8Array {
    const m = this.metaValue;
    const d: SnapshotDescriptor = { tabletId: m.tabletId, sourceUuid: this.deps.selfUuid, index, schema: { schemaVersion: m.schemaVersion, tableName: m.tableName, schema: m.schema }, retryable: this.retryable.image(), rowLocks: this.rowLocks.image() };
    return new TextEncoder().encode(JSON.stringify(d));
  }

  private async installSnapshot(snap: Snapshot): Promise<void> {
    let desc: SnapshotDescriptor;
    try {
      desc = JSON.parse(new TextDecoder().decode(snap.data)) as SnapshotDescriptor;
    } catch {
      throw new DbError(ErrorCode.CORRUPTION, `tablet ${this.tabletId}: undecodable snapshot descriptor`);
    }
    this.deps.log.info({ tablet: this.tabletId, source: desc.sourceUuid, index: snap.meta.index }, 'remote bootstrap: installing snapshot');
    this.state = TabletState.BOOTSTRAPPING;
    const marker = path.join(this.deps.dir, BOOTSTRAP_MARKER);
    fs.writeFileSync(marker, JSON.stringify(desc));
    await this.cancelDeferredFlush();
    // A history GC pass still deleting from the old databases ends first.
    await this.historyGcRunning?.catch(() => undefined);
    await this.docdb.close();
    this.wipeDbDirs();
    this.regular = await this.deps.openEngine(path.join(this.deps.dir, 'regular'));
    this.intents = await this.deps.openEngine(path.join(this.deps.dir, 'intents'));
    await this.deps.fetchSnapshot(desc, async (db, pairs) => {
      const eng = db === 'regular' ? this.regular : this.intents;
      await eng.write(
        pairs.map(([key, value]) => ({ type: 'put' as const, key, value })),
        { sync: false },
      );
    });
    await this.regular.flush();
    await this.intents.flush();
    this.docdb = await this.deps.openDocDb(this.regular, this.intents);
    const f = await this.docdb.frontier();
    this.regularFloor = f.regular;
    this.intentsFloor = f.intents;
    // The transactions with intents are the new databases' (loadTxnState), not the replaced ones'.
    this.txnStatusTablets.clear();
    this.txnFirstSeen.clear();
    await this.loadTxnState();
    // The writes the source replicated up to the snapshot (those after it are applied here next).
    if (desc.retryable) this.retryable.restore(parseRetryableImage(desc.retryable));
    if (desc.rowLocks) {
      this.rowLocks.restore(parseRowLockImage(desc.rowLocks));
      // The log here starts after the snapshot: a restart finds the locks it granted only in this file.
      await writeFileDurablyAsync(this.deps.dir, ROW_LOCKS_FILE, JSON.stringify(this.rowLocks.image()));
    }
    // The schema the source had (never older than the entries the snapshot stands for): an ALTER whose
    // CHANGE_SCHEMA entry was compacted away reaches this replica here.
    // DocDB learns the schema's columns only with it (the new databases may hold columns added after this
    // replica's old schema); without it (an older source), DocDB ignores and deletes no column until the next change.
    if (desc.schema) {
      this.changeSchema({ type: 'CHANGE_SCHEMA', schemaVersion: desc.schema.schemaVersion, tableName: desc.schema.tableName, schema: parseTableSchema(desc.schema.schema) }, { term: 0, index: snap.meta.index });
      applySchemaToDocDb(this.docdb, this.metaValue);
    }
    await this.snapshotListener?.();
    fs.rmSync(marker, { force: true });
    this.metrics.snapshotsInstalled++;
    this.state = TabletState.RUNNING;
  }

  /** First index still in the Raft log (entries below it were garbage-collected). */
  logFirstIndex(): number {
    return this.storage.firstIndex();
  }

  /** Bytes of Raft log entries this replica keeps in memory (undefined: not running, or no cache). */
  logCacheBytes(): number | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    return this.storage.stats?.().cacheBytes;
  }

  /** What this replica asked of its disks since it opened: WAL fsyncs, and write batches/ops per database (undefined until running). */
  ioCounts(): { logFsyncs?: number; walSync?: WalSyncTimes; docdb: ReturnType<DocDbApi['writeCounts']>; raftEarly: ReturnType<RaftGroup['earlyCounts']>; raftApply: ReturnType<RaftGroup['applyCounts']> } | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    const walSync = this.walSync();
    return { ...(walSync ? { logFsyncs: walSync.fsyncs, walSync } : {}), docdb: this.docdb.writeCounts(), raftEarly: this.raft.earlyCounts(), raftApply: this.raft.applyCounts() };
  }

  /** The Raft log's fdatasyncs since the replica opened and how long they took (undefined until running, or for a log without files). */
  walSync(): WalSyncTimes | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    const log = this.storage.stats?.();
    return log ? walSyncTimes(log) : undefined;
  }

  /** RocksDB's background work in each database since it opened (undefined until running; a database whose engine has none is left out). */
  backgroundWork(): { regulardb?: BackgroundWork; intentsdb?: BackgroundWork } | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    // An engine closing under a reopen (remote bootstrap) throws SHUTTING_DOWN: leave it out of this
    // read rather than fail the console page or metrics scrape that asked.
    const read = (e: KvEngine): BackgroundWork | undefined => {
      try {
        return e.background?.();
      } catch {
        return undefined;
      }
    };
    const regulardb = read(this.regular);
    const intentsdb = read(this.intents);
    return { ...(regulardb ? { regulardb } : {}), ...(intentsdb ? { intentsdb } : {}) };
  }

  /** Source side of remote bootstrap: consistent iterators over both databases (see SnapshotSessions). */
  engines(): { regular: KvEngine; intents: KvEngine } {
    return { regular: this.regular, intents: this.intents };
  }

  /**
   * Log GC: make both databases durable up to their frontier (read first, so the sync covers it) and
   * discard the Raft log below it, keeping `retain` entries for followers that lag a little.
   *
   * Durable, not flushed: RocksDB keeps its own write-ahead log here, so one synced write to each
   * database (an fsync) makes every batch before it survive a crash, as a memtable flush would. The
   * flush this used to do went through CompactRange over the whole key space (the binding has no
   * flush), which rewrote every SST file and held the tserver's only libuv thread — every other
   * RocksDB call and WAL fsync of the process — for hundreds of milliseconds every log_gc_interval_ms.
   */
  async gcLog(retain: number): Promise<number> {
    if (this.state !== TabletState.RUNNING) return 0;
    this.retryable.expire(this.deps.flags.get(RETRYABLE_REQUEST_TIMEOUT_SECS) * 1000);
    const upTo = (await this.replayStart()) - retain;
    if (upTo < this.storage.firstIndex()) return 0;
    await this.docdb.syncDurable();
    // What the compacted entries tell of retryable requests survives in the image (taken after them).
    await writeFileDurablyAsync(this.deps.dir, RETRYABLE_FILE, JSON.stringify(this.retryable.image()));
    await writeFileDurablyAsync(this.deps.dir, ROW_LOCKS_FILE, JSON.stringify(this.rowLocks.image()));
    return this.raft.compactLog(upTo);
  }

  /**
   * History GC: drop RegularDB's versions older than the history cutoff (now minus
   * timestamp_history_retention_interval_sec) that no read at or after it can see, never what an
   * active reader or an unapplied transaction still needs (DocDb.gc caps the cutoff). Each replica
   * does it on its own, as YugabyteDB's compactions do; the cutoff becomes the history floor, below
   * which reads fail SNAPSHOT_TOO_OLD. Skipped (undefined) when nothing was written above the last
   * cutoff and the schema did not change — such a pass drops nothing new.
   */
  async historyGc(): Promise<{ versionsScanned: number; versionsDropped: number; droppedColumnVersions: number; cutoffHt: HybridTime } | undefined> {
    if (this.state !== TabletState.RUNNING || this.historyGcRunning) return undefined;
    const db = this.docdb;
    // Only a version written above the last pass's cutoff can have made an older one collectable
    // since: too few of them for the pass to be worth reading the whole tablet, unless the pass was
    // put off for long enough (TTL expiry needs no writes). They are counted as RegularDB puts (a
    // little more than the versions written) since the newest sample taken at or before that cutoff;
    // without such a sample (the first passes after a start) the pass runs. A sample is taken at
    // every chance, skipped or not.
    const putsNow = db.writeCounts().regulardb.puts;
    const nowHt = this.deps.clock.now();
    const samples = this.historyGcPutSamples;
    // The count starts again with databases opened anew (remote bootstrap): older samples mean nothing.
    if (samples.length > 0 && samples[samples.length - 1]!.puts > putsNow) samples.length = 0;
    samples.push({ atHt: nowHt, puts: putsNow });
    const last = this.historyGcLast;
    let base = -1;
    if (last) {
      // Keep the newest sample at or before the last cutoff and every later one.
      for (let i = 0; i < samples.length && samples[i]!.atHt <= last.cutoffHt; i++) base = i;
      if (base > 0) samples.splice(0, base);
      if (base > 0) base = 0;
    }
    if (samples.length > HISTORY_GC_PUT_SAMPLES_MAX) samples.splice(1, samples.length - HISTORY_GC_PUT_SAMPLES_MAX);
    const newest = db.newestVersionHt();
    // A DROP COLUMN since the last pass leaves values to delete whatever their time.
    const schemaVersion = this.meta.schemaVersion;
    const noDroppedColumnSince = schemaVersion === this.historyGcSchemaVersion || !db.mayHoldDroppedColumns();
    if (newest !== undefined && newest <= db.historyFloor() && schemaVersion === this.historyGcSchemaVersion) {
      this.historyGcStats.skipped++;
      return undefined;
    }
    // Every version is newer than the cutoff (a tablet younger than the retention interval, or one
    // never written): a pass could drop nothing, yet would read the whole tablet.
    const cutoffHt = db.historyCutoff(nowHt);
    if (cutoffHt < db.oldestVersionBound() && noDroppedColumnSince) {
      this.historyGcStats.skipped++;
      this.historyGcStats.skippedNothingOld++;
      return undefined;
    }
    if (last && base === 0 && schemaVersion === this.historyGcSchemaVersion && last.fewNewSkips < HISTORY_GC_FEW_NEW_SKIPS_MAX) {
      // Of those, only versions at or below this pass's cutoff can have made an older one collectable
      // yet: count up to the first sample taken at or after the cutoff (a newer write is younger than
      // the retention). A version applied later than its time is counted late; a pass put off for it
      // only waits for a later chance.
      let upTo = putsNow;
      for (const x of samples) {
        if (x.atHt >= cutoffHt) {
          upTo = x.puts;
          break;
        }
      }
      const newPuts = upTo - samples[0]!.puts;
      if (newPuts * 100 < this.deps.flags.get(HISTORY_GC_MIN_NEW_VERSIONS_PCT) * last.versionsKept) {
        last.fewNewSkips++;
        this.historyGcStats.skipped++;
        this.historyGcStats.skippedFewNew++;
        return undefined;
      }
    }
    const t0 = performance.now();
    // In passes of a bounded number of rows, yielding between them (incremental-gc.ts).
    const run = incrementalGc(db, cutoffHt, () => this.state === TabletState.RUNNING);
    this.historyGcRunning = run;
    try {
      const r = await run;
      this.historyGcSchemaVersion = schemaVersion;
      this.historyGcLast = { cutoffHt: r.cutoffHt, versionsKept: r.versionsScanned - r.versionsDropped, fewNewSkips: 0 };
      const g = this.historyGcStats;
      g.runs++;
      g.versionsScanned += r.versionsScanned;
      g.versionsDropped += r.versionsDropped;
      g.droppedColumnVersions += r.droppedColumnVersions;
      g.lastCutoffHt = r.cutoffHt;
      g.lastDropped = r.versionsDropped;
      g.lastMs = Math.round(performance.now() - t0);
      return r;
    } finally {
      this.historyGcRunning = undefined;
    }
  }

  /** The history floor of this replica's RegularDB (0: GC never ran); undefined until running. */
  historyFloorHt(): HybridTime | undefined {
    return this.state === TabletState.RUNNING ? this.docdb.historyFloor() : undefined;
  }

  // ---- client operations -----------------------------------------------------------------------

  private leaderError(): DbError {
    const uuid = this.raft.leaderId();
    const hint = uuid ? this.deps.peerAddress(uuid) : undefined;
    return new DbError(ErrorCode.NOT_THE_LEADER, `tablet ${this.tabletId}: this replica is not the leader`, { leaderUuid: uuid, leaderHint: hint ?? '' });
  }

  /** NOT_THE_LEADER (with hint) / LEADER_NOT_READY / not serving, as every tablet operation checks. */
  checkLeader(): void {
    this.checkServing();
  }

  /**
   * Leader-only answers from this replica's applied state (a coordinator's transaction records):
   * a lease, else a ReadIndex round, proves no other leader can have changed that state. Without it a
   * deposed leader cut off by a partition would answer from stale records (e.g. "no record, so
   * ABORTED" for a transaction its successor committed).
   */
  async confirmLeadership(): Promise<void> {
    this.checkServing();
    if (this.raft.hasLease()) return;
    try {
      await this.raft.readIndex();
    } catch (e) {
      throw this.withLeaderHint(e);
    }
    this.checkServing();
  }

  private checkServing(): void {
    if (this.metaValue.splitInto) throw tabletSplitError(this.tabletId, this.metaValue.splitInto);
    // A SPLIT proposed in an earlier term was applied before this leader became ready, or was lost.
    if (this.splitPendingTerm !== undefined && this.splitPendingTerm !== this.currentTerm()) this.splitPendingTerm = undefined;
    if (this.splitPendingTerm !== undefined) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${this.tabletId} is being split`);
    if (this.state === TabletState.DELETED) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${this.tabletId} was deleted`);
    if (this.state !== TabletState.RUNNING) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${this.tabletId} is ${this.state}`);
    if (!this.raft.isLeader()) throw this.leaderError();
    if (!this.raft.isLeaderReady()) throw new DbError(ErrorCode.LEADER_NOT_READY, `tablet ${this.tabletId}: leader is not ready yet`, { leaderUuid: this.deps.selfUuid });
  }

  private withLeaderHint(e: unknown): unknown {
    if (e instanceof DbError && e.code === ErrorCode.NOT_THE_LEADER && e.details['leaderHint'] === undefined) {
      const uuid = typeof e.details['leaderUuid'] === 'string' ? e.details['leaderUuid'] : '';
      return new DbError(e.code, e.message, { ...e.details, leaderHint: (uuid && this.deps.peerAddress(uuid)) || '' });
    }
    return e;
  }

  /**
   * Leader: a copy of `request` — its hybrid time when this replica replicated it, or the outcome of
   * the original still running here (a promise) — else undefined (a new request). Throws what
   * checkServing throws, and STALE_REQUEST for a late copy.
   */
  seenRequest(request: RequestTag): HybridTime | Promise<HybridTime> | undefined {
    this.checkServing();
    const seen = this.retryable.check(request, this.tabletId);
    return seen.kind === 'replicated' ? seen.ht : seen.kind === 'running' ? seen.result : undefined;
  }

  /** Write rows atomically (one Raft entry); resolves with the write's hybrid time. */
  async write(req: WriteRequest): Promise<HybridTime> {
    const deadlineMonoMs = req.deadlineMonoMs ?? performance.now() + this.deps.flags.get(WRITE_TIMEOUT_MS);
    return this.deduped(req.request, (track) => this.rowLocks.waitingForLocks(req.waitForLocks === true, deadlineMonoMs, () => this.deps.clock.now(), () => this.writeOnce(req, track)));
  }

  private async writeOnce(req: WriteRequest, track: ProposalTracker): Promise<HybridTime> {
    this.checkServing();
    if (req.propagatedHt) this.deps.clock.update(req.propagatedHt);
    const needCheck = req.ops.some((o) => o.kind === 'INSERT' || o.kind === 'UPDATE');
    const keys = req.computed ? req.computed.keys : req.ops.map((o) => o.op.key);
    const release = await this.locks.acquire(keys.map((k) => docKeyString(k)));
    // A write that timed out may still commit: its rows stay locked until its entry settles, or the
    // next read-modify-write of them would read without it and both would apply (a lost update).
    let unsettled: Promise<unknown> | undefined;
    try {
      let ops = req.ops.map((o) => o.op);
      if (req.fastPathTxn) await checkFastPathConflicts({ docdb: this.docdb, clock: this.deps.clock, tabletId: this.tabletId, conflictDeps: this.deps.txnEnv && this.conflictDeps(this.deps.txnEnv) }, req.fastPathTxn, ops);
      // A read-modify-write meets intents on its whole rows (it reads them), as a delete would.
      await this.orderAfterIntents(req.computed ? keys.map((key) => ({ type: 'delete' as const, key })) : ops);
      if (req.computed) {
        const computed = req.computed.compute(req.computed.readsRows === false ? keys.map(() => undefined) : await this.currentRows(keys));
        if (!computed) return 0n;
        ops = computed;
      }
      if (needCheck) {
        const readHt = this.deps.clock.now();
        for (const o of req.ops) {
          if (o.kind !== 'INSERT' && o.kind !== 'UPDATE') continue;
          // Committed-but-not-yet-applied transactions count: their rows exist.
          const row = await this.docdb.getRow(o.op.key, { readHt, resolveStatus: this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS });
          if (o.kind === 'INSERT' && row) throw new DbError(ErrorCode.ALREADY_EXISTS, `tablet ${this.tabletId}: row already exists`);
          if (o.kind === 'UPDATE' && !row) throw new DbError(ErrorCode.NOT_FOUND, `tablet ${this.tabletId}: row does not exist`);
        }
      }
      this.checkServing();
      // Strictly above every earlier write of this tablet (the clock already passed every applied one).
      let ht = this.deps.clock.now();
      if (ht <= this.lastWriteHt) ht = this.lastWriteHt + 1n;
      this.lastWriteHt = ht;
      // Row locks are judged at the write's own time (a lease may run out between check and write).
      this.rowLocks.check(this.tabletId, keys, req.heldLocks, ht);
      this.inflightHts.push(ht);
      const data = encodeTabletOp(req.request ? { type: 'WRITE', ht, ops, request: req.request } : { type: 'WRITE', ht, ops });
      const proposal = this.raft.propose(data);
      proposal.catch(() => this.markApplied(ht));
      track(proposal, ht);
      const timeoutMs = req.deadlineMs ?? this.deps.flags.get(WRITE_TIMEOUT_MS);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DbError(ErrorCode.TIMED_OUT, `tablet ${this.tabletId}: write not committed within ${timeoutMs} ms (outcome unknown)`)), timeoutMs);
      });
      try {
        unsettled = proposal;
        await Promise.race([proposal, timeout]);
        unsettled = undefined;
      } finally {
        clearTimeout(timer);
      }
      this.metrics.writeOps++;
      this.metrics.rowsWritten += keys.length;
      return ht;
    } catch (e) {
      throw this.withLeaderHint(e);
    } finally {
      releaseWhenSettled(release, unsettled);
    }
  }

  /**
   * The rows of `keys` as they are now, for a read-modify-write under their locks: every earlier
   * write of these rows is applied (each held the locks until then), committed transactions' intents
   * count, and orderAfterIntents moved the clock past their commit times.
   */
  private async currentRows(keys: readonly DocKey[]): Promise<Array<Row | undefined>> {
    const readHt = this.deps.clock.now();
    const resolveStatus = this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS;
    return Promise.all(keys.map((key) => this.docdb.getRow(key, { readHt, resolveStatus })));
  }

  /**
   * A plain write meets other transactions' intents on its keys (under the row locks, which every
   * transactional write of this leader also takes): committed ones order before it (the clock
   * passes their commit time, so the write's time is above it), pending ones are aborted, and an
   * unsettled one fails the write with a retryable TXN_CONFLICT (resolvePlainWriteConflicts).
   */
  private async orderAfterIntents(ops: RowOp[]): Promise<void> {
    const conflicts = await this.docdb.findIntentConflicts(ops);
    if (conflicts.length === 0) return;
    const env = this.deps.txnEnv;
    if (!env) throw new DbError(ErrorCode.TXN_CONFLICT, `tablet ${this.tabletId}: the write meets a transaction's intents`, {}, { retryable: true });
    const after = await resolvePlainWriteConflicts(conflicts, this.deps.clock.now(), this.conflictDeps(env));
    if (after > 0n) this.deps.clock.update(after);
  }

  /** What conflict resolution needs from this replica (writeIntents and plain writes). */
  private conflictDeps(env: PeerTxnEnv): ConflictDeps {
    return {
      env: this.settledEnv(env),
      statusTabletOf: (id) => this.txnStatusTablets.get(id),
      localOutcome: (id) => this.localOutcome(id),
      queueCleanup: (id) => {
        if (this.cleanupQueue.size < OUTCOME_LIMITS.max) this.cleanupQueue.add(id);
      },
    };
  }

  /** A read time no write can later land at or below. */
  safeTime(): HybridTime {
    const now = this.deps.clock.now();
    const oldest = this.inflightHts[0];
    return oldest !== undefined && oldest <= now ? oldest - 1n : now;
  }

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
  private async readTime(
    requested: HybridTime | undefined,
    propagated: HybridTime | undefined,
    requestedLimit?: HybridTime,
  ): Promise<{ readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    this.checkServing();
    if (propagated) this.deps.clock.update(propagated);
    if (!this.raft.hasLease()) {
      try {
        await this.raft.readIndex();
      } catch (e) {
        throw this.withLeaderHint(e);
      }
    }
    if (!requested) {
      const readHt = this.safeTime();
      return { readHt, globalLimitHt: this.globalLimitFor(readHt) };
    }
    const globalLimitHt = requestedLimit !== undefined && requestedLimit > requested ? requestedLimit : undefined;
    this.deps.clock.update(requested);
    // Wait (bounded) until every write that could land at or below the requested time is applied.
    for (let i = 0; i < 1000 && this.safeTime() < requested; i++) {
      await new Promise<void>((r) => {
        this.applyWaiters.push(r);
        setTimeout(r, 10);
      });
    }
    if (this.safeTime() < requested) throw new DbError(ErrorCode.TIMED_OUT, `tablet ${this.tabletId}: safe time did not reach the requested read time`);
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
  async read(
    keys: DocKey[],
    opts: { columns?: number[]; readHt?: HybridTime; globalLimitHt?: HybridTime; propagatedHt?: HybridTime; txnId?: TxnId; maxBytes?: number },
  ): Promise<{ rows: Array<Row | undefined>; readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    const { readHt, globalLimitHt } = await this.readTime(opts.readHt, opts.propagatedHt, opts.globalLimitHt);
    const rows: Array<Row | undefined> = [];
    const resolveStatus = this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS;
    const maxBytes = opts.maxBytes ?? Infinity;
    let bytes = 0;
    for (const k of keys) {
      // The answer is a prefix of the keys: once the rows read reach maxBytes, the rest is left for
      // the caller to ask again (at least one key is always answered).
      if (rows.length > 0 && bytes >= maxBytes) break;
      rows.push(
        await this.docdb.getRow(k, {
          readHt,
          resolveStatus,
          ...(globalLimitHt !== undefined ? { globalLimitHt } : {}),
          ...(opts.txnId ? { txnId: opts.txnId } : {}),
          ...(opts.columns?.length ? { columns: opts.columns } : {}),
        }),
      );
      bytes += rowBytesApprox(rows[rows.length - 1]);
    }
    this.metrics.readOps++;
    return { rows, readHt, globalLimitHt };
  }

  async scan(opts: {
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
  }): Promise<ScanResult & { readHt: HybridTime; globalLimitHt: HybridTime | undefined }> {
    const { readHt, globalLimitHt } = await this.readTime(opts.readHt, opts.propagatedHt, opts.globalLimitHt);
    const r = await this.docdb.scan({
      readHt,
      ...(globalLimitHt !== undefined ? { globalLimitHt } : {}),
      resolveStatus: this.deps.txnEnv ? this.statusResolver() : NO_TXN_STATUS,
      ...(opts.txnId ? { txnId: opts.txnId } : {}),
      ...(opts.startKey?.length ? { startKey: opts.startKey } : {}),
      ...(opts.endKey?.length ? { endKey: opts.endKey } : {}),
      ...(opts.limit ? { limit: opts.limit } : {}),
      ...(opts.maxBytes ? { maxBytes: opts.maxBytes } : {}),
      ...(opts.columns?.length ? { columns: opts.columns } : {}),
      ...(opts.filter ? { filter: opts.filter } : {}),
    });
    this.metrics.scanOps++;
    return { readHt, globalLimitHt, ...r }; // spread last: see update-batcher.ts
  }

  /** Cell reads (docs/cells.md, tserver/cell-service.ts): DocDB's at the read time read() would pick, or the requested one. */
  async readCells(opts: Omit<CellReadOptions, 'readHt'> & { readHt?: HybridTime; propagatedHt?: HybridTime }): Promise<CellReadResult & { readHt: HybridTime }> {
    const { readHt } = await this.readTime(opts.readHt, opts.propagatedHt);
    const r = await this.docdb.readCells({ ...opts, readHt });
    this.metrics.readOps++;
    return { ...r, readHt };
  }

  async stop(): Promise<void> {
    if (this.raft) await this.raft.stop();
    // The applies queued so far finish first (no new ones come once Raft stopped): closing the
    // databases under them would read as a storage failure.
    if (this.applyWorker) await this.applyWorker.catch(() => undefined);
    await this.cancelDeferredFlush();
    await this.historyGcRunning?.catch(() => undefined);
    // A clean stop leaves no apply state behind (each would be resumed, as a no-op, at the next open).
    if (this.docdb && this.state === TabletState.RUNNING) await this.docdb.flushDeferred().catch(() => undefined);
    if (this.docdb) await this.docdb.close().catch(() => undefined);
    if (this.storage) await this.storage.close().catch(() => undefined);
  }

  /** Stop and remove every file of this replica. */
  async destroy(): Promise<void> {
    await this.stop();
    this.state = TabletState.DELETED;
    fs.rmSync(this.deps.dir, { recursive: true, force: true });
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

/** Release row locks now, or once `unsettled` (an entry that timed out and may still commit) settles. */
function releaseWhenSettled(release: () => void, unsettled: Promise<unknown> | undefined): void {
  if (unsettled) void unsettled.then(release, release);
  else release();
}
