/**
 * docdb/row-kv.ts builds a batch's plain upserts in one buffer: its KvOps must be byte for byte what
 * the cell-by-cell encoding (cellsOf, versionKey, encodeStored) gives, in the same order, with the
 * same write ids, for any mix of upserts (TTLs, nulls, large strings), deletes and cells ops.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { HybridTime } from '../../common/hybrid-time';
import type { RowOp } from '../../docdb';
import { rowOpsToKv } from '../../docdb/row-kv';
import { cellsOf } from '../../docdb/row-cells';
import { encodeStored, versionKey } from '../../docdb/storage-keys';
import type { KvOp } from '../../docdb/kv-engine';
import { hashedDocKeyArb, smallPrimitiveArb } from './encoding-arbitraries';

function reference(ops: readonly RowOp[], ht: HybridTime, firstWriteId: number): { kv: KvOp[]; nextWriteId: number } {
  const kv: KvOp[] = [];
  let wid = firstWriteId;
  for (const op of ops) {
    for (const c of cellsOf(op)) {
      if (c.at !== undefined) kv.push({ type: 'put', key: versionKey(c.subKey, c.at.ht ?? ht, c.at.writeId), value: encodeStored(c.value) });
      else kv.push({ type: 'put', key: versionKey(c.subKey, ht, wid++), value: encodeStored(c.value) });
    }
  }
  return { kv, nextWriteId: wid };
}

const hex = (r: { kv: KvOp[]; nextWriteId: number }): unknown => ({ next: r.nextWriteId, kv: r.kv.map((o) => (o.type === 'put' ? [Buffer.from(o.key).toString('hex'), Buffer.from(o.value).toString('hex')] : o.type)) });

const columnArb = fc.record({ columnId: fc.integer({ min: 0, max: 300 }), value: fc.oneof(smallPrimitiveArb, fc.constant('y'.repeat(20_000))) });
const opArb: fc.Arbitrary<RowOp> = fc.oneof(
  fc.record({ type: fc.constant('upsert' as const), key: hashedDocKeyArb, columns: fc.array(columnArb, { maxLength: 4 }) }),
  fc.record({ type: fc.constant('upsert' as const), key: hashedDocKeyArb, columns: fc.array(columnArb, { maxLength: 3 }), ttlMs: fc.integer({ min: 1, max: 1e9 }) }),
  fc.record({ type: fc.constant('delete' as const), key: hashedDocKeyArb }),
  hashedDocKeyArb.map((key): RowOp => ({ type: 'cells', key, cells: [{ kind: 'put', columnId: 2, value: 'c', ht: 77n }, { kind: 'deleteColumn', columnId: 3 }] })),
) as fc.Arbitrary<RowOp>;

describe('docdb row-kv', () => {
  it('a batch of row ops gives the same KvOps (bytes, order, write ids) as the cell-by-cell encoding', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 12 }), fc.bigInt({ min: 1n, max: (1n << 60n) - 1n }), fc.integer({ min: 0, max: 100 }), (ops, ht, first) => {
        expect(hex(rowOpsToKv(ops, ht, first))).toEqual(hex(reference(ops, ht, first)));
      }),
      { numRuns: 150 },
    );
  });

  it('a large batch (the writer grows many times) keeps every earlier cell intact', () => {
    const ops: RowOp[] = Array.from({ length: 3000 }, (_, i) => ({ type: 'upsert', key: { hash: i & 0xffff, hashed: [BigInt(i)], range: [] }, columns: [{ columnId: 1, value: `v${i}`.repeat(i % 50) }, { columnId: 2, value: BigInt(i) }] }));
    expect(hex(rowOpsToKv(ops, 123456789n, 0))).toEqual(hex(reference(ops, 123456789n, 0)));
  });
});
