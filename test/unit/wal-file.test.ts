import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import type { NodeId } from '../../common/ids';
import { silentLogger } from '../../common/log';
import { SeededRng } from '../../common/rng';
import type { Entry } from '../../raft/types';
import type { FileLogStorageOptions } from '../../raft/wal/file-log-storage';
import { FileLogStorage, WAL_PREALLOCATE_CHUNK_BYTES, WAL_SLOW_SYNC_MS } from '../../raft/wal/file-log-storage';
import { LazyWalFs } from '../../raft/wal/lazy-wal-fs';
import { DURABLE_WAL_WRITE, INTERVAL_DURABLE_WAL_WRITE_MS, LOG_PREALLOCATE_SEGMENTS } from '../../raft/wal/wal-flags';
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from '../../raft/wal/wal-record';
import { ent, logStorageCompliance } from './log-storage-compliance';

const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-wal-test-'));
afterAll(() => fs.rmSync(ROOT, { recursive: true, force: true }));
let dirSeq = 0;
function freshDir(): string {
  return path.join(ROOT, `log-${++dirSeq}`);
}

interface Opened {
  storage: FileLogStorage;
  fatals: Error[];
}

async function openLog(dir: string, lazy: LazyWalFs, extra: Partial<FileLogStorageOptions> = {}): Promise<Opened> {
  const fatals: Error[] = [];
  const storage = await FileLogStorage.open(dir, { fs: lazy, logger: silentLogger(), onFatal: (e) => fatals.push(e), ...extra });
  return { storage, fatals };
}

function fileHarness(extra: Partial<FileLogStorageOptions>) {
  return async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    let cur = (await openLog(dir, lazy, extra)).storage;
    return {
      storage: cur,
      restart: async () => {
        lazy.crash();
        cur = (await openLog(dir, lazy, extra)).storage;
        return cur;
      },
      cleanup: async () => {
        await cur.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  };
}

logStorageCompliance('FileLogStorage', fileHarness({}));
logStorageCompliance('FileLogStorage (tiny segments, no cache)', fileHarness({ segmentBytes: 160, cacheBytesMax: 0 }));

function segmentFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((n) => /^wal-\d+\.seg$/.test(n))
    .sort()
    .map((n) => path.join(dir, n));
}

function payload(i: number): Entry {
  return ent(i, 1 + Math.floor(i / 4), `payload-${i}-${'x'.repeat(i % 7)}`);
}

/** Write entries 1..n (synced, no hard state records) and return the record end offsets in the segment. */
async function writeLog(dir: string, n: number, extra: Partial<FileLogStorageOptions> = {}): Promise<number[]> {
  const { storage } = await openLog(dir, new LazyWalFs(), extra);
  const ends: number[] = [];
  let off = SEGMENT_HEADER_BYTES;
  for (let i = 1; i <= n; i++) {
    const e = payload(i);
    storage.append([e]);
    off += RECORD_HEADER_BYTES + e.data.length;
    ends.push(off);
  }
  await storage.sync();
  await storage.close();
  return ends;
}

async function expectCorruption(dir: string): Promise<DbError> {
  try {
    const { storage } = await openLog(dir, new LazyWalFs());
    await storage.close();
  } catch (e) {
    expect(e).toBeInstanceOf(DbError);
    expect((e as DbError).code).toBe(ErrorCode.CORRUPTION);
    return e as DbError;
  }
  throw new Error('open succeeded on a corrupt log');
}

