/**
 * Opening a WAL: scan every segment and rebuild the index, keeping the longest valid prefix.
 *
 * - A bad or short record that is the last thing in the last segment is a torn tail (a write cut by a
 *   crash): it is truncated and the truncation fsynced.
 * - A bad record followed by a valid one, or a bad record in any segment but the last, is corruption:
 *   recovery fails with CORRUPTION naming the segment and offset. Entries are never silently dropped,
 *   so a replica with a damaged log refuses to vote or serve instead of forgetting what it promised.
 * - A record at an index <= the last one replaces that suffix (the on-disk form of Raft truncation).
 * - Zeros from a record boundary to the end of a segment are the writer's preallocation
 *   (log_preallocate_segments), not damage: the log ends there. They are truncated (the last
 *   segment's appends continue at that point; an older segment's truncation at roll time may simply
 *   not have been durable).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { HardState } from '../types';
import type { ConsensusMeta } from './consensus-meta';
import type { WalFs } from './wal-fs';
import { WalIndex } from './wal-index';
import type { DecodedRecord } from './wal-record';
import { decodeRecord, encodeSegmentHeader, isKnownRecordType, RECORD_FIXED_BODY_BYTES, RECORD_HEADER_BYTES, RECORD_PREFIX_BYTES, RecordType, SEGMENT_HEADER_BYTES, segmentHeaderValid } from './wal-record';
import type { SegmentInfo } from './wal-segments';
import { crc32c } from './crc32c';

export interface RecoveredLog {
  index: WalIndex;
  segments: SegmentInfo[];
  /** Valid bytes of the last segment (where appends continue). */
  lastSegmentBytes: number;
  /** The newest hard-state record found in the log, if any. */
  hardStateRecord: HardState | undefined;
  tornBytesTruncated: number;
  /** All-zero tails (preallocated, never written) truncated. */
  zeroBytesTruncated: number;
}

function corruption(path: string, offset: number, why: string): DbError {
  return new DbError(
    ErrorCode.CORRUPTION,
    `WAL corruption in ${path} at offset ${offset}: ${why}; refusing to open the log (this replica must not vote or serve until it is rebuilt from a peer)`,
    { segment: path, offset, reason: why },
  );
}

/** Scan `segments` (sorted, contiguous sequence numbers, at least one). Truncates a torn tail in place. */
export function recoverSegments(fs: WalFs, segments: SegmentInfo[], meta: ConsensusMeta): RecoveredLog {
  const logStart = meta.logStart;
  const index = new WalIndex(logStart.index + 1);
  let hardStateRecord: HardState | undefined;
  let tornBytesTruncated = 0;
  let zeroBytesTruncated = 0;
  let lastSegmentBytes = SEGMENT_HEADER_BYTES;

  for (let s = 0; s < segments.length; s++) {
    const seg = segments[s]!;
    const isLast = s === segments.length - 1;
    const buf = fs.readFile(seg.path);
    if (buf.length < SEGMENT_HEADER_BYTES || !segmentHeaderValid(buf)) {
      // A new segment's header is fsynced with its directory before any record goes in, so only the
      // creation itself can be cut short: a short header on the last segment is a torn tail.
      if (isLast && buf.length < SEGMENT_HEADER_BYTES) {
        rewriteHeader(fs, seg.path);
        tornBytesTruncated += buf.length;
        lastSegmentBytes = SEGMENT_HEADER_BYTES;
        continue;
      }
      throw corruption(seg.path, 0, 'bad segment header');
    }
    let pos = SEGMENT_HEADER_BYTES;
    while (pos < buf.length) {
      const r = decodeRecord(buf, pos, buf.length);
      if (!r.ok) {
        if (allZero(buf, pos)) {
          truncateTail(fs, seg.path, pos);
          zeroBytesTruncated += buf.length - pos;
          break;
        }
        if (!isLast) throw corruption(seg.path, pos, `bad record (${r.reason}) in a segment that is not the last`);
        const next = findValidRecord(buf, pos + 1, index.lastIndex());
        if (next !== undefined) throw corruption(seg.path, pos, `bad record (${r.reason}) followed by a valid record at offset ${next}`);
        truncateTail(fs, seg.path, pos);
        tornBytesTruncated += buf.length - pos;
        break;
      }
      const rec = r.rec;
      if (rec.type === RecordType.hardState) {
        hardStateRecord = { term: rec.term, vote: buf.toString('utf8', rec.payloadStart, rec.payloadEnd) as HardState['vote'], commit: rec.index };
      } else {
        const why = addEntry(index, rec, seg.seq, pos, logStart);
        if (why) throw corruption(seg.path, pos, why);
        if (seg.firstEntryIndex === undefined) seg.firstEntryIndex = rec.index;
      }
      pos = rec.end;
    }
    if (isLast) lastSegmentBytes = Math.min(pos, buf.length);
  }
  return { index, segments, lastSegmentBytes, hardStateRecord, tornBytesTruncated, zeroBytesTruncated };
}

