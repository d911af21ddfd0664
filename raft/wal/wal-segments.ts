/** Segment file naming and the per-segment facts the log keeps in memory. */
import { joinPath } from './wal-fs';

export interface SegmentInfo {
  seq: number;
  path: string;
  /** Index of the first entry record in the segment (undefined while it holds none). Every live entry
   * at or above it is in this segment or a later one, which is what lets compaction delete whole
   * segments: segment k can go once segment k+1 starts at or below the compaction point + 1. */
  firstEntryIndex: number | undefined;
}

const SEGMENT_NAME = /^wal-(\d{9})\.seg$/;

export function segmentName(seq: number): string {
  return `wal-${String(seq).padStart(9, '0')}.seg`;
}

export function segmentPath(dir: string, seq: number): string {
  return joinPath(dir, segmentName(seq));
}

export function parseSegmentName(name: string): number | undefined {
  const m = SEGMENT_NAME.exec(name);
  return m ? Number(m[1]) : undefined;
}
