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
 * Reads below the cutoff are not supported afterwards; the registry of active readers caps it.
 */
import type { HybridTime } from '../common/hybrid-time';
import { GroupIterator } from './group-iterator';
import type { KvEngine, KvOp } from './kv-engine';
import { isExpired } from './row-assembler';
import { decodeStored, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from './storage-keys';

/** Deletes per write batch during GC (bounds batch memory). */
const GC_BATCH_OPS_MAX = 10_000;

export interface GcResult {
  versionsScanned: number;
  /** Every version deleted, droppedColumnVersions included. */
  versionsDropped: number;
  /** Of versionsDropped: versions of dropped columns (ALTER TABLE ... DROP COLUMN). */
  droppedColumnVersions: number;
}

interface V {
  key: Buffer;
  id: string;
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
): Promise<GcResult> {
  const it = new GroupIterator(engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END }));
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
      scanned += g.entries.length;
      const vs: V[] = [];
      for (const [key, value] of g.entries) {
        const p = parseRegularKey(key, g.docKeyBuf.length);
        if (p.sub.kind === 'column' && schemaColumns !== undefined && !schemaColumns.has(p.sub.id)) {
          droppedColumn++;
          await drop(key);
          continue;
        }
        vs.push({ key, id: p.sub.kind === 'column' ? `c${p.sub.id}` : p.sub.kind, ht: p.ht, writeId: p.writeId, value });
      }
      // The row tombstone in force at the cutoff (newest row-level version <= cutoff).
      let tomb: V | undefined;
      for (const v of vs) if (v.id === 'row' && v.ht <= cutoff && (tomb === undefined || older(tomb, v))) tomb = v;
      // Per sub-key: the newest version <= cutoff.
      const newestAtCutoff = new Map<string, V>();
      for (const v of vs) {
        if (v.ht > cutoff) continue;
        const cur = newestAtCutoff.get(v.id);
        if (cur === undefined || older(cur, v)) newestAtCutoff.set(v.id, v);
      }
      for (const v of vs) {
        if (v.ht > cutoff) continue;
        if (v.id === 'row') {
          // Every row-level version is a tombstone; the one in force hides only what we drop below.
          await drop(v.key);
          continue;
        }
        if (tomb !== undefined && older(v, tomb)) {
          await drop(v.key);
          continue;
        }
        if (newestAtCutoff.get(v.id) !== v) {
          await drop(v.key);
          continue;
        }
        const sv = decodeStored(v.value);
        if (sv.type === 'tombstone' || isExpired(sv, v.ht, cutoff)) await drop(v.key);
      }
    }
  } finally {
    await it.close();
  }
  if (batch.length > 0) await write(batch);
  if (compactRange) await engine.compactRange();
  return { versionsScanned: scanned, versionsDropped: dropped, droppedColumnVersions: droppedColumn };
}
