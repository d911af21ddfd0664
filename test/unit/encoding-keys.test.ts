import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ErrorCode } from '../../common/errors';
import { HT_MAX, type HybridTime } from '../../common/hybrid-time';
import type { DocKey, Primitive } from '../../docdb/doc-db-api';
import {
  appendDocHybridTime,
  compareDocHybridTimesNewestFirst,
  compareDocKeys,
  comparePrimitives,
  decodeDocHybridTimeFromEnd,
  decodeDocKey,
  decodeSubDocKey,
  decodeSubKeyAt,
  docKeyBoundsForHashRange,
  docKeyLength,
  docKeyPrefixForHash,
  encodeDocHybridTime,
  encodeDocKey,
  encodeSubDocKey,
  encodeSubDocKeyFull,
  makeDocKey,
  partitionHash,
  versionSeekKey,
  WRITE_ID_MAX,
  ByteWriter,
  writeDocHybridTimeSuffix,
} from '../../docdb/encoding';
import { hashedDocKeyArb, isPrefix, rangeDocKeyArb, realDocKeyArb, sign } from './encoding-arbitraries';

const RUNS = 1000;

function sameDocKey(a: DocKey, b: DocKey): boolean {
  const eq = (x: Primitive[], y: Primitive[]): boolean => x.length === y.length && x.every((v, i) => comparePrimitives(v, y[i]) === 0);
  return a.hash === b.hash && eq(a.hashed, b.hashed) && eq(a.range, b.range);
}

const htArb: fc.Arbitrary<HybridTime> = fc.oneof(fc.bigInt({ min: 0n, max: HT_MAX }), fc.bigInt({ min: 0n, max: 5n }), fc.constantFrom(0n, HT_MAX, 1n << 63n));
const writeIdArb = fc.oneof(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 0, max: WRITE_ID_MAX }), fc.constantFrom(15, 16, 2047, 2048, WRITE_ID_MAX));
type Column = number | 'liveness' | undefined;
const columnArb: fc.Arbitrary<Column> = fc.oneof(fc.constant(undefined), fc.constant('liveness' as const), fc.integer({ min: 0, max: 3 }), fc.constantFrom(127, 128, 0xffffffff));

/** row < liveness < columns by id. */
function columnRank(c: Column): number {
  return c === undefined ? -2 : c === 'liveness' ? -1 : c;
}

