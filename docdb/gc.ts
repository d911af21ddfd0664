/**
 * History GC for RegularDB. level-rocksdb cannot install a compaction filter, so GC is a pass that
 * reads every row, deletes the versions no read at or after the cutoff can see, then asks RocksDB to
 * compact so the space is reclaimed. The rules (YugabyteDB's DocDB compaction):
 *  - keep every version newer than the cutoff, and per sub-key the newest version at or before it;
 *  - a row tombstone at or before the cutoff hides every older version of the row: drop those, and
 *    then the tombstone itself (it hides nothing any more);
 *  - the newest version at or before the cutoff of a sub-key is dropped too when it is a tombstone or
 *    expired at the cutoff and nothing older remains (reads then see "absent", which is the same);
 *  - every version of a dropped column (a column id not in `schemaColumns`, the table's current
 *    schema) is dropped, whatever its time: reads ignore those versions already (row-assembler.ts),
 *    so this changes no read at any time. YugabyteDB's compaction filter does the same with the
 *    table's deleted columns. Safe only because a column id is never given again to a later column
 *    (master/ddl-validation.ts); a version applied later from the intents of a transaction that
 *    wrote the column before the drop goes at the next pass.
 * Columns and row tombstones follow the cell model (cell-versions.ts cellGcDrops, docs/cells.md): each
 * column's family decides how many versions stay (VERSIONS), which survive their TTL (MIN_VERSIONS)
 * and whether deleted ones stay (KEEP_DELETED_CELLS); with the default family (1 version, no TTL,
 * deleted cells not kept) that is exactly the rule above. The liveness column keeps the rule above.
 * Reads below the cutoff are not supported afterwards; the registry of active readers caps it.
 */
