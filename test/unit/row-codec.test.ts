/**
 * The hand-written codecs of RowService's messages (rpc/row-codec.ts) against rpc/proto.ts's
 * protobufjs codecs, property-based: what one writes the other reads into the same plain object,
 * in both directions, for random messages of every row RPC (nested keys, values of every kind,
 * 64-bit integers at their edges, coalesced `more` items, strings long enough for multi-byte
 * lengths); then malformed bytes and bad input.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import type { Codec, DocKeyPB, RowPB, ValuePB } from '../../rpc';
import { lockRowRequestCodec, mutateRowsRequestCodec, mutateRowsResponseCodec, rowLockRequestCodec, rowLockResponseCodec } from '../../rpc/row-codec';
import { protoRowMethods, rowMethods, type RowMethods } from '../../rpc/row-methods';

const u32 = fc.nat({ max: 0xffffffff });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const i64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
const text = fc.oneof(fc.string({ maxLength: 8 }), fc.string({ minLength: 40, maxLength: 300 }), fc.constantFrom('', 'é€😀', 'x'.repeat(200)));
const bytes = fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b));

const value: fc.Arbitrary<ValuePB> = fc.oneof(
  i64.map((v) => ({ int64Value: v })),
  fc.double({ noNaN: true }).map((v) => ({ doubleValue: v })),
  text.map((v) => ({ stringValue: v })),
  bytes.map((v) => ({ bytesValue: v })),
  fc.boolean().map((v) => ({ boolValue: v })),
  bytes.map((v) => ({ utf8Value: v })),
  fc.constant({}),
);
const docKey: fc.Arbitrary<DocKeyPB> = fc.record({ hash: u32, hashed: fc.array(value, { maxLength: 3 }), range: fc.array(value, { maxLength: 3 }) }, { requiredKeys: [] });
const rowPb: fc.Arbitrary<RowPB> = fc.record({ key: docKey, columns: fc.array(fc.record({ columnId: u32, value }, { requiredKeys: [] }), { maxLength: 4 }), writeHt: u64 }, { requiredKeys: [] });
const rowMutation = fc.record(
  {
    key: docKey,
    conditions: fc.array(fc.record({ columnId: u32, op: fc.constantFrom('EQ', 'NE', 'LT', 'GT', 'EXISTS', 'ABSENT', ''), value }, { requiredKeys: [] }), { maxLength: 3 }),
    mutations: fc.array(fc.record({ type: fc.constantFrom('PUT', 'DELETE_ROW', 'INCREMENT', 'APPEND'), columnId: u32, value, by: i64 }, { requiredKeys: [] }), { maxLength: 4 }),
    lockId: text,
    lockToken: u64,
    unlockAfter: fc.boolean(),
  },
  { requiredKeys: [] },
);
const rows = fc.array(rowMutation, { maxLength: 12 });

const mutateRowsRequest = fc.record(
  { tabletId: text, rows, schemaVersion: u32, propagatedHt: u64, clientId: text, requestId: u64, minRunningRequestId: u64, waitForLocks: fc.boolean(), more: fc.array(fc.record({ rows, requestId: u64 }, { requiredKeys: [] }), { maxLength: 4 }) },
  { requiredKeys: [] },
);
const mutateRowsResult = fc.record({ applied: fc.boolean(), writeHt: u64, results: fc.array(rowPb, { maxLength: 12 }), code: text, message: text, detailsJson: text }, { requiredKeys: [] });
const mutateRowsResponse = fc.record({ applied: fc.boolean(), writeHt: u64, propagatedHt: u64, results: fc.array(rowPb, { maxLength: 12 }), items: fc.array(mutateRowsResult, { maxLength: 6 }) }, { requiredKeys: [] });
const lockRowRequest = fc.record(
  { tabletId: text, key: docKey, leaseMs: u32, holder: text, lockId: text, wait: fc.boolean(), schemaVersion: u32, propagatedHt: u64, more: fc.array(fc.record({ key: docKey, leaseMs: u32, holder: text, lockId: text }, { requiredKeys: [] }), { maxLength: 4 }) },
  { requiredKeys: [] },
);
const rowLockRequest = fc.record(
  { tabletId: text, key: docKey, lockId: text, action: fc.constantFrom('RENEW', 'UNLOCK', ''), leaseMs: u32, schemaVersion: u32, propagatedHt: u64, more: fc.array(fc.record({ key: docKey, lockId: text, action: fc.constantFrom('RENEW', 'UNLOCK'), leaseMs: u32 }, { requiredKeys: [] }), { maxLength: 4 }) },
  { requiredKeys: [] },
);
const lockResult = { lockId: text, token: u64, expiresHt: u64, leaseMs: u32 };
const rowLockResponse = fc.record({ ...lockResult, propagatedHt: u64, items: fc.array(fc.record({ ...lockResult, code: text, message: text, detailsJson: text }, { requiredKeys: [] }), { maxLength: 4 }) }, { requiredKeys: [] });

const mine = rowMethods();
const reference = protoRowMethods();

/** Both directions: each codec reads what the other wrote into the object protobufjs reads from its own bytes. */
function checkBothWays<T>(arb: fc.Arbitrary<T>, pick: (m: RowMethods) => Codec<T>): void {
  const a = pick(mine);
  const b = pick(reference);
  fc.assert(
    fc.property(arb, (msg) => {
      const expected = b.decode(b.encode(msg));
      expect(b.decode(a.encode(msg))).toStrictEqual(expected);
      expect(a.decode(b.encode(msg))).toStrictEqual(expected);
      expect(a.decode(a.encode(msg))).toStrictEqual(expected);
    }),
    { numRuns: 150 },
  );
}

