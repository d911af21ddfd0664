/**
 * Builds a replica's parts (docs/architecture.md §Tablet), each with its own narrow dependencies:
 * what one part needs of another is handed over as that part or as a function, never the peer.
 * Order matters only here: a part is built after the parts it is given.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { Logger } from '../../common/log';
import type { DocDbApi, OpId } from '../../docdb';
import { WalDurability, type RaftGroup } from '../../raft';
import type { ApplyLagLog } from './apply-lag-log';
import { ApplyPipeline } from './apply-pipeline';
import { applySchemaToDocDb } from './cell-schema';
import { HistoryGc } from './history-gc';
import { IntentApplier } from './intent-applier';
import { MvccClock } from './mvcc-clock';
import { IntentWrites } from './participant/intent-writes';
import type { PeerTxnEnv } from './participant/txn-env';
import { TxnParticipant } from './participant/txn-participant';
import { ReadPath } from './read-path';
import type { RetryableRequests } from './retryable-requests';
import { RowLockOps, type RowLockTable } from './row-locks';
import type { TabletDbs } from './tablet-dbs';
import type { TabletEvents } from './tablet-events';
import type { TabletMeta } from './tablet-meta';
import type { TabletOp } from './tablet-op';
import { TabletSnapshots, type TabletSnapshotsDeps } from './tablet-snapshots';
import type { TabletMetrics, TabletState } from './tablet-types';
import { TabletFaults } from './test-faults';
import { WritePath } from './write-path';
import { WRITE_ANSWER_AT_COMMIT } from '../tserver-flags';

/** What the owner gives the parts: its identity, shared tables and counters, and its own checks as functions. */
export interface TabletPartsContext {
  tabletId: string;
  dir: string;
  selfUuid: string;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  txnEnv: PeerTxnEnv | undefined;
  fetchSnapshot: TabletSnapshotsDeps['fetchSnapshot'];
  dbs: TabletDbs;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
  metrics: TabletMetrics;
  applyLag: ApplyLagLog;
  commitPoints: ApplyLagLog;
  meta(): TabletMeta;
  running(): boolean;
  state(): TabletState;
  setState(s: TabletState): void;
  checkServing(): void;
  withLeaderHint(e: unknown): unknown;
  raft(): RaftGroup;
  failReplica(why: string): void;
  events(): TabletEvents | undefined;
  split(op: Extract<TabletOp, { type: 'SPLIT' }>, index: number): Promise<void>;
  changeSchema(op: Extract<TabletOp, { type: 'CHANGE_SCHEMA' }>, opId: OpId): void;
  /** After new databases opened (a snapshot replaced them). */
  databasesOpened(): Promise<void>;
}

export interface TabletParts {
  mvcc: MvccClock;
  participant: TxnParticipant;
  writes: WritePath;
  intentWrites: IntentWrites;
  reads: ReadPath;
  applier: IntentApplier;
  pipeline: ApplyPipeline;
  gc: HistoryGc;
  snapshots: TabletSnapshots;
  /** Leader side of lockRow / renewRowLock / unlockRow. */
  rowLockOps: RowLockOps;
}

export function buildTabletParts(c: TabletPartsContext): TabletParts {
  const { tabletId, flags, clock, log, checkServing, metrics } = c;
  const db = (): DocDbApi => c.dbs.docdb;
  const faults = new TabletFaults({ tabletId, flags, log });
  const mvcc = new MvccClock({ clock, tabletId });
  const participant = new TxnParticipant({ tabletId, clock, db, ...(c.txnEnv ? { txnEnv: c.txnEnv } : {}) });
  const common = { tabletId, flags, clock, db, mvcc, participant, checkServing, metrics };
  // An ASYNC table's log keeps an entry only in memory at commit: its writes are answered after the
  // apply (RocksDB's own log), as before tablet_write_answer_at_commit (docs/durability.md).
  const durableAtCommit = (): boolean => c.meta().durability !== WalDurability.ASYNC;
  const answerAtCommit = (): boolean => flags.get(WRITE_ANSWER_AT_COMMIT) && durableAtCommit();
  const writes = new WritePath({ ...common, retryable: c.retryable, rowLocks: c.rowLocks, withLeaderHint: c.withLeaderHint, answerAtCommit, durableAtCommit, propose: (data, onCommitted, always) => c.raft().propose(data, onCommitted, always) });
  const intentWrites = new IntentWrites({ ...common, log, locks: writes.locks, rowLocks: c.rowLocks, deduped: (r, run) => writes.deduped(r, run), proposeOp: (op, ms, onProposed) => writes.proposeOp(op, ms, onProposed) });
  const reads = new ReadPath({
    ...common,
    hasLease: () => c.raft().hasLease(),
    readIndex: () => c.raft().readIndex().catch((e: unknown) => Promise.reject(c.withLeaderHint(e))),
    serializableReadTime: (txn, r, propagated, deadline) => intentWrites.serializableReadTime(txn, r, propagated, deadline),
    hasRangeColumns: () => c.meta().schema.rangeColumns.length > 0,
    checkRunning: () => {
      if (!c.running()) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tabletId} is ${c.state()}, not RUNNING`, { tabletId });
    },
    appliedIndex: () => c.raft().appliedOpId().index,
  });
  const applier = new IntentApplier({ flags, clock, db, running: c.running, participant, applyLag: c.applyLag, delayMs: () => faults.applyIntentsDelayMs(), failReplica: c.failReplica });
  const pipeline = new ApplyPipeline({
    tabletId, clock, log, db, mvcc, participant, applier, faults, retryable: c.retryable, rowLocks: c.rowLocks,
    isSplit: () => c.meta().splitInto !== undefined,
    changeSchema: c.changeSchema,
    split: c.split,
    events: c.events,
    commitPoints: c.commitPoints,
    metrics,
  });
  const gc = new HistoryGc({ flags, db, now: () => clock.now(), running: c.running, schemaVersion: () => c.meta().schemaVersion });
  const snapshots = new TabletSnapshots({
    dir: c.dir, selfUuid: c.selfUuid, log, meta: c.meta, dbs: c.dbs, retryable: c.retryable, rowLocks: c.rowLocks, fetchSnapshot: c.fetchSnapshot, setState: c.setState,
    quiesce: async () => {
      await applier.cancelDeferredFlush();
      // A history GC pass still deleting from the old databases ends first.
      await gc.settled();
    },
    databasesOpened: c.databasesOpened,
    changeSchema: c.changeSchema,
    applySchema: () => applySchemaToDocDb(c.dbs.docdb, c.meta()),
    events: c.events,
    metrics,
  });
  const rowLockOps = new RowLockOps({
    tabletId,
    table: c.rowLocks,
    checkServing,
    acquire: (keys) => writes.locks.acquire(keys),
    settleIntents: (key) => participant.orderAfterIntents([{ type: 'delete', key }]),
    nextHt: () => mvcc.nextHt(),
    now: () => clock.now(),
  });
  // Row locks are the ready leader's (row-locks.ts): their epoch is the meta's base + the Raft term.
  c.rowLocks.bindEpoch({ metaBase: () => c.meta().rowLockEpochBase ?? 0, readyLeaderTerm: () => readyLeaderTerm(c.raft() as RaftGroup | undefined) });
  return { mvcc, participant, writes, intentWrites, reads, applier, pipeline, gc, snapshots, rowLockOps };
}

/** The Raft term while `raft` (undefined before the tablet opened it) leads and is ready. */
function readyLeaderTerm(raft: RaftGroup | undefined): number | undefined {
  return raft?.isLeaderReady() ? raft.currentTerm() : undefined;
}