import type { HybridTime } from '../common/hybrid-time';
import { GroupIterator } from './group-iterator';
import type { KvEngine, KvOp } from './kv-engine';
import { isExpired } from './row-assembler';
import { cellGcDrops, DEFAULT_CELL_RULES, type CellEntry, type CellRules } from './cell-versions';
import { Tag, ValueTag } from './encoding';
import { decodeStored, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

/** Deletes per write batch during GC (bounds batch memory). */
const GC_BATCH_OPS_MAX = 10_000;

/** What one GC pass covers beyond the defaults (docs/cells.md). */
export interface GcPassOptions {
  /** Each column's family rules (absent: the default family's). */
  rulesOf?: (columnId: number) => CellRules;
  /** Incremental GC: start at this encoded DocKey (absent: the first row). */
  startKey?: Uint8Array;
  /** Incremental GC: stop after this many rows and answer a resume key (absent: the whole database). */
  rowsMax?: number;
}

export interface GcResult {
  /** Incremental GC: the row the next pass starts at; absent when this pass reached the end. */
  resumeKey?: Buffer;
  versionsScanned: number;
  /** Every version deleted, droppedColumnVersions included. */
  versionsDropped: number;
  /** Of versionsDropped: versions of dropped columns (ALTER TABLE ... DROP COLUMN). */
  droppedColumnVersions: number;
}

interface V {
  key: Buffer;
  id: string;
  /** Column id (-1: not a column). */
  columnId: number;
  ht: HybridTime;
  writeId: number;
  value: Buffer;
}

function older(a: V, b: V): boolean {
  return a.ht !== b.ht ? a.ht < b.ht : a.writeId < b.writeId;
}

/**
 * `schemaColumns`: the column ids of the table's current schema, or undefined when no column was ever
 * dropped (every column id is kept). `compactRange`: ask RocksDB to compact afterwards (reclaims the
 * space at once; see DocDb.gc).
 */
export async function gcRegular(
  engine: KvEngine,
  cutoff: HybridTime,
  write: (ops: KvOp[]) => Promise<void>,
  schemaColumns?: ReadonlySet<number>,
  compactRange = true,
  pass: GcPassOptions = {},
): Promise<GcResult> {
  const rulesOf = pass.rulesOf ?? ((): CellRules => DEFAULT_CELL_RULES);
  const start = pass.startKey && pass.startKey.length > 0 ? Buffer.from(pass.startKey) : REGULAR_DATA_START;
  const rowsMax = pass.rowsMax !== undefined && pass.rowsMax > 0 ? pass.rowsMax : Infinity;
  let rows = 0;
  let resumeKey: Buffer | undefined;
  const it = new GroupIterator(engine.iterator({ gte: start, lt: REGULAR_DATA_END }));
  let scanned = 0;
  let dropped = 0;
  let droppedColumn = 0;
  let batch: KvOp[] = [];
  const drop = async (k: Buffer): Promise<void> => {
    batch.push({ type: 'del', key: k });
    dropped++;
    if (batch.length >= GC_BATCH_OPS_MAX) {
      await write(batch);
      batch = [];
    }
  };
  try {
    for (;;) {
      const g = await it.next();
      if (g === undefined) break;
      if (rows >= rowsMax) {
        resumeKey = Buffer.from(g.docKeyBuf);
        break;
      }
      rows++;
      scanned += g.entries.length;
      const vs: V[] = [];
      for (const [key, value] of g.entries) {
        const p = parseRegularKey(key, g.docKeyBuf.length);
        if (p.sub.kind === 'column' && schemaColumns !== undefined && !schemaColumns.has(p.sub.id)) {
          droppedColumn++;
          await drop(key);
          continue;
        }
        vs.push({ key, id: p.sub.kind === 'column' ? `c${p.sub.id}` : p.sub.kind, columnId: p.sub.kind === 'column' ? p.sub.id : -1, ht: p.ht, writeId: p.writeId, value });
      }
      // The row tombstone in force at the cutoff (newest row-level version <= cutoff): it hides older liveness.
      let tomb: V | undefined;
      for (const v of vs) if (v.id === 'row' && v.ht <= cutoff && (tomb === undefined || older(tomb, v))) tomb = v;
      let newestLiveness: V | undefined;
      for (const v of vs) if (v.id === 'liveness' && v.ht <= cutoff && (newestLiveness === undefined || older(newestLiveness, v))) newestLiveness = v;
      for (const v of vs) {
        if (v.id !== 'liveness' || v.ht > cutoff) continue;
        if ((tomb !== undefined && older(v, tomb)) || newestLiveness !== v) await drop(v.key);
        else if (isExpired(decodeStored(v.value), v.ht, cutoff)) await drop(v.key);
      }
      for (const k of cellDrops(vs, rulesOf, cutoff)) await drop(k);
    }
  } finally {
    await it.close();
  }
  if (batch.length > 0) await write(batch);
  // A partial pass leaves the space to RocksDB's own compactions (or to the pass that ends the round).
  if (compactRange && resumeKey === undefined) await engine.compactRange();
  return { versionsScanned: scanned, versionsDropped: dropped, droppedColumnVersions: droppedColumn, ...(resumeKey ? { resumeKey } : {}) };
}

/**
 * A stored value's kind and TTL without decoding its payload (GC needs no value, and a large string
 * would cost a copy per version): the TTL prefix, then the tag.
 */
function peekValue(b: Buffer): { tag: number; ttlMs?: number } {
  if (b.length >= 10 && b[0] === ValueTag.TTL) return { tag: b[9]!, ttlMs: Number(b.readBigUInt64BE(1)) };
  return { tag: b[0] ?? Tag.NULL_LOW };
}

/** The keys of column versions and row tombstones of one row that the cell model's GC deletes. */
function cellDrops(vs: readonly V[], rulesOf: (columnId: number) => CellRules, cutoff: HybridTime): Buffer[] {
  const keyOf = new Map<CellEntry, Buffer>();
  const byColumn = new Map<number, CellEntry[]>();
  const rowMarkers: CellEntry[] = [];
  for (const v of vs) {
    if (v.id === 'liveness') continue;
    const { tag, ttlMs } = peekValue(v.value);
    let e: CellEntry;
    if (v.id === 'row') e = { kind: 'deleteRow', columnId: -1, ht: v.ht, writeId: v.writeId };
    else if (tag === ValueTag.VERSION_TOMBSTONE) e = { kind: 'deleteVersion', columnId: v.columnId, ht: v.ht, writeId: v.writeId };
    // A tombstone, or a stored null (which reads as one).
    else if (tag === ValueTag.TOMBSTONE || tag === Tag.NULL_LOW) e = { kind: 'deleteColumn', columnId: v.columnId, ht: v.ht, writeId: v.writeId };
    else e = { kind: 'put', columnId: v.columnId, ht: v.ht, writeId: v.writeId, ...(ttlMs !== undefined ? { ttlMs } : {}) };
    keyOf.set(e, v.key);
    if (e.kind === 'deleteRow') rowMarkers.push(e);
    else {
      const list = byColumn.get(e.columnId);
      if (list) list.push(e);
      else byColumn.set(e.columnId, [e]);
    }
  }
  return [...cellGcDrops(byColumn, rowMarkers, rulesOf, cutoff)].map((e) => keyOf.get(e)!);
}
