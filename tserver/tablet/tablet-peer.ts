/**
 * TabletPeer: one replica of one tablet — the only place where Raft meets DocDB (docs/architecture.md
 * §Tablet). It owns the replica's lifecycle (open, restart replay, stop), its Raft group and the
 * leader checks, and builds the parts that do the work, each owning its state:
 *   MvccClock (entry times, safe time) · WritePath (dedupe, row latches, propose) · ReadPath (read
 *   time, read, scan) · TxnParticipant + IntentWrites (intents, serializable reads, status
 *   resolution, wait queue) · ApplyPipeline + IntentApplier (the apply stage) · HistoryGc ·
 *   TabletSnapshots (remote bootstrap) · TabletFaults (TEST_ flags) · TabletDbs (the databases).
 * Its public methods are thin delegations to them.
 *
 * Restart: the databases record the op id of every batch they hold (their frontier); the Raft group
 * starts with appliedIndex = the oldest frontier that still matters, and apply skips every entry the
 * target database already holds, so replay is idempotent. (An IntentsDB that holds no transaction
 * contributes nothing to replay or log GC: there is nothing of it to recover.)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import { NodeId, type TxnId } from '../../common/ids';
import type { Logger } from '../../common/log';
import type { Rng } from '../../common/rng';
import type { BackgroundWork, CellReadOptions, CellReadResult, DocDbApi, DocKey, KvEngine, OpId, ScanResult, TxnMeta } from '../../docdb';
import { DEFAULT_WAL_DURABILITY, RaftGroup, type LeaderChange, type LogStorage, type Message, type RaftCore, type RaftGroupStatus, type RaftOptions, type WalDurability } from '../../raft';
import { makeDirs } from '../../common/fs-dirs';
import { RAFT_ELECTION_TIMEOUT_TICKS, RAFT_HEARTBEAT_TICKS, RAFT_TICK_INTERVAL_MS, RETRYABLE_REQUEST_TIMEOUT_SECS } from '../tserver-flags';
import { ApplyLagLog } from './apply-lag-log';
import { ApplyPipeline } from './apply-pipeline';
import { applySchemaToDocDb } from './cell-schema';
import { HistoryGc, type HistoryGcResult } from './history-gc';
import { IntentApplier } from './intent-applier';
import { MvccClock } from './mvcc-clock';
import { IntentWrites } from './participant/intent-writes';
import type { PeerTxnEnv, TxnStatusInfo } from './participant/txn-env';
import { TxnParticipant } from './participant/txn-participant';
import { ReadPath, type ReadResult, type ScanPage, type ScanRequest } from './read-path';
import { loadReplicatedState, saveReplicatedState } from './replicated-state';
import { RetryableRequests } from './retryable-requests';
import { RowLockOps, RowLockTable } from './row-locks';
import { TabletDbs } from './tablet-dbs';
import type { TabletEvents } from './tablet-events';
import { writeTabletMeta, type TableSchema, type TabletMeta } from './tablet-meta';
import type { RequestTag, TabletOp } from './tablet-op';
import { TabletSnapshots } from './tablet-snapshots';
import { tabletSplitError } from './tablet-split';
import { TabletState, type DbName, type SnapshotDescriptor, type TabletMetrics, type TxnWriteRequest, type WalSyncTimes, type WriteRequest } from './tablet-types';
import { TabletFaults } from './test-faults';
import { visibleChecksum, type VisibleChecksum } from './visible-checksum';
import { WritePath } from './write-path';

export { TabletState, type DbName, type SnapshotDescriptor, type TxnWriteRequest, type WalSyncTimes, type WriteRequest } from './tablet-types';
export type { TabletEvents, TxnStatusOp } from './tablet-events';

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
  /** What this replica tells the owner of its applied state beyond DocDB (or attachEvents later). */
  events?: TabletEvents;
  /** A storage failure: the replica stops (the server decides whether the process exits). */
  onFatal(tabletId: string, e: unknown): void;
}

