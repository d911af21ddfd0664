/**
 * The tablet replicas of one tserver: creates, opens (at startup, from DATA/tablets/<id>/meta.json),
 * deletes them on the master's (or an admin's) instruction, ticks their Raft groups, runs log GC, and
 * keeps the address book (server uuid → RPC address) that Raft traffic and leader hints use.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import type { HybridClock } from '../common/hybrid-clock';
import type { Logger } from '../common/log';
import type { Rng } from '../common/rng';
import { DocDb, MEMSTORE_SIZE_MB, MEMSTORE_SIZE_SPREAD_PCT, memtableBytes, RangeHidingEngine, RocksDbEngine, type DocDbApi, type KeySegment, type KvEngine } from '../docdb';
import { walArchiveDirOf } from './wal-archive';
import { FileLogStorage, LogCacheBudget, RawNode, type LeaderChange, type LogStorage, type Message, type RaftCore, type RaftOptions, type WalDurability, type WalFs } from '../raft';
import { LOG_MIN_ENTRIES_TO_RETAIN } from './tserver-flags';
import { readTabletMeta, writeTabletMeta, type TabletMeta } from './tablet/tablet-meta';
import { TabletPeer, type DbName, type SnapshotDescriptor } from './tablet/tablet-peer';
import { SnapshotSessions } from './tablet/snapshot-sessions';
import { applySplit, rowRangeOf } from './split-apply';
import { SplitChildren, SPLIT_SCRATCH_PREFIX, type OpenEngines } from './split-children';
import type { PeerTxnEnv } from './tablet/participant/txn-env';
import { makeDirs } from '../common/fs-dirs';
import { globalLogCacheLimitBytes } from './memory-limit';

/** Tablets one server hosts before CreateTablet answers SERVICE_UNAVAILABLE. */
export const TABLETS_PER_SERVER_MAX = 10_000;

export interface TabletManagerDeps {
  dataDir: string;
  selfUuid: string;
  selfAddress: string;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  rng: Rng;
  /** Where Raft messages of a group go (the consensus transport). */
  send(groupId: string, msgs: Message[]): void;
  /** Pull a snapshot chunk from another server (FetchSnapshotChunk RPC). */
  fetchChunk(address: string, req: { tabletId: string; sessionId: string; bytesMax: number }): Promise<{ sessionId: string; db: DbName; pairs: Array<[Uint8Array, Uint8Array]>; done: boolean }>;
  chunkBytes(): number;
  /** Storage seams (defaults: FileLogStorage, RocksDB, DocDb, RawNode). */
  openLogStorage?(dir: string, opts?: { durability: WalDurability }): Promise<LogStorage>;
  /** File layer of the default log storage (a LazyWalFs for TEST_simulate_power_loss). */
  walFs?: WalFs;
  openEngine?(dir: string): Promise<KvEngine>;
  openDocDb?(regular: KvEngine, intents: KvEngine): Promise<DocDbApi>;
  newRaftCore?(opts: RaftOptions): RaftCore;
  onLeaderChange?(tabletId: string, c: LeaderChange): void;
  /** A SPLIT entry was carried out here (on the parent's leader: once the children lead, ready, or the wait ended). */
  onSplitApplied?(tabletId: string): void;
  /** Transaction status lookups for every replica (tserver/transaction). */
  txnEnv?: PeerTxnEnv;
  /** A replica opened / is about to close (status tablets attach their coordinator here). */
  onPeerOpened?(peer: TabletPeer): Promise<void>;
  onPeerClosing?(peer: TabletPeer): void;
  /** How long a linked split child waits before deleting its parent's other rows (default SPLIT_CLEANUP_DELAY_MS). */
  splitCleanupDelayMs?: number;
}

const DATA_START = Uint8Array.of(0x20);
/** A linked split child deletes the parent's other rows this long after it opened, this many keys per native call, this many calls at most per range. */
const SPLIT_CLEANUP_DELAY_MS = 5_000;
const SPLIT_CLEANUP_CHUNK_KEYS = 5_000;
/** Pause between two chunks: the libuv threads serve the tablets' reads and writes meanwhile. */
const SPLIT_CLEANUP_PAUSE_MS = 20;
const SPLIT_CLEANUP_CHUNKS_MAX = 100_000;
/** Above every key tessera stores (DocKeys and meta keys start below 0xff). */
const KEYSPACE_END = new Uint8Array(64).fill(0xff);

