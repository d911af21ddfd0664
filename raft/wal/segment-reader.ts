/**
 * Reading log entries back from segment files (entries older than the entry cache). One pread per
 * run of adjacent records; every record's checksum and index are verified, so a block damaged after
 * recovery is reported as CORRUPTION instead of being handed to Raft.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Entry } from '../types';
import type { WalFs } from './wal-fs';
import type { WalIndex } from './wal-index';
import { decodeRecord, entryTypeOf } from './wal-record';
import { segmentPath } from './wal-segments';

/** Open read-only descriptors of older segments kept at once (the oldest opened is closed first). */
export const READ_FDS_MAX = 8;
/** Largest single pread; longer runs are split. */
const READ_RUN_BYTES_MAX = 4 * 1024 * 1024;

export class SegmentReader {
  private readonly fds = new Map<number, number>();

  constructor(
    private readonly fs: WalFs,
    private readonly dir: string,
  ) {}

  /** Append entries [lo, hi) to `out`. The active segment is read through its write descriptor. */
  read(index: WalIndex, lo: number, hi: number, active: { seq: number; fd: number }, out: Entry[]): void {
    let i = lo;
    while (i < hi) {
      const first = index.get(i);
      let j = i + 1;
      let runBytes = first.recordBytes;
      while (j < hi && runBytes <= READ_RUN_BYTES_MAX) {
        const l = index.get(j);
        if (l.seq !== first.seq || l.offset !== first.offset + runBytes) break;
        runBytes += l.recordBytes;
        j++;
      }
      const buf = Buffer.allocUnsafe(runBytes);
      const fd = first.seq === active.seq ? active.fd : this.fdFor(first.seq);
      const got = this.fs.read(fd, buf, 0, runBytes, first.offset);
      let pos = 0;
      for (let k = i; k < j; k++) {
        const r = got === runBytes ? decodeRecord(buf, pos, runBytes) : ({ ok: false, reason: 'short' } as const);
        const type = r.ok ? entryTypeOf(r.rec.type) : undefined;
        if (!r.ok || r.rec.index !== k || type === undefined) {
          const why = r.ok ? `record at index ${r.rec.index} where ${k} was expected` : `bad record (${r.reason})`;
          const seg = segmentPath(this.dir, first.seq);
          throw new DbError(ErrorCode.CORRUPTION, `WAL corruption reading back entry ${k} from ${seg}: ${why}`, { index: k, segment: seg });
        }
        out.push({ term: r.rec.term, index: k, type, data: buf.subarray(r.rec.payloadStart, r.rec.payloadEnd) });
        pos = r.rec.end;
      }
      i = j;
    }
  }

  close(seq: number): void {
    const fd = this.fds.get(seq);
    if (fd === undefined) return;
    this.fds.delete(seq);
    this.fs.close(fd);
  }

  /** Descriptors still open (the owner closes them on shutdown). */
  takeAll(): number[] {
    const fds = [...this.fds.values()];
    this.fds.clear();
    return fds;
  }

  private fdFor(seq: number): number {
    const have = this.fds.get(seq);
    if (have !== undefined) return have;
    if (this.fds.size >= READ_FDS_MAX) {
      const [oldest] = this.fds.keys();
      if (oldest !== undefined) this.close(oldest);
    }
    const fd = this.fs.openExisting(segmentPath(this.dir, seq), false);
    this.fds.set(seq, fd);
    return fd;
  }
}