describe('FileLogStorage recovery', () => {
  it('wal: a segment cut at every byte offset of its last records reopens with exactly the valid prefix', async () => {
    const src = freshDir();
    const n = 12;
    const ends = await writeLog(src, n);
    const seg = path.basename(segmentFiles(src)[0]!);
    const fullSize = ends[n - 1]!;
    for (let cut = ends[n - 4]! - 1; cut < fullSize; cut++) {
      const dir = freshDir();
      fs.cpSync(src, dir, { recursive: true });
      fs.truncateSync(path.join(dir, seg), cut);
      const whole = ends.filter((e) => e <= cut).length;
      const { storage } = await openLog(dir, new LazyWalFs());
      expect(storage.lastIndex(), `cut at ${cut}`).toBe(whole);
      expect(storage.entries(1, whole + 1).map((e) => new TextDecoder().decode(e.data))).toEqual(
        Array.from({ length: whole }, (_, k) => new TextDecoder().decode(payload(k + 1).data)),
      );
      // The torn tail was truncated on disk: appends continue right after the last whole record.
      expect(fs.statSync(path.join(dir, seg)).size).toBe(ends[whole - 1]!);
      storage.append([payload(whole + 1)]);
      await storage.sync();
      await storage.close();
      const again = await openLog(dir, new LazyWalFs());
      expect(again.storage.lastIndex()).toBe(whole + 1);
      await again.storage.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('wal: zeros after the last record (preallocated, never written) end the log; they are truncated, not a torn tail', async () => {
    const dir = freshDir();
    const ends = await writeLog(dir, 5);
    const seg = segmentFiles(dir)[0]!;
    // The writer preallocated zeros after its records; 4 KiB more as if the file grew without data.
    const sizeBefore = fs.statSync(seg).size;
    expect(sizeBefore).toBeGreaterThan(ends[4]!);
    fs.appendFileSync(seg, Buffer.alloc(4096));
    const { storage } = await openLog(dir, new LazyWalFs());
    expect(storage.lastIndex()).toBe(5);
    expect(storage.stats().tornBytesTruncated).toBe(0);
    expect(storage.stats().zeroTailBytesTruncated).toBe(sizeBefore + 4096 - ends[4]!);
    expect(fs.statSync(seg).size).toBe(ends[4]!);
    await storage.close();
  });

  it('wal: a torn record followed by zeros is a torn tail', async () => {
    const dir = freshDir();
    const ends = await writeLog(dir, 5);
    const seg = segmentFiles(dir)[0]!;
    const buf = fs.readFileSync(seg);
    // Half of record 5 survived; its other half and the preallocated rest read as zeros.
    const rec5 = ends[3]!;
    const half = rec5 + Math.floor((ends[4]! - rec5) / 2);
    buf.fill(0, half);
    fs.writeFileSync(seg, buf);
    const { storage } = await openLog(dir, new LazyWalFs());
    expect(storage.lastIndex()).toBe(4);
    expect(storage.stats().tornBytesTruncated).toBe(buf.length - rec5);
    expect(fs.statSync(seg).size).toBe(rec5);
    await storage.close();
  });

  it('wal: a bit flipped mid-log (payload, term, length) is CORRUPTION naming segment and offset', async () => {
    const src = freshDir();
    const ends = await writeLog(src, 10);
    const seg = path.basename(segmentFiles(src)[0]!);
    const rec5 = ends[3]!; // offset of record 5
    for (const [what, at] of [
      ['payload', rec5 + RECORD_HEADER_BYTES + 2],
      ['term', rec5 + 9],
      ['crc', rec5 + 5],
      ['length', rec5 + 1],
    ] as const) {
      const dir = freshDir();
      fs.cpSync(src, dir, { recursive: true });
      const p = path.join(dir, seg);
      const buf = fs.readFileSync(p);
      buf[at]! ^= 0x10;
      fs.writeFileSync(p, buf);
      const err = await expectCorruption(dir);
      expect(err.message, what).toContain(seg);
      expect(err.details['offset'], what).toBe(rec5);
    }
  });

  it('wal: a bad record in a segment that is not the last is CORRUPTION, even at its end', async () => {
    const dir = freshDir();
    await writeLog(dir, 40, { segmentBytes: 200 });
    const segs = segmentFiles(dir);
    expect(segs.length).toBeGreaterThan(2);
    fs.truncateSync(segs[1]!, fs.statSync(segs[1]!).size - 3);
    const err = await expectCorruption(dir);
    expect(err.message).toContain(path.basename(segs[1]!));
  });

  it('wal: a missing segment in the middle is CORRUPTION', async () => {
    const dir = freshDir();
    await writeLog(dir, 40, { segmentBytes: 200 });
    fs.unlinkSync(segmentFiles(dir)[1]!);
    await expectCorruption(dir);
  });

  it('wal: damaged consensus metadata is CORRUPTION', async () => {
    const dir = freshDir();
    await writeLog(dir, 3);
    const p = path.join(dir, 'consensus-meta');
    const buf = fs.readFileSync(p);
    buf[buf.length - 2]! ^= 1;
    fs.writeFileSync(p, buf);
    await expectCorruption(dir);
  });

  it('wal: an entry corrupted on disk after open fails the read back and stops the log', async () => {
    const dir = freshDir();
    const { storage, fatals } = await openLog(dir, new LazyWalFs(), { cacheBytesMax: 0 });
    for (let i = 1; i <= 5; i++) storage.append([payload(i)]);
    await storage.sync();
    const p = segmentFiles(dir)[0]!;
    const fd = fs.openSync(p, 'r+');
    fs.writeSync(fd, Buffer.from([0xee]), 0, 1, SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES + 1);
    fs.closeSync(fd);
    expect(() => storage.entries(1, 6)).toThrow(DbError);
    expect(fatals.length).toBe(1);
    expect(() => storage.append([payload(6)])).toThrow(DbError);
    await storage.close();
  });
});

describe('FileLogStorage power loss', () => {
  for (const tear of [false, true]) {
    it(`wal: every synced record survives a power loss${tear ? ' that tears unsynced writes' : ''} (seeded)`, async () => {
      for (let seed = 1; seed <= 12; seed++) {
        const rng = new SeededRng(seed * 7919 + (tear ? 1 : 0));
        const dir = freshDir();
        const lazy = new LazyWalFs();
        const extra = { segmentBytes: 300 + rng.int(600), cacheBytesMax: rng.int(2) === 0 ? 0 : 1 << 20 };
        let { storage } = await openLog(dir, lazy, extra);
        let acked = 0;
        let ackedCommit = 0;
        let next = 1;
        for (let restarts = 0; restarts < 3; restarts++) {
          const steps = 5 + rng.int(20);
          for (let s = 0; s < steps; s++) {
            const batch: Entry[] = [];
            const k = 1 + rng.int(5);
            for (let j = 0; j < k; j++) batch.push(payload(next++));
            storage.append(batch);
            const commit = Math.max(ackedCommit, next - 1 - rng.int(3));
            storage.setHardState({ term: 9, vote: 'n1' as NodeId, commit });
            if (rng.chance(0.5)) {
              await storage.sync();
              acked = next - 1;
              ackedCommit = commit;
            }
            // Compaction (segment deletion) below the acknowledged commit, as a host does after applying.
            if (rng.chance(0.2) && ackedCommit >= storage.firstIndex()) storage.compact(storage.firstIndex() + rng.int(ackedCommit - storage.firstIndex() + 1));
          }
          lazy.crash(tear ? { tearRng: rng } : {});
          storage = (await openLog(dir, lazy, extra)).storage;
          const last = storage.lastIndex();
          expect(last, `seed ${seed}`).toBeGreaterThanOrEqual(acked);
          expect(storage.initialState().hardState.commit).toBeGreaterThanOrEqual(ackedCommit);
          expect(storage.initialState().hardState.commit).toBeLessThanOrEqual(last);
          const first = storage.firstIndex();
          expect(storage.term(first - 1)).toBe(first === 1 ? 0 : payload(first - 1).term);
          const got = storage.entries(first, last + 1).map((e) => `${e.index}:${e.term}:${new TextDecoder().decode(e.data)}`);
          const want = Array.from({ length: last - first + 1 }, (_, k) => payload(first + k)).map((e) => `${e.index}:${e.term}:${new TextDecoder().decode(e.data)}`);
          expect(got, `seed ${seed}`).toEqual(want);
          next = last + 1;
          acked = last;
          ackedCommit = storage.initialState().hardState.commit;
        }
        await storage.close();
      }
    });
  }

  it('wal: a vote is durable once sync() resolves, and an unsynced vote change is lost', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage } = await openLog(dir, lazy);
    storage.setHardState({ term: 5, vote: 'n2' as NodeId, commit: 0 });
    await storage.sync();
    storage.setHardState({ term: 6, vote: 'n3' as NodeId, commit: 0 });
    lazy.crash();
    const r = await openLog(dir, lazy);
    expect(r.storage.initialState().hardState).toEqual({ term: 5, vote: 'n2', commit: 0 });
    r.storage.setHardState({ term: 7, vote: 'n1' as NodeId, commit: 0 });
    await r.storage.sync();
    lazy.crash();
    const r2 = await openLog(dir, lazy);
    expect(r2.storage.initialState().hardState).toEqual({ term: 7, vote: 'n1', commit: 0 });
    await r2.storage.close();
  });

  it('wal: a snapshot installed while a sync round is in flight keeps its configuration and log start', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage } = await openLog(dir, lazy);
    storage.append([ent(1, 1), ent(2, 1)]);
    storage.setHardState({ term: 2, vote: 'n1' as NodeId, commit: 1 });
    const inFlight = storage.sync();
    storage.applySnapshot({ meta: { index: 50, term: 3, conf: { voters: ['x', 'y'] as NodeId[], learners: [] } }, data: new Uint8Array([1]) });
    await inFlight;
    await storage.sync();
    lazy.crash();
    const r = (await openLog(dir, lazy)).storage;
    expect(r.firstIndex()).toBe(51);
    expect(r.term(50)).toBe(3);
    expect(r.initialState()).toEqual({ hardState: { term: 2, vote: 'n1', commit: 50 }, conf: { voters: ['x', 'y'], learners: [] } });
    await r.close();
  });

  it('wal: an unsynced truncation is undone by a power loss, a synced one is kept', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage } = await openLog(dir, lazy);
    storage.append([ent(1, 1), ent(2, 1), ent(3, 1), ent(4, 1)]);
    await storage.sync();
    storage.append([ent(3, 2, 'new')]);
    lazy.crash();
    let r = (await openLog(dir, lazy)).storage;
    expect(r.lastIndex()).toBe(4);
    expect(r.term(3)).toBe(1);
    r.append([ent(3, 2, 'new')]);
    await r.sync();
    lazy.crash();
    r = (await openLog(dir, lazy)).storage;
    expect(r.lastIndex()).toBe(3);
    expect(r.term(3)).toBe(2);
    await r.close();
  });
});

