/**
 * The durable Raft log: segment files of checksummed records (wal-record.ts), consensus metadata in
 * its own atomically replaced file (consensus-meta.ts), group commit, fail-stop on I/O errors.
 *
 * Hot path: append() encodes a whole batch into one buffer; with durable writes it waits in memory
 * for the next round, which writes everything appended since the last one and the commit-index
 * record with one positioned write into the open segment, then fdatasyncs (without durable writes
 * append() writes at once and a timer fsyncs). sync() resolves after one fdatasync that covers every
 * record appended before it began; callers arriving while an fdatasync runs share the next one
 * (group commit), so the fsync rate is bounded by the disk, not by the number of proposals.
 *
 * Hard state: term and vote (and the configuration) go to the metadata file (write temp, fsync,
 * rename, fsync dir) when they change — rarely. The commit index changes with nearly every batch, so
 * it goes into the log as a small hard-state record covered by the same fdatasync as the entries;
 * recovery takes the metadata's term/vote and the larger of the two commits. Because that record
 * follows the entries it covers, a log cut anywhere never keeps a commit above its last entry.
 *
 * Memory: an index of every live entry (wal-index.ts, ~32 bytes per entry) plus a cache of the newest
 * entries bounded by log_cache_size_limit_mb (entry-cache.ts). Older entries are read back with pread
 * and their checksums verified.
 *
 * Any write or fsync error is fail-stop: onFatal(err) runs (default: log and exit(70)) and every later
 * call fails with IO_ERROR; a sync() that was waiting rejects and is never acknowledged (fsyncgate:
 * retrying an fsync after EIO can "succeed" with the data gone).
 */
import { assert } from '../../common/assert';
import { DbError, ErrorCode } from '../../common/errors';
import type { Logger } from '../../common/log';
import type { ConfState, Entry, HardState, Snapshot } from '../types';
import type { ConsensusMeta } from './consensus-meta';
import { writeConsensusMeta } from './consensus-meta';
import { EntryCache } from './entry-cache';
import type { FileLogStorageOptions, FileLogStorageStats } from './file-log-types';
import { emptyFileLogStats, WAL_SYNC_WAITERS_MAX } from './file-log-types';
import type { RecoveredLog } from './file-log-open';
import { cloneConf, recoverFileLog } from './file-log-open';
import { compactedError, ENTRY_OVERHEAD_BYTES, snapshotOutOfDateError, unavailableError } from './log-bounds';
import type { InitialState, LogStorage } from './log-storage';
import { assertContiguous } from './memory-log';
import { writeSnapshotFile } from './snapshot-file';
import type { WalDurability } from './wal-durability';
import { WalDurability as Dur, weakerDurability } from './wal-durability';
import type { WalFs } from './wal-fs';
import { WalIndex } from './wal-index';
import { WalFailStop } from './wal-fail-stop';
import { WalSegmentFiles } from './wal-segment-files';
import { encodeRecord, RECORD_HEADER_BYTES, recordBytes, recordTypeOf, RecordType } from './wal-record';

export type { FileLogStorageOptions, FileLogStorageStats } from './file-log-types';
export { WAL_PREALLOCATE_CHUNK_BYTES, WAL_SLOW_SYNC_MS, WAL_SYNC_WAITERS_MAX } from './file-log-types';

interface SyncWaiter {
  gen: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

export class FileLogStorage implements LogStorage {
  private readonly fs: WalFs;
  private readonly log: Logger;
  /** The level in force (setDurability changes it: ALTER TABLE). */
  private mode: WalDurability;
  /** durable_wal_write: false caps every level at FLUSH. */
  private readonly serverDurable: boolean;

  private meta: ConsensusMeta;
  private hardState: HardState;
  private conf: ConfState;
  /** Term/vote/conf changed since the metadata file was last written. */
  private metaDirty = false;
  /** Hard state as of the last completed sync round (or recovery). */
  private durableHs: HardState;
  /** Commit index last written as a hard-state record, and the part of that known durable. */
  private loggedCommit: number;
  private durableLoggedCommit: number;

