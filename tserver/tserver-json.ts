/**
 * JSON shapes of the tserver console that tserver-server.ts fills and tserver-web.ts serves: a leaf
 * both import, so neither imports the other back.
 */
import type { BackgroundWork } from '../docdb';
import type { TabletPeer, WalSyncTimes } from './tablet/tablet-peer';

/** What every tablet row of the console says first: the list (/api/v1/tablets) and the detail page. */
export interface TabletSummary {
  tabletId: string;
  table: string;
  tableId: string;
  partition: { start: number; end: number };
  state: string;
  role: string;
  term: number;
  leaderUuid: string;
  commitIndex: number;
  appliedIndex: number;
}

/** A running replica's summary (`st`: its status(), read once by the caller). */
export function tabletSummary(p: TabletPeer, st: ReturnType<TabletPeer['status']>): TabletSummary {
  return {
    tabletId: p.tabletId,
    table: p.meta.tableName,
    tableId: p.meta.tableId,
    partition: p.meta.partition,
    state: p.state,
    role: st.role,
    term: st.term,
    leaderUuid: st.leader,
    commitIndex: st.commit,
    appliedIndex: st.appliedIndex,
  };
}

/** The JSON of GET /api/v1/tablets (docs/architecture.md §Contracts; add fields freely, never rename). */
export interface TabletsJson {
  tablets: Array<TabletSummary & {
    regulardb: { memtableBytes: number; sstBytes: number };
    intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
    /** RocksDB's background work per database since the replica opened (running replicas on RocksDB). */
    background?: { regulardb?: BackgroundWork; intentsdb?: BackgroundWork };
    /** The Raft log's fdatasyncs since the replica opened and how long they took (running replicas with a log on disk). */
    wal?: WalSyncTimes;
    /** Why the replica FAILED (a replica that did not open at start says only this). */
    lastError?: string;
    /** The table's schema version this replica has (ALTER TABLE). */
    schemaVersion: number;
    /** The level this replica's Raft log runs at (ASYNC | FLUSH | FSYNC; docs/durability.md); absent for a replica that did not open. */
    durability?: string;
  }>;
}