describe('FileLogStorage segments, group commit and failures', () => {
  it('wal: segments roll at the size limit and compaction deletes whole segments below the compact index', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage } = await openLog(dir, lazy, { segmentBytes: 256 });
    for (let i = 1; i <= 100; i++) storage.append([payload(i)]);
    await storage.sync();
    const before = segmentFiles(dir).length;
    expect(before).toBeGreaterThan(10);
    for (const p of segmentFiles(dir).slice(0, -1)) expect(fs.statSync(p).size).toBeLessThanOrEqual(256);
    storage.compact(80);
    const after = segmentFiles(dir).length;
    expect(after).toBeLessThan(before);
    expect(after).toBeGreaterThanOrEqual(2);
    expect(storage.entries(81, 101).length).toBe(20);
    lazy.crash();
    const r = (await openLog(dir, lazy, { segmentBytes: 256 })).storage;
    expect(r.firstIndex()).toBe(81);
    expect(r.lastIndex()).toBe(100);
    expect(r.term(80)).toBe(payload(80).term);
    expect(r.entries(81, 101).map((e) => e.index)).toEqual(Array.from({ length: 20 }, (_, k) => 81 + k));
    await r.close();
  });

  it('wal: group commit — 100 sync() callers during one fdatasync share the next one', async () => {
    const dir = freshDir();
    const { storage } = await openLog(dir, new LazyWalFs());
    const waits: Promise<void>[] = [];
    for (let i = 1; i <= 100; i++) {
      storage.append([payload(i)]);
      waits.push(storage.sync());
    }
    await Promise.all(waits);
    expect(storage.stats().syncRounds).toBeLessThanOrEqual(2);
    expect(storage.stats().logFsyncs).toBeLessThanOrEqual(2);
    await storage.close();
  });

  it('wal: an fsync error calls onFatal, rejects sync() with IO_ERROR and stops the log', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage, fatals } = await openLog(dir, lazy);
    storage.append([payload(1)]);
    lazy.failSyncs = true;
    const err = await storage.sync().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe(ErrorCode.IO_ERROR);
    expect(fatals.length).toBe(1);
    // Fail-stop: even with the disk "healed", the log never resumes.
    lazy.failSyncs = false;
    expect(() => storage.append([payload(2)])).toThrow(DbError);
    await expect(storage.sync()).rejects.toBeInstanceOf(DbError);
    expect(fatals.length).toBe(1);
    await storage.close();
  });

  it('wal: a write error calls onFatal and the sync that would cover the append fails; the log never resumes', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage, fatals } = await openLog(dir, lazy);
    lazy.failWrites = true;
    // The record waits for its round (one write per round), so the error surfaces there.
    storage.append([payload(1)]);
    const err = await storage.sync().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DbError);
    expect((err as DbError).code).toBe(ErrorCode.IO_ERROR);
    expect(fatals.length).toBe(1);
    lazy.failWrites = false;
    expect(() => storage.append([payload(2)])).toThrow(DbError);
    expect(fatals.length).toBe(1);
    await storage.close();
  });

  it('wal: with durable writes a round writes the entries appended since the last one and its commit record with one write(2), then one fdatasync', async () => {
    class CountingFs extends LazyWalFs {
      ops: string[] = [];
      override write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void {
        // Zeros written ahead of the log's end (preallocation) are not records.
        if (buf.subarray(off, off + len).some((b) => b !== 0)) this.ops.push(`write ${len}`);
        super.write(fd, buf, off, len, pos);
      }
      override async fdatasync(fd: number): Promise<void> {
        this.ops.push('fdatasync');
        return super.fdatasync(fd);
      }
    }
    const dir = freshDir();
    const cfs = new CountingFs();
    const { storage } = await openLog(dir, cfs);
    for (let round = 1; round <= 3; round++) {
      cfs.ops = [];
      storage.append([payload(2 * round - 1), payload(2 * round)]);
      storage.setHardState({ term: 1, vote: 'n1' as NodeId, commit: 2 * round - 1 });
      expect(cfs.ops).toEqual([]); // nothing written before the round
      await storage.sync();
      expect(cfs.ops.length).toBe(2);
      expect(cfs.ops[0]).toMatch(/^write \d+$/);
      expect(cfs.ops[1]).toBe('fdatasync');
    }
    // What one write carried is all there after a power loss: entries and the commit index.
    cfs.crash();
    const again = (await openLog(dir, new LazyWalFs())).storage;
    expect(again.lastIndex()).toBe(6);
    expect(again.initialState().hardState.commit).toBe(5);
    await again.close();
  });

  it('wal: every log fdatasync is counted and timed — the ms in all, the longest, and those of WAL_SLOW_SYNC_MS or more', async () => {
    // fdatasyncs that take as long as the test says.
    class SlowFs extends LazyWalFs {
      delayMs = 0;
      override async fdatasync(fd: number): Promise<void> {
        if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
        return super.fdatasync(fd);
      }
    }
    const dir = freshDir();
    const sfs = new SlowFs();
    const { storage } = await openLog(dir, sfs);
    const before = storage.stats();
    for (const [i, delay] of [[1, 0], [2, 0], [3, WAL_SLOW_SYNC_MS + 20]] as const) {
      sfs.delayMs = delay;
      storage.append([payload(i)]);
      await storage.sync();
    }
    const st = storage.stats();
    expect(st.logFsyncs - before.logFsyncs).toBe(3);
    expect(st.slowSyncs - before.slowSyncs).toBe(1);
    expect(st.syncMaxMicros).toBeGreaterThanOrEqual((WAL_SLOW_SYNC_MS + 20) * 1000 - 2_000); // a timer may fire a ms early
    expect(st.syncMicros - before.syncMicros).toBeGreaterThanOrEqual(st.syncMaxMicros);
    expect(st.syncMicros).toBeLessThan(60_000_000);
    await storage.close();
  });

  it('wal: records appended during an fdatasync wait in memory (no write into pages under writeback) and go to the file in one write in the next round; a crash before that round loses only unacknowledged ones', async () => {
    // An fdatasync held open by the test, and a count of write(2) calls.
    class GatedFs extends LazyWalFs {
      gate: Promise<void> | undefined;
      writes = 0;
      override write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void {
        this.writes++;
        super.write(fd, buf, off, len, pos);
      }
      /** fdatasyncs waiting at the gate now. */
      held = 0;
      override async fdatasync(fd: number): Promise<void> {
        if (this.gate) {
          this.held++;
          await this.gate;
          this.held--;
        }
        return super.fdatasync(fd);
      }
    }
    const dir = freshDir();
    const gfs = new GatedFs();
    const { storage } = await openLog(dir, gfs, { cacheBytesMax: 0 });
    let open!: () => void;
    gfs.gate = new Promise<void>((r) => (open = r));
    storage.append([payload(1)]);
    const first = storage.sync(); // round 1: its fdatasync now waits on the gate
    for (let i = 0; i < 2_000 && gfs.held === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(gfs.held).toBe(1);
    const writesBefore = gfs.writes;
    storage.append([payload(2)]);
    storage.append([payload(3)]);
    const second = storage.sync();
    expect(gfs.writes).toBe(writesBefore); // held back
    const deferredBefore = storage.stats().deferredWrites; // round 1 wrote its records this way too
    // Readable meanwhile, even without an entry cache (the read writes them out first).
    expect(storage.entries(2, 4).map((e) => new TextDecoder().decode(e.data))).toEqual([new TextDecoder().decode(payload(2).data), new TextDecoder().decode(payload(3).data)]);
    gfs.gate = undefined;
    open();
    await first;
    await second;
    expect(storage.stats().deferredWrites).toBe(deferredBefore + 1);
    expect(storage.lastIndex()).toBe(3);
    // Every acknowledged record survives a crash (unsynced bytes are dropped by the crash model).
    gfs.crash();
    const again = (await openLog(dir, new LazyWalFs())).storage;
    expect(again.lastIndex()).toBe(3);
    expect(again.entries(1, 4).map((e) => e.index)).toEqual([1, 2, 3]);
    await again.close();
  });

  it('wal: held-back records are written before a segment roll (they belong to the old segment)', async () => {
    class GatedFs extends LazyWalFs {
      gate: Promise<void> | undefined;
      /** fdatasyncs waiting at the gate now. */
      held = 0;
      override async fdatasync(fd: number): Promise<void> {
        if (this.gate) {
          this.held++;
          await this.gate;
          this.held--;
        }
        return super.fdatasync(fd);
      }
    }
    const dir = freshDir();
    const gfs = new GatedFs();
    const { storage } = await openLog(dir, gfs, { segmentBytes: 160, cacheBytesMax: 0 });
    let open!: () => void;
    gfs.gate = new Promise<void>((r) => (open = r));
    storage.append([payload(1)]);
    const waits = [storage.sync()];
    for (let i = 0; i < 2_000 && gfs.held === 0; i++) await new Promise((r) => setTimeout(r, 5)); // round 1's fdatasync at the gate
    expect(gfs.held).toBe(1);
    for (let i = 2; i <= 12; i++) {
      storage.append([payload(i)]); // several rolls while round 1's fdatasync is held
      waits.push(storage.sync());
    }
    gfs.gate = undefined;
    open();
    await Promise.all(waits);
    await storage.close();
    const again = (await openLog(dir, new LazyWalFs(), { segmentBytes: 160 })).storage;
    expect(again.entries(1, 13).map((e) => new TextDecoder().decode(e.data))).toEqual(Array.from({ length: 12 }, (_, i) => new TextDecoder().decode(payload(i + 1).data)));
    await again.close();
  });

  it('wal: durable_wal_write=false acknowledges without fsync and fsyncs in the background', async () => {
    const dir = freshDir();
    const flags = new Flags();
    flags.set(DURABLE_WAL_WRITE, false);
    flags.set(INTERVAL_DURABLE_WAL_WRITE_MS, 5);
    const { storage } = await openLog(dir, new LazyWalFs(), { flags });
    storage.append([payload(1)]);
    await storage.sync();
    expect(storage.stats().logFsyncs).toBe(0);
    for (let i = 0; i < 400 && storage.stats().logFsyncs === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(storage.stats().logFsyncs).toBeGreaterThan(0);
    await storage.close();
  });
});