  /** Segment files, write position, held-back records (wal-segment-files.ts). */
  private readonly files: WalSegmentFiles;
  private readonly index: WalIndex;
  private readonly cache: EntryCache;
  private snap: Snapshot | undefined;

  /** Bumped by every change sync() must make durable. */
  private writeGen = 0;
  private syncedGen = 0;
  private waiters: SyncWaiter[] = [];
  /** A group-commit round or an interval fdatasync; rolled segments' fds are closed only without one. */
  private roundInFlight: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The first I/O failure and what follows from it (wal-fail-stop.ts). */
  private readonly failStop: WalFailStop;
  private closed = false;
  private readonly st: FileLogStorageStats;

  private constructor(
    private readonly dir: string,
    init: RecoveredLog,
  ) {
    this.fs = init.fs;
    this.log = init.log;
    this.failStop = new WalFailStop(dir, init.log, init.onFatal);
    this.serverDurable = init.serverDurable;
    this.mode = init.serverDurable ? init.durability : weakerDurability(init.durability, Dur.FLUSH);
    this.meta = init.meta;
    this.hardState = { ...init.hardState };
    this.durableHs = { ...init.hardState };
    this.conf = cloneConf(init.meta.conf);
    this.loggedCommit = init.loggedCommit;
    this.durableLoggedCommit = init.loggedCommit;
    this.index = init.index;
    this.cache = new EntryCache(init.cacheBytesMax, init.index.lastIndex() + 1, init.cacheBudget);
    this.snap = init.snapshot;
    this.st = { ...emptyFileLogStats(), segments: init.segments.length, tornBytesTruncated: init.tornBytesTruncated, zeroTailBytesTruncated: init.zeroTailBytesTruncated };
    this.files = new WalSegmentFiles(
      { fs: init.fs, dir, log: init.log, stats: this.st, fail: (e) => this.failStop.fail(e), mode: () => this.mode },
      { segmentBytes: init.segmentBytes, preallocate: init.preallocate, archiveDir: init.archiveDir, segments: init.segments, activeFd: init.activeFd, activeBytes: init.activeBytes },
    );
  }

  /**
   * Open (or create) the log in `dir`, recovering it. Throws DbError CORRUPTION when the log is
   * damaged anywhere but its torn tail, or its metadata is.
   */
  static async open(dir: string, opts: FileLogStorageOptions = {}): Promise<FileLogStorage> {
    const init = recoverFileLog(dir, opts);
    const storage = new FileLogStorage(dir, init);
    // Always started (it idles under FSYNC): ALTER TABLE may weaken the level later.
    storage.startIntervalSync(init.intervalSyncMs);
    return storage;
  }

  // ---- reads ----

  initialState(): InitialState {
    return { hardState: { ...this.hardState }, conf: cloneConf(this.conf) };
  }

  firstIndex(): number {
    return this.meta.logStart.index + 1;
  }

  lastIndex(): number {
    return Math.max(this.index.lastIndex(), this.meta.logStart.index);
  }

  term(i: number): number {
    const start = this.meta.logStart;
    if (i < start.index) throw compactedError(i, start.index + 1);
    if (i === start.index) return start.term;
    if (i > this.lastIndex()) throw unavailableError(i, this.lastIndex());
    return this.index.term(i);
  }

  entries(lo: number, hi: number, bytesMax?: number): Entry[] {
    this.failStop.checkAlive(this.closed);
    if (lo <= this.meta.logStart.index) throw compactedError(lo, this.firstIndex());
    assert(hi <= this.lastIndex() + 1, `entries hi ${hi} is beyond last index ${this.lastIndex()}`);
    assert(lo <= hi, `entries lo ${lo} > hi ${hi}`);
    if (lo === hi) return [];
    // Decide how many entries the byte limit allows from the index alone, then read only those.
    let n = hi - lo;
    if (bytesMax !== undefined) n = this.countWithinBytes(lo, hi, bytesMax);
    const out: Entry[] = [];
    let i = lo;
    const end = lo + n;
    const cacheStart = this.cache.startIndex();
    if (i < cacheStart) {
      const diskEnd = Math.min(end, cacheStart);
      this.files.readBack(this.index, i, diskEnd, out);
      i = diskEnd;
    }
    for (; i < end; i++) {
      const e = this.cache.get(i);
      assert(e !== undefined, `entry ${i} missing from the log cache`);
      out.push(e);
    }
    return out;
  }

