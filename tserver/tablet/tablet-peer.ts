/**
 * TabletPeer: one replica of one tablet — the only place where Raft meets DocDB (docs/architecture.md
 * §Tablet). It owns the replica's lifecycle (open, restart replay, stop), its Raft group and the
 * leader checks, and builds the parts that do the work (tablet-parts.ts; listed in docs/architecture.md
 * §Tablet), each owning its state; its public methods are thin delegations to them.
 *
 * Restart: the databases record the op id of every batch they hold (their frontier); the Raft group
 * starts with appliedIndex = the oldest frontier that still matters, and apply skips every entry the
 * target database already holds, so replay is idempotent. (An IntentsDB that holds no transaction
 * contributes nothing to replay or log GC: there is nothing of it to recover.)
 */
import * as fs from 'node:fs';
import { DbError, ErrorCode } from '../../common/errors';
import type { HybridTime } from '../../common/hybrid-time';
import { NodeId, type TxnId } from '../../common/ids';
import type { BackgroundWork, CellReadOptions, CellReadResult, DocDbApi, DocKey, KvEngine, ScanResult, TxnMeta } from '../../docdb';
import { DEFAULT_WAL_DURABILITY, RaftGroup, type LogStorage, type Message, type RaftGroupStatus, type WalDurability } from '../../raft';
import { makeDirs } from '../../common/fs-dirs';
import { RAFT_ELECTION_TIMEOUT_TICKS, RAFT_HEARTBEAT_TICKS, RAFT_TICK_INTERVAL_MS, RETRYABLE_REQUEST_TIMEOUT_SECS } from '../tserver-flags';
import { ApplyLagLog } from './apply-lag-log';
import { HistoryGc, type HistoryGcResult } from './history-gc';
import type { TxnStatusInfo } from './participant/txn-env';
import { TxnParticipant } from './participant/txn-participant';
import { ReadPath, type ReadResult, type ScanPage, type ScanRequest } from './read-path';
import { loadReplicatedState, saveReplicatedState } from './replicated-state';
import { RetryableRequests } from './retryable-requests';
import { RowLockTable, type RowLockOps } from './row-locks';
import { TabletDbs } from './tablet-dbs';
import { TabletSchema } from './tablet-schema';
import { TabletLog } from './tablet-log';
import { buildTabletParts, type TabletParts } from './tablet-parts';
import type { TabletEvents } from './tablet-events';
import type { TableSchema, TabletMeta } from './tablet-meta';
import type { RequestTag, TabletOp } from './tablet-op';
import { SplitGate, type SplitHandler } from './tablet-split';
import { TabletState, type TabletMetrics, type TabletPeerDeps, type TxnWriteRequest, type WalSyncTimes, type WriteRequest } from './tablet-types';

export { TabletState, type DbName, type SnapshotDescriptor, type TabletPeerDeps, type TxnWriteRequest, type WalSyncTimes, type WriteRequest } from './tablet-types';
export type { TabletEvents, TxnStatusOp } from './tablet-events';

export class TabletPeer {
  /** Identity, schema (changed by CHANGE_SCHEMA entries), initial peers, split children; also in meta.json. */
  private readonly schema: TabletSchema;
  state: TabletState = TabletState.BOOTSTRAPPING;
  lastError = '';
  private raft!: RaftGroup;
  private readonly dbs: TabletDbs;
  private events: TabletEvents | undefined;
  /** The SPLIT entry's handler and the leader's split in flight (docs/splitting.md). */
  private readonly split = new SplitGate();
  /** Per transaction applied here: commit time → end of this replica's apply (console, benchmark). */
  readonly applyLag = new ApplyLagLog();
  /** On a status tablet's replica: when it applied each COMMITTED record (the commit point; /api/v1/txn-applies' `commits`). */
  readonly commitPoints = new ApplyLagLog();
  readonly metrics: TabletMetrics = { writeOps: 0, readOps: 0, scanOps: 0, readLocks: 0, rowsWritten: 0, entriesApplied: 0, snapshotsInstalled: 0 };
  /** Client writes this replica replicated (retryable requests), and those it is running as leader. */
  readonly retryable = new RetryableRequests();
  /** Row locks with leases (replicated state: ROW_LOCK entries). */
  readonly rowLocks = new RowLockTable();
  private readonly log: TabletLog;
  private readonly parts: TabletParts;

