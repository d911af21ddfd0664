/**
 * A fault layer over WalFs in the spirit of LazyFS ("When Amnesia Strikes", VLDB 2024): it remembers,
 * per file, how many bytes an fsync made durable, and crash() truncates every file back to that length
 * — a power loss that drops whatever was written but not fsynced. Writes that overwrite durable bytes
 * (a WAL writing records over the zeros it preallocated) keep the bytes they replaced until the next
 * fsync, and crash() puts those back. Files created since their directory was last fsynced vanish.
 * It can also tear (keep a random part of the unsynced bytes, or of the unsynced overwrites in the
 * order they were written, as a half finished write does) and fail fsyncs or writes on demand
 * (fsyncgate-style EIO).
 *
 * crash() closes every fd opened through this layer. The layer hands out its own fd numbers, never
 * reused, so a storage instance from before the crash is dead for good: its later calls fail with
 * EBADF (and its closes are ignored) instead of touching files a reopened instance now uses.
 */
import * as path from 'node:path';
import type { Rng } from '../../common/rng';
import type { WalFs } from './wal-fs';
import { NodeWalFs } from './wal-fs';

interface Tracked {
  /** Bytes known durable (size when the last fsync began). */
  syncedBytes: number;
  /** False until the directory is fsynced after the file's creation or rename. */
  nameDurable: boolean;
  /** Unsynced overwrites of durable bytes, oldest first: where, and the bytes they replaced. */
  undo: Array<{ seq: number; pos: number; old: Buffer }>;
}

export interface CrashOptions {
  /** Keep a random prefix of each file's unsynced bytes (a torn write) instead of dropping them all. */
  tearRng?: Rng;
}

function badFd(fd: number): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`EBADF: bad file descriptor ${fd} (closed by a simulated crash)`);
  e.code = 'EBADF';
  return e;
}

function ioError(op: string): NodeJS.ErrnoException {
  const e: NodeJS.ErrnoException = new Error(`EIO: i/o error, ${op} (injected)`);
  e.code = 'EIO';
  return e;
}

export class LazyWalFs implements WalFs {
  private readonly files = new Map<string, Tracked>();
  /** Our fd number -> the real fd and its path. */
  private readonly fds = new Map<number, { real: number; path: string }>();
  private nextFd = 1_000_000;
  /** Injected faults: the next fsync/fdatasync (or every one, while set) fails with EIO. */
  failSyncs = false;
  failWrites = false;
  fsyncCount = 0;
  /** Numbers the overwrites, so an fsync forgets exactly those issued before it began. */
  private writeSeq = 0;

  constructor(private readonly inner: WalFs = new NodeWalFs()) {}

