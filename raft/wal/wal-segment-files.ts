/**
 * The segment files of the durable Raft log (file-log-storage.ts): the active segment's write
 * position, records held back for one write, preallocation, rolling to a new segment, deleting and
 * archiving old ones, and reading entries back. The log above it owns the index, the cache, the
 * hard state and the group-commit rounds; this part owns only files and byte positions.
 */
import type { DbError } from '../../common/errors';
import type { Logger } from '../../common/log';
import type { Entry } from '../types';
import type { FileLogStorageStats } from './file-log-types';
import { WAL_PREALLOCATE_CHUNK_BYTES, WAL_SLOW_SYNC_MS } from './file-log-types';
import { SegmentReader } from './segment-reader';
import type { WalDurability } from './wal-durability';
import { WalDurability as Dur } from './wal-durability';
import type { WalFs } from './wal-fs';
import type { WalIndex } from './wal-index';
import { archiveSegment } from './wal-archive';
import { encodeSegmentHeader, SEGMENT_HEADER_BYTES } from './wal-record';
import type { SegmentInfo } from './wal-segments';
import { segmentPath } from './wal-segments';

let zeroChunk: Buffer | undefined;

export interface WalSegmentFilesDeps {
  fs: WalFs;
  dir: string;
  log: Logger;
  /** The log's statistics, shared: this part counts fsyncs, bytes, deferred writes, preallocations. */
  stats: FileLogStorageStats;
  /** Records a write/fsync failure (fail-stop) and returns the error every later call gets. */
  fail: (e: unknown) => DbError;
  /** The level in force: FLUSH writes records at once, FSYNC and ASYNC hold them for one write. */
  mode: () => WalDurability;
}

export interface WalSegmentFilesOptions {
  segmentBytes: number;
  preallocate: boolean;
  archiveDir?: string | undefined;
  /** The live segments after recovery, the last one open for writing at `activeFd`, `activeBytes` long. */
  segments: SegmentInfo[];
  activeFd: number;
  activeBytes: number;
}

export class WalSegmentFiles {
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
  private readonly reader: SegmentReader;
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
  private syncingNow = false;
  private pendingBufs: Buffer[] = [];
  private pendingBytes = 0;
  /** Write fds of rolled segments, closed when no fdatasync can be using them. */
  private deferredClose: number[] = [];

  constructor(
    private readonly deps: WalSegmentFilesDeps,
    private readonly opts: WalSegmentFilesOptions,
  ) {
    this.segments = opts.segments;
    this.activeFd = opts.activeFd;
    this.activeBytes = opts.activeBytes;
    this.activeSyncedBytes = opts.activeBytes;
    // Recovery truncated the last segment to its last valid record.
    this.activeAllocated = opts.activeBytes;
    this.reader = new SegmentReader(deps.fs, deps.dir);
  }

  /** Where the next record goes in the active segment. */
  endOffset(): number {
    return this.activeBytes;
  }

  activeSegment(): SegmentInfo {
    return this.segments[this.segments.length - 1]!;
  }

  segmentCount(): number {
    return this.segments.length;
  }

  /** A round's fdatasync is running (see syncingNow). */
  syncing(): boolean {
    return this.syncingNow;
  }

  /** Bytes written to the active segment that no fdatasync covers yet. */
  hasUnsynced(): boolean {
    return this.activeBytes > this.activeSyncedBytes;
  }

  /** True when `bytes` more would overflow a segment that already holds a record. */
  wouldOverflow(bytes: number): boolean {
    return this.activeBytes > SEGMENT_HEADER_BYTES && this.activeBytes + bytes > this.opts.segmentBytes;
  }

  // ---- fdatasync ----

  /** One fdatasync of a log segment, counted and timed (stats: logFsyncs, syncMicros, slowSyncs). */
  private async timedFdatasync(fd: number): Promise<void> {
    const t0 = performance.now();
    try {
      await this.deps.fs.fdatasync(fd);
    } finally {
      this.countSync(performance.now() - t0);
    }
  }

