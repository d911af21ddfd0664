/**
 * The types a tablet replica's parts share (docs/architecture.md §Tablet): a leaf module, so the parts
 * and TabletPeer (which re-exports them) never import each other in a circle.
 */
import type { Flags } from '../../common/flags';
import type { HybridClock } from '../../common/hybrid-clock';
import type { HybridTime } from '../../common/hybrid-time';
import type { Logger } from '../../common/log';
import type { Rng } from '../../common/rng';
import type { LeaderChange, LogStorage, Message, RaftCore, RaftOptions, WalDurability } from '../../raft';
import type { DocDbApi, DocKey, KvEngine, Row, RowOp, TxnMeta } from '../../docdb';
import type { FastPathTxn } from './fast-path';
import type { RetryableImage } from './retryable-requests';
import type { HeldLock, RowLockImage } from './row-locks';
import type { RequestTag, TabletOp } from './tablet-op';
import type { TableSchema, TabletMeta } from './tablet-meta';
import type { PeerTxnEnv } from './participant/txn-env';
import type { TabletEvents } from './tablet-events';

export const TabletState = { BOOTSTRAPPING: 'BOOTSTRAPPING', RUNNING: 'RUNNING', FAILED: 'FAILED', DELETED: 'DELETED' } as const;
export type TabletState = (typeof TabletState)[keyof typeof TabletState];

/** What a Raft snapshot of a tablet carries: where to fetch the databases from (remote bootstrap). */
export interface SnapshotDescriptor {
  tabletId: string;
  /** Replica whose databases are copied: the leader that sends the snapshot (TabletSnapshots.ownSnapshots). */
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
    /** docKeyString of each of `keys`, when the caller has them already (the latches' keys). */
    rowKeys?: string[];
    /** false: the result does not depend on the rows (puts and deletes only): they are not read. */
    readsRows?: boolean;
    compute(rows: Array<Row | undefined>): RowOp[] | undefined;
  };
  /** Per row of the write (`computed.keys`, else `ops`), the row lock it carries (row-locks.ts). */
  heldLocks?: Array<HeldLock | undefined>;
  /** Per row: release its carried lock with this write (UNLOCK entries proposed right behind the write's). */
  unlockAfter?: boolean[];
  /** Wait (until deadlineMonoMs) for rows locked by others instead of failing ROW_LOCKED. */
  waitForLocks?: boolean;
  deadlineMonoMs?: number;
  /** The single-tablet fast path (fast-path.ts): this write commits a whole transaction. */
  fastPathTxn?: FastPathTxn;
}

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

/** Told the Raft proposal of a retryable request and its entry's hybrid time (WritePath.deduped). */
export type ProposalTracker = (proposal: Promise<unknown>, ht: HybridTime) => void;

/** Proposes one tablet op as leader and waits (bounded) until it is Raft-committed and applied here. */
export type ProposeOp = (op: TabletOp, timeoutMs?: number, onProposed?: (proposal: Promise<unknown>) => void) => Promise<void>;

/** A replica's counters (console, metrics). */
export interface TabletMetrics {
  writeOps: number;
  readOps: number;
  scanOps: number;
  readLocks: number;
  rowsWritten: number;
  entriesApplied: number;
  snapshotsInstalled: number;
}

/** A replica's Raft log fdatasyncs since it opened: how many, ms in all and the longest, and those of WAL_SLOW_SYNC_MS or more. */
export interface WalSyncTimes {
  fsyncs: number;
  syncMs: number;
  syncMaxMs: number;
  slowSyncs: number;
}

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

/** Release row locks now, or once `unsettled` (an entry that timed out and may still commit) settles. */
export function releaseWhenSettled(release: () => void, unsettled: Promise<unknown> | undefined): void {
  if (unsettled) void unsettled.then(release, release);
  else release();
}