  mkdirp(dir: string): void {
    this.inner.mkdirp(dir);
  }
  readdir(dir: string): string[] {
    return this.inner.readdir(dir);
  }
  exists(p: string): boolean {
    return this.inner.exists(p);
  }
  readFile(p: string): Buffer {
    return this.inner.readFile(p);
  }
  createNew(p: string): number {
    const real = this.inner.createNew(p);
    this.files.set(p, { syncedBytes: 0, nameDurable: false, undo: [] });
    return this.register(real, p);
  }
  openExisting(p: string, writable: boolean): number {
    const real = this.inner.openExisting(p, writable);
    // A file that exists when first seen here survived earlier crashes: all of it counts as durable.
    if (!this.files.has(p)) this.files.set(p, { syncedBytes: this.inner.fileSize(real), nameDurable: true, undo: [] });
    return this.register(real, p);
  }
  write(fd: number, buf: Uint8Array, off: number, len: number, pos: number): void {
    if (this.failWrites) throw ioError('write');
    const real = this.real(fd);
    const t = this.trackedByFd(fd);
    if (t && pos < t.syncedBytes && len > 0) {
      const old = Buffer.alloc(Math.min(pos + len, t.syncedBytes) - pos);
      const n = this.inner.read(real, old, 0, old.length, pos);
      t.undo.push({ seq: ++this.writeSeq, pos, old: old.subarray(0, n) });
    }
    this.inner.write(real, buf, off, len, pos);
  }
  read(fd: number, buf: Uint8Array, off: number, len: number, pos: number): number {
    return this.inner.read(this.real(fd), buf, off, len, pos);
  }
  async fdatasync(fd: number): Promise<void> {
    this.fsyncCount++;
    if (this.failSyncs) throw ioError('fdatasync');
    const size = this.inner.fileSize(this.real(fd));
    const upTo = this.writeSeq;
    await this.inner.fdatasync(this.real(fd));
    this.markSynced(fd, size, upTo);
  }
  fdatasyncSync(fd: number): void {
    this.fsyncCount++;
    if (this.failSyncs) throw ioError('fdatasync');
    const size = this.inner.fileSize(this.real(fd));
    this.inner.fdatasyncSync(this.real(fd));
    this.markSynced(fd, size, this.writeSeq);
  }
  ftruncate(fd: number, len: number): void {
    this.inner.ftruncate(this.real(fd), len);
    const t = this.trackedByFd(fd);
    if (t && t.syncedBytes > len) t.syncedBytes = len;
    if (t) t.undo = t.undo.filter((u) => u.pos < len);
  }
  fileSize(fd: number): number {
    return this.inner.fileSize(this.real(fd));
  }
  close(fd: number): void {
    const f = this.fds.get(fd);
    if (!f) return;
    this.fds.delete(fd);
    this.inner.close(f.real);
  }
  writeFileSynced(p: string, data: Uint8Array): void {
    if (this.failWrites) throw ioError('write');
    this.fsyncCount++;
    if (this.failSyncs) throw ioError('fsync');
    this.inner.writeFileSynced(p, data);
    const prev = this.files.get(p);
    this.files.set(p, { syncedBytes: data.length, nameDurable: prev?.nameDurable ?? false, undo: [] });
  }
  rename(from: string, to: string): void {
    this.inner.rename(from, to);
    const t = this.files.get(from);
    this.files.delete(from);
    this.files.set(to, { syncedBytes: t?.syncedBytes ?? 0, nameDurable: false, undo: t?.undo ?? [] });
  }
  unlink(p: string): void {
    this.inner.unlink(p);
    this.files.delete(p);
  }
  fsyncDir(dir: string): void {
    this.fsyncCount++;
    if (this.failSyncs) throw ioError('fsync dir');
    this.inner.fsyncDir(dir);
    const d = path.resolve(dir);
    for (const [p, t] of this.files) if (path.dirname(path.resolve(p)) === d) t.nameDurable = true;
  }

  /** Bytes of `p` that survive a crash now. */
  syncedBytes(p: string): number | undefined {
    return this.files.get(p)?.syncedBytes;
  }

  /** Power loss: close every fd, drop unsynced bytes (or tear them) and files whose names never became durable. */
  crash(opts: CrashOptions = {}): void {
    for (const fd of [...this.fds.keys()]) this.close(fd);
    for (const [p, t] of [...this.files]) {
      if (!this.inner.exists(p)) {
        this.files.delete(p);
        continue;
      }
      if (!t.nameDurable) {
        this.inner.unlink(p);
        this.files.delete(p);
        continue;
      }
      const fd = this.inner.openExisting(p, true);
      try {
        // Unsynced overwrites are undone newest first; a tear keeps the oldest few.
        const keepWrites = opts.tearRng ? opts.tearRng.int(t.undo.length + 1) : 0;
        for (let i = t.undo.length - 1; i >= keepWrites; i--) {
          const u = t.undo[i]!;
          this.inner.write(fd, u.old, 0, u.old.length, u.pos);
        }
        t.undo = [];
        const size = this.inner.fileSize(fd);
        let keep = Math.min(t.syncedBytes, size);
        if (opts.tearRng && size > keep) keep += opts.tearRng.int(size - keep + 1);
        if (keep < size) this.inner.ftruncate(fd, keep);
        t.syncedBytes = keep;
      } finally {
        this.inner.close(fd);
      }
    }
  }

  /** An fsync that began when the file had `size` bytes and overwrites up to number `upTo` were issued completed. */
  private markSynced(fd: number, size: number, upTo: number): void {
    const t = this.trackedByFd(fd);
    if (!t) return;
    if (size > t.syncedBytes) t.syncedBytes = size;
    if (t.undo.length > 0) t.undo = t.undo.filter((u) => u.seq > upTo);
  }

  private trackedByFd(fd: number): Tracked | undefined {
    const f = this.fds.get(fd);
    return f === undefined ? undefined : this.files.get(f.path);
  }

  private register(real: number, p: string): number {
    const fd = this.nextFd++;
    this.fds.set(fd, { real, path: p });
    return fd;
  }

  private real(fd: number): number {
    const f = this.fds.get(fd);
    if (!f) throw badFd(fd);
    return f.real;
  }
}