describe('row codec (rpc/row-codec.ts) against protobufjs', () => {
  it('row-codec: the row RPCs travel with the hand-written codecs (rowMethods)', () => {
    expect([mine.mutateRows.req, mine.mutateRows.resp, mine.lockRow.req, mine.lockRow.resp, mine.rowLock.req, mine.rowLock.resp]).toStrictEqual([mutateRowsRequestCodec, mutateRowsResponseCodec, lockRowRequestCodec, rowLockResponseCodec, rowLockRequestCodec, rowLockResponseCodec]);
    expect(reference.mutateRows.req).not.toBe(mutateRowsRequestCodec);
  });

  it('row-codec: MutateRowsRequestPB — both codecs read each other\'s bytes into the same object', () => checkBothWays(mutateRowsRequest, (m) => m.mutateRows.req));
  it('row-codec: MutateRowsResponsePB — the same, results and coalesced items', () => checkBothWays(mutateRowsResponse, (m) => m.mutateRows.resp));
  it('row-codec: LockRowRequestPB — the same', () => checkBothWays(lockRowRequest, (m) => m.lockRow.req));
  it('row-codec: RowLockRequestPB — the same', () => checkBothWays(rowLockRequest, (m) => m.rowLock.req));
  it('row-codec: RowLockResponsePB — the same', () => checkBothWays(rowLockResponse, (m) => m.rowLock.resp));

  it('row-codec: a set oneof member holding its default (0, "", false) stays set; an empty message decodes to the defaults', () => {
    for (const v of [{ int64Value: 0n }, { stringValue: '' }, { boolValue: false }, { doubleValue: 0 }, { bytesValue: Buffer.alloc(0) }]) {
      const msg = { rows: [{ key: { hashed: [v] } }] };
      expect(mine.mutateRows.req.decode(mine.mutateRows.req.encode(msg)).rows?.[0]?.key?.hashed).toStrictEqual([v]);
    }
    expect(mine.rowLock.resp.decode(new Uint8Array(0))).toStrictEqual(reference.rowLock.resp.decode(new Uint8Array(0)));
  });

  it('row-codec: a nested message longer than 127 bytes (a multi-byte length) and unknown fields are read as protobufjs reads them', () => {
    const msg = { tabletId: 't', rows: [{ key: { hashed: [{ stringValue: 'k'.repeat(5000) }] }, lockId: 'L' }] };
    expect(mine.mutateRows.req.decode(reference.mutateRows.req.encode(msg))).toStrictEqual(reference.mutateRows.req.decode(mine.mutateRows.req.encode(msg)));
    // Field 15 (varint), 14 (fixed64), 13 (bytes) and 12 (fixed32) are not in RowLockResponsePB: skipped.
    const known = Buffer.from(mine.rowLock.resp.encode({ lockId: 'a', token: 7n }));
    const extra = Buffer.from([15 << 3, 0x96, 0x01, (14 << 3) | 1, 1, 2, 3, 4, 5, 6, 7, 8, (13 << 3) | 2, 2, 9, 9, (12 << 3) | 5, 1, 2, 3, 4]);
    expect(mine.rowLock.resp.decode(Buffer.concat([extra, known]))).toStrictEqual(reference.rowLock.resp.decode(Buffer.concat([extra, known])));
  });

  it('row-codec: truncated or malformed bytes are MALFORMED_FRAME, never a crash or a read past the end', () => {
    const whole = Buffer.from(mine.mutateRows.req.encode({ tabletId: 'tablet', rows: [{ key: { hash: 3, hashed: [{ int64Value: -5n }] }, mutations: [{ type: 'INCREMENT', columnId: 2, by: 1n }] }], requestId: 1n << 40n, propagatedHt: 99n }));
    for (let n = 1; n < whole.length; n++) {
      let err: unknown;
      try {
        mine.mutateRows.req.decode(whole.subarray(0, n));
      } catch (e) {
        err = e;
      }
      // A cut at a field boundary is a shorter valid message; anything else must be refused with the code.
      if (err !== undefined) expect((err as { code?: string }).code).toBe(ErrorCode.MALFORMED_FRAME);
    }
    expect(() => mine.mutateRows.req.decode(Buffer.from([(1 << 3) | 2, 50, 1]))).toThrow(expect.objectContaining({ code: ErrorCode.MALFORMED_FRAME }));
    expect(() => mine.rowLock.resp.decode(Buffer.from([(3 << 3) | 7]))).toThrow(expect.objectContaining({ code: ErrorCode.MALFORMED_FRAME }));
    expect(() => mine.rowLock.resp.decode(Buffer.from([8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))).toThrow(expect.objectContaining({ code: ErrorCode.MALFORMED_FRAME }));
  });

  it('row-codec: a value that cannot be encoded is INVALID_ARGUMENT (as with protobufjs)', () => {
    expect(() => mine.mutateRows.req.encode({ requestId: 1.5 as unknown as bigint })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    expect(() => mine.mutateRows.req.encode({ rows: [{ mutations: [{ type: 'INCREMENT', by: 'x' as unknown as bigint }] }] })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
  });
});