/** What a linked split child shows: the meta keys below the data range, and its own rows. */
function visibleRanges(meta: TabletMeta): KeySegment[] {
  const r = rowRangeOf(meta);
  return [{ start: Uint8Array.of(0x00), end: DATA_START }, { start: r.start, end: r.end }];
}

/** The data ranges a linked split child holds but does not own. */
function hiddenRowRanges(meta: TabletMeta): KeySegment[] {
  const r = rowRangeOf(meta);
  return [
    { start: DATA_START, end: r.start },
    { start: r.end, end: KEYSPACE_END },
  ].filter((h) => Buffer.compare(Buffer.from(h.start), Buffer.from(h.end)) < 0);
}

/** Chunks of one remote bootstrap before it gives up (bounds a runaway copy). */
const SNAPSHOT_CHUNKS_MAX = 10_000_000;

/** A replica found on disk that did not open at start. */
export interface FailedOpen {
  tabletId: string;
  /** From its metadata ('' when the metadata itself is unreadable). */
  tableId: string;
  tableName: string;
  partition: { start: number; end: number };
  error: string;
}

export class TabletManager {
  private readonly peers = new Map<string, TabletPeer>();
  private readonly failedOpens = new Map<string, FailedOpen>();
  /** Tablets being created or deleted (serializes admin calls per tablet). */
  private readonly busy = new Set<string>();
  private readonly addresses = new Map<string, string>();
  readonly snapshots = new SnapshotSessions();
  /** Every tablet's Raft log cache together stays within global_log_cache_size_limit_mb. */
  readonly logCacheBudget: LogCacheBudget;
  private stopped = false;
  /** Linked split children's clean-ups, one at a time. */
  private cleanups: Promise<void> = Promise.resolve();
  /** Building split children (split-children.ts). */
  private readonly children: SplitChildren;

  constructor(private readonly deps: TabletManagerDeps) {
    this.addresses.set(deps.selfUuid, deps.selfAddress);
    this.logCacheBudget = new LogCacheBudget(() => globalLogCacheLimitBytes(deps.flags));
    this.children = new SplitChildren({
      tabletsDir: this.tabletsDir(),
      selfUuid: deps.selfUuid,
      selfAddress: deps.selfAddress,
      flags: deps.flags,
      log: deps.log,
      openEngine: (dir) => this.engineOpener()(dir),
      openWal: (dir, durability) => (deps.openLogStorage ?? ((p: string, o?: { durability: WalDurability }) => FileLogStorage.open(p, { flags: deps.flags, logger: deps.log, cacheBudget: this.logCacheBudget, ...(deps.walFs ? { fs: deps.walFs } : {}), ...(o ? { durability: o.durability } : {}) })))(dir, { durability }),
      openPeer: (meta, engines) => this.openPeer(meta, engines),
      peer: (id) => this.peers.get(id),
      addressOf: (uuid) => this.addresses.get(uuid),
    });
  }

  private tabletsDir(): string {
    return path.join(this.deps.dataDir, 'tablets');
  }

  learnAddress(uuid: string, address: string): void {
    if (uuid && address) this.addresses.set(uuid, address);
  }

  addressOf(uuid: string): string | undefined {
    return this.addresses.get(uuid);
  }

  /**
   * Open every tablet found on disk. A tablet that fails to open (corrupt metadata, databases or
   * log) is kept as a FAILED replica: reported so, answering SERVICE_UNAVAILABLE, until the master
   * replaces it (DeleteTablet removes its files; a CreateTablet then starts it afresh).
   */
  async openAll(): Promise<void> {
    const dir = this.tabletsDir();
    makeDirs(dir);
    for (const id of fs.readdirSync(dir)) {
      const tdir = path.join(dir, id);
      if (id.startsWith(SPLIT_SCRATCH_PREFIX)) {
        fs.rmSync(tdir, { recursive: true, force: true }); // a split's checkpoint a crash left behind
        continue;
      }
      if (!fs.existsSync(path.join(tdir, 'meta.json'))) continue;
      let meta: TabletMeta | undefined;
      try {
        meta = readTabletMeta(tdir);
        await this.openPeer(meta);
      } catch (e) {
        const error = e instanceof Error ? e.message : String(e);
        this.failedOpens.set(id, { tabletId: id, tableId: meta?.tableId ?? '', tableName: meta?.tableName ?? '', partition: meta?.partition ?? { start: 0, end: 0 }, error: `failed to open: ${error}` });
        this.deps.log.error({ err: e, tablet: id }, 'cannot open tablet replica; it is FAILED (the master replaces it)');
      }
    }
  }

