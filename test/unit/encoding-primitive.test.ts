import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DbError, ErrorCode, isDbError } from '../../common/errors';
import type { Primitive } from '../../docdb/doc-db-api';
import {
  ByteReader,
  ByteWriter,
  comparePrimitives,
  decodeOrderedVarint,
  decodePrimitive,
  decodePrimitiveFromBuffer,
  encodeOrderedVarint,
  encodePrimitiveToBuffer,
  ORDERED_VARINT_MAX,
  skipPrimitive,
  Tag,
} from '../../docdb/encoding';
import { isPrefix, primitiveArb, sign } from './encoding-arbitraries';

const RUNS = 2000;

function enc(v: Primitive, desc = false): Buffer {
  return encodePrimitiveToBuffer(v, desc);
}

/** Same value and same type (comparePrimitives tells -0 from +0 and treats NaN = NaN). */
function same(a: Primitive, b: Primitive): boolean {
  return comparePrimitives(a, b) === 0;
}

describe('encoding: primitives', () => {
  it('encoding: decode(encode(x)) = x for every type, ascending and descending', () => {
    fc.assert(
      fc.property(primitiveArb, fc.boolean(), (v, desc) => {
        const back = decodePrimitiveFromBuffer(enc(v, desc));
        expect(same(back, v)).toBe(true);
        if (v instanceof Uint8Array) expect(back).toBeInstanceOf(Uint8Array);
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: ascending byte order equals comparePrimitives, across and within types', () => {
    fc.assert(
      fc.property(primitiveArb, primitiveArb, (a, b) => {
        expect(sign(Buffer.compare(enc(a), enc(b)))).toBe(sign(comparePrimitives(a, b)));
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: descending byte order is exactly the reverse (nulls last)', () => {
    fc.assert(
      fc.property(primitiveArb, primitiveArb, (a, b) => {
        expect(sign(Buffer.compare(enc(a, true), enc(b, true)))).toBe(0 - sign(comparePrimitives(a, b)));
      }),
      { numRuns: RUNS },
    );
    expect(Buffer.compare(enc(null, true), enc('zzz', true))).toBe(1);
    expect(Buffer.compare(enc(null), enc(''))).toBe(-1);
  });

  it('encoding: distinct values never encode as prefixes of each other (so concatenations sort per component)', () => {
    fc.assert(
      fc.property(primitiveArb, primitiveArb, fc.boolean(), (a, b, desc) => {
        if (comparePrimitives(a, b) === 0) return;
        const ea = enc(a, desc);
        const eb = enc(b, desc);
        expect(isPrefix(ea, eb) || isPrefix(eb, ea)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: skipPrimitive stops exactly where decodePrimitive does', () => {
    fc.assert(
      fc.property(primitiveArb, primitiveArb, fc.boolean(), (a, b, desc) => {
        const buf = Buffer.concat([enc(a, desc), enc(b, !desc)]);
        const r1 = new ByteReader(buf);
        const r2 = new ByteReader(buf);
        decodePrimitive(r1);
        skipPrimitive(r2);
        expect(r2.offset).toBe(r1.offset);
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: a concatenated pair sorts lexicographically by component', () => {
    fc.assert(
      fc.property(primitiveArb, primitiveArb, primitiveArb, primitiveArb, (a1, a2, b1, b2) => {
        const ea = Buffer.concat([enc(a1), enc(a2, true)]);
        const eb = Buffer.concat([enc(b1), enc(b2, true)]);
        const c1 = comparePrimitives(a1, b1);
        const logical = c1 !== 0 ? c1 : 0 - comparePrimitives(a2, b2);
        expect(sign(Buffer.compare(ea, eb))).toBe(sign(logical));
      }),
      { numRuns: RUNS },
    );
  });

  it('encoding: documented edge order (-0 < +0, NaN after +Inf, "" < "\\0" < "a", code point order for strings)', () => {
    const ordered: Primitive[][] = [
      [-Infinity, -1, -Number.MIN_VALUE, -0, 0, Number.MIN_VALUE, 1, Infinity, NaN],
      [-(1n << 63n), -1n, 0n, 1n, (1n << 63n) - 1n],
      ['', '\u0000', '\u0000\u0000', '\u0001', 'a', 'a\u0000', 'ab', '\uffff', '\u{10000}'],
      [new Uint8Array([]), new Uint8Array([0]), new Uint8Array([0, 0]), new Uint8Array([1]), new Uint8Array([0xff])],
    ];
    for (const list of ordered) {
      for (let i = 0; i + 1 < list.length; i++) {
        expect(comparePrimitives(list[i], list[i + 1])).toBe(-1);
        expect(Buffer.compare(enc(list[i]), enc(list[i + 1]))).toBe(-1);
        expect(Buffer.compare(enc(list[i], true), enc(list[i + 1], true))).toBe(1);
      }
    }
    // Every NaN (whatever its payload) is one canonical encoding.
    const otherNaN = new Float64Array(new BigUint64Array([0x7ff0000000000001n]).buffer)[0];
    expect(enc(otherNaN).equals(enc(NaN))).toBe(true);
  });

  it('encoding: tags sit above "#" so group end and hybrid time sort first, and below "x"', () => {
    for (const v of [null, false, true, 0n, 0, '', new Uint8Array()] as Primitive[]) {
      for (const d of [false, true]) {
        const t = enc(v, d)[0];
        expect(t).toBeGreaterThan(Tag.HYBRID_TIME);
        expect(t).toBeLessThan(Tag.TRANSACTION_ID);
      }
    }
  });

  it('encoding: every truncated or corrupted primitive is rejected with CORRUPTION, never decoded silently', () => {
    fc.assert(
      fc.property(primitiveArb, fc.boolean(), (v, desc) => {
        const e = enc(v, desc);
        for (let n = 0; n < e.length; n++) {
          let err: unknown;
          try {
            decodePrimitiveFromBuffer(e.subarray(0, n));
          } catch (x) {
            err = x;
          }
          expect(isDbError(err, ErrorCode.CORRUPTION)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
    expect(() => decodePrimitiveFromBuffer(Buffer.from([Tag.STRING, 0x61, 0x00, 0x07]))).toThrow(DbError);
    expect(() => decodePrimitiveFromBuffer(Buffer.from([0x01]))).toThrow(/unknown primitive tag/);
    expect(() => decodePrimitive(new ByteReader(enc(5n, true)), false)).toThrow(DbError);
  });

  it('encoding: strings with lone surrogates and out-of-range int64 are refused (INVALID_ARGUMENT)', () => {
    expect(() => enc('a\ud800')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(() => enc('\udc00b')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(() => enc(1n << 63n)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(decodePrimitiveFromBuffer(enc('\u{1f600}'))).toBe('\u{1f600}');
  });
});

describe('encoding: ordered varint', () => {
  const varintArb = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: ORDERED_VARINT_MAX }), fc.constantFrom(127, 128, 16383, 16384, 2 ** 21 - 1, 2 ** 21, 2 ** 28 - 1, 2 ** 28, 2 ** 32 - 1, ORDERED_VARINT_MAX));
  const ev = (v: number): Buffer => {
    const w = new ByteWriter(4);
    encodeOrderedVarint(w, v);
    return w.toBuffer();
  };

  it('encoding: ordered varint round-trips and its byte order is numeric order', () => {
    fc.assert(
      fc.property(varintArb, varintArb, (a, b) => {
        const r = new ByteReader(ev(a));
        expect(decodeOrderedVarint(r)).toBe(a);
        expect(r.remaining).toBe(0);
        expect(sign(Buffer.compare(ev(a), ev(b)))).toBe(sign(a - b));
      }),
      { numRuns: RUNS },
    );
    expect([0, 127, 128, 16384, 2 ** 28, ORDERED_VARINT_MAX].map((v) => ev(v).length)).toEqual([1, 1, 2, 3, 5, 5]);
  });

  it('encoding: a non-canonical (overlong) varint is CORRUPTION', () => {
    expect(() => decodeOrderedVarint(new ByteReader(Buffer.from([0x80, 0x05])))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    expect(() => decodeOrderedVarint(new ByteReader(Buffer.from([0xf8])))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });
});
