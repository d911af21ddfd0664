import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { decodeRaftBatch, encodeRaftBatch } from '../../tserver/raft-batch-codec';
import { DbError } from '../../common/errors';

describe('RaftBatchPB codec', () => {
  it('raft codec: RaftBatchPB round-trips (uuid, address, envelopes) and rejects truncation', () => {
    const batch = fc.record({
      fromUuid: fc.string({ maxLength: 40 }),
      fromAddress: fc.string({ minLength: 1, maxLength: 30 }),
      messages: fc.array(fc.record({ groupId: fc.string({ maxLength: 40 }), message: fc.uint8Array({ maxLength: 300 }) }), { maxLength: 20 }),
    });
    fc.assert(
      fc.property(batch, (b) => {
        const enc = encodeRaftBatch(b);
        const dec = decodeRaftBatch(enc);
        expect(dec.fromUuid).toBe(b.fromUuid);
        expect(dec.fromAddress).toBe(b.fromAddress);
        expect(dec.messages.map((m) => ({ groupId: m.groupId, message: Array.from(m.message) }))).toEqual(b.messages.map((m) => ({ groupId: m.groupId, message: Array.from(m.message) })));
        if (enc.length > 1) {
          try {
            decodeRaftBatch(enc.subarray(0, enc.length - 1));
          } catch (e) {
            expect(e).toBeInstanceOf(DbError);
          }
        }
      }),
      { numRuns: 500 },
    );
  });
});
