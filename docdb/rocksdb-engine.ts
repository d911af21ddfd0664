/**
 * KvEngine over RocksDB through `level-rocksdb` (levelup → encoding-down → the `rocksdb` LevelDOWN
 * binding). We open through level-rocksdb and then talk to the LevelDOWN object (`db.db.db` once open)
 * directly: it has the byte-level API (batch, iterator with seek, getProperty, compactRange) without
 * the encoding layers in between.
 *
 * Binding limits, and what we do about them:
 * - RocksDB's own WAL cannot be disabled through this binding (no `disableWAL` write option), so it
 *   stays on. docs/architecture.md §Raft makes the Raft log the real WAL and frontiers make replay idempotent, so the
 *   RocksDB WAL is redundant but harmless (it only costs write bandwidth).
 * - No explicit flush: RocksDB's CompactRange flushes the memtables first when they hold a key in
 *   its range, so flush() is a CompactRange over one key only: the newest key this engine wrote,
 *   which the unflushed memtables hold. The compaction that follows touches only the table files
 *   whose range covers that key, not the whole database (a whole-range CompactRange rewrote every
 *   file of a 1 GiB tablet on each flush of the global memstore limit or a split).
 * - No native DeleteRange in batches: a `delRange` op is expanded into point deletes of the keys in
 *   the range, read under the engine's write lock so the expansion and the batch are atomic with
 *   respect to other writes through this engine.
 * - Seeking outside an iterator's bounds ends a LevelDOWN iterator instead of clamping; the wrapper
 *   clamps targets to the bounds in JS (and for reverse iterators uses an inclusive upper bound plus a
 *   JS filter so "last key < lt" stays reachable by seek).
 */
import { assert } from '../common/assert';
import { DbError, ErrorCode } from '../common/errors';
import type { IteratorOptions, KvEngine, KvIterator, KvOp, KvStats } from './kv-engine';
import { makeDirs } from '../common/fs-dirs';
import { parseBackgroundWork, type BackgroundWork } from './rocksdb-stats';
import { CHECKPOINT_ATTEMPTS_MAX, checkpointRocksDir, type CheckpointResult } from './rocksdb-checkpoint';

type Cb<T = void> = (err: Error | null | undefined, v?: T) => void;

/** The slice of the LevelDOWN binding we use (see node_modules/rocksdb/leveldown.js). */
interface LevelDown {
  /** The binding's native write batch (leveldown's ChainedBatch; its underscore methods skip abstract-leveldown's per-op checks). */
  _chainedBatch(): LevelDownBatch;
  /** The binding's array batch: its native WriteBatch is freed as soon as the write is done. */
  _batch(ops: Array<{ type: 'put'; key: Buffer; value: Buffer } | { type: 'del'; key: Buffer }>, opts: { sync: boolean }, cb: Cb): void;
  getMany(keys: Buffer[], opts: object, cb: Cb<Array<Buffer | undefined>>): void;
  iterator(opts: object): LevelDownIterator;
  getProperty(name: string): string;
  compactRange(start: Buffer, end: Buffer, cb: Cb): void;
  approximateSize(start: Buffer, end: Buffer, cb: Cb<number>): void;
  /** abstract-leveldown's clear: the binding deletes the range natively, in batches (point tombstones). */
  clear(opts: { gte: Buffer; lt: Buffer; limit: number }, cb: Cb): void;
}
interface LevelDownBatch {
  _put(key: Buffer, value: Buffer): void;
  _del(key: Buffer): void;
  _write(opts: { sync: boolean }, cb: Cb): void;
}
interface LevelDownIterator {
  /**
   * The binding's read-ahead (node_modules/rocksdb/iterator.js): the entries its last native read
   * fetched and next() has not handed out yet, newest-last as [.., value, key] (next() pops key, then
   * value); null after a seek. `finished`: that read reached the end.
   */
  cache?: Buffer[] | null;
  finished?: boolean;
  seek(target: Buffer): void;
  next(cb: (err: Error | null | undefined, key?: Buffer, value?: Buffer) => void): void;
  end(cb: Cb): void;
}
interface LevelUp {
  open(cb: Cb): void;
  close(cb: Cb): void;
  db: { db?: unknown };
}
type LevelFactory = (location: string, opts: object, onOpen: (err: Error | null | undefined) => void) => LevelUp;

function loadFactory(): LevelFactory {
  // level-rocksdb ships no type declarations; check the shape instead of trusting it.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod: unknown = require('level-rocksdb');
  assert(typeof mod === 'function', 'level-rocksdb did not export a factory function');
  return mod as LevelFactory;
}

