/**
 * Opening the durable Raft log (file-log-storage.ts): prepare the directory, read the metadata and
 * the snapshot, find the live segments, recover them (wal-recovery.ts) and settle the hard state.
 */
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import type { Logger } from '../../common/log';
import { createLogger } from '../../common/log';
import type { ConfState, HardState, Snapshot } from '../types';
import { TMP_SUFFIX } from './checksummed-file';
import type { ConsensusMeta } from './consensus-meta';
import { emptyConsensusMeta, readConsensusMeta, writeConsensusMeta } from './consensus-meta';
import type { FileLogStorageOptions } from './file-log-types';
import { MB } from './file-log-types';
import type { LogCacheBudget } from './log-cache-budget';
import { readSnapshotFile } from './snapshot-file';
import { DURABLE_WAL_WRITE, INTERVAL_DURABLE_WAL_WRITE_MS, LOG_CACHE_SIZE_LIMIT_MB, LOG_PREALLOCATE_SEGMENTS, LOG_SEGMENT_SIZE_MB } from './wal-flags';
import type { WalDurability } from './wal-durability';
import { DEFAULT_WAL_DURABILITY, WalDurability as Dur } from './wal-durability';
import type { WalFs } from './wal-fs';
import { joinPath, NodeWalFs } from './wal-fs';
import type { WalIndex } from './wal-index';
import { recoverSegments } from './wal-recovery';
import { createSegmentFile } from './wal-segment-files';
import type { SegmentInfo } from './wal-segments';
import { parseSegmentName, segmentPath } from './wal-segments';

/** Everything the log needs to start from what recovery found. */
export interface RecoveredLog {
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
  intervalSyncMs: number;
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
}

/**
 * Open (or create) the log in `dir` and recover it. Throws DbError CORRUPTION when the log is
 * damaged anywhere but its torn tail, or its metadata is.
 */
export function recoverFileLog(dir: string, opts: FileLogStorageOptions): RecoveredLog {
  const fs = opts.fs ?? new NodeWalFs();
  const flags = opts.flags ?? new Flags();
  const log = opts.logger ?? createLogger({ name: 'wal' });
  const onFatal =
    opts.onFatal ??
    ((err: Error): void => {
      log.fatal({ err, dir }, 'WAL I/O error: stopping the process (fail-stop)');
      process.exit(70);
    });
  const meta = prepareDir(fs, dir);
  const snapshot = readSnapshotFile(fs, dir);
  const segments = liveSegments(fs, dir, meta);
  const rec = recoverSegments(fs, segments, meta);
  if (rec.tornBytesTruncated > 0) log.warn({ dir, bytes: rec.tornBytesTruncated }, 'WAL: truncated a torn tail');
  const durability = opts.durability ?? DEFAULT_WAL_DURABILITY;
  const lastIndex = Math.max(rec.index.lastIndex(), meta.logStart.index);
  const recCommit = rec.hardStateRecord?.commit ?? 0;
  const strict = flags.get(DURABLE_WAL_WRITE) && durability === Dur.FSYNC;
  const hardState = recoveredHardState({ dir, log, meta, recCommit, lastIndex, strict });
  const activeFd = fs.openExisting(segments[segments.length - 1]!.path, true);
  return {
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
    intervalSyncMs: flags.get(INTERVAL_DURABLE_WAL_WRITE_MS),
    meta,
    hardState,
    loggedCommit: recCommit,
    segments,
    activeFd,
    activeBytes: rec.lastSegmentBytes,
    index: rec.index,
    snapshot,
    tornBytesTruncated: rec.tornBytesTruncated,
    zeroTailBytesTruncated: rec.zeroBytesTruncated,
  };
}

/** Create the directory if needed, drop leftover temp files, and read (or write) the metadata. */
function prepareDir(fs: WalFs, dir: string): ConsensusMeta {
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
  return meta;
}

/** The live segments in order (creating the first one in a new log); a gap among them is corruption. */
function liveSegments(fs: WalFs, dir: string, meta: ConsensusMeta): SegmentInfo[] {
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
  return live.map((seq) => ({ seq, path: segmentPath(dir, seq), firstEntryIndex: undefined }));
}

/**
 * Term and vote come from the metadata (records never carry newer ones); commit is monotonic, so
 * the larger of the metadata's and the last hard-state record's is the latest. `strict`: durable
 * writes at FSYNC, where a commit beyond the log's end can only be corruption.
 */
function recoveredHardState(a: { dir: string; log: Logger; meta: ConsensusMeta; recCommit: number; lastIndex: number; strict: boolean }): HardState {
  const { dir, lastIndex } = a;
  const hs: HardState = { ...a.meta.hardState };
  if (a.recCommit > hs.commit) hs.commit = a.recCommit;
  if (hs.commit > lastIndex) {
    if (a.strict) {
      throw new DbError(ErrorCode.CORRUPTION, `WAL in ${dir}: commit index ${hs.commit} is beyond the last entry ${lastIndex}`, { dir, commit: hs.commit, lastIndex });
    }
    // Without durable writes (ASYNC / FLUSH) a crash may keep metadata newer than the log: expected, not corrupt.
    a.log.warn({ dir, commit: hs.commit, lastIndex }, 'WAL: commit beyond the log after an unsynced crash; lowering it');
    hs.commit = lastIndex;
  }
  return hs;
}

export function cloneConf(c: ConfState): ConfState {
  return { voters: [...c.voters], learners: [...c.learners] };
}