  /** Replicas found on disk that failed to open at start (FAILED until deleted). */
  failedOpenReplicas(): FailedOpen[] {
    return [...this.failedOpens.values()].sort((a, b) => a.tabletId.localeCompare(b.tabletId));
  }

  private failedOpenError(f: FailedOpen): DbError {
    return new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${f.tabletId} is FAILED on this server (${f.error})`, { tabletId: f.tabletId, state: 'FAILED' });
  }

  /** `engines`: databases open already (a split child's, split-children.ts), taken over by the tablet. */
  private async openPeer(meta: TabletMeta, engines: OpenEngines = {}): Promise<TabletPeer> {
    for (const p of meta.peers) this.learnAddress(p.uuid, p.rpcAddress);
    const d = this.deps;
    const archiveDir = walArchiveDirOf(d.flags, meta, d.selfUuid);
    const opener = this.engineOpener();
    const given = new Map(Object.entries(engines).filter((x): x is [string, KvEngine] => x[1] !== undefined));
    const openEngine = (dir: string): Promise<KvEngine> => {
      const e = given.get(path.basename(dir));
      given.delete(path.basename(dir)); // taken once: a later open (a remote bootstrap's) opens the directory anew
      return e ? Promise.resolve(e) : opener(dir);
    };
    const peer = await TabletPeer.open({
      dir: path.join(this.tabletsDir(), meta.tabletId),
      meta,
      selfUuid: d.selfUuid,
      flags: d.flags,
      clock: d.clock,
      log: d.log.child({ tablet: meta.tabletId }),
      rng: d.rng,
      send: (msgs) => d.send(meta.tabletId, msgs),
      openLogStorage: d.openLogStorage ?? ((dir, o) => FileLogStorage.open(dir, { flags: d.flags, logger: d.log, cacheBudget: this.logCacheBudget, ...(d.walFs ? { fs: d.walFs } : {}), ...(o ? { durability: o.durability } : {}), ...(archiveDir ? { archiveDir } : {}) })),
      // A linked split child sees only its own rows of the parent's data it holds.
      openEngine: async (dir) => {
        const e = await openEngine(dir);
        return meta.splitLinked && path.basename(dir) === 'regular' ? new RangeHidingEngine(e, visibleRanges(meta)) : e;
      },
      openDocDb: d.openDocDb ?? ((regular, intents) => DocDb.open({ regular, intents, flags: d.flags })),
      newRaftCore: d.newRaftCore ?? ((o) => new RawNode(o)),
      fetchSnapshot: (desc, onChunk) => this.fetchSnapshot(desc, onChunk),
      peerAddress: (uuid) => this.addresses.get(uuid),
      onLeaderChange: d.onLeaderChange,
      ...(d.txnEnv ? { txnEnv: d.txnEnv } : {}),
      onFatal: (tabletId, e) => {
        // A storage failure stops this replica; the master sees it FAILED and re-replicates.
        d.log.error({ err: e, tablet: tabletId }, 'tablet replica failed and stopped');
      },
    }).finally(async () => {
      for (const e of given.values()) await e.close().catch(() => undefined); // not taken (the open failed before): closed
    });
    this.peers.set(meta.tabletId, peer);
    peer.setSplitHandler(async (op, index) => {
      const routes = await applySplit({ log: d.log, hasTablet: (id) => this.peers.has(id), createChildren: (m, from, o) => this.children.create(m, from, o), childLeaders: (ids, untilMs) => this.children.leaders(ids, untilMs) }, peer, op, index);
      d.onSplitApplied?.(meta.tabletId);
      return routes;
    });
    await d.onPeerOpened?.(peer);
    if (meta.splitLinked && !meta.splitInto) this.cleanUpLinkedChild(peer);
    return peer;
  }

  private engineOpener(): (dir: string) => Promise<KvEngine> {
    const d = this.deps;
    return d.openEngine ?? ((p: string) => RocksDbEngine.open(p, { writeBufferBytes: memtableBytes(d.flags.get(MEMSTORE_SIZE_MB), d.flags.get(MEMSTORE_SIZE_SPREAD_PCT), `${d.selfUuid}:${p}`) }));
  }

  /**
   * A linked split child's parent rows outside its range: deleted (natively, tombstones, in chunks)
   * in the background (RocksDB's compactions then reclaim the space) — SPLIT_CLEANUP_DELAY_MS after it opened (the split
   * and its first elections go first) and one child at a time per server, in small chunks with pauses, since each native call
   * holds a libuv thread that reads and writes also need. Idempotent, so it simply runs again after
   * a restart. Reads never saw those rows (RangeHidingEngine).
   */
  private cleanUpLinkedChild(peer: TabletPeer): void {
    const view = peer.engines().regular;
    const inner = view instanceof RangeHidingEngine ? view.inner : undefined;
    if (!(inner instanceof RocksDbEngine)) return;
    const timer = setTimeout(() => {
      this.cleanups = this.cleanups.then(() => this.cleanUpNow(peer, inner)).catch((err: unknown) => this.deps.log.warn({ err, tablet: peer.tabletId }, 'split child clean-up stopped (runs again at the next start)'));
    }, this.deps.splitCleanupDelayMs ?? SPLIT_CLEANUP_DELAY_MS);
    timer.unref();
  }

  private async cleanUpNow(peer: TabletPeer, inner: RocksDbEngine): Promise<void> {
    const t0 = performance.now();
    let chunks = 0;
    for (const h of hiddenRowRanges(peer.meta)) {
      for (let i = 0; i < SPLIT_CLEANUP_CHUNKS_MAX; i++) {
        if (this.stopped || this.peers.get(peer.tabletId) !== peer) return;
        const it = inner.iterator({ gte: h.start, lt: h.end });
        const any = await it.next().finally(() => it.close());
        if (!any) break;
        await inner.clearRange(h.start, h.end, SPLIT_CLEANUP_CHUNK_KEYS);
        chunks++;
        await new Promise((r) => setTimeout(r, SPLIT_CLEANUP_PAUSE_MS));
      }
      // No compactRange here: a manual compaction holds the server's libuv thread (uv_threadpool_size
      // is 1 by default) for seconds, stalling every tablet's reads and writes; RocksDB's own
      // background compactions drop the tombstones and reclaim the space in their own threads.
    }
    this.deps.log.info({ tablet: peer.tabletId, chunks, ms: Math.round(performance.now() - t0) }, 'split child: the parent rows outside its range deleted');
  }

  private async fetchSnapshot(desc: SnapshotDescriptor, onChunk: (db: DbName, pairs: Array<[Uint8Array, Uint8Array]>) => Promise<void>): Promise<void> {
    const addr = this.addresses.get(desc.sourceUuid);
    if (!addr) throw new DbError(ErrorCode.NOT_FOUND, `remote bootstrap: no address for source ${desc.sourceUuid}`);
    let sessionId = '';
    for (let i = 0; i < SNAPSHOT_CHUNKS_MAX; i++) {
      const r = await this.deps.fetchChunk(addr, { tabletId: desc.tabletId, sessionId, bytesMax: this.deps.chunkBytes() });
      sessionId = r.sessionId;
      if (r.pairs.length > 0) await onChunk(r.db, r.pairs);
      if (r.done) return;
    }
    throw new DbError(ErrorCode.INTERNAL, 'remote bootstrap: too many chunks');
  }

  /** Serve one chunk of a tablet's databases (open a session when sessionId is empty). */
  async serveChunk(req: { tabletId: string; sessionId: string; bytesMax: number }): ReturnType<SnapshotSessions['next']> {
    const peer = this.get(req.tabletId);
    const sessionId = req.sessionId || this.snapshots.open(req.tabletId, peer.engines());
    return this.snapshots.next(sessionId, req.tabletId, Math.max(1024, Math.min(req.bytesMax || 1 << 20, 32 << 20)));
  }

  /** Create (idempotent for the same tablet id) and start a replica. */
  async createTablet(meta: TabletMeta): Promise<TabletPeer> {
    if (this.stopped) throw new DbError(ErrorCode.SHUTTING_DOWN, 'tablet server is stopping');
    const existing = this.peers.get(meta.tabletId);
    if (existing) return existing;
    const failed = this.failedOpens.get(meta.tabletId);
    if (failed) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${meta.tabletId}: a FAILED replica is here (${failed.error}); delete it before creating it again`, { tabletId: meta.tabletId, state: 'FAILED' });
    if (this.busy.has(meta.tabletId)) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${meta.tabletId} is being created or deleted`);
    if (this.peers.size >= TABLETS_PER_SERVER_MAX) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `this server already hosts ${this.peers.size} tablets`);
    if (!meta.peers.some((p) => p.uuid === this.deps.selfUuid)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `tablet ${meta.tabletId}: this server (${this.deps.selfUuid}) is not among its peers`);
    this.busy.add(meta.tabletId);
    try {
      const dir = path.join(this.tabletsDir(), meta.tabletId);
      // Leftovers of a replica deleted earlier must not leak into the new one.
      if (fs.existsSync(dir) && !fs.existsSync(path.join(dir, 'meta.json'))) fs.rmSync(dir, { recursive: true, force: true });
      writeTabletMeta(dir, meta);
      return await this.openPeer(meta);
    } finally {
      this.busy.delete(meta.tabletId);
    }
  }

  async deleteTablet(tabletId: string): Promise<void> {
    const failed = this.failedOpens.get(tabletId);
    if (failed) {
      fs.rmSync(path.join(this.tabletsDir(), tabletId), { recursive: true, force: true });
      this.failedOpens.delete(tabletId);
      this.deps.log.info({ tablet: tabletId }, 'FAILED tablet replica (it did not open) deleted');
      return;
    }
    const peer = this.peers.get(tabletId);
    if (!peer) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${tabletId} not found`);
    if (this.busy.has(tabletId)) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tabletId} is being created or deleted`);
    this.busy.add(tabletId);
    try {
      this.peers.delete(tabletId);
      this.deps.onPeerClosing?.(peer);
      await peer.destroy();
      this.deps.log.info({ tablet: tabletId }, 'tablet replica deleted');
    } finally {
      this.busy.delete(tabletId);
    }
  }

  get(tabletId: string): TabletPeer {
    const p = this.peers.get(tabletId);
    const failed = p ? undefined : this.failedOpens.get(tabletId);
    if (failed) throw this.failedOpenError(failed);
    if (!p) throw new DbError(ErrorCode.TABLET_NOT_FOUND, `tablet ${tabletId} not found on this server`, { tabletId });
    return p;
  }

  has(tabletId: string): boolean {
    return this.peers.has(tabletId);
  }

  list(): TabletPeer[] {
    return [...this.peers.values()].sort((a, b) => a.tabletId.localeCompare(b.tabletId));
  }

  /** Deliver an incoming Raft message; false if the group is not hosted here. */
  dispatch(groupId: string, m: Message): boolean {
    const p = this.peers.get(groupId);
    if (!p) return this.children.keep(groupId, m);
    p.step(m);
    return true;
  }

  tickAll(): void {
    for (const p of this.peers.values()) p.tick();
  }

  /** Log GC on every tablet; one at a time so flushes do not pile up. */
  async gcAll(): Promise<void> {
    const retain = this.deps.flags.get(LOG_MIN_ENTRIES_TO_RETAIN);
    for (const p of this.list()) {
      if (this.stopped) return;
      try {
        await p.gcLog(retain);
      } catch (e) {
        this.deps.log.warn({ err: e, tablet: p.tabletId }, 'log GC failed');
      }
    }
    this.snapshots.expire();
  }

  /** History GC on every tablet replica, one at a time (see TabletPeer.historyGc). */
  async historyGcAll(): Promise<void> {
    for (const p of this.list()) {
      if (this.stopped) return;
      try {
        const r = await p.historyGc();
        if (r && r.versionsDropped > 0) this.deps.log.info({ tablet: p.tabletId, cutoffHt: String(r.cutoffHt), scanned: r.versionsScanned, dropped: r.versionsDropped }, 'history GC');
      } catch (e) {
        this.deps.log.warn({ err: e, tablet: p.tabletId }, 'history GC failed');
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.snapshots.closeAll();
    for (const p of this.peers.values()) this.deps.onPeerClosing?.(p);
    for (const p of this.peers.values()) await p.stop().catch((e: unknown) => this.deps.log.warn({ err: e, tablet: p.tabletId }, 'tablet stop failed'));
    this.peers.clear();
  }
}
