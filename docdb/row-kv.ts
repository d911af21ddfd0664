/**
 * The RegularDB writes of a batch of plain row operations (RegularDb.rowOpsToKv). An upsert's cells
 * — liveness, then its columns in order — are encoded straight into one buffer for the whole batch:
 * each cell's version key (DocKey, sub key, '#' time) and value are written once, and its KvOp gets
 * two views of that buffer. Going through cellsOf instead made, per cell, a Cell and a sub-key
 * object, a sub key, a version key and a value of their own, and a writer for the value: garbage
 * collection was a third of a replica's CPU for a 5,000-row COPY batch (docs/raft-write-path.md,
 * "Batches of rows"). Deletes and cells ops keep cellsOf. The bytes are the same either way
 * (test/unit/docdb-row-kv.test.ts).
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import type { RowOp, StoredValue } from './doc-db-api';
import { ByteWriter, writeDocHybridTimeSuffix, writeSubKey, writeValue } from './encoding';
import type { KvOp } from './kv-engine';
import { cellsOf, columnValue } from './row-cells';
import { encodeRowDocKey, encodeStored, versionKey } from './storage-keys';

/** Largest write id of a batch (a u32 in the DocHybridTime). */
export const WRITE_ID_MAX = 0xffff_ffff;

const EMPTY = Buffer.alloc(0);

/** KvOps writing `ops` at `ht` with write ids from `firstWriteId` (in op order); returns them and the next id. */
export function rowOpsToKv(ops: readonly RowOp[], ht: HybridTime, firstWriteId: number): { kv: KvOp[]; nextWriteId: number } {
  const kv: KvOp[] = [];
  let wid = firstWriteId;
  let arena: ByteWriter | undefined;
  // Per arena cell: its KvOp's index, then key start, value start, value end (the key ends where the value starts).
  const spans: number[] = [];
  for (const op of ops) {
    if (op.type === 'upsert') {
      arena ??= new ByteWriter(ops.length * 256);
      wid = upsertToArena(op, ht, wid, arena, kv, spans);
      continue;
    }
    for (const c of cellsOf(op)) {
      if (c.at !== undefined) {
        // A cell of a cells op: its own timestamp (or the batch's) and its reserved write id.
        kv.push({ type: 'put', key: versionKey(c.subKey, c.at.ht ?? ht, c.at.writeId), value: encodeStored(c.value) });
        continue;
      }
      assert(wid <= WRITE_ID_MAX, 'too many writes in one batch');
      kv.push({ type: 'put', key: versionKey(c.subKey, ht, wid++), value: encodeStored(c.value) });
    }
  }
  if (arena !== undefined) {
    // The writer's final buffer: every span was written before it last grew, and growing copies.
    const buf = arena.raw();
    for (let i = 0; i < spans.length; i += 4) {
      const op = kv[spans[i]!] as { key: Uint8Array; value: Uint8Array };
      op.key = buf.subarray(spans[i + 1]!, spans[i + 2]!);
      op.value = buf.subarray(spans[i + 2]!, spans[i + 3]!);
    }
  }
  return { kv, nextWriteId: wid };
}

/** An upsert's cells into `w`, their KvOps (keys and values filled in later from `spans`) into `kv`. */
function upsertToArena(op: Extract<RowOp, { type: 'upsert' }>, ht: HybridTime, firstWriteId: number, w: ByteWriter, kv: KvOp[], spans: number[]): number {
  const docKey = encodeRowDocKey(op.key);
  const ttl = op.ttlMs;
  let wid = firstWriteId;
  writeCell(w, docKey, 'liveness', ht, wid++, ttl === undefined ? { type: 'liveness' } : { type: 'liveness', ttlMs: ttl }, kv, spans);
  for (const c of op.columns) writeCell(w, docKey, c.columnId, ht, wid++, columnValue(c, ttl), kv, spans);
  return wid;
}

/** One cell's version key and value into `w`; its KvOp (filled in later) into `kv`, its span into `spans`. */
function writeCell(w: ByteWriter, docKey: Buffer, column: 'liveness' | number, ht: HybridTime, wid: number, value: StoredValue, kv: KvOp[], spans: number[]): void {
  assert(wid <= WRITE_ID_MAX, 'too many writes in one batch');
  const keyStart = w.length;
  w.bytes(docKey);
  writeSubKey(w, column);
  writeDocHybridTimeSuffix(w, ht, wid);
  const valueStart = w.length;
  writeValue(w, value);
  spans.push(kv.length, keyStart, valueStart, w.length);
  kv.push({ type: 'put', key: EMPTY, value: EMPTY });
}
