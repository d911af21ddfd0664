/**
 * A KvEngine that shows only some key ranges of another: a split child made from hard links of its
 * parent's table files (tserver/split-apply.ts) holds the parent's whole data, and sees only its own
 * rows (and the meta keys below the data range) through this view until a background pass deleted
 * and compacted away the rest (YugabyteDB's children likewise ignore, then compact away, the keys
 * outside their partition). Reads never return a hidden key; writes pass through (the tablet refuses
 * out-of-range rows before they reach the engine). Iterators walk the visible segments one after the
 * other, each an iterator of the inner engine bounded to its segment.
 */
import { compareKeyBytes } from '../common/key-bounds';
import type { IteratorOptions, KvEngine, KvIterator, KvOp, KvStats } from './kv-engine';
import type { BackgroundWork } from './rocksdb-stats';

/** A half-open byte range [start, end); an empty end is unbounded. */
export interface KeySegment {
  start: Uint8Array;
  end: Uint8Array;
}

/** The inner engine may estimate a range's bytes (RocksDB); the view then reports its own share. */
interface SizedEngine extends KvEngine {
  approximateBytes?(start: Uint8Array, end: Uint8Array): Promise<number>;
}

function below(a: Uint8Array, end: Uint8Array): boolean {
  return end.length === 0 || compareKeyBytes(a, end) < 0;
}

function maxKey(a: Uint8Array, b: Uint8Array): Uint8Array {
  return compareKeyBytes(a, b) >= 0 ? a : b;
}

function minEnd(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  return compareKeyBytes(a, b) <= 0 ? a : b;
}

export class RangeHidingEngine implements KvEngine {
  /** Sorted, disjoint. */
  private readonly visible: KeySegment[];
  /** The inner engine's RocksDB background work, when it has any. */
  readonly background?: () => BackgroundWork;

  constructor(
    readonly inner: KvEngine,
    visible: readonly KeySegment[],
  ) {
    this.visible = [...visible].sort((a, b) => compareKeyBytes(a.start, b.start));
    if (inner.background) this.background = () => inner.background!();
  }

  /** The segments a caller's bounds meet, clipped to them. */
  private segmentsFor(gte: Uint8Array | undefined, lt: Uint8Array | undefined): KeySegment[] {
    const out: KeySegment[] = [];
    for (const s of this.visible) {
      const start = gte ? maxKey(s.start, gte) : s.start;
      const end = lt ? minEnd(s.end, lt) : s.end;
      if (below(start, end)) out.push({ start, end });
    }
    return out;
  }

  isVisible(key: Uint8Array): boolean {
    return this.visible.some((s) => compareKeyBytes(key, s.start) >= 0 && below(key, s.end));
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.isVisible(key) ? this.inner.get(key) : undefined;
  }

  async getMany(keys: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    const vals = this.inner.getMany ? await this.inner.getMany(keys) : await Promise.all(keys.map((k) => this.inner.get(k)));
    return vals.map((v, i) => (this.isVisible(keys[i]!) ? v : undefined));
  }

  write(ops: readonly KvOp[], opts?: { sync?: boolean }): Promise<void> {
    return this.inner.write(ops, opts);
  }

  iterator(opts: IteratorOptions = {}): KvIterator {
    return new SegmentsIterator(this.inner, this.segmentsFor(opts.gte, opts.lt), opts.reverse ?? false, opts);
  }

  async stats(): Promise<KvStats> {
    const s = await this.inner.stats();
    const sized = this.inner as SizedEngine;
    if (!sized.approximateBytes) return s;
    let visibleBytes = 0;
    for (const seg of this.visible) visibleBytes += await sized.approximateBytes(seg.start, seg.end.length > 0 ? seg.end : Uint8Array.of(0xff, 0xff));
    const share = s.sstBytes > 0 ? Math.min(1, visibleBytes / s.sstBytes) : 1;
    return { memtableBytes: s.memtableBytes, sstBytes: Math.min(s.sstBytes, visibleBytes), keysApprox: Math.round(s.keysApprox * share) };
  }


  flush(): Promise<void> {
    return this.inner.flush();
  }

  compactRange(start?: Uint8Array, end?: Uint8Array): Promise<void> {
    return this.inner.compactRange(start, end);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Walks segments in order (or reverse order), one bounded inner iterator at a time. */
class SegmentsIterator implements KvIterator {
  private idx: number;
  private cur: KvIterator | undefined;
  /** A seek target waiting for the segment `idx`'s iterator. */
  private pendingSeek: Uint8Array | undefined;

  constructor(
    private readonly inner: KvEngine,
    private readonly segs: KeySegment[],
    private readonly reverse: boolean,
    /** readAheadBytes and fillCache go to every inner iterator (a point-read iterator reads little ahead). */
    private readonly tuning: Pick<IteratorOptions, 'readAheadBytes' | 'fillCache'> = {},
  ) {
    this.idx = reverse ? segs.length - 1 : 0;
  }

  private open(i: number): KvIterator {
    const s = this.segs[i]!;
    const { readAheadBytes, fillCache } = this.tuning;
    return this.inner.iterator({ gte: s.start, ...(s.end.length > 0 ? { lt: s.end } : {}), reverse: this.reverse, ...(readAheadBytes !== undefined ? { readAheadBytes } : {}), ...(fillCache ? { fillCache } : {}) });
  }

  seek(target: Uint8Array): void {
    // The segment holding the target, or the next one in iteration order.
    let i: number;
    if (!this.reverse) {
      i = this.segs.findIndex((s) => below(target, s.end));
      if (i < 0) i = this.segs.length;
    } else {
      i = -1;
      for (let j = this.segs.length - 1; j >= 0; j--) {
        if (compareKeyBytes(target, this.segs[j]!.start) >= 0) {
          i = j;
          break;
        }
      }
    }
    // seek() is synchronous: the abandoned iterator closes in the background (its error has no reader).
    this.cur?.close().catch(() => undefined);
    this.cur = undefined;
    this.idx = i;
    this.pendingSeek = target;
  }

  async next(): Promise<[Uint8Array, Uint8Array] | undefined> {
    while (this.idx >= 0 && this.idx < this.segs.length) {
      if (!this.cur) {
        this.cur = this.open(this.idx);
        if (this.pendingSeek) this.cur.seek(this.pendingSeek);
        this.pendingSeek = undefined;
      }
      const kv = await this.cur.next();
      if (kv) return kv;
      await this.cur.close();
      this.cur = undefined;
      this.idx += this.reverse ? -1 : 1;
    }
    return undefined;
  }

  async nextBatch(): Promise<Array<[Uint8Array, Uint8Array]> | undefined> {
    while (this.idx >= 0 && this.idx < this.segs.length) {
      if (!this.cur) {
        this.cur = this.open(this.idx);
        if (this.pendingSeek) this.cur.seek(this.pendingSeek);
        this.pendingSeek = undefined;
      }
      const kvs = this.cur.nextBatch ? await this.cur.nextBatch() : await this.cur.next().then((kv) => (kv ? [kv] : undefined));
      if (kvs) return kvs;
      await this.cur.close();
      this.cur = undefined;
      this.idx += this.reverse ? -1 : 1;
    }
    return undefined;
  }

  async close(): Promise<void> {
    const c = this.cur;
    this.cur = undefined;
    this.idx = -1;
    await c?.close();
  }
}