  snapshot(): Snapshot | undefined {
    return this.snap;
  }

  /** The level in force (after durable_wal_write's cap). */
  durability(): WalDurability {
    return this.mode;
  }

  /**
   * Change the level (ALTER TABLE ... durability). Strengthening to FSYNC first writes and fdatasyncs
   * everything held or written so far, so from here on no acknowledged entry and no metadata commit
   * is ahead of the durable log (recovery may then again treat that as corruption).
   */
  setDurability(level: WalDurability): void {
    this.failStop.checkAlive(this.closed);
    const next = this.serverDurable ? level : weakerDurability(level, Dur.FLUSH);
    if (next === this.mode) return;
    const was = this.mode;
    this.mode = next;
    if (next === Dur.FSYNC && !this.files.syncing()) {
      this.failStop.guard(() => {
        if (this.files.flushAndSyncNow()) this.durableLoggedCommit = Math.max(this.durableLoggedCommit, this.loggedCommit);
      });
    } else if (next === Dur.FLUSH && !this.files.syncing()) {
      this.failStop.guard(() => this.files.flushPending());
    }
    this.log.info({ dir: this.dir, from: was, to: next }, 'WAL durability changed');
  }

  stats(): FileLogStorageStats {
    return { ...this.st, segments: this.files.segmentCount(), cacheBytes: this.cache.cachedBytes() };
  }

  // ---- writes ----

  append(entries: readonly Entry[]): void {
    this.failStop.checkAlive(this.closed);
    if (entries.length === 0) return;
    assertContiguous(entries);
    let es = entries;
    const first = this.firstIndex();
    if (es[es.length - 1]!.index < first) return;
    if (es[0]!.index < first) es = es.slice(first - es[0]!.index);
    const start = es[0]!.index;
    assert(start <= this.lastIndex() + 1, `missing log entry: last index ${this.lastIndex()}, appending at ${start}`);
    const prevTerm = start - 1 >= first - 1 ? this.term(start - 1) : 0;
    assert(es[0]!.term >= prevTerm, `appended entry ${start} has term ${es[0]!.term} below its predecessor's ${prevTerm}`);

    let total = 0;
    for (const e of es) total += recordBytes(e.data.length);
    if (this.files.wouldOverflow(total)) this.roll(true);

    const buf = Buffer.allocUnsafe(total);
    const seg = this.files.activeSegment();
    const offset = this.files.endOffset();
    const cached: Entry[] = [];
    let pos = 0;
    for (const e of es) {
      const at = pos;
      pos = encodeRecord(buf, pos, e.term, e.index, recordTypeOf(e.type), e.data);
      this.index.put(e.index, e.term, seg.seq, offset + at, pos - at);
      // The cache keeps a view of the encoded buffer: the caller may reuse its own arrays.
      cached.push({ term: e.term, index: e.index, type: e.type, data: buf.subarray(at + RECORD_HEADER_BYTES, pos) });
    }
    this.files.write(buf);
    if (seg.firstEntryIndex === undefined) seg.firstEntryIndex = start;
    this.cache.append(cached);
    this.writeGen++;
    this.st.appendCalls++;
    this.st.entriesAppended += es.length;
  }

  setHardState(hs: HardState): void {
    this.failStop.checkAlive(this.closed);
    const cur = this.hardState;
    if (hs.term === cur.term && hs.vote === cur.vote && hs.commit === cur.commit) return;
    if (hs.term !== cur.term || hs.vote !== cur.vote) this.metaDirty = true;
    this.hardState = { ...hs };
    this.writeGen++;
  }

  setConfState(conf: ConfState): void {
    this.failStop.checkAlive(this.closed);
    this.conf = cloneConf(conf);
    this.metaDirty = true;
    this.writeGen++;
  }

