/**
 * History GC for RegularDB. level-rocksdb cannot install a compaction filter, so GC is a pass that
 * reads every row, deletes the versions no read at or after the cutoff can see, then asks RocksDB to
 * compact so the space is reclaimed. The rules (YugabyteDB's DocDB compaction):
 *  - keep every version newer than the cutoff, and per sub-key the newest version at or before it;
 *  - a row tombstone at or before the cutoff hides every older version of the row: drop those, and
 *    then the tombstone itself (it hides nothing any more);
 *  - the newest version at or before the cutoff of a sub-key is dropped too when it is a tombstone or
 *    expired at the cutoff and nothing older remains (reads then see "absent", which is the same).
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
  versionsDropped: number;
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

/** `compactRange`: ask RocksDB to compact afterwards (reclaims the space at once; see DocDb.gc). */
export async function gcRegular(engine: KvEngine, cutoff: HybridTime, write: (ops: KvOp[]) => Promise<void>, compactRange = true): Promise<GcResult> {
  const it = new GroupIterator(engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END }));
  let scanned = 0;
  let dropped = 0;
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
      const vs: V[] = g.entries.map(([key, value]) => {
        const p = parseRegularKey(key, g.docKeyBuf.length);
        return { key, id: p.sub.kind === 'column' ? `c${p.sub.id}` : p.sub.kind, ht: p.ht, writeId: p.writeId, value };
      });
      scanned += vs.length;
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
  return { versionsScanned: scanned, versionsDropped: dropped };
}