describe('FileLogStorage preallocation (log_preallocate_segments)', () => {
  const logicalEnd = (n: number): number => {
    let off = SEGMENT_HEADER_BYTES;
    for (let i = 1; i <= n; i++) off += RECORD_HEADER_BYTES + payload(i).data.length;
    return off;
  };

  it('wal: appends overwrite zeros written ahead, one chunk at a time; the file size stays put between chunks', async () => {
    const dir = freshDir();
    const { storage } = await openLog(dir, new LazyWalFs());
    storage.append([payload(1)]);
    await storage.sync();
    const seg = segmentFiles(dir)[0]!;
    expect(fs.statSync(seg).size).toBe(logicalEnd(1) + WAL_PREALLOCATE_CHUNK_BYTES);
    for (let i = 2; i <= 50; i++) {
      storage.append([payload(i)]);
      await storage.sync();
    }
    expect(storage.stats().preallocations).toBe(1);
    expect(fs.statSync(seg).size).toBe(logicalEnd(1) + WAL_PREALLOCATE_CHUNK_BYTES);
    const buf = fs.readFileSync(seg);
    expect(buf.subarray(logicalEnd(50)).every((b) => b === 0)).toBe(true);
    await storage.close();
    // Reopened: every entry is there, the zeros are cut off (not a torn tail), and appends go on.
    const { storage: again } = await openLog(dir, new LazyWalFs());
    expect(again.lastIndex()).toBe(50);
    expect(again.stats().tornBytesTruncated).toBe(0);
    expect(again.stats().zeroTailBytesTruncated).toBe(logicalEnd(1) + WAL_PREALLOCATE_CHUNK_BYTES - logicalEnd(50));
    again.append([payload(51)]);
    await again.sync();
    expect(again.entries(49, 52).map((e) => e.index)).toEqual([49, 50, 51]);
    await again.close();
  });

  it('wal: records written over synced zeros but not fsynced are lost in a crash (the model undoes the overwrite)', async () => {
    const dir = freshDir();
    const lazy = new LazyWalFs();
    const { storage } = await openLog(dir, lazy);
    storage.append([payload(1), payload(2)]);
    await storage.sync();
    // Entries 3 and 4 land in the preallocated zeros, which the last fsync made durable: without a
    // sync of their own they must not survive.
    storage.append([payload(3), payload(4)]);
    lazy.crash();
    const r = await openLog(dir, lazy);
    expect(r.storage.lastIndex()).toBe(2);
    r.storage.append([payload(3)]);
    await r.storage.sync();
    lazy.crash();
    const r2 = await openLog(dir, lazy);
    expect(r2.storage.lastIndex()).toBe(3);
    await r2.storage.close();
  });

  it('wal: a roll cuts the old segment back to its last record; the new one preallocates up to the segment size', async () => {
    const dir = freshDir();
    const segmentBytes = 4096;
    const { storage } = await openLog(dir, new LazyWalFs(), { segmentBytes });
    let n = 0;
    while (segmentFiles(dir).length < 2) {
      storage.append([payload(++n)]);
      await storage.sync();
    }
    const [first, second] = segmentFiles(dir);
    expect(fs.statSync(first!).size).toBe(logicalEnd(n - 1));
    expect(fs.statSync(second!).size).toBe(segmentBytes);
    await storage.close();
    const { storage: again } = await openLog(dir, new LazyWalFs(), { segmentBytes });
    expect(again.lastIndex()).toBe(n);
    await again.close();
  });

  it('wal: with log_preallocate_segments=false the file ends at the last record', async () => {
    const dir = freshDir();
    const flags = new Flags();
    flags.set(LOG_PREALLOCATE_SEGMENTS, false);
    const { storage } = await openLog(dir, new LazyWalFs(), { flags });
    for (let i = 1; i <= 5; i++) storage.append([payload(i)]);
    await storage.sync();
    expect(fs.statSync(segmentFiles(dir)[0]!).size).toBe(logicalEnd(5));
    expect(storage.stats().preallocations).toBe(0);
    await storage.close();
  });
});