  compact(index: number, snapshot?: Snapshot): void {
    this.failStop.checkAlive(this.closed);
    const start = this.meta.logStart;
    if (index <= start.index) throw compactedError(index, start.index + 1);
    assert(index <= this.lastIndex(), `compact ${index} is beyond last index ${this.lastIndex()}`);
    const term = this.term(index);
    this.failStop.guard(() => {
      if (snapshot) writeSnapshotFile(this.fs, this.dir, snapshot);
      // The new log start must be durable before any segment it makes unnecessary is deleted.
      this.writeMeta({ ...this.meta, hardState: this.durableHardStateForMeta(), logStart: { index, term } });
      this.files.deleteCoveredBy(index);
    });
    if (snapshot) this.snap = snapshot;
    this.index.compactTo(index);
    this.cache.compactTo(index);
  }

  applySnapshot(snap: Snapshot): void {
    this.failStop.checkAlive(this.closed);
    const cur = this.meta.logStart.index;
    if (snap.meta.index <= cur) throw snapshotOutOfDateError(snap.meta.index, cur);
    this.failStop.guard(() => {
      writeSnapshotFile(this.fs, this.dir, snap);
      // A fresh segment starts the new log; the metadata then declares every older one obsolete, so a
      // crash before they are deleted cannot bring their entries back.
      this.roll(false);
      const fresh = this.files.activeSegment();
      const hs = this.durableHardStateForMeta();
      if (hs.commit < snap.meta.index) hs.commit = snap.meta.index;
      this.writeMeta({ hardState: hs, conf: cloneConf(snap.meta.conf), logStart: { index: snap.meta.index, term: snap.meta.term }, firstSegmentSeq: fresh.seq });
      this.files.deleteAllButActive();
    });
    this.snap = snap;
    this.conf = cloneConf(snap.meta.conf);
    if (this.hardState.commit < snap.meta.index) this.hardState = { ...this.hardState, commit: snap.meta.index };
    this.index.clear(snap.meta.index + 1);
    this.cache.reset(snap.meta.index + 1);
  }