function isLevelDown(x: unknown): x is LevelDown {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  return ['_chainedBatch', 'getMany', 'iterator', 'getProperty', 'compactRange'].every((m) => typeof o[m] === 'function');
}

function promisify<T>(f: (cb: Cb<T>) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    f((err, v) => (err ? reject(ioError(err)) : resolve(v as T)));
  });
}

function ioError(err: Error): DbError {
  return new DbError(ErrorCode.IO_ERROR, `rocksdb: ${err.message}`, {}, { cause: err });
}

function toBuf(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/** Whether the puts' and deletes' keys and values add up to `min` bytes or more. */
function batchBytesAtLeast(ops: readonly KvOp[], min: number): boolean {
  let n = 0;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (op.type === 'put') n += op.key.byteLength + op.value.byteLength;
    else if (op.type === 'del') n += op.key.byteLength;
    if (n >= min) return true;
  }
  return false;
}

/** A key above every key we write (DocDB keys start with bytes < 0xff; intents 'x' or lower). */
const KEYSPACE_END = Buffer.alloc(64, 0xff);
const KEYSPACE_START = Buffer.from([0x00]);
/** Keys read per chunk while expanding a delRange (bounds memory per step, not the total). */
const DEL_RANGE_KEYS_MAX = 10_000_000;
/**
 * Key and value bytes from which a write goes through the binding's array batch instead of its
 * chained batch. A chained batch's native WriteBatch lives until V8 collects its JS object, and V8
 * does not know its size: under a stream of large writes (the blog's 1 MiB values) every batch is
 * built in fresh memory, page fault by page fault — measured 9–14 ms of the main thread per MiB,
 * against ~1 ms for the array form, whose WriteBatch is freed when the write completes and its
 * memory reused (docs/raft-write-path.md, "Large values"). Below it the chained form is cheaper
 * (the array form reads three properties of every op through N-API), and also for a large batch of
 * small ops (COPY's 5,000 rows of ~100 bytes: 0.6–1.4 µs per op chained, 1.5–2.2 µs as an array),
 * hence the second bound, on the bytes per op.
 */
const ARRAY_BATCH_BYTES_MIN = 256 << 10;
const ARRAY_BATCH_BYTES_PER_OP_MIN = 4 << 10;

/** A checkpoint's WAL, set aside (RocksDbEngine.checkpointWalAside): live files in order, with their sizes then. */
export interface WalAside {
  files: Array<{ path: string; number: number; size: number }>;
  /** Entries in the source's memtables then: what those files' first `size` bytes must hold. */
  memtableEntries: number;
}

export interface RocksDbEngineOptions {
  /** Memtable size before RocksDB flushes on its own (RocksDB write_buffer_size). */
  writeBufferBytes?: number;
  /** Block cache bytes. */
  cacheBytes?: number;
}

export class RocksDbEngine implements KvEngine {
  private writeLock: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly openIterators = new Set<RocksIterator>();
  /** compactRange calls under way (a checkpoint waits for them). */
  private readonly compactions = new Set<Promise<void>>();
  /** The newest key a batch of this engine put or deleted: the memtables hold it until they are flushed. */
  private newestKey: Buffer | undefined;

  private constructor(
    readonly location: string,
    private readonly up: LevelUp,
    private readonly ld: LevelDown,
  ) {}

  static async open(location: string, opts: RocksDbEngineOptions = {}): Promise<RocksDbEngine> {
    makeDirs(location);
    // The open's own callback: without one, levelup reports a failed open (a corrupt CURRENT or
    // MANIFEST, a held LOCK) as an 'error' event nobody listens to, which ends the process.
    let up: LevelUp | undefined;
    await new Promise<void>((resolve, reject) => {
      up = loadFactory()(
        location,
        {
          keyEncoding: 'binary',
          valueEncoding: 'binary',
          createIfMissing: true,
          writeBufferSize: opts.writeBufferBytes ?? 4 << 20,
          cacheSize: opts.cacheBytes ?? 8 << 20,
        },
        (err) => {
          if (!err) return resolve();
          const why = (err as { cause?: unknown }).cause instanceof Error ? ((err as { cause: Error }).cause.message) : err.message;
          reject(new DbError(/corrupt/i.test(why) ? ErrorCode.CORRUPTION : ErrorCode.IO_ERROR, `cannot open RocksDB at ${location}: ${why}`, { path: location }, { cause: err }));
        },
      );
    });
    if (up === undefined) throw new DbError(ErrorCode.INTERNAL, `level-rocksdb returned no database for ${location}`);
    const ld = up.db.db;
    assert(isLevelDown(ld), 'level-rocksdb: db.db.db is not the LevelDOWN binding');
    return new RocksDbEngine(location, up, ld);
  }

