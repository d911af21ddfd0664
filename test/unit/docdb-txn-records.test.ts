/**
 * The transaction bookkeeping records keep their on-disk form: the hand-built JSON of the metadata
 * and the apply state is byte for byte what JSON.stringify of the record object gives (data written
 * before stays readable, and the other way round), and every record decodes back to itself; the
 * binary metadata of head intents too.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TxnId } from '../../common/ids';
import type { TxnMeta } from '../../docdb/doc-db-api';
import { applyStateKey, decodeApplyState, decodeStoredMeta, decodeTxnKey, encodeApplyState, encodeStoredMeta, encodeStoredMetaBinary, txnKey, APPLY_STATE_PREFIX, TXN_PREFIX } from '../../docdb/txn-records';

const meta: fc.Arbitrary<TxnMeta> = fc.record({
  txnId: fc.string({ minLength: 1, maxLength: 40 }).map(TxnId),
  statusTablet: fc.string({ maxLength: 40 }),
  isolation: fc.constantFrom('snapshot' as const, 'serializable' as const),
  // + 0: JSON has no -0 (a -0 priority always came back as 0).
  priority: fc.double({ noNaN: true, noDefaultInfinity: true }).map((p) => p + 0),
  startHt: fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }),
});
const metaObj = (m: TxnMeta) => ({ txnId: m.txnId, statusTablet: m.statusTablet, isolation: m.isolation, priority: m.priority, startHt: m.startHt.toString() });

describe('docdb transaction records', () => {
  it('txn records: stored metadata and apply state encode exactly as JSON.stringify did, and decode back', () => {
    fc.assert(
      fc.property(meta, fc.nat(), fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }), fc.nat(), fc.nat(), fc.nat(), (m, nextWriteId, commitHt, term, index, recordsApplied) => {
        const stored = encodeStoredMeta({ meta: m, nextWriteId });
        expect(stored.toString('utf8')).toBe(JSON.stringify({ meta: metaObj(m), nextWriteId }));
        // Twice: the second encoding comes from the cache (a copy of the meta hits it too) …
        expect(encodeStoredMeta({ meta: m, nextWriteId })).toEqual(stored);
        expect(encodeStoredMeta({ meta: { ...m }, nextWriteId })).toEqual(stored);
        // … which a meta of the same id with another field misses.
        const other = { ...m, startHt: m.startHt + 1n };
        expect(encodeStoredMeta({ meta: other, nextWriteId }).toString('utf8')).toBe(JSON.stringify({ meta: metaObj(other), nextWriteId }));
        expect(encodeStoredMeta({ meta: m, nextWriteId })).toEqual(stored);
        expect(decodeStoredMeta(stored)).toEqual({ meta: m, nextWriteId });
        const st = { meta: m, commitHt, opId: { term, index }, recordsApplied };
        const applyState = encodeApplyState(st);
        expect(applyState.toString('utf8')).toBe(JSON.stringify({ meta: metaObj(m), commitHt: commitHt.toString(), opId: { term, index }, recordsApplied }));
        expect(decodeApplyState(applyState)).toEqual(st);
      }),
      { numRuns: 500 },
    );
  });

  it('txn records: the binary metadata head intents carry decodes back to itself; decodeStoredMeta reads it beside the JSON; a cut one is refused', () => {
    fc.assert(
      fc.property(meta, fc.nat(), (m, nextWriteId) => {
        const b = encodeStoredMetaBinary({ meta: m, nextWriteId });
        expect(b.length).toBeLessThan(encodeStoredMeta({ meta: m, nextWriteId }).length);
        expect(decodeStoredMeta(b)).toEqual({ meta: m, nextWriteId });
        expect(() => decodeStoredMeta(b.subarray(0, b.length - 1))).toThrow();
      }),
      { numRuns: 300 },
    );
  });

  it('txn records: keys are the prefix, the id length and the UTF-8 id; an empty or 256-byte id is refused', () => {
    for (const id of ['a', 'ünï', 'x'.repeat(255)]) {
      const k = txnKey(TxnId(id));
      expect(k[0]).toBe(TXN_PREFIX);
      expect(k[1]).toBe(Buffer.byteLength(id));
      expect(decodeTxnKey(k)).toEqual({ txnId: id, end: k.length });
      const a = applyStateKey(TxnId(id));
      expect(a[0]).toBe(APPLY_STATE_PREFIX);
      expect(a.subarray(1)).toEqual(k.subarray(1));
    }
    expect(() => txnKey(TxnId(''))).toThrow();
    expect(() => txnKey(TxnId('é'.repeat(128)))).toThrow();
  });
});