function walSyncTimes(log: { logFsyncs: number; syncMicros?: number; syncMaxMicros?: number; slowSyncs?: number }): WalSyncTimes {
  return { fsyncs: log.logFsyncs, syncMs: Math.round(log.syncMicros ?? 0) / 1000, syncMaxMs: Math.round(log.syncMaxMicros ?? 0) / 1000, slowSyncs: log.slowSyncs ?? 0 };
}

export class TabletPeer {
  /** Identity, schema (changed by CHANGE_SCHEMA entries) and initial peers; also in meta.json. */
  private metaValue: TabletMeta;
  state: TabletState = TabletState.BOOTSTRAPPING;
  lastError = '';
  private raft!: RaftGroup;
  private storage!: LogStorage;
  private readonly dbs: TabletDbs;
  private events: TabletEvents | undefined;
  /** Carries out a SPLIT entry (tserver/split-apply.ts); set by the tablet manager. */
  private splitHandler: ((op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<void>) | undefined;
  /**
   * Set by the leader just before it proposes SPLIT (docs/splitting.md): nothing more is proposed
   * after it (checkServing runs right before every proposal), so the SPLIT entry is the parent's last.
   */
  private splitPendingTerm: number | undefined;
  /** Per transaction applied here: commit time → end of this replica's apply (console, benchmark). */
  readonly applyLag = new ApplyLagLog();
  /**
   * On a status tablet's replica: when it applied each transaction's COMMITTED record (the commit
   * point), for /api/v1/txn-applies' `commits` (the benchmark splits the apply lag into stages).
   */
  readonly commitPoints = new ApplyLagLog();
  readonly metrics: TabletMetrics = { writeOps: 0, readOps: 0, scanOps: 0, readLocks: 0, rowsWritten: 0, entriesApplied: 0, snapshotsInstalled: 0 };
  /** Client writes this replica replicated (retryable requests), and those it is running as leader. */
  readonly retryable = new RetryableRequests();
  /** Row locks with leases (replicated state: ROW_LOCK entries). */
  readonly rowLocks = new RowLockTable();
  private rowLockOpsValue: RowLockOps | undefined;
  private readonly mvcc: MvccClock;
  private readonly participant: TxnParticipant;
  private readonly writes: WritePath;
  private readonly intentWrites: IntentWrites;
  private readonly reads: ReadPath;
  private readonly applier: IntentApplier;
  private readonly pipeline: ApplyPipeline;
  private readonly gc: HistoryGc;
  private readonly snapshots: TabletSnapshots;

  private constructor(private readonly deps: TabletPeerDeps) {
    this.metaValue = deps.meta;
    this.events = deps.events;
    const { flags, clock, log } = deps;
    const tabletId = deps.meta.tabletId;
    const db = (): DocDbApi => this.dbs.docdb;
    const running = (): boolean => this.state === TabletState.RUNNING;
    const checkServing = (): void => this.checkServing();
    this.dbs = new TabletDbs({ dir: deps.dir, openEngine: deps.openEngine, openDocDb: deps.openDocDb });
    const faults = new TabletFaults({ tabletId, flags, log });
    this.mvcc = new MvccClock({ clock, tabletId });
    this.participant = new TxnParticipant({ tabletId, clock, db, ...(deps.txnEnv ? { txnEnv: deps.txnEnv } : {}) });
    const common = { tabletId, flags, clock, db, mvcc: this.mvcc, participant: this.participant, checkServing, metrics: this.metrics };
    this.writes = new WritePath({ ...common, retryable: this.retryable, rowLocks: this.rowLocks, withLeaderHint: (e) => this.withLeaderHint(e), propose: (data) => this.raft.propose(data) });
    const proposeOp = this.writes.proposeOp.bind(this.writes);
    this.intentWrites = new IntentWrites({ ...common, log, locks: this.writes.locks, rowLocks: this.rowLocks, deduped: (r, run) => this.writes.deduped(r, run), proposeOp });
    this.reads = new ReadPath({
      ...common,
      hasLease: () => this.raft.hasLease(),
      readIndex: () => this.raft.readIndex().catch((e: unknown) => Promise.reject(this.withLeaderHint(e))),
      serializableReadTime: (txn, r, propagated, deadline) => this.intentWrites.serializableReadTime(txn, r, propagated, deadline),
      hasRangeColumns: () => this.metaValue.schema.rangeColumns.length > 0,
    });
    const failReplica = (why: string): void => this.failReplica(why);
    this.applier = new IntentApplier({ flags, clock, db, running, participant: this.participant, applyLag: this.applyLag, delayMs: () => faults.applyIntentsDelayMs(), failReplica });
    this.pipeline = new ApplyPipeline({
      tabletId, clock, log, db, mvcc: this.mvcc, participant: this.participant, applier: this.applier, faults, retryable: this.retryable, rowLocks: this.rowLocks,
      isSplit: () => this.metaValue.splitInto !== undefined,
      changeSchema: (op, opId) => this.changeSchema(op, opId),
      split: async (op, index) => {
        await this.splitHandler?.(op, index);
        this.splitPendingTerm = undefined;
      },
      events: () => this.events,
      commitPoints: this.commitPoints,
      metrics: this.metrics,
    });
    this.gc = new HistoryGc({ flags, db, now: () => clock.now(), running, schemaVersion: () => this.metaValue.schemaVersion });
    this.snapshots = new TabletSnapshots({
      dir: deps.dir, selfUuid: deps.selfUuid, log, meta: () => this.metaValue, dbs: this.dbs, retryable: this.retryable, rowLocks: this.rowLocks,
      fetchSnapshot: deps.fetchSnapshot,
      setState: (s) => (this.state = s),
      quiesce: async () => {
        await this.applier.cancelDeferredFlush();
        // A history GC pass still deleting from the old databases ends first.
        await this.gc.settled();
      },
      databasesOpened: () => this.databasesOpened(),
      changeSchema: (op, opId) => this.changeSchema(op, opId),
      applySchema: () => applySchemaToDocDb(this.dbs.docdb, this.metaValue),
      events: () => this.events,
      metrics: this.metrics,
    });
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
    const storage = this.storage as LogStorage | undefined;
    if (raft) await raft.stop().catch(() => undefined);
    await this.dbs.close();
    if (storage) await storage.close().catch(() => undefined);
  }

  private async start(): Promise<void> {
    const { dir, meta } = this.deps;
    makeDirs(dir);
    const interrupted = this.snapshots.interrupted();
    if (interrupted) {
      // A remote bootstrap was interrupted: the databases are partial. Start empty so that the
      // leader's snapshot (which the log's base still requires) replaces them again.
      this.deps.log.warn({ tablet: meta.tabletId }, 'interrupted remote bootstrap: wiping partial databases');
      this.dbs.wipeDirs();
    }
    await this.dbs.open();
    // meta.json is never behind the databases: a CHANGE_SCHEMA entry is durable there before it counts as applied.
    applySchemaToDocDb(this.dbs.docdb, this.metaValue);
    await this.databasesOpened();
    this.storage = await this.deps.openLogStorage(path.join(dir, 'wal'), { durability: meta.durability ?? DEFAULT_WAL_DURABILITY });
    await this.initLog();
    await this.rebaseLogIfDbsAhead();
    const applied = await this.replayStart();
    const firstIndex = this.storage.firstIndex();
    if (applied < firstIndex - 1 && !interrupted) {
      this.deps.log.warn({ tablet: meta.tabletId, applied, firstIndex }, 'databases are behind the compacted log; waiting for a snapshot');
    }
    const appliedIndex = Math.min(Math.max(applied, firstIndex - 1), this.storage.lastIndex());
    loadReplicatedState({ dir, retryable: this.retryable, rowLocks: this.rowLocks }, this.storage, appliedIndex);
    this.raft = this.newRaftGroup(appliedIndex);
    this.state = TabletState.RUNNING;
  }

  /** A new replica's log starts with the peers of its meta as its configuration. */
  private async initLog(): Promise<void> {
    const init = this.storage.initialState();
    if (init.conf.voters.length > 0 || init.conf.learners.length > 0 || this.storage.lastIndex() !== 0) return;
    const voters = this.metaValue.peers.filter((p) => p.memberType === 'VOTER').map((p) => NodeId(p.uuid));
    const learners = this.metaValue.peers.filter((p) => p.memberType === 'LEARNER').map((p) => NodeId(p.uuid));
    this.storage.setConfState({ voters, learners });
    await this.storage.sync();
  }

  private newRaftGroup(appliedIndex: number): RaftGroup {
    const { flags, log } = this.deps;
    const tabletId = this.tabletId;
    const core = this.deps.newRaftCore({ id: NodeId(this.deps.selfUuid), storage: this.storage, applied: appliedIndex, electionTicks: flags.get(RAFT_ELECTION_TIMEOUT_TICKS), heartbeatTicks: flags.get(RAFT_HEARTBEAT_TICKS), rng: this.deps.rng, maxUncommittedBytes: 256 << 20 });
    return new RaftGroup({
      id: NodeId(this.deps.selfUuid),
      groupId: tabletId,
      storage: this.storage,
      core,
      appliedIndex,
      send: (msgs) => this.deps.send(msgs),
      applyEntries: (ents) => this.pipeline.applyEntries(ents),
      createSnapshot: (index) => Promise.resolve(this.snapshots.create(index)),
      installSnapshot: (snap) => this.snapshots.install(snap),
      onLeaderChange: (c) => {
        // Leadership is what a lab user follows (elections, transfers, balancing): one line each.
        log.info({ tablet: tabletId, term: c.term, role: c.role, leader: c.leader || undefined }, c.isLeader ? 'became leader' : c.leader ? 'following a new leader' : 'no leader');
        this.deps.onLeaderChange?.(tabletId, c);
        this.events?.leaderChanged?.(c);
      },
      onFatal: (e) => {
        this.state = TabletState.FAILED;
        this.lastError = e instanceof Error ? e.message : String(e);
        this.deps.onFatal(tabletId, e);
      },
      leaseClock: { tickIntervalMs: flags.get(RAFT_TICK_INTERVAL_MS) },
      log,
    });
  }

  /** After the databases opened (at start, or replaced by a snapshot): floors, transactions with intents, interrupted applies. */
  private async databasesOpened(): Promise<void> {
    const docdb = this.dbs.docdb;
    this.pipeline.setFloors(await docdb.frontier());
    await this.participant.load();
    const resume = (docdb as { resumeApplies?: () => Promise<number> }).resumeApplies;
    if (resume) await resume.call(docdb);
  }

  /**
   * After a crash of an ASYNC or FLUSH table (docs/durability.md) the databases may hold entries the
   * log lost: they reach the OS through RocksDB's own WAL while the Raft log held them in memory or
   * never fsynced them. Replay would then skip every new entry up to the databases' frontier (they
   * look applied), silently dropping writes acknowledged after the restart. So the log is rebased on
   * the frontier, as if a snapshot at that op id had been installed: Raft continues after it, and a
   * replica further behind takes a snapshot from whichever replica leads.
   */
  private async rebaseLogIfDbsAhead(): Promise<void> {
    const f = await this.dbs.docdb.frontier();
    const ahead = f.regular.index >= f.intents.index ? f.regular : f.intents;
    const last = this.storage.lastIndex();
    if (ahead.index <= last) return;
    this.deps.log.warn({ tablet: this.tabletId, lastLogIndex: last, dbIndex: ahead.index, dbTerm: ahead.term, durability: this.walDurability() }, 'databases are ahead of the Raft log (its unsynced tail was lost): rebasing the log on their frontier');
    const conf = this.storage.initialState().conf;
    this.storage.applySnapshot({ meta: { index: ahead.index, term: ahead.term, conf }, data: this.snapshots.create(ahead.index) });
    await this.storage.sync();
  }

  /** The index after which the log must be replayed into the databases. */
  private async replayStart(): Promise<number> {
    const f = await this.dbs.docdb.frontier();
    const txns = await this.dbs.docdb.listTransactions();
    return txns.length === 0 ? f.regular.index : Math.min(f.regular.index, f.intents.index);
  }

  // ---- events and hooks ------------------------------------------------------------------------

  /** The owner of this replica's applied state beyond DocDB (a status tablet's coordinator) attaches here; undefined detaches. */
  attachEvents(e: TabletEvents | undefined): void {
    this.events = e;
  }

  setSplitHandler(h: ((op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<void>) | undefined): void {
    this.splitHandler = h;
  }

  /** Until performance.now() reaches `untilMs`, writes of transactions without intents here get TRY_AGAIN (a split drains). */
  holdNewTransactions(untilMs: number): void {
    this.intentWrites.holdNewTransactions(untilMs);
  }

  /** Called right after the leader proposed SPLIT (synchronously, before anything else is proposed). */
  markSplitPending(): void {
    this.splitPendingTerm = this.currentTerm();
  }

  /** This replica applied SPLIT: durable in meta.json, then every request is answered TABLET_SPLIT. */
  markSplit(children: NonNullable<TabletMeta['splitInto']>): void {
    const next: TabletMeta = { ...this.metaValue, splitInto: children };
    writeTabletMeta(this.deps.dir, next);
    this.metaValue = next;
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
    applySchemaToDocDb(this.dbs.docdb, next);
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

  // ---- Raft plumbing and leader checks ---------------------------------------------------------

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

  /** The replica's current Raft term. */
  currentTerm(): number {
    return this.raft.currentTerm();
  }

  isLeaderReady(): boolean {
    return this.state === TabletState.RUNNING && this.raft.isLeader() && this.raft.isLeaderReady();
  }

  /** Campaign now and retry briefly while no leader is known (a split child on the parent leader's server). */
  campaignSoon(o: { forTicks: number; everyTicks: number }): void {
    if (this.state === TabletState.RUNNING) this.raft.campaignSoon(o);
  }

  /** Hand leadership to `to` (or the most caught-up voter) after the events' beforeLeaderTransfer finished. */
  async transferLeadership(to?: NodeId): Promise<void> {
    const before = this.events?.beforeLeaderTransfer;
    if (before) {
      try {
        await before.call(this.events);
      } catch (err) {
        this.deps.log.debug({ err, tablet: this.tabletId }, 'preparing the leadership transfer failed; transferring anyway');
      }
    }
    this.raft.transferLeadership(to);
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
    if (!this.raft.isLeader()) {
      const uuid = this.raft.leaderId();
      const hint = uuid ? this.deps.peerAddress(uuid) : undefined;
      throw new DbError(ErrorCode.NOT_THE_LEADER, `tablet ${this.tabletId}: this replica is not the leader`, { leaderUuid: uuid, leaderHint: hint ?? '' });
    }
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

  private checkRunning(): void {
    if (this.state !== TabletState.RUNNING) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${this.tabletId} is ${this.state}, not RUNNING`, { tabletId: this.tabletId });
  }

  // ---- writes (WritePath, IntentWrites) ---------------------------------------------------------

  /** Write rows atomically (one Raft entry); resolves with the write's hybrid time. */
  write(req: WriteRequest): Promise<HybridTime> {
    return this.writes.write(req);
  }

  /** Transactional write (participant leader): one WRITE_INTENTS entry (IntentWrites.writeIntents). */
  writeIntents(req: TxnWriteRequest): Promise<HybridTime> {
    return this.intentWrites.writeIntents(req);
  }

  /** Propose one tablet op as leader and wait (bounded) until it is Raft-committed and applied here. */
  proposeOp(op: TabletOp, timeoutMs?: number, onProposed?: (proposal: Promise<unknown>) => void): Promise<void> {
    return this.writes.proposeOp(op, timeoutMs, onProposed);
  }

  /** Leader: a copy of `request` (its time, or the running original's outcome), else undefined (WritePath.seenRequest). */
  seenRequest(request: RequestTag): HybridTime | Promise<HybridTime> | undefined {
    return this.writes.seenRequest(request);
  }

  /** A fresh hybrid time for an entry of this tablet, above every earlier one. */
  nextHt(): HybridTime {
    return this.mvcc.nextHt();
  }

  /** Leader side of lockRow / renewRowLock / unlockRow. */
  rowLockOps(): RowLockOps {
    this.rowLockOpsValue ??= new RowLockOps({
      tabletId: this.tabletId,
      table: this.rowLocks,
      checkServing: () => this.checkServing(),
      acquire: (keys) => this.writes.locks.acquire(keys),
      settleIntents: (key) => this.participant.orderAfterIntents([{ type: 'delete', key }]),
      nextHt: () => this.mvcc.nextHt(),
      now: () => this.deps.clock.now(),
      propose: (op) => this.proposeOp(op),
    });
    return this.rowLockOpsValue;
  }

  // ---- reads (ReadPath) ---------------------------------------------------------------------------

  /** A read time no write can later land at or below. */
  safeTime(): HybridTime {
    return this.mvcc.safeTime();
  }

  /** This server's hybrid time now. */
  hybridNow(): HybridTime {
    return this.deps.clock.now();
  }

  /** readHt + max_clock_skew_usec (physical part; at least readHt). */
  globalLimitFor(readHt: HybridTime): HybridTime | undefined {
    return this.reads.globalLimitFor(readHt);
  }

  /** Rows at one read time; READ_RESTART for a version in the uncertainty window (ReadPath.read). */
  read(keys: DocKey[], opts: Parameters<ReadPath['read']>[1]): Promise<ReadResult> {
    return this.reads.read(keys, opts);
  }

  scan(opts: ScanRequest): Promise<ScanPage> {
    return this.reads.scan(opts);
  }

  readCells(opts: Omit<CellReadOptions, 'readHt'> & { readHt?: HybridTime; propagatedHt?: HybridTime }): Promise<CellReadResult & { readHt: HybridTime }> {
    return this.reads.readCells(opts);
  }

  /** A serializable transaction's point read: read locks on `keys`, then the rows at their time. */
  readSerializable(keys: DocKey[], txn: TxnMeta, opts: Parameters<ReadPath['readSerializable']>[2]): Promise<ReadResult> {
    return this.reads.readSerializable(keys, txn, opts);
  }

  /** A serializable transaction's scan: the tablet's read lock, then the page at its time. */
  scanSerializable(txn: TxnMeta, opts: Parameters<ReadPath['scanSerializable']>[1]): Promise<ScanPage> {
    return this.reads.scanSerializable(txn, opts);
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
    this.checkRunning();
    const before = this.raft.appliedOpId().index;
    const c = await visibleChecksum((o) => this.dbs.docdb.scan(o), this.participant.readResolver(), readHt);
    const intents = await this.dbs.docdb.pendingIntentsDigest();
    const after = this.raft.appliedOpId().index;
    return { ...c, intents, appliedIndex: after, stable: before === after };
  }

  /** This replica's rows visible at `readHt` from `startKey`, `limit` at most (console pages that count a tablet's data). */
  scanVisible(readHt: HybridTime, limit: number, startKey?: Uint8Array): Promise<ScanResult> {
    this.checkRunning();
    return this.dbs.docdb.scan({ readHt, resolveStatus: this.participant.readResolver(), limit, ...(startKey ? { startKey } : {}) });
  }

  /** Digest of this replica's RegularDB contents (equal on replicas that applied the same log). */
  regularChecksum(): Promise<{ sha256: string; entries: number; bytes: number }> {
    return this.dbs.docdb.regularChecksum();
  }

  // ---- the participant side (TxnParticipant, IntentApplier) -------------------------------------

  /** Operations waiting for pending transactions to finish (enable_wait_queues). */
  get waitQueue(): TxnParticipant['waitQueue'] {
    return this.participant.waitQueue;
  }

  /** Aborted transactions whose intents the leader should remove (found by conflict checks). */
  get cleanupQueue(): Set<TxnId> {
    return this.participant.cleanupQueue;
  }

  /** Transactions with intents here not yet applied or removed, as of the entries applied so far (what the SPLIT entry checks). */
  txnsWithAppliedIntents(): number {
    return this.participant.count();
  }

  /** Transactions with intents here not yet applied or removed, plus intent writes in flight (a split waits for none). */
  txnsWithIntentsCount(): number {
    return this.participant.count() + this.intentWrites.inFlightCount();
  }

  /** Transactions with intents here and their status tablets, first seen `minAgeMs` ago or more, outcome unknown here (cleanup sweep). */
  txnsWithIntents(minAgeMs = 0): Array<[TxnId, string]> {
    return this.participant.withIntents(minAgeMs);
  }

  localOutcome(txnId: TxnId): TxnStatusInfo | undefined {
    return this.participant.localOutcome(txnId);
  }

  /** The apply of `txnId` running in this replica's apply stage, if any. */
  applyInProgress(txnId: TxnId): Promise<void> | undefined {
    return this.applier.inProgress(txnId);
  }

  /** Transactions with intents on this replica (console, participant cleanup). */
  async transactions(): Promise<Array<{ meta: TxnMeta; intentCount: number; applying?: { commitHt: HybridTime } }>> {
    if (this.state !== TabletState.RUNNING) return [];
    return this.dbs.docdb.listTransactions();
  }

  // ---- storage, GC and stats ---------------------------------------------------------------------

  /** The database (status tablets read their records back at start). */
  db(): DocDbApi {
    return this.dbs.docdb;
  }

  /** Source side of remote bootstrap: consistent iterators over both databases (see SnapshotSessions). */
  engines(): { regular: KvEngine; intents: KvEngine } {
    return { regular: this.dbs.regular!, intents: this.dbs.intents! };
  }

  async sizes(): Promise<{ regulardb: { memtableBytes: number; sstBytes: number }; intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number } }> {
    if (this.state !== TabletState.RUNNING) return { regulardb: { memtableBytes: 0, sstBytes: 0 }, intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 } };
    return this.dbs.docdb.sizes();
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
    return { ...(walSync ? { logFsyncs: walSync.fsyncs, walSync } : {}), docdb: this.dbs.docdb.writeCounts(), raftEarly: this.raft.earlyCounts(), raftApply: this.raft.applyCounts() };
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
    return this.dbs.backgroundWork();
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
    await this.dbs.docdb.syncDurable();
    // What the compacted entries tell of retryable requests and row locks survives in the images (taken after them).
    await saveReplicatedState({ dir: this.deps.dir, retryable: this.retryable, rowLocks: this.rowLocks });
    return this.raft.compactLog(upTo);
  }

  /** History GC passes of this replica (HistoryGc.stats). */
  get historyGcStats(): HistoryGc['stats'] {
    return this.gc.stats;
  }

  /** One history GC chance (history-gc.ts); undefined when skipped. */
  historyGc(): Promise<HistoryGcResult | undefined> {
    return this.gc.run();
  }

  /** The history floor of this replica's RegularDB (0: GC never ran); undefined until running. */
  historyFloorHt(): HybridTime | undefined {
    return this.state === TabletState.RUNNING ? this.dbs.docdb.historyFloor() : undefined;
  }

  async stop(): Promise<void> {
    if (this.raft) await this.raft.stop();
    // The applies queued so far finish first (no new ones come once Raft stopped): closing the
    // databases under them would read as a storage failure.
    await this.applier.drain();
    await this.applier.cancelDeferredFlush();
    await this.gc.settled();
    // A clean stop leaves no apply state behind (each would be resumed, as a no-op, at the next open).
    if (this.dbs.isOpen() && this.state === TabletState.RUNNING) await this.dbs.docdb.flushDeferred().catch(() => undefined);
    if (this.dbs.isOpen()) await this.dbs.docdb.close().catch(() => undefined);
    if (this.storage) await this.storage.close().catch(() => undefined);
  }

  /** Stop and remove every file of this replica. */
  async destroy(): Promise<void> {
    await this.stop();
    this.state = TabletState.DELETED;
    fs.rmSync(this.deps.dir, { recursive: true, force: true });
  }
}