  private checkOpen(): void {
    if (this.closed) throw new DbError(ErrorCode.SHUTTING_DOWN, 'kv engine is closed');
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.checkOpen();
    const r = await promisify<Array<Buffer | undefined>>((cb) => this.ld.getMany([toBuf(key)], { asBuffer: true }, cb));
    return r[0] ?? undefined;
  }

  async getMany(keys: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    this.checkOpen();
    if (keys.length === 0) return [];
    const r = await promisify<Array<Buffer | undefined>>((cb) => this.ld.getMany(keys.map(toBuf), { asBuffer: true }, cb));
    return r.map((v) => v ?? undefined);
  }

  write(ops: readonly KvOp[], opts: { sync?: boolean } = {}): Promise<void> {
    this.checkOpen();
    const run = this.writeLock.then(() => this.doWrite(ops, opts.sync ?? false));
    // The lock chain must survive a failed write; the caller still sees the failure through `run`.
    this.writeLock = run.catch(() => undefined);
    return run;
  }

  private async doWrite(ops: readonly KvOp[], sync: boolean): Promise<void> {
    if (batchBytesAtLeast(ops, Math.max(ARRAY_BATCH_BYTES_MIN, ops.length * ARRAY_BATCH_BYTES_PER_OP_MIN))) await this.writeArrayBatch(ops, sync);
    else if (!(await this.writeChainedBatch(ops, sync))) return;
    const last = ops[ops.length - 1]!;
    if (last.type !== 'delRange') this.newestKey = Buffer.from(last.key); // a copy: the caller may reuse its buffer
    else this.newestKey = undefined; // its last expanded key is not at hand: the next flush takes the whole range
  }