  private timedFdatasyncSync(fd: number): void {
    const t0 = performance.now();
    this.deps.fs.fdatasyncSync(fd);
    this.countSync(performance.now() - t0);
  }

  private countSync(ms: number): void {
    const st = this.deps.stats;
    const us = Math.round(ms * 1000);
    st.logFsyncs++;
    st.syncMicros += us;
    if (us > st.syncMaxMicros) st.syncMaxMicros = us;
    if (ms >= WAL_SLOW_SYNC_MS) st.slowSyncs++;
  }

  /**
   * fdatasync the active segment if it holds unsynced bytes. `round`: a group-commit round, during
   * which nothing is written (see syncingNow); the interval sync passes false.
   */
  async syncActive(round: boolean): Promise<void> {
    const fd = this.activeFd;
    const bytes = this.activeBytes;
    if (bytes <= this.activeSyncedBytes) return;
    if (round) this.syncingNow = true;
    try {
      await this.timedFdatasync(fd);
    } finally {
      if (round) this.syncingNow = false;
    }
    // A roll during the await synced the old segment itself and reset these counters.
    if (fd === this.activeFd && bytes > this.activeSyncedBytes) this.activeSyncedBytes = bytes;
  }

  /** Write what is held back and fdatasync it now, blocking. True when an fdatasync ran. */
  flushAndSyncNow(): boolean {
    this.flushPending();
    if (this.activeBytes <= this.activeSyncedBytes) return false;
    this.timedFdatasyncSync(this.activeFd);
    this.activeSyncedBytes = this.activeBytes;
    return true;
  }

  // ---- writing ----

  /** Append encoded records at the active segment's end (now, or held back: see syncingNow). */
  write(buf: Buffer): void {
    // FSYNC holds records for its round's write, ASYNC for the interval flush; FLUSH writes now.
    if (this.syncingNow || this.deps.mode() !== Dur.FLUSH) {
      this.pendingBufs.push(buf);
      this.pendingBytes += buf.length;
    } else {
      try {
        this.flushPending();
        this.deps.fs.write(this.activeFd, buf, 0, buf.length, this.activeBytes);
        this.allocateAhead(this.activeBytes + buf.length);
      } catch (e) {
        throw this.deps.fail(e);
      }
    }
    this.activeBytes += buf.length;
    this.deps.stats.bytesWritten += buf.length;
  }

  /** Write the records held back (they end at activeBytes), as one write. */
  flushPending(): void {
    if (this.pendingBytes === 0) return;
    const buf = this.pendingBufs.length === 1 ? this.pendingBufs[0]! : Buffer.concat(this.pendingBufs, this.pendingBytes);
    const at = this.activeBytes - this.pendingBytes;
    this.pendingBufs = [];
    this.pendingBytes = 0;
    try {
      this.deps.fs.write(this.activeFd, buf, 0, buf.length, at);
      this.allocateAhead(at + buf.length);
    } catch (e) {
      throw this.deps.fail(e);
    }
    this.deps.stats.deferredWrites++;
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
    if (!this.opts.preallocate || end < this.activeAllocated) return;
    const target = Math.min(end + WAL_PREALLOCATE_CHUNK_BYTES, Math.max(end, this.opts.segmentBytes));
    if (target <= end) return;
    const zeros = (zeroChunk ??= Buffer.alloc(WAL_PREALLOCATE_CHUNK_BYTES));
    this.deps.fs.write(this.activeFd, zeros, 0, target - end, end);
    this.activeAllocated = target;
    this.deps.stats.preallocations++;
    this.deps.stats.preallocatedBytes += target - end;
  }

  // ---- segments ----