/** Apply one entry record to the index; returns why it is impossible, if it is. */
function addEntry(index: WalIndex, rec: DecodedRecord, seq: number, offset: number, logStart: { index: number; term: number }): string | undefined {
  const bytes = rec.end - offset;
  if (rec.index <= logStart.index) {
    // Compacted. If live entries were already loaded, this record truncated them before compaction
    // happened (a truncation is always below the commit point at the time, compaction above it
    // later), so they are superseded.
    if (index.size() > 0) index.clear(logStart.index + 1);
    return undefined;
  }
  const last = index.lastIndex();
  if (rec.index > last + 1) return `entry index ${rec.index} leaves a gap after ${last}`;
  const prevTerm = rec.index - 1 === logStart.index ? logStart.term : index.term(rec.index - 1);
  if (rec.term < prevTerm) return `entry ${rec.index} has term ${rec.term} below its predecessor's ${prevTerm}`;
  index.put(rec.index, rec.term, seq, offset, bytes);
  return undefined;
}

/**
 * The offset of the first plausible, checksum-valid record in buf[from, end), if any. Cheap filters
 * (length fits, known type, index near the log's end) run before the checksum so scanning a long
 * garbage tail stays linear in practice.
 */
function findValidRecord(buf: Buffer, from: number, lastIndex: number): number | undefined {
  const end = buf.length;
  for (let p = from; p + RECORD_HEADER_BYTES <= end; p++) {
    const body = buf.readUInt32LE(p);
    if (body < RECORD_FIXED_BODY_BYTES || p + RECORD_PREFIX_BYTES + body > end) continue;
    if (!isKnownRecordType(buf[p + 24]!)) continue;
    const idxLo = buf.readUInt32LE(p + 16);
    const idxHi = buf.readUInt32LE(p + 20);
    const idx = idxHi * 0x1_0000_0000 + idxLo;
    if (idx > lastIndex + 1 + Math.ceil((end - p) / RECORD_HEADER_BYTES)) continue;
    if (crc32c(buf, 0, p + RECORD_PREFIX_BYTES, p + RECORD_PREFIX_BYTES + body) === buf.readUInt32LE(p + 4)) return p;
  }
  return undefined;
}

/** Every byte of buf from `from` on is zero. */
function allZero(buf: Buffer, from: number): boolean {
  let p = from;
  for (; p + 8 <= buf.length; p += 8) if (buf.readUInt32LE(p) !== 0 || buf.readUInt32LE(p + 4) !== 0) return false;
  for (; p < buf.length; p++) if (buf[p] !== 0) return false;
  return true;
}

function truncateTail(fs: WalFs, path: string, length: number): void {
  const fd = fs.openExisting(path, true);
  try {
    fs.ftruncate(fd, length);
    fs.fdatasyncSync(fd);
  } finally {
    fs.close(fd);
  }
}

function rewriteHeader(fs: WalFs, path: string): void {
  const fd = fs.openExisting(path, true);
  try {
    fs.ftruncate(fd, 0);
    const h = encodeSegmentHeader();
    fs.write(fd, h, 0, h.length, 0);
    fs.fdatasyncSync(fd);
  } finally {
    fs.close(fd);
  }
}
