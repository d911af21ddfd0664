/**
 * In-memory KvEngine for tests and simulation: a skip list (O(log n) per get/put/seek) whose nodes keep
 * a short version chain so that iterators read a consistent snapshot, as RocksDB iterators do. Each
 * write batch gets one sequence number; an iterator sees exactly the batches with seq <= its snapshot.
 *
 * Bounded memory: a node keeps only the versions some open iterator can still see (at most one per
 * open snapshot plus the newest); deleted nodes are unlinked at once when no iterator is open, else by
 * a purge pass when the last iterator closes.
 *
 * "memtableBytes" is the bytes written since the last flush; flush()/compactRange() move them to
 * "sstBytes" (= the live bytes at that moment), mirroring how a RocksDB flush empties the memtable.
 */
import { assert } from '../common/assert';
import { DbError, ErrorCode } from '../common/errors';
import type { IteratorOptions, KvEngine, KvIterator, KvOp, KvStats } from './kv-engine';

const MAX_LEVEL = 24;
/** Deleted nodes tolerated before a purge pass (only runs when no iterator is open). */
const DEAD_NODES_PURGE_MIN = 1024;

interface Version {
  seq: number;
  /** undefined = deleted at `seq`. */
  value: Buffer | undefined;
}

class Node {
  constructor(
    readonly key: Buffer,
    /** Newest first. */
    public versions: Version[],
    readonly next: Array<Node | undefined>,
  ) {}
}

