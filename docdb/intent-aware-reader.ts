/**
 * Intent-aware reads (YugabyteDB's IntentAwareIterator): merge RegularDB and IntentsDB row by row.
 * Only strong-write intents carry data. The reading transaction's own intents are visible; another
 * transaction's intent is visible only if it committed at or before the read time (then it counts as
 * a committed version at its commit time); anything else is invisible.
 *
 * The IntentsDB iterator is opened before the RegularDB one: apply writes a chunk into RegularDB
 * before deleting it from IntentsDB, so with this order every record is in at least one snapshot.
 * (A record seen in both is the same version twice, harmless.)
 */
import { DbError, ErrorCode } from '../common/errors';
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import type { DocKey, ReadOptions, Row, ScanResult, TxnStatusAnswer } from './doc-db-api';
import { GroupIterator, type DocKeyGroup } from './group-iterator';
import { isStrongWrite } from './intents-db';
import type { KvEngine, KvIterator } from './kv-engine';
import { assembleRow, type CellVersion, type ColumnTtls } from './row-assembler';
import { decodePackedCells, isPacked, subKindOfSuffix } from './packed-intent';
import { decodeDocKeyBuf, splitIntentValue, decodeStored, INTENTS_DATA_END, INTENTS_DATA_START, parseIntentKey, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

export interface ReadRange {
  /** Inclusive lower bound (encoded DocKey). */
  start?: Uint8Array;
  /** Exclusive upper bound. */
  end?: Uint8Array;
  limit?: number;
  /**
   * Stop once the rows returned so far took this many stored bytes (keys and values read for them;
   * at least one row is returned) and answer a resume key for the rest: bounds a response's size
   * when rows are large, whatever the row limit.
   */
  maxBytes?: number;
}

/** Rows returned by one scan call at most (a larger limit is cut here, with a resume key). */
export const SCAN_ROWS_MAX = 1_000_000;

function maxBuf(a: Uint8Array | undefined, b: Buffer): Buffer {
  return a !== undefined && Buffer.compare(a, b) > 0 ? Buffer.from(a) : b;
}
function minBuf(a: Uint8Array | undefined, b: Buffer): Buffer {
  return a !== undefined && Buffer.compare(a, b) < 0 ? Buffer.from(a) : b;
}

function groupBytes(g: DocKeyGroup | undefined): number {
  let n = 0;
  for (const [k, v] of g?.entries ?? []) n += k.length + v.length;
  return n;
}

const EMPTY_ITERATOR: KvIterator = { seek: () => undefined, next: () => Promise.resolve(undefined), close: () => Promise.resolve() };

/** ReadOptions plus what DocDB knows of the table: its schema's column ids (see assembleRow). */
export type ReaderOptions = ReadOptions & { schemaColumns?: ReadonlySet<number>; columnTtls?: ColumnTtls };

export class IntentAwareReader {
  private readonly statuses = new Map<TxnId, Promise<TxnStatusAnswer>>();

  constructor(
    private readonly regular: KvEngine,
    private readonly intents: KvEngine,
    private readonly opts: ReaderOptions,
    /** False when IntentsDB holds no strong intent: the read then skips it entirely (fast path). */
    private readonly readIntents = true,
    /** Told each row's committed versions as read from RegularDB (the row cache fills from it). */
    private readonly onRegularRow?: (docKeyBuf: Buffer, key: DocKey, versions: CellVersion[]) => void,
  ) {}

  private status(txnId: TxnId): Promise<TxnStatusAnswer> {
    let p = this.statuses.get(txnId);
    if (!p) {
      p = this.opts.resolveStatus(txnId, this.opts.readHt);
      this.statuses.set(txnId, p);
    }
    return p;
  }

  async read(range: ReadRange): Promise<ScanResult> {
    const limit = Math.min(range.limit ?? SCAN_ROWS_MAX, SCAN_ROWS_MAX);
    const maxBytes = range.maxBytes ?? Infinity;
    let bytes = 0;
    // Intents first (see header).
    const ig = new GroupIterator(this.readIntents ? this.intents.iterator({ gte: maxBuf(range.start, INTENTS_DATA_START), lt: minBuf(range.end, INTENTS_DATA_END) }) : EMPTY_ITERATOR);
    const rg = new GroupIterator(this.regular.iterator({ gte: maxBuf(range.start, REGULAR_DATA_START), lt: minBuf(range.end, REGULAR_DATA_END) }));
    const rows: Row[] = [];
    try {
      for (;;) {
        const a = await rg.peek();
        const b = await ig.peek();
        if (a === undefined && b === undefined) return { rows };
        const cmp = a === undefined ? 1 : b === undefined ? -1 : Buffer.compare(a.docKeyBuf, b.docKeyBuf);
        if (rows.length >= limit || (rows.length > 0 && bytes >= maxBytes)) return { rows, resumeKey: cmp <= 0 ? a!.docKeyBuf : b!.docKeyBuf };
        const reg = cmp <= 0 ? await rg.next() : undefined;
        const int = cmp >= 0 ? await ig.next() : undefined;
        const row = await this.row(reg, int);
        if (row) {
          rows.push(row);
          bytes += groupBytes(reg) + groupBytes(int);
        }
      }
    } finally {
      await rg.close();
      await ig.close();
    }
  }

  /** The row of one DocKey's groups (either may be absent) at the read time; `cellHts`: see assembleRow. */
  async row(reg: DocKeyGroup | undefined, int: DocKeyGroup | undefined, cellHts?: Map<number, HybridTime>): Promise<Row | undefined> {
    const docKeyBuf = (reg ?? int)!.docKeyBuf;
    const versions: CellVersion[] = [];
    for (const [k, v] of reg?.entries ?? []) {
      const p = parseRegularKey(k, docKeyBuf.length);
      versions.push({ sub: p.sub, ht: p.ht, writeId: p.writeId, own: false, value: decodeStored(v) });
    }
    const key = decodeDocKeyBuf(docKeyBuf);
    if (this.onRegularRow && int === undefined) this.onRegularRow(docKeyBuf, key, versions.slice());
    for (const [k, v] of int?.entries ?? []) {
      const p = parseIntentKey(k, docKeyBuf.length);
      if (!isStrongWrite(p.typeset)) continue;
      const iv = splitIntentValue(v);
      if (iv.encoded === undefined) continue;
      const own = this.opts.txnId !== undefined && iv.txnId === this.opts.txnId;
      // Another transaction's intent counts once it committed (after the read time too: still a
      // version, for the read-restart check).
      const st = own ? undefined : await this.status(iv.txnId);
      if (st !== undefined && st.status !== 'COMMITTED') continue;
      const at = st === undefined ? p.ht : st.commitHt;
      if (!isPacked(iv.encoded)) {
        versions.push({ sub: p.sub, ht: at, writeId: iv.writeId, own, value: decodeStored(iv.encoded) });
        continue;
      }
      // A packed row (packed-intent.ts): a version per cell it carries.
      for (const c of decodePackedCells(iv.encoded)) versions.push({ sub: subKindOfSuffix(c.suffix), ht: at, writeId: c.writeId, own, value: decodeStored(c.encoded) });
    }
    const res = assembleRow(key, versions, this.opts.readHt, this.opts.globalLimitHt, this.opts.columns, this.opts.schemaColumns, cellHts, this.opts.columnTtls);
    if (res.type === 'restart') throw readRestart(this.opts.readHt, res.restartHt, this.opts.globalLimitHt);
    return res.type === 'row' ? res.row : undefined;
  }
}

/** READ_RESTART; details carry readHt, restartHt and globalLimitHt (decimal strings) for the retry. */
export function readRestart(readHt: HybridTime, restartHt: HybridTime, globalLimitHt?: HybridTime): DbError {
  return new DbError(ErrorCode.READ_RESTART, `read at ${readHt} met a version at ${restartHt} inside the uncertainty window; restart the read`, {
    readHt: readHt.toString(),
    restartHt: restartHt.toString(),
    ...(globalLimitHt !== undefined ? { globalLimitHt: globalLimitHt.toString() } : {}),
  });
}