describe('encoding: DocKey', () => {
  it('encoding: DocKey round-trips (hash and range shapes, descending range columns)', () => {
    fc.assert(
      fc.property(fc.oneof(realDocKeyArb, hashedDocKeyArb, rangeDocKeyArb), fc.array(fc.boolean(), { maxLength: 3 }), (k, desc) => {
        const b = encodeDocKey(k, { rangeDescending: desc });
        const d = decodeDocKey(b);
        expect(d.end).toBe(b.length);
        expect(sameDocKey(d.key, k)).toBe(true);
        expect(docKeyLength(Buffer.concat([b, Buffer.from([0x4b, 0x01])]))).toBe(b.length);
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: DocKey byte order = (hash, hashed components, range components), shorter first', () => {
    for (const arb of [hashedDocKeyArb, rangeDocKeyArb]) {
      fc.assert(
        fc.property(arb, arb, fc.array(fc.boolean(), { maxLength: 3 }), (a, b, desc) => {
          const opts = { rangeDescending: desc };
          expect(sign(Buffer.compare(encodeDocKey(a, opts), encodeDocKey(b, opts)))).toBe(sign(compareDocKeys(a, b, opts)));
        }),
        { numRuns: RUNS },
      );
    }
  });

  it('encoding: no DocKey encoding is a prefix of another DocKey of the same table shape', () => {
    for (const arb of [hashedDocKeyArb, rangeDocKeyArb]) {
      fc.assert(
        fc.property(arb, arb, (a, b) => {
          if (compareDocKeys(a, b) === 0) return;
          const ea = encodeDocKey(a);
          const eb = encodeDocKey(b);
          expect(isPrefix(ea, eb) || isPrefix(eb, ea)).toBe(false);
        }),
        { numRuns: RUNS },
      );
    }
  });

  it('encoding: a DocKey and every SubDocKey under it start with the DocKey and its hash prefix', () => {
    fc.assert(
      fc.property(realDocKeyArb, columnArb, htArb, (k, col, ht) => {
        const dk = encodeDocKey(k);
        const full = appendDocHybridTime(encodeSubDocKey(dk, col), ht, 0);
        expect(isPrefix(dk, full)).toBe(true);
        expect(isPrefix(docKeyPrefixForHash(k.hash), full)).toBe(true);
        const { lower, upper } = docKeyBoundsForHashRange(k.hash, k.hash + 1);
        expect(Buffer.compare(lower, full) <= 0 && Buffer.compare(full, upper) < 0).toBe(true);
      }),
      { numRuns: 300 },
    );
    // The last tablet's upper bound is past every hashed key.
    const top = encodeDocKey(makeDocKey([0n], ['\uffff']));
    expect(Buffer.compare(top, docKeyBoundsForHashRange(0, 0x10000).upper)).toBe(-1);
  });

  it('encoding: malformed DocKeys are CORRUPTION (missing group end, hash without components)', () => {
    const b = encodeDocKey(makeDocKey([1n], ['x']));
    for (let n = 0; n < b.length; n++) {
      expect(() => decodeDocKey(b.subarray(0, n))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
      expect(() => docKeyLength(b.subarray(0, n))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    }
    fc.assert(
      fc.property(realDocKeyArb, fc.array(fc.boolean(), { maxLength: 3 }), fc.nat(), (k, desc, cut) => {
        const e = encodeDocKey(k, { rangeDescending: desc });
        expect(() => docKeyLength(e.subarray(0, cut % e.length))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
      }),
      { numRuns: 300 },
    );
    expect(() => decodeDocKey(Buffer.from([0x47, 0, 1, 0x21, 0x21]))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });
});

describe('encoding: SubDocKey and DocHybridTime', () => {
  it('encoding: versioned SubDocKey byte order = (DocKey, row < liveness < column id, NEWER time first)', () => {
    const entry = fc.record({ key: hashedDocKeyArb, col: columnArb, ht: htArb, writeId: writeIdArb });
    fc.assert(
      fc.property(entry, entry, (a, b) => {
        const ea = appendDocHybridTime(encodeSubDocKey(encodeDocKey(a.key), a.col), a.ht, a.writeId);
        const eb = appendDocHybridTime(encodeSubDocKey(encodeDocKey(b.key), b.col), b.ht, b.writeId);
        let logical = compareDocKeys(a.key, b.key);
        if (logical === 0) logical = sign(columnRank(a.col) - columnRank(b.col));
        if (logical === 0) logical = compareDocHybridTimesNewestFirst(a, b);
        expect(sign(Buffer.compare(ea, eb))).toBe(sign(logical));
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: the suffix written into a batch buffer is appendDocHybridTime\'s, for small (cached) and large write ids', () => {
    const ids = fc.oneof(writeIdArb, fc.integer({ min: 60, max: 70_000 }));
    fc.assert(
      fc.property(htArb, ids, ids, (ht, a, b) => {
        const w = new ByteWriter(8);
        w.bytes(Buffer.from('k'));
        writeDocHybridTimeSuffix(w, ht, a);
        const mid = w.length;
        writeDocHybridTimeSuffix(w, ht, b);
        const out = w.finish();
        expect(Buffer.from(out.subarray(0, mid))).toEqual(appendDocHybridTime(Buffer.from('k'), ht, a));
        expect(Buffer.from(out.subarray(mid))).toEqual(appendDocHybridTime(Buffer.alloc(0), ht, b));
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: intent keys sort by (DocKey, row < liveness < column, type set, NEWER time first)', () => {
    const entry = fc.record({ key: hashedDocKeyArb, col: columnArb, types: fc.integer({ min: 1, max: 15 }), ht: htArb, writeId: writeIdArb });
    fc.assert(
      fc.property(entry, entry, (a, b) => {
        const ea = encodeSubDocKeyFull({ docKey: encodeDocKey(a.key), column: a.col, intentTypes: a.types, ht: a.ht, writeId: a.writeId });
        const eb = encodeSubDocKeyFull({ docKey: encodeDocKey(b.key), column: b.col, intentTypes: b.types, ht: b.ht, writeId: b.writeId });
        let logical = compareDocKeys(a.key, b.key);
        if (logical === 0) logical = sign(columnRank(a.col) - columnRank(b.col));
        if (logical === 0) logical = sign(a.types - b.types);
        if (logical === 0) logical = compareDocHybridTimesNewestFirst(a, b);
        expect(sign(Buffer.compare(ea, eb))).toBe(sign(logical));
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: DocHybridTime alone sorts newest first and round-trips', () => {
    fc.assert(
      fc.property(htArb, writeIdArb, htArb, writeIdArb, (h1, w1, h2, w2) => {
        const e1 = encodeDocHybridTime(h1, w1);
        expect(sign(Buffer.compare(e1, encodeDocHybridTime(h2, w2)))).toBe(compareDocHybridTimesNewestFirst({ ht: h1, writeId: w1 }, { ht: h2, writeId: w2 }));
        const d = decodeDocHybridTimeFromEnd(Buffer.concat([Buffer.from([0x23]), e1]));
        expect(d).toEqual({ ht: h1, writeId: w1, timeStart: 0 });
      }),
      { numRuns: RUNS },
    );
    // Small write ids cost one byte: '#' + 8 + 1.
    expect(encodeDocHybridTime(1n, 15).length).toBe(9);
    expect(encodeDocHybridTime(1n, WRITE_ID_MAX).length).toBe(13);
  });

  it('encoding: appendDocHybridTime = key + "#" + the DocHybridTime, whatever times and write ids came before (its suffix cache)', () => {
    // Calls alternate between times and write ids so that a suffix kept for one time would show
    // up under another if the cache were keyed wrongly.
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.uint8Array({ maxLength: 12 }), fc.oneof(htArb, fc.constantFrom(7n, 8n)), fc.oneof(writeIdArb, fc.integer({ min: 0, max: 70 }), fc.integer({ min: 4000, max: 4200 }))), { minLength: 1, maxLength: 30 }), (calls) => {
        for (const [key, ht, writeId] of calls) {
          const got = appendDocHybridTime(key, ht, writeId);
          expect(got.equals(Buffer.concat([Buffer.from(key), Buffer.from([0x23]), encodeDocHybridTime(ht, writeId)]))).toBe(true);
        }
      }),
      { numRuns: RUNS },
    );
    expect(() => appendDocHybridTime(Buffer.alloc(1), HT_MAX + 1n, 0)).toThrow();
    expect(() => appendDocHybridTime(Buffer.alloc(1), 1n, 1.5)).toThrow();
  });

  it('encoding: decodeDocHybridTimeFromEnd splits the time off full regular and intent keys', () => {
    fc.assert(
      fc.property(realDocKeyArb, columnArb, fc.option(fc.integer({ min: 1, max: 15 }), { nil: undefined }), htArb, writeIdArb, (k, col, types, ht, writeId) => {
        const dk = encodeDocKey(k);
        const withoutTime = encodeSubDocKeyFull({ docKey: dk, column: col, intentTypes: types });
        const full = appendDocHybridTime(withoutTime, ht, writeId);
        const t = decodeDocHybridTimeFromEnd(full);
        expect(t.ht).toBe(ht);
        expect(t.writeId).toBe(writeId);
        expect(full.subarray(0, t.timeStart).equals(withoutTime)).toBe(true);
        const d = decodeSubDocKey(full);
        expect(sameDocKey(d.docKey, k)).toBe(true);
        expect(d.docKeyEnd).toBe(dk.length);
        expect(d.column).toBe(col);
        expect(d.intentTypes).toBe(types);
        expect(d.ht).toBe(ht);
        expect(d.writeId).toBe(writeId);
        expect(decodeSubKeyAt(full, dk.length).column).toBe(col);
        expect(encodeSubDocKeyFull({ docKey: dk, column: col, intentTypes: types, ht, writeId }).equals(full)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: seeking to key+#+enc(readHt) finds the newest version at or before readHt', () => {
    const dk = encodeSubDocKey(encodeDocKey(makeDocKey([7n], ['r'])), 1);
    const other = encodeSubDocKey(encodeDocKey(makeDocKey([7n], ['r'])), 2);
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.bigInt({ min: 1n, max: 30n }), fc.integer({ min: 0, max: 3 })), { maxLength: 12, selector: ([h, w]) => `${h}/${w}` }), fc.bigInt({ min: 0n, max: 32n }), (versions, readHt) => {
        const keys = versions.map(([h, w]) => appendDocHybridTime(dk, h, w));
        keys.push(appendDocHybridTime(other, 1n, 0)); // a neighbour the seek must not land in first
        keys.sort(Buffer.compare);
        const seek = versionSeekKey(dk, readHt);
        const found = keys.find((key) => Buffer.compare(key, seek) >= 0);
        const visible = versions.filter(([h]) => h <= readHt).sort(([h1, w1], [h2, w2]) => compareDocHybridTimesNewestFirst({ ht: h1, writeId: w1 }, { ht: h2, writeId: w2 }));
        if (visible.length === 0) {
          expect(found !== undefined && isPrefix(dk, found)).toBe(false);
        } else {
          expect(found).toBeDefined();
          const t = decodeDocHybridTimeFromEnd(found!);
          expect([t.ht, t.writeId]).toEqual(visible[0]);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('encoding: keys without a valid time suffix are CORRUPTION', () => {
    const dk = encodeDocKey(makeDocKey([1n]));
    expect(() => decodeDocHybridTimeFromEnd(dk)).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    const full = appendDocHybridTime(dk, 100n, 3);
    const broken = Buffer.from(full);
    broken[broken.length - 1] ^= 0x07; // length bits now point elsewhere
    expect(() => decodeDocHybridTimeFromEnd(broken)).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    expect(() => decodeSubDocKey(Buffer.concat([dk, Buffer.from([0x4b])]))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });
});

describe('encoding: partition hash', () => {
  it('encoding: partitionHash golden values are stable (routing and on-disk contract)', () => {
    // Checked against an independent re-implementation of FNV-1a-32 + fmix32 folded to 16 bits.
    const golden: Array<[Primitive[], number]> = [
      [[0n], 2236],
      [[1n], 34509],
      [[42n], 55354],
      [[-1n], 45935],
      [[''], 7340],
      [['user1'], 53408],
      [['a', 7n], 15491],
      [[null], 31809],
      [[true], 52261],
      [[1.5], 29418],
      [[new Uint8Array([1, 2, 3])], 53315],
      [[], 0],
    ];
    for (const [hashed, h] of golden) expect(partitionHash(hashed)).toBe(h);
    expect(makeDocKey([42n], ['x']).hash).toBe(55354);
  });

  it('encoding: partitionHash spreads sequential ints and strings evenly over 64 buckets (chi-square)', () => {
    const buckets = 64;
    const perBucket = 200;
    for (const gen of [(i: number): Primitive => BigInt(i), (i: number): Primitive => `user${i}`]) {
      const counts = new Array<number>(buckets).fill(0);
      for (let i = 0; i < buckets * perBucket; i++) counts[partitionHash([gen(i)]) >> 10]++;
      const chi2 = counts.reduce((s, c) => s + ((c - perBucket) * (c - perBucket)) / perBucket, 0);
      // 63 degrees of freedom: mean 63, p(chi2 > 120) < 1e-5. Deterministic inputs: not flaky.
      expect(chi2).toBeLessThan(120);
    }
  });
});
