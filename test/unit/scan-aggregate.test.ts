/**
 * Aggregates folded on the tablets (common/scan-aggregate.ts): pages folded separately and merged
 * equal the whole folded at once (property test), the wire form round-trips, bad specs are refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { decodePartials, emptyPartials, encodePartials, finalValues, foldRows, mergePartials, parseAggregateSpecs, type AggregateWireSpec } from '../../common/scan-aggregate';

const SPECS: AggregateWireSpec[] = [{ fn: 'count' }, { fn: 'count', columnId: 1 }, { fn: 'sum', columnId: 1 }, { fn: 'min', columnId: 1 }, { fn: 'max', columnId: 2 }, { fn: 'sum', columnId: 3 }];
type R = { columns: Map<number, unknown> };
const row = (n: bigint | null, s: string | null, f: number): R => new Map<number, unknown>([...(n === null ? [] : [[1, n] as const]), ...(s === null ? [] : [[2, s] as const]), [3, f]]) as unknown as R;

describe('scan aggregates', () => {
  it('scan aggregate: pages folded on tablets and merged (through the wire form) equal the rows folded at once', () => {
    const arbRow = fc.tuple(fc.option(fc.bigInt({ min: -(1n << 40n), max: 1n << 40n })), fc.option(fc.string({ maxLength: 4 })), fc.integer({ min: -1000, max: 1000 }));
    fc.assert(fc.property(fc.array(fc.array(arbRow, { maxLength: 20 }), { maxLength: 6 }), (pages) => {
      const toRows = (p: Array<[bigint | null, string | null, number]>): R[] => p.map(([n, s, f]) => ({ columns: row(n, s, f) as unknown as Map<number, unknown> }));
      const merged = emptyPartials(SPECS);
      for (const p of pages) {
        const acc = emptyPartials(SPECS);
        foldRows(SPECS, acc, toRows(p));
        mergePartials(SPECS, merged, decodePartials(encodePartials(acc)));
      }
      const all = pages.flat();
      const ns = all.flatMap(([n]) => (n === null ? [] : [n]));
      const ss = all.flatMap(([, s]) => (s === null ? [] : [s]));
      expect(finalValues(SPECS, merged)).toEqual([
        BigInt(all.length),
        BigInt(ns.length),
        ns.length ? ns.reduce((a, b) => a + b, 0n) : null,
        ns.length ? ns.reduce((a, b) => (b < a ? b : a)) : null,
        ss.length ? ss.reduce((a, b) => (b > a ? b : a)) : null,
        all.length ? all.reduce((a, [, , f]) => a + f, 0) : null,
      ]);
    }));
  });

  it('scan aggregate: NaN is the largest double (as DocDB orders it and PostgreSQL takes it for max) and NaN / infinities cross the wire intact', () => {
    const specs: AggregateWireSpec[] = [{ fn: 'max', columnId: 3 }, { fn: 'min', columnId: 3 }, { fn: 'sum', columnId: 3 }];
    const pages = [[1.5, NaN], [-Infinity, 2], [Infinity]];
    const merged = emptyPartials(specs);
    for (const p of pages) {
      const acc = emptyPartials(specs);
      foldRows(specs, acc, p.map((f) => ({ columns: new Map<number, unknown>([[3, f]]) })));
      mergePartials(specs, merged, decodePartials(encodePartials(acc)));
    }
    const [max, min, sum] = finalValues(specs, merged);
    expect(max).toBeNaN();
    expect(min).toBe(-Infinity);
    expect(sum).toBeNaN();
    const noNaN = emptyPartials(specs);
    mergePartials(specs, noNaN, decodePartials(encodePartials([{ n: 2, v: Infinity }, { n: 2, v: -Infinity }, { n: 2, v: 3 }])));
    expect(finalValues(specs, noNaN)).toEqual([Infinity, -Infinity, 3]);
  });

  it('scan aggregate: malformed or unknown specs are INVALID_ARGUMENT; sum of a string column too', () => {
    const ids = new Set([0, 1, 2]);
    for (const bad of ['not json', '[]', '[{"fn":"avg","columnId":1}]', '[{"fn":"sum"}]', '[{"fn":"min","columnId":9}]', '{"fn":"count"}']) {
      expect(() => parseAggregateSpecs(bad, ids), bad).toThrow(DbError);
    }
    expect(parseAggregateSpecs('[{"fn":"count"},{"fn":"max","columnId":2}]', ids)).toEqual([{ fn: 'count' }, { fn: 'max', columnId: 2 }]);
    const acc = emptyPartials([{ fn: 'sum', columnId: 2 }]);
    try {
      foldRows([{ fn: 'sum', columnId: 2 }], acc, [{ columns: new Map([[2, 'x']]) }]);
      expect.unreachable();
    } catch (e) {
      expect((e as DbError).code).toBe(ErrorCode.INVALID_ARGUMENT);
    }
  });
});

// A scanned row holds its primary-key columns in its DocKey: `min(k)` over a key column found
// nothing to fold (NULL in SQL) until the tablet put the key's values among the columns.
describe('scan aggregates over key columns', () => {
  it('min, max, sum and count of hash and range key columns fold the DocKey values (tserver withKeyColumns)', async () => {
    const { withKeyColumns } = await import('../../tserver/tablet-service');
    const schema = { columns: [{ name: 'h', id: 0, type: 'int64' as const, nullable: false }, { name: 'r', id: 1, type: 'string' as const, nullable: false }, { name: 'v', id: 2, type: 'int64' as const, nullable: true }], hashColumns: ['h'], rangeColumns: ['r'] };
    const rows = [5n, 9n, -3n].map((h, i) => ({ key: { hash: 1, hashed: [h], range: [`r${i}`] }, columns: new Map<number, bigint | string | null>([[2, BigInt(i)]]), writeHt: 0n }));
    const specs: AggregateWireSpec[] = [{ fn: 'min', columnId: 0 }, { fn: 'max', columnId: 0 }, { fn: 'sum', columnId: 0 }, { fn: 'count', columnId: 0 }, { fn: 'max', columnId: 1 }, { fn: 'sum', columnId: 2 }];
    const acc = emptyPartials(specs);
    foldRows(specs, acc, withKeyColumns(schema as never, specs, rows as never));
    expect(finalValues(specs, acc)).toEqual([-3n, 9n, 11n, 3n, 'r2', 3n]);
    // No aggregate reads a key column: the rows as they are.
    const plain: AggregateWireSpec[] = [{ fn: 'sum', columnId: 2 }];
    expect(withKeyColumns(schema as never, plain, rows as never)).toBe(rows);
  });
});
