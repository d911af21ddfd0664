/**
 * A WAL archive (docs/backup.md): closed log segments copied out of a tablet's log directory before
 * log GC deletes them, so the writes they hold can be replayed later (HBase keeps its WALs in an
 * archive directory for WALPlayer and replication). A segment is copied when it is rolled (it is
 * complete then) and again, if the first copy is missing, just before it is deleted. The copy goes
 * to a temporary name, is fsynced, then renamed: an archived segment is whole or absent.
 *
 * `readSegmentEntries` reads an archived segment back with the log's own record decoder: every
 * record's length and crc32c is checked; a damaged one is CORRUPTION naming the file and offset.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import type { Entry } from '../types';
import { decodeRecord, entryTypeOf, segmentHeaderValid, SEGMENT_HEADER_BYTES } from './wal-record';

/** Copy `segmentFile` into `archiveDir` under its own name, unless a copy of the same size is there. */
export function archiveSegment(segmentFile: string, archiveDir: string): void {
  fs.mkdirSync(archiveDir, { recursive: true });
  const dest = path.join(archiveDir, path.basename(segmentFile));
  const size = fs.statSync(segmentFile).size;
  if (fs.existsSync(dest) && fs.statSync(dest).size === size) return;
  const tmp = `${dest}.tmp`;
  fs.copyFileSync(segmentFile, tmp);
  const fd = fs.openSync(tmp, 'r+');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, dest);
}

/** The log entries of one segment file in order (hard-state records skipped; a zero tail ends it). */
export function readSegmentEntries(file: string): Entry[] {
  const buf = fs.readFileSync(file);
  if (!segmentHeaderValid(buf)) throw new DbError(ErrorCode.CORRUPTION, `${file}: not a tessera WAL segment (bad header)`, { file });
  const out: Entry[] = [];
  let pos = SEGMENT_HEADER_BYTES;
  while (pos < buf.length) {
    // Preallocated zeros past the last record (a segment copied before it was trimmed).
    if (buf.readUInt32LE(pos) === 0 && buf.subarray(pos, Math.min(buf.length, pos + 64)).every((b) => b === 0)) break;
    const r = decodeRecord(buf, pos, buf.length);
    if (!r.ok) throw new DbError(ErrorCode.CORRUPTION, `${file}: a damaged record at byte ${pos} (${r.reason})`, { file, offset: pos });
    const type = entryTypeOf(r.rec.type);
    if (type !== undefined) out.push({ term: r.rec.term, index: r.rec.index, type, data: buf.subarray(r.rec.payloadStart, r.rec.payloadEnd) });
    pos = r.rec.end;
  }
  return out;
}