  sync(): Promise<void> {
    if (this.failStop.failed) return Promise.reject(this.failStop.failed);
    if (this.closed) return Promise.reject(new DbError(ErrorCode.SHUTTING_DOWN, `WAL ${this.dir} is closed`));
    if (this.mode !== Dur.FSYNC) {
      // ASYNC / FLUSH: metadata (term/vote) is still made durable; log bytes are written (FLUSH: now,
      // ASYNC: by the interval timer) and fsynced by the interval timer, so an acknowledged entry can
      // be lost to a power loss (FLUSH) or also to a process crash (ASYNC).
      try {
        const hs = { ...this.hardState };
        if (this.metaDirty) {
          this.metaDirty = false;
          this.writeMeta({ ...this.meta, hardState: hs, conf: cloneConf(this.conf) });
        } else this.writeCommitRecord(hs);
        this.durableHs = hs;
      } catch (e) {
        this.failStop.fatal(e);
        return Promise.reject(this.failStop.failed);
      }
      this.syncedGen = this.writeGen;
      return Promise.resolve();
    }
    const gen = this.writeGen;
    if (gen <= this.syncedGen) return Promise.resolve();
    if (this.waiters.length >= WAL_SYNC_WAITERS_MAX) {
      return Promise.reject(new DbError(ErrorCode.BACKPRESSURE, `WAL ${this.dir}: too many sync() callers waiting`));
    }
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ gen, resolve, reject });
      this.kick();
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (!this.failStop.failed) {
      try {
        await this.sync();
      } catch {
        // Already reported through onFatal; closing must still release the files.
      }
    }
    if (this.roundInFlight) await this.roundInFlight;
    if (!this.failStop.failed) {
      try {
        this.files.flushPending();
      } catch {
        // Reported through onFatal.
      }
    }
    this.closed = true;
    this.cache.release();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.files.closeAll();
  }

  private kick(): void {
    if (this.roundInFlight || this.failStop.failed || this.waiters.length === 0) return;
    this.roundInFlight = this.runRound().finally(() => {
      this.roundInFlight = undefined;
      this.files.closeDeferred();
      this.kick();
    });
  }

  /** One group-commit round: one fdatasync for everything written before it started. */
  private async runRound(): Promise<void> {
    const gen = this.writeGen;
    const hs = { ...this.hardState };
    const needMeta = this.metaDirty;
    // Cleared now: a term/vote change during the fdatasync belongs to the next round.
    this.metaDirty = false;
    this.st.syncRounds++;
    try {
      // The commit record goes before the fdatasync so the same flush covers it, and into the same
      // write as the entries appended since the last round.
      if (!needMeta) this.writeCommitRecord(hs);
      this.files.flushPending();
      // What is appended during the fdatasync waits for the next round's write (WalSegmentFiles.syncing).
      await this.files.syncActive(true);
      if (this.failStop.failed) throw this.failStop.failed;
      // Term/vote go to the metadata file only after the entries they may vouch for are durable.
      if (needMeta) {
        // Re-read meta and conf now: a snapshot installed during the await replaced both, and commit
        // in the metadata never goes backwards.
        const commit = Math.max(hs.commit, this.meta.hardState.commit);
        this.writeMeta({ ...this.meta, hardState: { ...hs, commit }, conf: cloneConf(this.conf) });
      }
      this.durableHs = hs;
      this.durableLoggedCommit = Math.max(this.durableLoggedCommit, this.loggedCommit);
      if (gen > this.syncedGen) this.syncedGen = gen;
      const ready = this.waiters.filter((w) => w.gen <= gen);
      this.waiters = this.waiters.filter((w) => w.gen > gen);
      for (const w of ready) w.resolve();
    } catch (e) {
      this.failStop.fatal(e);
      const all = this.waiters;
      this.waiters = [];
      for (const w of all) w.reject(this.failStop.failed ?? DbError.from(e));
    }
  }

  /** A hard-state record for a new commit index (made durable by the fdatasync that follows). */
  private writeCommitRecord(hs: HardState): void {
    if (hs.commit === this.loggedCommit) return;
    const vote = Buffer.from(hs.vote, 'utf8');
    const buf = Buffer.allocUnsafe(recordBytes(vote.length));
    encodeRecord(buf, 0, hs.term, hs.commit, RecordType.hardState, vote);
    this.files.write(buf);
    this.loggedCommit = hs.commit;
  }

  private startIntervalSync(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (this.mode === Dur.FSYNC || this.roundInFlight || this.failStop.failed || this.closed) return;
      if (this.mode === Dur.ASYNC) {
        try {
          this.files.flushPending();
        } catch {
          return; // reported through onFatal
        }
      }
      if (!this.files.hasUnsynced()) return;
      this.roundInFlight = this.files
        .syncActive(false)
        .catch((e: unknown) => this.failStop.fatal(e))
        .finally(() => {
          this.roundInFlight = undefined;
          this.files.closeDeferred();
        });
    }, intervalMs);
    this.timer.unref();
  }

  // ---- reading back ----

  /** How many entries from lo fit in bytesMax (at least one), by the same rule as limitBytes, from the index alone. */
  private countWithinBytes(lo: number, hi: number, bytesMax: number): number {
    let total = 0;
    let n = 0;
    for (let i = lo; i < hi; i++) {
      const payload = this.cache.get(i)?.data.length ?? this.index.get(i).recordBytes - RECORD_HEADER_BYTES;
      total += payload + ENTRY_OVERHEAD_BYTES;
      if (n > 0 && total > bytesMax) break;
      n++;
    }
    return n;
  }

  // ---- metadata and failure ----

  private writeMeta(meta: ConsensusMeta): void {
    writeConsensusMeta(this.fs, this.dir, meta);
    this.meta = meta;
    this.st.metaWrites++;
  }

  /** Hard state safe to put in metadata outside a sync round: only what is already durable. */
  private durableHardStateForMeta(): HardState {
    const hs = { ...this.durableHs };
    hs.commit = Math.max(hs.commit, this.durableLoggedCommit, this.meta.hardState.commit);
    return hs;
  }

  /** Start a new segment (WalSegmentFiles.roll); its old fd closes now unless an fdatasync may use it. */
  private roll(syncOld: boolean): void {
    if (this.files.roll(syncOld)) this.durableLoggedCommit = Math.max(this.durableLoggedCommit, this.loggedCommit);
    if (!this.roundInFlight) this.files.closeDeferred();
  }
}