  /**
   * Start a new segment. The old one is fsynced first (when its entries stay live), so every segment
   * but the last is complete on disk and a bad record in one of them is corruption, never a torn tail.
   * Returns true when that fsync ran. The old write fd is only queued for closing (closeDeferred):
   * an fdatasync may be running on it right now.
   */
  roll(syncOld: boolean): boolean {
    const { fs, dir } = this.deps;
    const old = this.activeFd;
    const oldSeq = this.activeSegment().seq;
    let synced = false;
    try {
      // Held-back records belong to the old segment.
      this.flushPending();
      if (syncOld && this.activeBytes > this.activeSyncedBytes) {
        this.timedFdatasyncSync(old);
        synced = true;
      }
      // The zeros written ahead in the old segment are not needed any more. Not fsynced: recovery
      // accepts an all-zero tail in any segment.
      if (this.activeAllocated > this.activeBytes) fs.ftruncate(old, this.activeBytes);
      const seq = oldSeq + 1;
      const fd = createSegmentFile(fs, dir, seq, false);
      this.segments.push({ seq, path: segmentPath(dir, seq), firstEntryIndex: undefined });
      this.activeFd = fd;
      this.activeBytes = SEGMENT_HEADER_BYTES;
      this.activeSyncedBytes = SEGMENT_HEADER_BYTES;
      this.activeAllocated = SEGMENT_HEADER_BYTES;
    } catch (e) {
      throw this.deps.fail(e);
    }
    this.archive(segmentPath(dir, oldSeq));
    this.deferredClose.push(old);
    return synced;
  }

  /** Delete the oldest segments while the next one starts at or below index + 1 (see SegmentInfo). */
  deleteCoveredBy(index: number): void {
    let deleted = 0;
    while (this.segments.length >= 2) {
      const next = this.segments[1]!;
      if (next.firstEntryIndex === undefined || next.firstEntryIndex > index + 1) break;
      this.deleteSegment(this.segments.shift()!);
      deleted++;
    }
    if (deleted > 0) this.deps.fs.fsyncDir(this.deps.dir);
  }

  /** Delete every segment but the active one (a snapshot replaced the log they hold). */
  deleteAllButActive(): void {
    const fresh = this.activeSegment();
    for (const s of this.segments) if (s.seq !== fresh.seq) this.deleteSegment(s);
    this.segments = [fresh];
    this.deps.fs.fsyncDir(this.deps.dir);
  }

  private deleteSegment(s: SegmentInfo): void {
    this.reader.close(s.seq);
    this.archive(s.path);
    this.deps.fs.unlink(s.path);
  }

  /**
   * Keep a copy of a closed segment in the archive. A failure is logged and the log goes on: the
   * archive is a backup aid, not the log (replay-wal reports the gap it leaves).
   */
  private archive(segmentFile: string): void {
    const archiveDir = this.opts.archiveDir;
    if (!archiveDir) return;
    try {
      archiveSegment(segmentFile, archiveDir);
    } catch (e) {
      this.deps.log.error({ err: e, segment: segmentFile, archiveDir }, 'WAL archive: copying a segment failed; the archive has a gap');
    }
  }

  /** Close the write fds of rolled segments; only when no fdatasync can be using them. */
  closeDeferred(): void {
    const fds = this.deferredClose;
    this.deferredClose = [];
    for (const fd of fds) this.deps.fs.close(fd);
  }

  /** Close every descriptor (the log is closing). */
  closeAll(): void {
    const fds = [this.activeFd, ...this.deferredClose, ...this.reader.takeAll()];
    this.deferredClose = [];
    for (const fd of fds) {
      try {
        this.deps.fs.close(fd);
      } catch {
        // The fd may already be gone (a simulated crash closes everything).
      }
    }
  }

  // ---- reading back ----

  /** Append entries [lo, hi) read from the segment files (verified) to `out`. */
  readBack(index: WalIndex, lo: number, hi: number, out: Entry[]): void {
    try {
      this.flushPending(); // (the newest records are normally cached; this only guards a tiny cache)
      this.reader.read(index, lo, hi, { seq: this.activeSegment().seq, fd: this.activeFd }, out);
    } catch (e) {
      throw this.deps.fail(e);
    }
  }
}

export function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: true): undefined;
export function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: false): number;
export function createSegmentFile(fs: WalFs, dir: string, seq: number, closeIt: boolean): number | undefined {
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