describe('LazyWalFs overwrites', () => {
  it('lazy fs: an overwrite of durable bytes is undone by a crash until an fsync covers it; a tear keeps the oldest overwrites', async () => {
    const dir = freshDir();
    fs.mkdirSync(dir, { recursive: true });
    const p = path.join(dir, 'f');
    const lazy = new LazyWalFs();
    const fd = lazy.createNew(p);
    lazy.write(fd, Buffer.alloc(64, 0), 0, 64, 0);
    await lazy.fdatasync(fd);
    lazy.fsyncDir(dir);
    lazy.write(fd, Buffer.from('AAAA'), 0, 4, 0);
    lazy.write(fd, Buffer.from('BBBB'), 0, 4, 8);
    lazy.write(fd, Buffer.from('CC'), 0, 2, 62); // straddles the durable end: 2 bytes overwrite, 0 appended
    lazy.crash();
    expect(fs.readFileSync(p)).toEqual(Buffer.alloc(64, 0));
    const fd2 = lazy.openExisting(p, true);
    lazy.write(fd2, Buffer.from('AAAA'), 0, 4, 0);
    lazy.fdatasyncSync(fd2);
    lazy.write(fd2, Buffer.from('BBBB'), 0, 4, 8);
    lazy.write(fd2, Buffer.from('DDDD'), 0, 4, 0);
    lazy.crash();
    const after = fs.readFileSync(p);
    expect(after.subarray(0, 4).toString()).toBe('AAAA');
    expect(after.subarray(8, 12)).toEqual(Buffer.alloc(4, 0));
    // Tears: some prefix of the unsynced overwrites (in write order) survives, never a later one alone.
    const seen = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) {
      const fd3 = lazy.openExisting(p, true);
      lazy.write(fd3, Buffer.from('XXXX'), 0, 4, 16);
      lazy.write(fd3, Buffer.from('YYYY'), 0, 4, 24);
      lazy.crash({ tearRng: new SeededRng(seed) });
      const b = fs.readFileSync(p);
      const x = b.subarray(16, 20).toString() === 'XXXX';
      const y = b.subarray(24, 28).toString() === 'YYYY';
      expect(!y || x, `seed ${seed}: a later overwrite survived without an earlier one`).toBe(true);
      seen.add(`${x}${y}`);
      // Restore the durable zeros for the next round.
      const fd4 = lazy.openExisting(p, true);
      lazy.write(fd4, Buffer.alloc(16, 0), 0, 16, 16);
      lazy.fdatasyncSync(fd4);
      lazy.close(fd4);
    }
    expect(seen.size).toBe(3);
  });
});
