import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeDocKeyBytes, encodeKeyComponents, partitionHash, type KeyValue } from '../../common/partition-hash';
import { ByteWriter } from '../../docdb/encoding/byte-buffer';
import { encodeDocKey, partitionHash as docdbPartitionHash } from '../../docdb/encoding/doc-key';
import { encodePrimitive } from '../../docdb/encoding/primitive';

const keyValue: fc.Arbitrary<KeyValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
  fc.double(),
  fc.string({ unit: 'grapheme' }),
  fc.uint8Array({ maxLength: 20 }),
);

function docdbBytes(vs: readonly KeyValue[]): Uint8Array {
  const w = new ByteWriter(16);
  for (const v of vs) encodePrimitive(w, v);
  return Uint8Array.from(w.raw().subarray(0, w.length));
}

describe('client routing: partition hash and key bytes agree with docdb', () => {
  it('routing: component bytes equal docdb/encoding ascending bytes for every value type', () => {
    fc.assert(fc.property(fc.array(keyValue, { maxLength: 4 }), (vs) => {
      expect(Buffer.from(encodeKeyComponents(vs)).toString('hex')).toBe(Buffer.from(docdbBytes(vs)).toString('hex'));
    }), { numRuns: 500 });
  });

  it('routing: the client partition hash is the docdb partition hash', () => {
    fc.assert(fc.property(fc.array(keyValue, { minLength: 1, maxLength: 3 }), (vs) => {
      expect(partitionHash(vs)).toBe(docdbPartitionHash(vs));
    }), { numRuns: 500 });
  });

  it('routing: DocKey bytes for scan bounds equal docdb encodeDocKey', () => {
    fc.assert(fc.property(fc.array(keyValue, { maxLength: 2 }), fc.array(keyValue, { maxLength: 2 }), (hashed, range) => {
      const hash = partitionHash(hashed);
      const ours = Buffer.from(encodeDocKeyBytes(hash, hashed, range)).toString('hex');
      expect(ours).toBe(encodeDocKey({ hash, hashed, range }).toString('hex'));
    }), { numRuns: 300 });
  });
});