function toBuf(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

/** The skip list and its bookkeeping; shared by an engine and the engine `reopen()` returns. */
class SkipListStore {
  readonly head = new Node(Buffer.alloc(0), [], new Array<Node | undefined>(MAX_LEVEL).fill(undefined));
  level = 1;
  seq = 0;
  liveBytes = 0;
  liveKeys = 0;
  deadNodes = 0;
  memtableBytes = 0;
  sstBytes = 0;
  /** Open iterator snapshots → count. */
  readonly openSnaps = new Map<number, number>();
  private rand = 0x2545f491;

  randomLevel(): number {
    let lvl = 1;
    // xorshift32: deterministic, so a seeded simulation allocates identically on every run.
    for (;;) {
      let x = this.rand;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.rand = x >>> 0;
      if ((this.rand & 3) !== 0 || lvl >= MAX_LEVEL) return lvl;
      lvl++;
    }
  }

  /** Fills `update` with the rightmost node < key per level; returns the node >= key at level 0. */
  findGe(key: Buffer, update?: Array<Node>): Node | undefined {
    let x = this.head;
    for (let i = this.level - 1; i >= 0; i--) {
      for (;;) {
        const n = x.next[i];
        if (n !== undefined && Buffer.compare(n.key, key) < 0) x = n;
        else break;
      }
      if (update) update[i] = x;
    }
    return x.next[0];
  }

  /** Last node with key < `key` (undefined when none). */
  findLt(key: Buffer): Node | undefined {
    let x = this.head;
    for (let i = this.level - 1; i >= 0; i--) {
      for (;;) {
        const n = x.next[i];
        if (n !== undefined && Buffer.compare(n.key, key) < 0) x = n;
        else break;
      }
    }
    return x === this.head ? undefined : x;
  }

  lastNode(): Node | undefined {
    let x = this.head;
    for (let i = this.level - 1; i >= 0; i--) {
      for (;;) {
        const n = x.next[i];
        if (n !== undefined) x = n;
        else break;
      }
    }
    return x === this.head ? undefined : x;
  }

  minOpenSnap(): number | undefined {
    let m: number | undefined;
    for (const s of this.openSnaps.keys()) if (m === undefined || s < m) m = s;
    return m;
  }

  /** Keep the newest version plus, per open snapshot, the version it sees. */
  prune(node: Node, minSnap: number | undefined): void {
    if (minSnap === undefined) {
      node.versions.length = 1;
      return;
    }
    const keep: Version[] = [];
    for (const v of node.versions) {
      keep.push(v);
      if (v.seq <= minSnap) break;
    }
    node.versions = keep;
  }

  apply(key: Buffer, value: Buffer | undefined, seq: number, minSnap: number | undefined): void {
    const update = new Array<Node>(MAX_LEVEL);
    let n = this.findGe(key, update);
    if (n !== undefined && n.key.equals(key)) {
      const prev = n.versions[0];
      if (prev?.value !== undefined) {
        this.liveBytes -= n.key.length + prev.value.length;
        this.liveKeys--;
      } else {
        this.deadNodes--;
      }
      n.versions.unshift({ seq, value });
      this.prune(n, minSnap);
    } else {
      if (value === undefined) return; // deleting an absent key: nothing to record
      const lvl = this.randomLevel();
      if (lvl > this.level) {
        for (let i = this.level; i < lvl; i++) update[i] = this.head;
        this.level = lvl;
      }
      n = new Node(Buffer.from(key), [{ seq, value }], new Array<Node | undefined>(lvl).fill(undefined));
      for (let i = 0; i < lvl; i++) {
        const u = update[i]!;
        n.next[i] = u.next[i];
        u.next[i] = n;
      }
    }
    if (value !== undefined) {
      this.liveBytes += n.key.length + value.length;
      this.liveKeys++;
    } else if (minSnap === undefined) {
      this.unlink(n, update);
    } else {
      this.deadNodes++;
    }
  }

  private unlink(n: Node, update: Node[]): void {
    for (let i = 0; i < n.next.length; i++) {
      const u = update[i]!;
      if (u.next[i] === n) u.next[i] = n.next[i];
    }
    while (this.level > 1 && this.head.next[this.level - 1] === undefined) this.level--;
  }

  /** Unlink every deleted node (only when no iterator is open: iterators may hold node references). */
  purge(): void {
    assert(this.openSnaps.size === 0, 'purge with open iterators');
    if (this.deadNodes === 0) return;
    const update: Node[] = new Array<Node>(MAX_LEVEL).fill(this.head);
    let x = this.head.next[0];
    while (x !== undefined) {
      const nxt = x.next[0];
      x.versions.length = 1;
      if (x.versions[0]!.value === undefined) {
        this.unlink(x, update);
      } else {
        for (let i = 0; i < x.next.length; i++) update[i] = x;
      }
      x = nxt;
    }
    this.deadNodes = 0;
  }
}

export class MemoryEngine implements KvEngine {
  private closed = false;
  private readonly store: SkipListStore;

  private readonly openIterators = new Set<MemoryIterator>();

  constructor(store?: SkipListStore) {
    this.store = store ?? new SkipListStore();
  }

  /**
   * A new engine over the same data, after close(): lets a simulated process "restart" and reopen its
   * databases. Everything written counts as durable (the memory engine has no crash model).
   */
  reopen(): MemoryEngine {
    assert(this.closed, 'reopen() needs the old engine closed first');
    assert(this.store.openSnaps.size === 0, 'reopen() with iterators still open');
    return new MemoryEngine(this.store);
  }

  private checkOpen(): void {
    if (this.closed) throw new DbError(ErrorCode.SHUTTING_DOWN, 'kv engine is closed');
  }

  get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.checkOpen();
    const k = toBuf(key);
    const n = this.store.findGe(k);
    if (n === undefined || !n.key.equals(k)) return Promise.resolve(undefined);
    return Promise.resolve(n.versions[0]!.value);
  }

  async getMany(keys: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    const out: Array<Uint8Array | undefined> = [];
    for (const k of keys) out.push(await this.get(k));
    return out;
  }

  write(ops: readonly KvOp[], _opts?: { sync?: boolean }): Promise<void> {
    this.checkOpen();
    const s = this.store;
    const seq = ++s.seq;
    const minSnap = s.minOpenSnap();
    for (const op of ops) {
      if (op.type === 'put') {
        assert(op.key.length > 0, 'empty key');
        const k = toBuf(op.key);
        // Copy: callers may reuse their buffers after write() returns.
        s.apply(k, Buffer.from(op.value), seq, minSnap);
        s.memtableBytes += k.length + op.value.length;
      } else if (op.type === 'del') {
        assert(op.key.length > 0, 'empty key');
        s.apply(toBuf(op.key), undefined, seq, minSnap);
        s.memtableBytes += op.key.length;
      } else {
        const start = toBuf(op.start);
        const end = toBuf(op.end);
        const keys: Buffer[] = [];
        for (let n = s.findGe(start); n !== undefined && Buffer.compare(n.key, end) < 0; n = n.next[0]) {
          if (n.versions[0]!.value !== undefined) keys.push(n.key);
        }
        for (const k of keys) s.apply(k, undefined, seq, minSnap);
        s.memtableBytes += start.length + end.length;
      }
    }
    return Promise.resolve();
  }

  iterator(opts: IteratorOptions = {}): KvIterator {
    this.checkOpen();
    const it: MemoryIterator = new MemoryIterator(this.store, opts, () => {
      this.openIterators.delete(it);
      this.afterIteratorClose();
    });
    this.openIterators.add(it);
    return it;
  }

  private afterIteratorClose(): void {
    const s = this.store;
    if (s.openSnaps.size === 0 && s.deadNodes > Math.max(DEAD_NODES_PURGE_MIN, s.liveKeys)) s.purge();
  }

  stats(): Promise<KvStats> {
    this.checkOpen();
    const s = this.store;
    return Promise.resolve({ memtableBytes: s.memtableBytes, sstBytes: s.sstBytes, keysApprox: s.liveKeys });
  }

  flush(): Promise<void> {
    this.checkOpen();
    const s = this.store;
    s.memtableBytes = 0;
    s.sstBytes = s.liveBytes;
    if (s.openSnaps.size === 0) s.purge();
    return Promise.resolve();
  }

  /** Like RocksDB's CompactRange: flushes the memtable first; here that is all there is to do. */
  compactRange(_start?: Uint8Array, _end?: Uint8Array): Promise<void> {
    return this.flush();
  }

  /** Like RocksDbEngine.close: iterators still open end with the engine (a reused point-read iterator, a crash's). */
  async close(): Promise<void> {
    this.closed = true;
    for (const it of [...this.openIterators]) await it.close();
  }
}

