/** The facts of one tablet replica the console's /tablet page and its JSON twin show. */
import type { BackgroundWork } from '../docdb';
import type { TabletManager } from './tablet-manager';
import type { TabletPeer, WalSyncTimes } from './tablet/tablet-peer';
import { sizesOf, type Sizes, type TabletMemTrackers } from './tablet-mem-trackers';
import { tabletSummary, type TabletSummary } from './tserver-json';

export interface TabletDetail extends TabletSummary {
  lastIndex: number;
  /** RocksDB's background work per database since the replica opened (a database on an engine without any is left out). */
  background: { regulardb?: BackgroundWork; intentsdb?: BackgroundWork };
  /** The Raft log's fdatasyncs since the replica opened and how long they took (absent for a log without files). */
  wal?: WalSyncTimes;
  /** First entry still in the Raft log (log GC discards what both databases hold durably below it). */
  firstIndex: number;
  frontier: { regular: { term: number; index: number }; intents: { term: number; index: number } };
  regulardb: Sizes['regulardb'] & { memtablePeakBytes: number };
  intentsdb: Sizes['intentsdb'] & { memtablePeakBytes: number };
  raftConfig: Array<{ uuid: string; memberType: 'VOTER' | 'LEARNER'; role: 'LEADER' | 'FOLLOWER' | 'LEARNER'; rpcAddress: string; matchIndex?: number }>;
  /** Why the replica FAILED ('' while it runs). */
  lastError: string;
  /** Operations waiting for pending transactions now, and waits since the replica opened (enable_wait_queues). */
  waitQueue: { waiting: number; waits: number };
  /** Read locks (serializable transactions' WRITE_INTENTS of reads) this replica proposed as leader. */
  readLocks: number;
  /** The table's schema as this replica has it (ALTER TABLE moves it through the tablet's Raft log). */
  schemaVersion: number;
  columns: Array<{ name: string; id: number; type: string; nullable: boolean }>;
  /** The Raft log level in force (ASYNC | FLUSH | FSYNC; docs/durability.md). */
  durability: string;
  /**
   * Retryable requests: clients with writes remembered here, writes remembered, writes running (as
   * leader), resent copies answered without running them again, late copies refused (STALE_REQUEST).
   */
  retryable: { clients: number; replicated: number; running: number; duplicates: number; stale: number };
  /**
   * History GC (history_gc_interval_sec): passes run and skipped (nothing written above the last
   * cutoff; skippedFewNew: too few versions written since the last pass; skippedNothingOld: every
   * version newer than the cutoff — a tablet younger than the retention interval), versions scanned and dropped in all (droppedColumnVersions: of those, values of dropped
   * columns, collected whatever their time), the last pass's cutoff, drops and duration, and the
   * history floor (reads below it fail SNAPSHOT_TOO_OLD; '0': never collected). Hybrid times as decimal strings.
   */
  historyGc: { runs: number; skipped: number; skippedFewNew: number; skippedNothingOld: number; versionsScanned: number; versionsDropped: number; droppedColumnVersions: number; lastCutoffHt: string; lastDropped: number; lastMs: number; historyFloorHt: string };
}

export async function detailOf(p: TabletPeer, manager: TabletManager, trackers: TabletMemTrackers, selfUuid: string, selfAddress: string): Promise<TabletDetail> {
  const st = p.status();
  const wal = p.walSync();
  const sizes = await sizesOf(p);
  trackers.note(p.tabletId, sizes);
  const mem = trackers.current(p.tabletId);
  const f = await p
    .db()
    .frontier()
    .catch(() => ({ regular: { term: 0, index: 0 }, intents: { term: 0, index: 0 } }));
  const member = (uuid: string, memberType: 'VOTER' | 'LEARNER'): TabletDetail['raftConfig'][number] => {
    const match = st.progress?.[uuid]?.match;
    return {
      uuid,
      memberType,
      role: memberType === 'LEARNER' ? 'LEARNER' : uuid === st.leader ? 'LEADER' : 'FOLLOWER',
      rpcAddress: uuid === selfUuid ? selfAddress : (manager.addressOf(uuid) ?? ''),
      ...(match !== undefined ? { matchIndex: match } : {}),
    };
  };
  return {
    ...tabletSummary(p, st),
    lastIndex: st.lastIndex,
    firstIndex: p.logFirstIndex(),
    frontier: { regular: { term: f.regular.term, index: f.regular.index }, intents: { term: f.intents.term, index: f.intents.index } },
    background: p.backgroundWork() ?? {},
    ...(wal ? { wal } : {}),
    regulardb: { ...sizes.regulardb, memtablePeakBytes: mem?.regularPeakBytes ?? sizes.regulardb.memtableBytes },
    intentsdb: { ...sizes.intentsdb, memtablePeakBytes: mem?.intentsPeakBytes ?? sizes.intentsdb.memtableBytes },
    raftConfig: [...st.conf.voters.map((u) => member(u, 'VOTER')), ...st.conf.learners.map((u) => member(u, 'LEARNER'))],
    lastError: p.lastError,
    waitQueue: { waiting: p.waitQueue.size(), waits: p.waitQueue.waits },
    readLocks: p.metrics.readLocks,
    schemaVersion: p.meta.schemaVersion,
    columns: p.meta.schema.columns.map((c) => ({ ...c })),
    durability: p.walDurability(),
    retryable: p.retryable.stats(),
    historyGc: { ...p.historyGcStats, lastCutoffHt: String(p.historyGcStats.lastCutoffHt), historyFloorHt: String(p.historyFloorHt() ?? 0n) },
  };
}