  private constructor(private readonly deps: TabletPeerDeps) {
    this.events = deps.events;
    const tabletId = deps.meta.tabletId;
    this.dbs = new TabletDbs({ dir: deps.dir, openEngine: deps.openEngine, openDocDb: deps.openDocDb });
    this.log = new TabletLog({ dir: deps.dir, tabletId, log: deps.log, openLogStorage: deps.openLogStorage });
    this.schema = new TabletSchema(deps.meta, { dir: deps.dir, log: deps.log, db: () => this.dbs.docdb, setLogDurability: (d) => this.log.setDurability(d) });
    this.parts = buildTabletParts({
      tabletId, dir: deps.dir, selfUuid: deps.selfUuid, flags: deps.flags, clock: deps.clock, log: deps.log, txnEnv: deps.txnEnv, fetchSnapshot: deps.fetchSnapshot,
      dbs: this.dbs, retryable: this.retryable, rowLocks: this.rowLocks, metrics: this.metrics, applyLag: this.applyLag, commitPoints: this.commitPoints,
      meta: () => this.meta,
      running: () => this.state === TabletState.RUNNING,
      state: () => this.state,
      setState: (s) => (this.state = s),
      checkServing: () => this.checkServing(),
      withLeaderHint: (e) => this.withLeaderHint(e),
      raft: () => this.raft,
      failReplica: (why) => this.failReplica(why),
      events: () => this.events,
      split: (op, index) => this.split.apply(op, index),
      changeSchema: (op, opId) => this.schema.change(op, opId),
      databasesOpened: () => this.databasesOpened(),
    });
  }

  get meta(): TabletMeta {
    return this.schema.meta;
  }

  get tabletId(): string {
    return this.meta.tabletId;
  }

  static async open(deps: TabletPeerDeps): Promise<TabletPeer> {
    const p = new TabletPeer(deps);
    try {
      await p.start();
    } catch (e) {
      // Whatever opened is closed again, so the files can be deleted and the tablet created afresh in this process (RocksDB refuses a second open of a directory this process still holds).
      await p.closeOpened();
      throw e;
    }
    return p;
  }

  private async closeOpened(): Promise<void> {
    // The fields are set in order as start() gets on; those it did not reach are still undefined.
    const raft = this.raft as RaftGroup | undefined;
    if (raft) await raft.stop().catch(() => undefined);
    await this.dbs.close();
    await this.log.close();
  }

  private async start(): Promise<void> {
    const { dir, meta } = this.deps;
    makeDirs(dir);
    const interrupted = this.parts.snapshots.interrupted();
    if (interrupted) {
      // A remote bootstrap was interrupted: the databases are partial. Start empty so that the leader's snapshot (which the log's base still requires) replaces them again.
      this.deps.log.warn({ tablet: meta.tabletId }, 'interrupted remote bootstrap: wiping partial databases');
      this.dbs.wipeDirs();
    }
    await this.dbs.open();
    // meta.json is never behind the databases: a CHANGE_SCHEMA entry is durable there before it counts as applied.
    this.schema.applyToDocDb();
    await this.databasesOpened();
    const storage = await this.log.open(meta);
    await this.log.rebaseIfDbsAhead(await this.dbs.docdb.frontier(), (index) => this.parts.snapshots.create(index), this.walDurability());
    const appliedIndex = this.log.appliedIndexAtStart(await this.replayStart(), interrupted);
    loadReplicatedState({ dir, retryable: this.retryable, rowLocks: this.rowLocks }, storage, appliedIndex);
    this.raft = this.newRaftGroup(storage, appliedIndex);
    this.state = TabletState.RUNNING;
  }

