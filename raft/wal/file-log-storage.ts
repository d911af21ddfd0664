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
import * as path from 'node:path';
import { assert } from '../../common/assert';
import { DbError, ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import type { Logger } from '../../common/log';
import { createLogger } from '../../common/log';
import type { ConfState, Entry, HardState, Snapshot } from '../types';
import { TMP_SUFFIX } from './checksummed-file';
import type { ConsensusMeta } from './consensus-meta';
import { emptyConsensusMeta, readConsensusMeta, writeConsensusMeta } from './consensus-meta';
import { EntryCache } from './entry-cache';
import { compactedError, ENTRY_OVERHEAD_BYTES, snapshotOutOfDateError, unavailableError } from './log-bounds';
import type { InitialState, LogStorage } from './log-storage';
import { assertContiguous } from './memory-log';
import { readSnapshotFile, writeSnapshotFile } from './snapshot-file';
import { DURABLE_WAL_WRITE, INTERVAL_DURABLE_WAL_WRITE_MS, LOG_CACHE_SIZE_LIMIT_MB, LOG_PREALLOCATE_SEGMENTS, LOG_SEGMENT_SIZE_MB } from './wal-flags';
import type { WalDurability } from './wal-durability';
import { DEFAULT_WAL_DURABILITY, WalDurability as Dur, weakerDurability } from './wal-durability';
import type { WalFs } from './wal-fs';
import { joinPath, NodeWalFs } from './wal-fs';
import { WalIndex } from './wal-index';
import type { LogCacheBudget } from './log-cache-budget';
import { recoverSegments } from './wal-recovery';
import { SegmentReader } from './segment-reader';
import { encodeRecord, encodeSegmentHeader, RECORD_HEADER_BYTES, recordBytes, recordTypeOf, RecordType, SEGMENT_HEADER_BYTES } from './wal-record';
import type { SegmentInfo } from './wal-segments';
import { archiveSegment } from './wal-archive';
import { parseSegmentName, segmentPath } from './wal-segments';

export interface FileLogStorageOptions {
  /** Server flags (durable_wal_write, interval_durable_wal_write_ms, log_segment_size_mb, log_cache_size_limit_mb). */
  flags?: Flags;
  /** File layer; LazyWalFs injects power loss and I/O errors in tests. */
  fs?: WalFs;
  /** Called once on the first write/fsync error. Default: log it and exit(70). Must not resume the log. */
  onFatal?: (err: Error) => void;
  logger?: Logger;
  /** Overrides log_segment_size_mb (tests roll segments after a few records). */
  segmentBytes?: number;
  /** Overrides log_cache_size_limit_mb. */
  cacheBytesMax?: number;
  /** The table's level (wal-durability.ts; default FSYNC); durable_wal_write=false caps it at FLUSH. */
  durability?: WalDurability;
  /** The server's budget over all its tablets' caches (global_log_cache_size_limit_mb). */
  cacheBudget?: LogCacheBudget;
  /** Copy every closed segment here before it is deleted (wal-archive.ts, --log_archive_dir). */
  archiveDir?: string;
}

export interface FileLogStorageStats {
  /** fdatasync/fsync calls on log segments (not counting metadata files). */
  logFsyncs: number;
  /**
   * Microseconds those calls took in all, each from the call to its completion seen by the event loop:
   * the wait for a thread-pool thread, the device flush, and the loop's own delay in running the callback.
   */
  syncMicros: number;
  /** The longest of them, µs. */
  syncMaxMicros: number;
  /** Those that took WAL_SLOW_SYNC_MS or longer. */
  slowSyncs: number;
  /** Writes of held-back records (with durable writes: one per round, covering every record appended since the last). */
  deferredWrites: number;
  /** Metadata file replacements (each is two fsyncs). */
  metaWrites: number;
  /** Group-commit rounds (sync() calls sharing one fdatasync count once). */
  syncRounds: number;
  appendCalls: number;
  entriesAppended: number;
  bytesWritten: number;
  segments: number;
  cacheBytes: number;
  tornBytesTruncated: number;
  /** All-zero tails (preallocated, never written) recovery truncated at open. */
  zeroTailBytesTruncated: number;
  /** Zero-fill writes ahead of the log's end (log_preallocate_segments), and their bytes. */
  preallocations: number;
  preallocatedBytes: number;
}

/** A log fdatasync that takes this long or longer counts as slow (FileLogStorageStats.slowSyncs): a disk stall, not a queue. */
export const WAL_SLOW_SYNC_MS = 100;

/** Beyond this many callers waiting in sync(), new callers get BACKPRESSURE. */
export const WAL_SYNC_WAITERS_MAX = 100_000;

interface SyncWaiter {
  gen: number;
  resolve: () => void;
  reject: (e: Error) => void;
}

const MB = 1024 * 1024;
/** log_preallocate_segments: zeros written ahead of the active segment's end, this much at a time. */
export const WAL_PREALLOCATE_CHUNK_BYTES = MB;
let zeroChunk: Buffer | undefined;

export class FileLogStorage implements LogStorage {
  private readonly fs: WalFs;
  private readonly log: Logger;
  private readonly onFatal: (err: Error) => void;
  /** The level in force (setDurability changes it: ALTER TABLE). */
  private mode: WalDurability;
  /** durable_wal_write: false caps every level at FLUSH. */
  private readonly serverDurable: boolean;
  private readonly segmentBytes: number;
  private readonly archiveDir: string | undefined;

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

  private segments: SegmentInfo[];
  private activeFd: number;
  private activeBytes: number;
  private activeSyncedBytes: number;
  /**
   * Bytes of the active segment file that exist (records, then zeros written ahead of them when
   * preallocating): a record written below it overwrites zeros and leaves the file size alone, so
   * its fdatasync has no metadata to commit.
   */
  private activeAllocated: number;
  private readonly preallocate: boolean;
  private readonly reader: SegmentReader;
  private readonly index: WalIndex;
  private readonly cache: EntryCache;
  private snap: Snapshot | undefined;

  /** Bumped by every change sync() must make durable. */
  private writeGen = 0;
  private syncedGen = 0;
  private waiters: SyncWaiter[] = [];
  private roundInFlight: Promise<void> | undefined;
  /**
   * True while a group-commit round's fdatasync runs on the thread pool (only durable_wal_write runs
   * rounds; the interval sync of the other mode never sets it, so there every write goes straight
   * through). A write(2) into a page under writeback waits for that I/O (stable pages), stalling the
   * event loop for the whole flush, so nothing is written while it is set.
   *
   * With durable writes every record waits in pendingBufs for its round, not only while an
   * fdatasync runs: the round writes the entries appended since the last one together with its
   * commit record in one write(2) right before its fdatasync (instead of one write per append() and
   * one more for the commit record). Nothing acknowledges a record before its round's fdatasync, so
   * holding it in memory changes no guarantee; a write error surfaces at sync() (and onFatal).
   */
  private syncing = false;
  private pendingBufs: Buffer[] = [];
  private pendingBytes = 0;
  /** Write fds of rolled segments, closed when no fdatasync can be using them. */
  private deferredClose: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private failed: DbError | undefined;
  private closed = false;
  private readonly st: FileLogStorageStats;

  private constructor(
    private readonly dir: string,
    init: {
      fs: WalFs;
      log: Logger;
      onFatal: (err: Error) => void;
      durability: WalDurability;
      serverDurable: boolean;
      preallocate: boolean;
      segmentBytes: number;
      cacheBytesMax: number;
      cacheBudget: LogCacheBudget | undefined;
      archiveDir?: string | undefined;
      meta: ConsensusMeta;
      hardState: HardState;
      loggedCommit: number;
      segments: SegmentInfo[];
      activeFd: number;
      activeBytes: number;
      index: WalIndex;
      snapshot: Snapshot | undefined;
      tornBytesTruncated: number;
      zeroTailBytesTruncated: number;
    },
  ) {
    this.fs = init.fs;
    this.log = init.log;
    this.onFatal = init.onFatal;
    this.serverDurable = init.serverDurable;
    this.mode = init.serverDurable ? init.durability : weakerDurability(init.durability, Dur.FLUSH);
    this.preallocate = init.preallocate;
    this.segmentBytes = init.segmentBytes;
    this.archiveDir = init.archiveDir;
    this.meta = init.meta;
    this.hardState = { ...init.hardState };
    this.durableHs = { ...init.hardState };
    this.conf = cloneConf(init.meta.conf);
    this.loggedCommit = init.loggedCommit;
    this.durableLoggedCommit = init.loggedCommit;
    this.segments = init.segments;
    this.activeFd = init.activeFd;
    this.activeBytes = init.activeBytes;
    this.activeSyncedBytes = init.activeBytes;
    // Recovery truncated the last segment to its last valid record.
    this.activeAllocated = init.activeBytes;
    this.index = init.index;
    this.reader = new SegmentReader(init.fs, dir);
    this.cache = new EntryCache(init.cacheBytesMax, init.index.lastIndex() + 1, init.cacheBudget);
    this.snap = init.snapshot;
    this.st = {
      logFsyncs: 0,
      syncMicros: 0,
      syncMaxMicros: 0,
      slowSyncs: 0,
      deferredWrites: 0,
      metaWrites: 0,
      syncRounds: 0,
      appendCalls: 0,
      entriesAppended: 0,
      bytesWritten: 0,
      segments: init.segments.length,
      cacheBytes: 0,
      tornBytesTruncated: init.tornBytesTruncated,
      zeroTailBytesTruncated: init.zeroTailBytesTruncated,
      preallocations: 0,
      preallocatedBytes: 0,
    };
  }

  /**
   * Open (or create) the log in `dir`, recovering it. Throws DbError CORRUPTION when the log is
   * damaged anywhere but its torn tail, or its metadata is.
   */
  static async open(dir: string, opts: FileLogStorageOptions = {}): Promise<FileLogStorage> {
    const fs = opts.fs ?? new NodeWalFs();
    const flags = opts.flags ?? new Flags();
    const log = opts.logger ?? createLogger({ name: 'wal' });
    const onFatal =
      opts.onFatal ??
      ((err: Error): void => {
        log.fatal({ err, dir }, 'WAL I/O error: stopping the process (fail-stop)');
        process.exit(70);
      });

    if (!fs.exists(dir)) {
      fs.mkdirp(dir);
      fs.fsyncDir(path.dirname(path.resolve(dir)));
    }
    for (const name of fs.readdir(dir)) if (name.endsWith(TMP_SUFFIX)) fs.unlink(joinPath(dir, name));

    let meta = readConsensusMeta(fs, dir);
    if (!meta) {
      meta = emptyConsensusMeta();
      writeConsensusMeta(fs, dir, meta);
    }
    const snapshot = readSnapshotFile(fs, dir);

    const seqs = fs
      .readdir(dir)
      .map((n) => parseSegmentName(n))
      .filter((s): s is number => s !== undefined)
      .sort((a, b) => a - b);
    // Segments below firstSegmentSeq belong to the log a snapshot replaced; finish deleting them.
    const stale = seqs.filter((s) => s < meta.firstSegmentSeq);
    for (const s of stale) fs.unlink(segmentPath(dir, s));
    if (stale.length > 0) fs.fsyncDir(dir);
    const live = seqs.filter((s) => s >= meta.firstSegmentSeq);
    for (let k = 1; k < live.length; k++) {
      if (live[k] !== live[k - 1]! + 1) {
        throw new DbError(ErrorCode.CORRUPTION, `WAL in ${dir}: segment ${live[k - 1]! + 1} is missing (found ${live[k - 1]} and ${live[k]})`, { dir });
      }
    }
    if (live.length === 0) {
      createSegmentFile(fs, dir, meta.firstSegmentSeq, true);
      live.push(meta.firstSegmentSeq);
    }
    const segments: SegmentInfo[] = live.map((seq) => ({ seq, path: segmentPath(dir, seq), firstEntryIndex: undefined }));
    const rec = recoverSegments(fs, segments, meta);
    if (rec.tornBytesTruncated > 0) log.warn({ dir, bytes: rec.tornBytesTruncated }, 'WAL: truncated a torn tail');

    // Term and vote come from the metadata (records never carry newer ones); commit is monotonic,
    // so the larger of the two is the latest.
    const hs: HardState = { ...meta.hardState };
    const recCommit = rec.hardStateRecord?.commit ?? 0;
    if (recCommit > hs.commit) hs.commit = recCommit;
    const lastIndex = Math.max(rec.index.lastIndex(), meta.logStart.index);
    const durability = opts.durability ?? DEFAULT_WAL_DURABILITY;
    if (hs.commit > lastIndex) {
      if (flags.get(DURABLE_WAL_WRITE) && durability === Dur.FSYNC) {
        throw new DbError(ErrorCode.CORRUPTION, `WAL in ${dir}: commit index ${hs.commit} is beyond the last entry ${lastIndex}`, { dir, commit: hs.commit, lastIndex });
      }
      // Without durable writes (ASYNC / FLUSH) a crash may keep metadata newer than the log: expected, not corrupt.
      log.warn({ dir, commit: hs.commit, lastIndex }, 'WAL: commit beyond the log after an unsynced crash; lowering it');
      hs.commit = lastIndex;
    }

    const last = segments[segments.length - 1]!;
    const activeFd = fs.openExisting(last.path, true);
    const storage = new FileLogStorage(dir, {
      fs,
      log,
      onFatal,
      durability,
      serverDurable: flags.get(DURABLE_WAL_WRITE),
      preallocate: flags.get(LOG_PREALLOCATE_SEGMENTS),
      segmentBytes: opts.segmentBytes ?? flags.get(LOG_SEGMENT_SIZE_MB) * MB,
      cacheBytesMax: opts.cacheBytesMax ?? flags.get(LOG_CACHE_SIZE_LIMIT_MB) * MB,
      cacheBudget: opts.cacheBudget,
      archiveDir: opts.archiveDir,
      meta,
      hardState: hs,
      loggedCommit: recCommit,
      segments,
      activeFd,
      activeBytes: rec.lastSegmentBytes,
      index: rec.index,
      snapshot,
      tornBytesTruncated: rec.tornBytesTruncated,
      zeroTailBytesTruncated: rec.zeroBytesTruncated,
    });
    // Always started (it idles under FSYNC): ALTER TABLE may weaken the level later.
    storage.startIntervalSync(flags.get(INTERVAL_DURABLE_WAL_WRITE_MS));
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
    this.checkAlive();
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
      try {
        this.flushPending(); // (the newest records are normally cached; this only guards a tiny cache)
        this.reader.read(this.index, i, diskEnd, { seq: this.segments[this.segments.length - 1]!.seq, fd: this.activeFd }, out);
      } catch (e) {
        this.fatal(e);
        throw this.failed;
      }
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
    this.checkAlive();
    const next = this.serverDurable ? level : weakerDurability(level, Dur.FLUSH);
    if (next === this.mode) return;
    const was = this.mode;
    this.mode = next;
    if (next === Dur.FSYNC && !this.syncing) {
      this.guard(() => {
        this.flushPending();
        if (this.activeBytes > this.activeSyncedBytes) {
          const t0 = performance.now();
          this.fs.fdatasyncSync(this.activeFd);
          this.countSync(performance.now() - t0);
          this.activeSyncedBytes = this.activeBytes;
          this.durableLoggedCommit = Math.max(this.durableLoggedCommit, this.loggedCommit);
        }
      });
    } else if (next === Dur.FLUSH && !this.syncing) {
      this.guard(() => this.flushPending());
    }
    this.log.info({ dir: this.dir, from: was, to: next }, 'WAL durability changed');
  }

  stats(): FileLogStorageStats {
    return { ...this.st, segments: this.segments.length, cacheBytes: this.cache.cachedBytes() };
  }

  // ---- writes ----

  append(entries: readonly Entry[]): void {
    this.checkAlive();
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
    if (this.activeBytes > SEGMENT_HEADER_BYTES && this.activeBytes + total > this.segmentBytes) this.roll(true);

    const buf = Buffer.allocUnsafe(total);
    const seq = this.segments[this.segments.length - 1]!.seq;
    const cached: Entry[] = [];
    let pos = 0;
    for (const e of es) {
      const at = pos;
      pos = encodeRecord(buf, pos, e.term, e.index, recordTypeOf(e.type), e.data);
      this.index.put(e.index, e.term, seq, this.activeBytes + at, pos - at);
      // The cache keeps a view of the encoded buffer: the caller may reuse its own arrays.
      cached.push({ term: e.term, index: e.index, type: e.type, data: buf.subarray(at + RECORD_HEADER_BYTES, pos) });
    }
    this.writeActive(buf);
    const seg = this.segments[this.segments.length - 1]!;
    if (seg.firstEntryIndex === undefined) seg.firstEntryIndex = start;
    this.cache.append(cached);
    this.writeGen++;
    this.st.appendCalls++;
    this.st.entriesAppended += es.length;
  }

  setHardState(hs: HardState): void {
    this.checkAlive();
    const cur = this.hardState;
    if (hs.term === cur.term && hs.vote === cur.vote && hs.commit === cur.commit) return;
    if (hs.term !== cur.term || hs.vote !== cur.vote) this.metaDirty = true;
    this.hardState = { ...hs };
    this.writeGen++;
  }

  setConfState(conf: ConfState): void {
    this.checkAlive();
    this.conf = cloneConf(conf);
    this.metaDirty = true;
    this.writeGen++;
  }

  compact(index: number, snapshot?: Snapshot): void {
    this.checkAlive();
    const start = this.meta.logStart;
    if (index <= start.index) throw compactedError(index, start.index + 1);
    assert(index <= this.lastIndex(), `compact ${index} is beyond last index ${this.lastIndex()}`);
    const term = this.term(index);
    this.guard(() => {
      if (snapshot) writeSnapshotFile(this.fs, this.dir, snapshot);
      // The new log start must be durable before any segment it makes unnecessary is deleted.
      this.writeMeta({ ...this.meta, hardState: this.durableHardStateForMeta(), logStart: { index, term } });
      this.deleteSegmentsCoveredBy(index);
    });
    if (snapshot) this.snap = snapshot;
    this.index.compactTo(index);
    this.cache.compactTo(index);
  }

  applySnapshot(snap: Snapshot): void {
    this.checkAlive();
    const cur = this.meta.logStart.index;
    if (snap.meta.index <= cur) throw snapshotOutOfDateError(snap.meta.index, cur);
    this.guard(() => {
      writeSnapshotFile(this.fs, this.dir, snap);
      // A fresh segment starts the new log; the metadata then declares every older one obsolete, so a
      // crash before they are deleted cannot bring their entries back.
      this.roll(false);
      const fresh = this.segments[this.segments.length - 1]!;
      const hs = this.durableHardStateForMeta();
      if (hs.commit < snap.meta.index) hs.commit = snap.meta.index;
      this.writeMeta({ hardState: hs, conf: cloneConf(snap.meta.conf), logStart: { index: snap.meta.index, term: snap.meta.term }, firstSegmentSeq: fresh.seq });
      for (const s of this.segments) {
        if (s.seq === fresh.seq) continue;
        this.reader.close(s.seq);
        this.archive(s.path);
        this.fs.unlink(s.path);
      }
      this.segments = [fresh];
      this.fs.fsyncDir(this.dir);
    });
    this.snap = snap;
    this.conf = cloneConf(snap.meta.conf);
    if (this.hardState.commit < snap.meta.index) this.hardState = { ...this.hardState, commit: snap.meta.index };
    this.index.clear(snap.meta.index + 1);
    this.cache.reset(snap.meta.index + 1);
  }

  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
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
        this.fatal(e);
        return Promise.reject(this.failed);
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
    if (!this.failed) {
      try {
        await this.sync();
      } catch {
        // Already reported through onFatal; closing must still release the files.
      }
    }
    if (this.roundInFlight) await this.roundInFlight;
    if (!this.failed) {
      try {
        this.flushPending();
      } catch {
        // Reported through onFatal.
      }
    }
    this.closed = true;
    this.cache.release();
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const fds = [this.activeFd, ...this.deferredClose, ...this.reader.takeAll()];
    this.deferredClose = [];
    for (const fd of fds) {
      try {
        this.fs.close(fd);
      } catch {
        // The fd may already be gone (a simulated crash closes everything).
      }
    }
  }

  // ---- group commit ----

  /** One fdatasync of a log segment, counted and timed (stats: logFsyncs, syncMicros, slowSyncs). */
  private async timedFdatasync(fd: number): Promise<void> {
    const t0 = performance.now();
    try {
      await this.fs.fdatasync(fd);
    } finally {
      this.countSync(performance.now() - t0);
    }
  }

  private countSync(ms: number): void {
    const us = Math.round(ms * 1000);
    this.st.logFsyncs++;
    this.st.syncMicros += us;
    if (us > this.st.syncMaxMicros) this.st.syncMaxMicros = us;
    if (ms >= WAL_SLOW_SYNC_MS) this.st.slowSyncs++;
  }

  private kick(): void {
    if (this.roundInFlight || this.failed || this.waiters.length === 0) return;
    this.roundInFlight = this.runRound().finally(() => {
      this.roundInFlight = undefined;
      this.closeDeferred();
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
      this.flushPending();
      const fd = this.activeFd;
      const bytes = this.activeBytes;
      if (bytes > this.activeSyncedBytes) {
        this.syncing = true;
        try {
          await this.timedFdatasync(fd);
        } finally {
          this.syncing = false;
        }
        // A roll during the await synced the old segment itself and reset these counters.
        if (fd === this.activeFd && bytes > this.activeSyncedBytes) this.activeSyncedBytes = bytes;
        // What was appended during the fdatasync waits for the next round's write (see `syncing`).
      }
      if (this.failed) throw this.failed;
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
      this.fatal(e);
      const all = this.waiters;
      this.waiters = [];
      for (const w of all) w.reject(this.failed ?? DbError.from(e));
    }
  }

  /** A hard-state record for a new commit index (made durable by the fdatasync that follows). */
  private writeCommitRecord(hs: HardState): void {
    if (hs.commit === this.loggedCommit) return;
    const vote = Buffer.from(hs.vote, 'utf8');
    const buf = Buffer.allocUnsafe(recordBytes(vote.length));
    encodeRecord(buf, 0, hs.term, hs.commit, RecordType.hardState, vote);
    this.writeActive(buf);
    this.loggedCommit = hs.commit;
  }

  private startIntervalSync(intervalMs: number): void {
    this.timer = setInterval(() => {
      if (this.mode === Dur.FSYNC || this.roundInFlight || this.failed || this.closed) return;
      if (this.mode === Dur.ASYNC) {
        try {
          this.flushPending();
        } catch {
          return; // reported through onFatal
        }
      }
      if (this.activeBytes <= this.activeSyncedBytes) return;
      const fd = this.activeFd;
      const bytes = this.activeBytes;
      this.roundInFlight = this.timedFdatasync(fd)
        .then(
          () => {
            if (fd === this.activeFd && bytes > this.activeSyncedBytes) this.activeSyncedBytes = bytes;
          },
          (e: unknown) => this.fatal(e),
        )
        .finally(() => {
          this.roundInFlight = undefined;
          this.closeDeferred();
        });
    }, intervalMs);
    this.timer.unref();
  }

  // ---- segments ----

  private writeActive(buf: Buffer): void {
    // FSYNC holds records for its round's write, ASYNC for the interval flush; FLUSH writes now.
    if (this.syncing || this.mode !== Dur.FLUSH) {
      this.pendingBufs.push(buf);
      this.pendingBytes += buf.length;
    } else {
      try {
        this.flushPending();
        this.fs.write(this.activeFd, buf, 0, buf.length, this.activeBytes);
        this.allocateAhead(this.activeBytes + buf.length);
      } catch (e) {
        this.fatal(e);
        throw this.failed;
      }
    }
    this.activeBytes += buf.length;
    this.st.bytesWritten += buf.length;
  }

  /** Write the records held back during an fdatasync (they end at activeBytes), as one write. */
  private flushPending(): void {
    if (this.pendingBytes === 0) return;
    const buf = this.pendingBufs.length === 1 ? this.pendingBufs[0]! : Buffer.concat(this.pendingBufs, this.pendingBytes);
    const at = this.activeBytes - this.pendingBytes;
    this.pendingBufs = [];
    this.pendingBytes = 0;
    try {
      this.fs.write(this.activeFd, buf, 0, buf.length, at);
      this.allocateAhead(at + buf.length);
    } catch (e) {
      this.fatal(e);
      throw this.failed;
    }
    this.st.deferredWrites++;
  }

  /**
   * Records now end at `end` of the active segment: when that reached the zeros written ahead (or the
   * file's end), write the next chunk of zeros after it (never past the segment size, unless one
   * record is larger). Called where records are written — never while an fdatasync runs (a write into
   * pages under writeback would wait for it) — so the next fdatasync flushes these zeros together
   * with the records, once per chunk.
   */
  private allocateAhead(end: number): void {
    if (end > this.activeAllocated) this.activeAllocated = end;
    if (!this.preallocate || end < this.activeAllocated) return;
    const target = Math.min(end + WAL_PREALLOCATE_CHUNK_BYTES, Math.max(end, this.segmentBytes));
    if (target <= end) return;
    const zeros = (zeroChunk ??= Buffer.alloc(WAL_PREALLOCATE_CHUNK_BYTES));
    this.fs.write(this.activeFd, zeros, 0, target - end, end);
    this.activeAllocated = target;
    this.st.preallocations++;
    this.st.preallocatedBytes += target - end;
  }

  /**
   * Start a new segment. The old one is fsynced first (when its entries stay live), so every segment
   * but the last is complete on disk and a bad record in one of them is corruption, never a torn tail.
   */
  private roll(syncOld: boolean): void {
    const old = this.activeFd;
    const oldSeq = this.segments[this.segments.length - 1]!.seq;
    try {
      // Held-back records belong to the old segment.
      this.flushPending();
      if (syncOld && this.activeBytes > this.activeSyncedBytes) {
        const t0 = performance.now();
        this.fs.fdatasyncSync(old);
        this.countSync(performance.now() - t0);
        this.durableLoggedCommit = Math.max(this.durableLoggedCommit, this.loggedCommit);
      }
      // The zeros written ahead in the old segment are not needed any more. Not fsynced: recovery
      // accepts an all-zero tail in any segment.
      if (this.activeAllocated > this.activeBytes) this.fs.ftruncate(old, this.activeBytes);
      const seq = oldSeq + 1;
      const fd = createSegmentFile(this.fs, this.dir, seq, false);
      this.segments.push({ seq, path: segmentPath(this.dir, seq), firstEntryIndex: undefined });
      this.activeFd = fd;
      this.activeBytes = SEGMENT_HEADER_BYTES;
      this.activeSyncedBytes = SEGMENT_HEADER_BYTES;
      this.activeAllocated = SEGMENT_HEADER_BYTES;
    } catch (e) {
      this.fatal(e);
      throw this.failed;
    }
    this.archive(segmentPath(this.dir, oldSeq));
    // An fdatasync may be running on the old fd right now: close it only when none can be.
    this.deferredClose.push(old);
    if (!this.roundInFlight) this.closeDeferred();
  }

  /** Delete the oldest segments while the next one starts at or below index + 1 (see SegmentInfo). */
  private deleteSegmentsCoveredBy(index: number): void {
    let deleted = 0;
    while (this.segments.length >= 2) {
      const next = this.segments[1]!;
      if (next.firstEntryIndex === undefined || next.firstEntryIndex > index + 1) break;
      const s = this.segments.shift()!;
      this.reader.close(s.seq);
      this.archive(s.path);
      this.fs.unlink(s.path);
      deleted++;
    }
    if (deleted > 0) this.fs.fsyncDir(this.dir);
  }

  /**
   * Keep a copy of a closed segment in the archive. A failure is logged and the log goes on: the
   * archive is a backup aid, not the log (replay-wal reports the gap it leaves).
   */
  private archive(segmentFile: string): void {
    if (!this.archiveDir) return;
    try {
      archiveSegment(segmentFile, this.archiveDir);
    } catch (e) {
      this.log.error({ err: e, segment: segmentFile, archiveDir: this.archiveDir }, 'WAL archive: copying a segment failed; the archive has a gap');
    }
  }

  private closeDeferred(): void {
    const fds = this.deferredClose;
    this.deferredClose = [];
    for (const fd of fds) this.fs.close(fd);
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

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      if (e instanceof DbError && this.failed === e) throw e;
      this.fatal(e);
      throw this.failed;
    }
  }

  private fatal(e: unknown): void {
    if (this.failed) return;
    const cause = e instanceof Error ? e : new Error(String(e));
    this.failed = e instanceof DbError ? e : new DbError(ErrorCode.IO_ERROR, `WAL ${this.dir}: ${cause.message}`, { dir: this.dir }, { cause });
    this.log.error({ err: cause, dir: this.dir }, 'WAL I/O failure (fail-stop)');
    this.onFatal(cause);
  }

  private checkAlive(): void {
    if (this.failed) throw this.failed;
    if (this.closed) throw new DbError(ErrorCode.SHUTTING_DOWN, `WAL ${this.dir} is closed`);
  }
}

function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: true): undefined;
function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: false): number;
function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: boolean): number | undefined {
  // Header fsynced and directory fsynced before any record goes in: recovery may then treat only the
  // header of the last segment as possibly torn.
  const fd = fs.createNew(segmentPath(dir, seq));
  const h = encodeSegmentHeader();
  fs.write(fd, h, 0, h.length, 0);
  fs.fdatasyncSync(fd);
  fs.fsyncDir(dir);
  if (closeIt) {
    fs.close(fd);
    return undefined;
  }
  return fd;
}

function cloneConf(c: ConfState): ConfState {
  return { voters: [...c.voters], learners: [...c.learners] };
}
