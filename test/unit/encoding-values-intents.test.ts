import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ErrorCode } from '../../common/errors';
import {
  comparePrimitives,
  decodeValue,
  type DocValue,
  encodedValueBytes,
  encodeValue,
  IntentType,
  intentTypeConflicts,
  intentTypesConflict,
  intentTypesForRead,
  intentTypesForWrite,
  weakenIntentTypes,
} from '../../docdb/encoding';
import { TxnId } from '../../common/ids';
import { decodeIntentValue, encodeIntentValue, encodeStored, splitIntentValue } from '../../docdb/storage-keys';
import { primitiveArb } from './encoding-arbitraries';

const ttlArb = fc.option(fc.oneof(fc.nat(), fc.constantFrom(0, Number.MAX_SAFE_INTEGER)), { nil: undefined });
const valueArb: fc.Arbitrary<DocValue> = fc.oneof(
  fc.record({ type: fc.constant('primitive' as const), value: primitiveArb, ttlMs: ttlArb }, { requiredKeys: ['type', 'value'] }),
  fc.constant({ type: 'tombstone' as const }),
  fc.constant({ type: 'versionTombstone' as const }),
  fc.record({ type: fc.constant('liveness' as const), ttlMs: ttlArb }, { requiredKeys: ['type'] }),
);

function sameValue(a: DocValue, b: DocValue): boolean {
  if (a.type !== b.type) return false;
  if (a.type === 'tombstone' || b.type === 'tombstone' || a.type === 'versionTombstone' || b.type === 'versionTombstone') return true;
  if (a.ttlMs !== b.ttlMs) return false;
  if (a.type === 'primitive' && b.type === 'primitive') {
    // Values keep the exact double bits (no canonicalisation needed: they are not compared).
    return comparePrimitives(a.value, b.value) === 0 && typeof a.value === typeof b.value;
  }
  return true;
}

describe('encoding: values', () => {
  it('encoding: value round-trips (primitives, tombstone, liveness, TTL)', () => {
    fc.assert(
      fc.property(valueArb, (v) => {
        const d = decodeValue(encodeValue(v));
        expect(sameValue(d, v)).toBe(true);
        expect('ttlMs' in d).toBe((v.type === 'primitive' || v.type === 'liveness') && v.ttlMs !== undefined);
      }),
      { numRuns: 2000 },
    );
    expect(encodeValue({ type: 'tombstone' })).toEqual(Buffer.from('X'));
  });

  it('encoding: a value is encoded in one exact buffer, after a prefix when given; an intent value carries it unchanged', () => {
    fc.assert(
      fc.property(valueArb, fc.uint8Array({ maxLength: 40 }), fc.nat({ max: 0xffffffff }), (v, prefix, writeId) => {
        const alone = encodeValue(v);
        expect(alone.length).toBe(encodedValueBytes(v));
        const behind = encodeValue(v, prefix);
        expect(behind).toEqual(Buffer.concat([prefix, alone]));
        if (v.type === 'tombstone') return;
        const iv = encodeIntentValue(TxnId('txn-1'), writeId, v);
        const split = splitIntentValue(iv);
        expect(split).toMatchObject({ txnId: 'txn-1', writeId });
        expect(split.encoded).toEqual(encodeStored(v)); // what apply writes to RegularDB as is
        const back = decodeIntentValue(iv);
        expect(sameValue(back.value!, v)).toBe(true);
      }),
      { numRuns: 1000 },
    );
    expect(splitIntentValue(encodeIntentValue(TxnId('t'), 7, undefined))).toEqual({ txnId: 't', writeId: 7 });
    // A 1 MiB string: one allocation of the exact size (was a 3 MiB writer and a copy out of it).
    const big = encodeValue({ type: 'primitive', value: 'b'.repeat(1 << 20) }, Buffer.from('head'));
    expect(big.length).toBe(4 + 1 + (1 << 20));
    expect(big.buffer.byteLength).toBe(big.length);
  });

  it('encoding: truncated or extended values are CORRUPTION; invalid TTLs are refused', () => {
    const fixed = encodeValue({ type: 'primitive', value: 5n, ttlMs: 10 });
    for (let n = 0; n < fixed.length; n++) {
      expect(() => decodeValue(fixed.subarray(0, n))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    }
    expect(() => decodeValue(Buffer.concat([fixed, Buffer.from([0])]))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    expect(() => decodeValue(Buffer.from('tXXXXXXXXX'))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
    expect(() => encodeValue({ type: 'liveness', ttlMs: -1 })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(() => encodeValue({ type: 'liveness', ttlMs: 1.5 })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });
});

describe('encoding: intent types', () => {
  const { WEAK_READ: WR, WEAK_WRITE: WW, STRONG_READ: SR, STRONG_WRITE: SW } = IntentType;

  it('encoding: pairwise conflict matrix equals the rule of docs/architecture.md §DocDB', () => {
    // Rows/columns in the order WR, WW, SR, SW; X = conflict. Transcribed from the reference table.
    const types = [WR, WW, SR, SW];
    const table = ['---X', '--X-', '-X-X', 'X-X-'];
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) {
        const want = table[i][j] === 'X';
        expect(intentTypeConflicts(types[i], types[j])).toBe(want);
        expect(intentTypesConflict(types[i], types[j])).toBe(want);
      }
    }
  });

  it('encoding: sets conflict iff some member pair conflicts (symmetric; empty set never conflicts)', () => {
    for (let a = 0; a < 16; a++) {
      for (let b = 0; b < 16; b++) {
        let want = false;
        for (const x of [WR, WW, SR, SW]) for (const y of [WR, WW, SR, SW]) if (a & x && b & y && intentTypeConflicts(x, y)) want = true;
        expect(intentTypesConflict(a, b)).toBe(want);
        expect(intentTypesConflict(b, a)).toBe(want);
      }
    }
    expect(() => intentTypesConflict(16, 1)).toThrow();
  });

  it('encoding: SI writers of one key conflict through SR+SW; serializable blind writers do not; SI reads take no intents', () => {
    const siWrite = intentTypesForWrite('snapshot', true);
    const serWrite = intentTypesForWrite('serializable', true);
    const serRead = intentTypesForRead('serializable', true);
    expect(siWrite).toBe(SR | SW);
    expect(serWrite).toBe(SW);
    expect(intentTypesConflict(SW, SW)).toBe(false);
    expect(intentTypesConflict(siWrite, siWrite)).toBe(true);
    expect(intentTypesConflict(serWrite, serWrite)).toBe(false);
    expect(intentTypesConflict(serRead, serWrite)).toBe(true);
    expect(intentTypesConflict(serRead, siWrite)).toBe(true);
    expect(intentTypesForRead('snapshot', true)).toBe(0);
    // Ancestors: weak intents of two writers never conflict, but a weak write meets a strong read.
    expect(intentTypesForWrite('snapshot', false)).toBe(WR | WW);
    expect(intentTypesConflict(intentTypesForWrite('snapshot', false), intentTypesForWrite('serializable', false))).toBe(false);
    expect(intentTypesConflict(intentTypesForWrite('serializable', false), serRead)).toBe(true);
    expect(weakenIntentTypes(SR | SW)).toBe(WR | WW);
  });
});
