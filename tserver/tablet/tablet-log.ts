/**
 * A replica's Raft log (DIR/wal, docs/architecture.md §Raft): opened with the table's durability,
 * started with the meta's peers as its configuration, rebased on the databases' frontier when they
 * are ahead of it (a lost unsynced tail), and its figures for the consoles.
 */
import * as path from 'node:path';
import type { Logger } from '../../common/log';
import { NodeId } from '../../common/ids';
import type { OpId } from '../../docdb';
import { DEFAULT_WAL_DURABILITY, type LogStorage, type WalDurability } from '../../raft';
import type { TabletMeta } from './tablet-meta';
import type { WalSyncTimes } from './tablet-types';

export interface TabletLogDeps {
  dir: string;
  tabletId: string;
  log: Logger;
  /** `durability`: the table's Raft log level (docs/durability.md). */
  openLogStorage(dir: string, opts?: { durability: WalDurability }): Promise<LogStorage>;
}

export class TabletLog {
  private storageValue: LogStorage | undefined;

  constructor(private readonly deps: TabletLogDeps) {}

  /** The opened log (every caller runs after open()). */
  get storage(): LogStorage {
    return this.storageValue!;
  }

  /** Open the log; a new replica's log starts with the meta's peers as its configuration. */
  async open(meta: TabletMeta): Promise<LogStorage> {
    const storage = await this.deps.openLogStorage(path.join(this.deps.dir, 'wal'), { durability: meta.durability ?? DEFAULT_WAL_DURABILITY });
    this.storageValue = storage;
    const init = storage.initialState();
    if (init.conf.voters.length > 0 || init.conf.learners.length > 0 || storage.lastIndex() !== 0) return storage;
    const voters = meta.peers.filter((p) => p.memberType === 'VOTER').map((p) => NodeId(p.uuid));
    const learners = meta.peers.filter((p) => p.memberType === 'LEARNER').map((p) => NodeId(p.uuid));
    storage.setConfState({ voters, learners });
    await storage.sync();
    return storage;
  }

  /**
   * After a crash of an ASYNC or FLUSH table (docs/durability.md) the databases may hold entries the
   * log lost: they reach the OS through RocksDB's own WAL while the Raft log held them in memory or
   * never fsynced them. Replay would then skip every new entry up to the databases' frontier (they
   * look applied), silently dropping writes acknowledged after the restart. So the log is rebased on
   * the frontier, as if a snapshot at that op id (`snapshot`) had been installed: Raft continues
   * after it, and a replica further behind takes a snapshot from whichever replica leads.
   */
  async rebaseIfDbsAhead(f: { regular: OpId; intents: OpId }, snapshot: (index: number) => Uint8Array, durability: WalDurability): Promise<void> {
    const ahead = f.regular.index >= f.intents.index ? f.regular : f.intents;
    const storage = this.storage;
    const last = storage.lastIndex();
    if (ahead.index <= last) return;
    this.deps.log.warn({ tablet: this.deps.tabletId, lastLogIndex: last, dbIndex: ahead.index, dbTerm: ahead.term, durability }, 'databases are ahead of the Raft log (its unsynced tail was lost): rebasing the log on their frontier');
    const conf = storage.initialState().conf;
    storage.applySnapshot({ meta: { index: ahead.index, term: ahead.term, conf }, data: snapshot(ahead.index) });
    await storage.sync();
  }

  /** The Raft group's applied index at start: what the databases hold (`applied`), within the log's bounds. */
  appliedIndexAtStart(applied: number, waitingForSnapshot: boolean): number {
    const firstIndex = this.storage.firstIndex();
    if (applied < firstIndex - 1 && !waitingForSnapshot) {
      this.deps.log.warn({ tablet: this.deps.tabletId, applied, firstIndex }, 'databases are behind the compacted log; waiting for a snapshot');
    }
    return Math.min(Math.max(applied, firstIndex - 1), this.storage.lastIndex());
  }

  /**
   * Log GC: make both databases durable up to their frontier (`makeDurable`; the frontier was read
   * first, so the sync covers it) and discard the Raft log below `upTo`.
   *
   * Durable, not flushed: RocksDB keeps its own write-ahead log here, so one synced write to each
   * database (an fsync) makes every batch before it survive a crash, as a memtable flush would. The
   * flush this used to do went through CompactRange over the whole key space (the binding has no
   * flush), which rewrote every SST file and held the tserver's only libuv thread — every other
   * RocksDB call and WAL fsync of the process — for hundreds of milliseconds every log_gc_interval_ms.
   */
  async gc(upTo: number, d: { makeDurable(): Promise<void>; compact(upTo: number): Promise<number> }): Promise<number> {
    if (upTo < this.storage.firstIndex()) return 0;
    await d.makeDurable();
    return d.compact(upTo);
  }

  /** The log level in force (undefined: the log does not say). */
  durability(): WalDurability | undefined {
    return this.storageValue?.durability?.();
  }

  setDurability(d: WalDurability): void {
    this.storage.setDurability?.(d);
  }

  firstIndex(): number {
    return this.storage.firstIndex();
  }

  /** Bytes of entries kept in memory (undefined: no cache). */
  cacheBytes(): number | undefined {
    return this.storage.stats?.().cacheBytes;
  }

  /** The log's fdatasyncs since it opened and how long they took (undefined for a log without files). */
  walSync(): WalSyncTimes | undefined {
    const log = this.storage.stats?.();
    if (!log) return undefined;
    return { fsyncs: log.logFsyncs, syncMs: Math.round(log.syncMicros ?? 0) / 1000, syncMaxMs: Math.round(log.syncMaxMicros ?? 0) / 1000, slowSyncs: log.slowSyncs ?? 0 };
  }

  async close(): Promise<void> {
    if (this.storageValue) await this.storageValue.close().catch(() => undefined);
  }
}