  /** One native WriteBatch filled op by op; false when there was nothing to write. */
  private async writeChainedBatch(ops: readonly KvOp[], sync: boolean): Promise<boolean> {
    // The binding's array form (`batch(ops)`) reads three properties of every op object through
    // N-API, about twice the CPU per op of a direct put/del.
    let batch: LevelDownBatch | undefined;
    // An indexed loop: a for-of here keeps its iterator alive across the await below, so every step
    // allocates a result object (measured: ~1.4 % of all a tserver allocates under load).
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.type === 'put') {
        assert(op.key.length > 0, 'empty key');
        (batch ??= this.ld._chainedBatch())._put(toBuf(op.key), toBuf(op.value));
      } else if (op.type === 'del') {
        assert(op.key.length > 0, 'empty key');
        (batch ??= this.ld._chainedBatch())._del(toBuf(op.key));
      } else {
        const b = (batch ??= this.ld._chainedBatch());
        await this.expandDelRange(op.start, op.end, (k) => b._del(k));
      }
    }
    if (batch === undefined) return false;
    const b = batch;
    await promisify<void>((cb) => b._write({ sync }, cb));
    return true;
  }

  /** The same write through the array batch (large writes: see ARRAY_BATCH_BYTES_MIN). */
  private async writeArrayBatch(ops: readonly KvOp[], sync: boolean): Promise<void> {
    const arr: Parameters<LevelDown['_batch']>[0] = [];
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.type === 'put') {
        assert(op.key.length > 0, 'empty key');
        arr.push({ type: 'put', key: toBuf(op.key), value: toBuf(op.value) });
      } else if (op.type === 'del') {
        assert(op.key.length > 0, 'empty key');
        arr.push({ type: 'del', key: toBuf(op.key) });
      } else await this.expandDelRange(op.start, op.end, (key) => arr.push({ type: 'del', key }));
    }
    await promisify<void>((cb) => this.ld._batch(arr, { sync }, cb));
  }

  /** The keys in [start, end) handed to `del` one by one (the binding has no DeleteRange). */
  private async expandDelRange(start: Uint8Array, end: Uint8Array, del: (key: Buffer) => void): Promise<void> {
    const it = new RocksIterator(this.ld, { gte: start, lt: end }, () => undefined);
    try {
      for (let i = 0; i < DEL_RANGE_KEYS_MAX; i++) {
        const e = await it.next();
        if (e === undefined) break;
        del(toBuf(e[0]));
      }
    } finally {
      await it.close();
    }
  }

  iterator(opts: IteratorOptions = {}): KvIterator {
    this.checkOpen();
    const it = new RocksIterator(this.ld, opts, () => this.openIterators.delete(it));
    this.openIterators.add(it);
    return it;
  }

  private prop(name: string): number {
    const v = Number(this.ld.getProperty(name));
    return Number.isFinite(v) ? v : 0;
  }

  stats(): Promise<KvStats> {
    this.checkOpen();
    return Promise.resolve({
      memtableBytes: this.prop('rocksdb.cur-size-all-mem-tables'),
      sstBytes: this.prop('rocksdb.total-sst-files-size'),
      keysApprox: this.prop('rocksdb.estimate-num-keys'),
    });
  }

  /** Flushes, compactions and write stalls so far, from RocksDB's statistics text (see rocksdb-stats.ts). */
  background(): BackgroundWork {
    this.checkOpen();
    return parseBackgroundWork(this.ld.getProperty('rocksdb.cfstats-no-file-histogram'), this.ld.getProperty('rocksdb.dbstats'));
  }

  /** Entries in the memtables (active and immutable): what a flush would write, and what an open replays from the WAL. */
  memtableEntries(): number {
    this.checkOpen();
    return this.prop('rocksdb.num-entries-active-mem-table') + this.prop('rocksdb.num-entries-imm-mem-tables');
  }

  /**
   * RocksDB flushes the memtables as the first step of a CompactRange whose range they overlap (see
   * header): the range is the newest key written, which they hold. Nothing to flush, nothing done.
   * After an open (memtables replayed from RocksDB's WAL, no newest key known) the whole range.
   */
  async flush(): Promise<void> {
    this.checkOpen();
    await this.writeLock;
    if (this.memtableEntries() === 0) return;
    const k = this.newestKey;
    return k ? this.compactRange(k, k) : this.compactRange();
  }

  async compactRange(start?: Uint8Array, end?: Uint8Array): Promise<void> {
    this.checkOpen();
    // Wait for in-flight writes so "flush after write" covers them.
    await this.writeLock;
    const run = promisify<void>((cb) => this.ld.compactRange(start ? toBuf(start) : KEYSPACE_START, end ? toBuf(end) : KEYSPACE_END, cb));
    this.compactions.add(run);
    try {
      await run;
    } finally {
      this.compactions.delete(run);
    }
  }

  /**
   * A checkpoint of this database in `dir` (docdb/rocksdb-checkpoint.ts: table files hard-linked),
   * taken with every write of this engine held back; undefined when RocksDB's background work kept
   * changing the files for `attemptsMax` attempts (the caller falls back to copying rows).
   */
  async checkpointTo(dir: string, attemptsMax?: number): Promise<CheckpointResult | undefined> {
    this.checkOpen();
    // A manual compaction under way rewrites files for seconds: let it finish rather than retry.
    const run = this.writeLock.then(async () => {
      while (this.compactions.size > 0) await Promise.allSettled([...this.compactions]);
      return checkpointRocksDir(this.location, dir, attemptsMax);
    });
    this.writeLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /**
   * A checkpoint in `dir` without its WAL: the live WAL files (RocksDB's `min-log-number-to-keep`
   * on) hard-linked into `walDir` instead, with their sizes and the memtables' entry count, all taken
   * with every write of this engine held back — only for that instant: the source may append to
   * those files afterwards, never change the bytes they held (rocksdb-checkpoint.ts). The caller
   * reads them (rocksdb-wal.ts). Undefined when RocksDB's background work kept changing the files.
   */
  async checkpointWalAside(dir: string, walDir: string): Promise<{ checkpointMs: number; wal: WalAside } | undefined> {
    this.checkOpen();
    const run = this.writeLock.then(async () => {
      while (this.compactions.size > 0) await Promise.allSettled([...this.compactions]);
      const t0 = performance.now();
      for (let attempt = 1; attempt <= CHECKPOINT_ATTEMPTS_MAX; attempt++) {
        const entries = this.memtableEntries();
        const minLog = this.prop('rocksdb.min-log-number-to-keep');
        const cp = await checkpointRocksDir(this.location, dir, 1, { walAside: walDir });
        // A flush between the two readings moved entries out of the memtables: take it again.
        if (cp && entries === this.memtableEntries() && minLog === this.prop('rocksdb.min-log-number-to-keep')) {
          const files = cp.walFiles!.filter((f) => f.number >= minLog);
          return { checkpointMs: Math.round(performance.now() - t0), wal: { files, memtableEntries: entries } };
        }
        if (cp) await new Promise((res) => setTimeout(res, 50 * attempt)); // (a failed attempt has paused already)
      }
      return undefined;
    });
    this.writeLock = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** SST bytes RocksDB estimates for [start, end) (the memtable is not counted). */
  approximateBytes(start: Uint8Array, end: Uint8Array): Promise<number> {
    this.checkOpen();
    return promisify<number>((cb) => this.ld.approximateSize(toBuf(start), toBuf(end), cb));
  }

  /**
   * Delete up to `limit` keys of [start, end) natively (tombstones; a compaction of the range
   * reclaims the space). One call holds a libuv thread for its whole run: callers keep `limit` small.
   */
  clearRange(start: Uint8Array, end: Uint8Array, limit: number): Promise<void> {
    this.checkOpen();
    const run = this.writeLock.then(() => promisify<void>((cb) => this.ld.clear({ gte: toBuf(start), lt: toBuf(end), limit }, cb)));
    this.writeLock = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writeLock;
    for (const it of [...this.openIterators]) await it.close();
    await promisify<void>((cb) => this.up.close(cb));
  }
}

class RocksIterator implements KvIterator {
  private readonly it: LevelDownIterator;
  private readonly gte: Buffer | undefined;
  private readonly lt: Buffer | undefined;
  private readonly reverse: boolean;
  /** Set when a seek target lies wholly outside the bounds: nothing to return until the next seek. */
  private exhausted = false;
  private closed = false;

  constructor(
    ld: LevelDown,
    opts: IteratorOptions,
    private readonly onClose: () => void,
  ) {
    this.gte = opts.gte ? Buffer.from(opts.gte) : undefined;
    this.lt = opts.lt ? Buffer.from(opts.lt) : undefined;
    this.reverse = opts.reverse ?? false;
    const o: Record<string, unknown> = { reverse: this.reverse, keyAsBuffer: true, valueAsBuffer: true };
    if (opts.readAheadBytes !== undefined) o['highWaterMark'] = opts.readAheadBytes;
    if (opts.fillCache) o['fillCache'] = true;
    if (this.gte) o['gte'] = this.gte;
    // Reverse: inclusive upper bound so seek(lt) is in range; the key == lt is filtered in next().
    if (this.lt) o[this.reverse ? 'lte' : 'lt'] = this.lt;
    this.it = ld.iterator(o);
  }

  seek(target: Uint8Array): void {
    assert(!this.closed, 'seek on closed iterator');
    let t = toBuf(target);
    this.exhausted = false;
    if (!this.reverse) {
      if (this.lt && Buffer.compare(t, this.lt) >= 0) {
        this.exhausted = true;
        return;
      }
      if (this.gte && Buffer.compare(t, this.gte) < 0) t = this.gte;
    } else {
      if (this.gte && Buffer.compare(t, this.gte) < 0) {
        this.exhausted = true;
        return;
      }
      if (this.lt && Buffer.compare(t, this.lt) > 0) t = this.lt;
    }
    // The binding rejects an empty seek target; every stored key is >= [0x00].
    this.it.seek(t.length === 0 ? KEYSPACE_START : t);
  }

  private rawNext(): Promise<[Buffer, Buffer] | undefined> {
    return new Promise((resolve, reject) => {
      this.it.next((err, key, value) => {
        if (err) reject(ioError(err));
        else if (key === undefined || value === undefined) resolve(undefined);
        else resolve([key, value]);
      });
    });
  }

  async next(): Promise<[Uint8Array, Uint8Array] | undefined> {
    assert(!this.closed, 'next on closed iterator');
    if (this.exhausted) return undefined;
    let e = await this.rawNext();
    // At most one key equals the exclusive bound.
    if (e !== undefined && this.reverse && this.lt && e[0].equals(this.lt)) e = await this.rawNext();
    if (e === undefined) this.exhausted = true;
    return e;
  }

  async nextBatch(): Promise<Array<[Uint8Array, Uint8Array]> | undefined> {
    const first = await this.next();
    if (first === undefined) return undefined;
    const out: Array<[Uint8Array, Uint8Array]> = [first];
    // What the binding's last native read fetched beyond `first`, taken as its next() would hand it out.
    const cache = this.it.cache;
    while (cache && cache.length >= 2) {
      const key = cache.pop()!;
      const value = cache.pop()!;
      if (this.reverse && this.lt && key.equals(this.lt)) continue;
      out.push([key, value]);
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    await promisify<void>((cb) => this.it.end(cb));
  }
}
