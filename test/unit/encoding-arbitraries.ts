/**
 * fast-check generators for the encoding tests. Values are drawn from small alphabets on purpose:
 * collisions, shared prefixes, embedded NULs and 0xFF bytes are where order-preserving encodings break.
 */
import fc from 'fast-check';
import type { DocKey, Primitive } from '../../docdb/doc-db-api';
import { partitionHash } from '../../docdb/encoding';

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

export const int64Arb: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.bigInt({ min: -3n, max: 3n }),
  fc.constantFrom(INT64_MIN, INT64_MIN + 1n, INT64_MAX, INT64_MAX - 1n, -256n, 255n, 256n),
);

export const doubleArb: fc.Arbitrary<number> = fc.oneof(
  fc.double(),
  fc.constantFrom(0, -0, NaN, Infinity, -Infinity, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE, -Number.MAX_VALUE, 1, -1),
);

export const stringArb: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.constantFrom('a', 'b', '\u0000', '\u0001', '\u00ff', '\uffff', '\u{1f600}', '\ue000'), maxLength: 5 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.string({ unit: 'binary-ascii', maxLength: 8 }),
);

export const bytesArb: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.array(fc.constantFrom(0, 1, 2, 0x7f, 0xfe, 0xff), { maxLength: 5 }).map((a) => Uint8Array.from(a)),
  fc.uint8Array({ maxLength: 10 }),
);

export const primitiveArb: fc.Arbitrary<Primitive> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  int64Arb,
  doubleArb,
  stringArb,
  bytesArb,
);

/** Small primitives that collide often (so DocKey comparisons get past the first component). */
export const smallPrimitiveArb: fc.Arbitrary<Primitive> = fc.oneof(
  fc.constant(null),
  fc.bigInt({ min: -2n, max: 2n }),
  fc.constantFrom('', 'a', 'ab', 'a\u0000', 'b'),
  fc.constantFrom(-0, 0, 1.5, NaN),
  fc.boolean(),
);

/** Keys with hash columns; the hash is drawn from a tiny range so equal hashes are common. */
export const hashedDocKeyArb: fc.Arbitrary<DocKey> = fc.record({
  hash: fc.constantFrom(0, 1, 0xffff),
  hashed: fc.array(smallPrimitiveArb, { minLength: 1, maxLength: 2 }),
  range: fc.array(smallPrimitiveArb, { maxLength: 3 }),
});

/** Keys of a table without hash columns. */
export const rangeDocKeyArb: fc.Arbitrary<DocKey> = fc.record({
  hash: fc.constant(0),
  hashed: fc.constant([] as Primitive[]),
  range: fc.array(smallPrimitiveArb, { maxLength: 3 }),
});

/** Realistic keys: the hash is the real partition hash. */
export const realDocKeyArb: fc.Arbitrary<DocKey> = fc
  .record({ hashed: fc.array(primitiveArb, { minLength: 1, maxLength: 3 }), range: fc.array(primitiveArb, { maxLength: 3 }) })
  .map(({ hashed, range }) => ({ hash: partitionHash(hashed), hashed, range }));

export function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

export function isPrefix(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length > b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