  private newRaftGroup(storage: LogStorage, appliedIndex: number): RaftGroup {
    const { flags, log } = this.deps;
    const tabletId = this.tabletId;
    const core = this.deps.newRaftCore({ id: NodeId(this.deps.selfUuid), storage, applied: appliedIndex, electionTicks: flags.get(RAFT_ELECTION_TIMEOUT_TICKS), heartbeatTicks: flags.get(RAFT_HEARTBEAT_TICKS), rng: this.deps.rng, maxUncommittedBytes: 256 << 20 });
    return new RaftGroup({
      id: NodeId(this.deps.selfUuid),
      groupId: tabletId,
      storage,
      core,
      appliedIndex,
      send: (msgs) => this.deps.send(this.parts.snapshots.ownSnapshots(msgs)),
      applyEntries: (ents) => this.parts.pipeline.applyEntries(ents),
      createSnapshot: (index) => Promise.resolve(this.parts.snapshots.create(index)),
      installSnapshot: (snap) => this.parts.snapshots.install(snap),
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
    this.parts.pipeline.setFloors(await docdb.frontier());
    await this.parts.participant.load();
    const resume = (docdb as { resumeApplies?: () => Promise<number> }).resumeApplies;
    if (resume) await resume.call(docdb);
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

  setSplitHandler(h: SplitHandler | undefined): void {
    this.split.setHandler(h);
  }

  /** Until performance.now() reaches `untilMs`, writes of transactions without intents here get TRY_AGAIN (a split drains). */
  holdNewTransactions(untilMs: number): void {
    this.parts.intentWrites.holdNewTransactions(untilMs);
  }

  /** Called right after the leader proposed SPLIT (synchronously, before anything else is proposed). */
  markSplitPending(): void {
    this.split.markPending(this.currentTerm());
  }

  /** This replica applied SPLIT: durable in meta.json, then every request is answered TABLET_SPLIT. */
  markSplit(children: NonNullable<TabletMeta['splitInto']>): void {
    this.schema.markSplit(children);
  }

  /** The Raft log level in force here: the table's, capped at FLUSH by durable_wal_write=false (docs/durability.md). */
  walDurability(): WalDurability {
    return this.log.durability() ?? this.meta.durability ?? DEFAULT_WAL_DURABILITY;
  }

  /** Leader: replicate the table's schema `version` (AlterSchema from the master); answers the version now applied here. */
  async alterSchema(schema: TableSchema, version: number, tableName: string, durability?: WalDurability): Promise<number> {
    this.checkServing();
    if (version > this.meta.schemaVersion) await this.proposeOp({ type: 'CHANGE_SCHEMA', schemaVersion: version, tableName, schema, ...(durability ? { durability } : {}) });
    return this.meta.schemaVersion;
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
    this.split.check(this.meta, () => this.currentTerm());
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
   * Fail-stop (CONVENTIONS) after a storage failure outside the Raft apply path (inside it, RaftGroup's
   * onFatal): the replica serves nothing and its Raft group stops, so the others elect a leader and the
   * master sees FAILED in the tablet report and replaces it.
   */
  private failReplica(why: string): void {
    if (this.state === TabletState.FAILED || this.state === TabletState.DELETED) return;
    this.state = TabletState.FAILED;
    this.lastError = why;
    this.deps.log.error({ tabletId: this.tabletId, err: why }, 'tablet replica failed; stopped (the master replaces it)');
    void this.raft?.stop().catch(() => undefined);
  }

  // ---- writes: WritePath (plain writes, retryable requests, proposals), IntentWrites (transactions) -

  /** While this leader's SPLIT is in flight a write, plain or transactional, waits for it, then meets TABLET_SPLIT with the children's routes (tablet-split.ts); undefined: not held. */
  splitHold(deadlineMonoMs?: number): Promise<void> | undefined {
    return this.split.hold(this.meta, () => this.currentTerm(), deadlineMonoMs);
  }

  write(req: WriteRequest): Promise<HybridTime> {
    const held = this.splitHold(req.deadlineMonoMs);
    return held ? held.then(() => this.parts.writes.write(req)) : this.parts.writes.write(req);
  }

  /** Several callers' read-modify-writes, in one entry where they can share it (combined-writes.ts). */
  writeCombined(reqs: readonly WriteRequest[]): Array<Promise<HybridTime>> {
    return this.parts.writes.writeCombined(reqs);
  }

  writeIntents(req: TxnWriteRequest): Promise<HybridTime> {
    const held = this.splitHold(req.deadlineMonoMs);
    return held ? held.then(() => this.parts.intentWrites.writeIntents(req)) : this.parts.intentWrites.writeIntents(req);
  }

  proposeOp(op: TabletOp, timeoutMs?: number, onProposed?: (proposal: Promise<unknown>) => void, atCommit?: () => void, atCommitAlways?: boolean): Promise<void> {
    return this.parts.writes.proposeOp(op, timeoutMs, onProposed, atCommit, atCommitAlways);
  }

  seenRequest(request: RequestTag): HybridTime | Promise<HybridTime> | undefined {
    return this.parts.writes.seenRequest(request);
  }

  nextHt(): HybridTime {
    return this.parts.mvcc.nextHt();
  }

  rowLockOps(): RowLockOps {
    return this.parts.rowLockOps;
  }

  // ---- reads: ReadPath (read time, uncertainty window, serializable reads, replica-local digests) ---

  safeTime(): HybridTime {
    return this.parts.mvcc.safeTime();
  }

  /** This server's hybrid time now. */
  hybridNow(): HybridTime {
    return this.deps.clock.now();
  }

  globalLimitFor(readHt: HybridTime): HybridTime | undefined {
    return this.parts.reads.globalLimitFor(readHt);
  }

  read(keys: DocKey[], opts: Parameters<ReadPath['read']>[1]): Promise<ReadResult> {
    return this.parts.reads.read(keys, opts);
  }

  scan(opts: ScanRequest): Promise<ScanPage> {
    return this.parts.reads.scan(opts);
  }

  readCells(opts: Omit<CellReadOptions, 'readHt'> & { readHt?: HybridTime; propagatedHt?: HybridTime }): Promise<CellReadResult & { readHt: HybridTime }> {
    return this.parts.reads.readCells(opts);
  }

  readSerializable(keys: DocKey[], txn: TxnMeta, opts: Parameters<ReadPath['readSerializable']>[2]): Promise<ReadResult> {
    return this.parts.reads.readSerializable(keys, txn, opts);
  }

  scanSerializable(txn: TxnMeta, opts: Parameters<ReadPath['scanSerializable']>[1]): Promise<ScanPage> {
    return this.parts.reads.scanSerializable(txn, opts);
  }

  visibleChecksum(at?: HybridTime): ReturnType<ReadPath['visibleChecksum']> {
    return this.parts.reads.visibleChecksum(at);
  }

  scanVisible(readHt: HybridTime, limit: number, startKey?: Uint8Array): Promise<ScanResult> {
    return this.parts.reads.scanVisible(readHt, limit, startKey);
  }

  /** Digest of this replica's RegularDB contents (equal on replicas that applied the same log). */
  regularChecksum(): Promise<{ sha256: string; entries: number; bytes: number }> {
    return this.dbs.docdb.regularChecksum();
  }

  // ---- the participant side (TxnParticipant, IntentApplier) -------------------------------------

  /** Operations waiting for pending transactions to finish (enable_wait_queues). */
  get waitQueue(): TxnParticipant['waitQueue'] {
    return this.parts.participant.waitQueue;
  }

  /** Aborted transactions whose intents the leader should remove (found by conflict checks). */
  get cleanupQueue(): Set<TxnId> {
    return this.parts.participant.cleanupQueue;
  }

  /** Transactions with intents here not yet applied or removed, as of the entries applied so far (what the SPLIT entry checks). */
  txnsWithAppliedIntents(): number {
    return this.parts.participant.count();
  }

  /** Transactions with intents here not yet applied or removed, plus intent writes in flight (a split waits for none). */
  txnsWithIntentsCount(): number {
    return this.parts.participant.count() + this.parts.intentWrites.inFlightCount();
  }

  txnsWithIntents(minAgeMs = 0): Array<[TxnId, string]> {
    return this.parts.participant.withIntents(minAgeMs);
  }

  localOutcome(txnId: TxnId): TxnStatusInfo | undefined {
    return this.parts.participant.localOutcome(txnId);
  }

  applyInProgress(txnId: TxnId): Promise<void> | undefined {
    return this.parts.applier.inProgress(txnId);
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
    return this.log.firstIndex();
  }

  /** Bytes of Raft log entries this replica keeps in memory (undefined: not running, or no cache). */
  logCacheBytes(): number | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    return this.log.cacheBytes();
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
    return this.log.walSync();
  }

  /** RocksDB's background work in each database since it opened (undefined until running; a database whose engine has none is left out). */
  backgroundWork(): { regulardb?: BackgroundWork; intentsdb?: BackgroundWork } | undefined {
    if (this.state !== TabletState.RUNNING) return undefined;
    return this.dbs.backgroundWork();
  }

  /** Log GC (TabletLog.gc), keeping `retain` entries for followers that lag a little; answers the entries discarded. */
  async gcLog(retain: number): Promise<number> {
    if (this.state !== TabletState.RUNNING) return 0;
    this.retryable.expire(this.deps.flags.get(RETRYABLE_REQUEST_TIMEOUT_SECS) * 1000);
    return this.log.gc((await this.replayStart()) - retain, {
      makeDurable: async () => {
        await this.dbs.docdb.syncDurable();
        // What the compacted entries tell of retryable requests and row locks survives in the images (taken after them).
        await saveReplicatedState({ dir: this.deps.dir, retryable: this.retryable, rowLocks: this.rowLocks });
      },
      compact: (upTo) => this.raft.compactLog(upTo),
    });
  }

  /** History GC passes of this replica (HistoryGc.stats). */
  get historyGcStats(): HistoryGc['stats'] {
    return this.parts.gc.stats;
  }

  historyGc(): Promise<HistoryGcResult | undefined> {
    return this.parts.gc.run();
  }

  /** The history floor of this replica's RegularDB (0: GC never ran); undefined until running. */
  historyFloorHt(): HybridTime | undefined {
    return this.state === TabletState.RUNNING ? this.dbs.docdb.historyFloor() : undefined;
  }

  async stop(): Promise<void> {
    if (this.raft) await this.raft.stop();
    // The applies queued so far finish first (no new ones come once Raft stopped): closing the databases under them would read as a storage failure.
    await this.parts.applier.drain();
    await this.parts.applier.cancelDeferredFlush();
    await this.parts.gc.settled();
    // A clean stop leaves no apply state behind (each would be resumed, as a no-op, at the next open).
    if (this.dbs.isOpen() && this.state === TabletState.RUNNING) await this.dbs.docdb.flushDeferred().catch(() => undefined);
    if (this.dbs.isOpen()) await this.dbs.docdb.close().catch(() => undefined);
    await this.log.close();
  }

  /** Stop and remove every file of this replica. */
  async destroy(): Promise<void> {
    await this.stop();
    this.state = TabletState.DELETED;
    fs.rmSync(this.deps.dir, { recursive: true, force: true });
  }
}