class MemoryIterator implements KvIterator {
  private readonly snap: number;
  private readonly gte: Buffer | undefined;
  private readonly lt: Buffer | undefined;
  private readonly reverse: boolean;
  /** Node to examine next; undefined = exhausted. `fresh` = not positioned yet. */
  private cur: Node | undefined;
  private fresh = true;
  private closed = false;

  constructor(
    private readonly store: SkipListStore,
    opts: IteratorOptions,
    private readonly onClose: () => void,
  ) {
    this.snap = store.seq;
    this.gte = opts.gte ? Buffer.from(opts.gte) : undefined;
    this.lt = opts.lt ? Buffer.from(opts.lt) : undefined;
    this.reverse = opts.reverse ?? false;
    store.openSnaps.set(this.snap, (store.openSnaps.get(this.snap) ?? 0) + 1);
  }

  private positionFirst(): void {
    const s = this.store;
    if (!this.reverse) this.cur = this.gte ? s.findGe(this.gte) : s.head.next[0];
    else this.cur = this.lt ? s.findLt(this.lt) : s.lastNode();
    this.fresh = false;
  }

  seek(target: Uint8Array): void {
    assert(!this.closed, 'seek on closed iterator');
    const t = toBuf(target);
    const s = this.store;
    if (!this.reverse) {
      this.cur = s.findGe(this.gte && Buffer.compare(t, this.gte) < 0 ? this.gte : t);
    } else {
      // Last key <= target, capped below `lt`.
      if (this.lt && Buffer.compare(t, this.lt) >= 0) this.cur = s.findLt(this.lt);
      else {
        const n = s.findGe(t);
        this.cur = n !== undefined && n.key.equals(t) ? n : s.findLt(t);
      }
    }
    this.fresh = false;
  }

  private visible(n: Node): Buffer | undefined {
    for (const v of n.versions) if (v.seq <= this.snap) return v.value;
    return undefined;
  }

  next(): Promise<[Uint8Array, Uint8Array] | undefined> {
    assert(!this.closed, 'next on closed iterator');
    if (this.fresh) this.positionFirst();
    // Bounded by the number of nodes: each step moves one node in iteration order.
    for (;;) {
      const n = this.cur;
      if (n === undefined) return Promise.resolve(undefined);
      if (!this.reverse) {
        if (this.lt && Buffer.compare(n.key, this.lt) >= 0) {
          this.cur = undefined;
          return Promise.resolve(undefined);
        }
        this.cur = n.next[0];
      } else {
        if (this.gte && Buffer.compare(n.key, this.gte) < 0) {
          this.cur = undefined;
          return Promise.resolve(undefined);
        }
        this.cur = this.store.findLt(n.key);
      }
      const v = this.visible(n);
      if (v !== undefined) return Promise.resolve([n.key, v]);
    }
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    const m = this.store.openSnaps;
    const c = (m.get(this.snap) ?? 1) - 1;
    if (c <= 0) m.delete(this.snap);
    else m.set(this.snap, c);
    this.onClose();
    return Promise.resolve();
  }
}
