/**
 * Large strings in tablet log entries stay bytes from the log to RocksDB (docs/raft-write-path.md,
 * "Large values"): the decoded column carries a view of their UTF-8 and decodes only when read; the
 * stored value is byte for byte what a string value encodes to; corrupt UTF-8 is still refused.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ErrorCode } from '../../common/errors';
import { encodeStored } from '../../docdb/storage-keys';
import { cellsOf } from '../../docdb/row-cells';
import type { RowOp } from '../../docdb';
import { decodeTabletOp, encodeTabletOp } from '../../tserver/tablet/tablet-op';
import { LAZY_STRING_BYTES_MIN } from '../../tserver/tablet/tablet-op-rows';

const key = { hash: 7, hashed: [1n], range: [] };

function roundTrip(ops: RowOp[]): RowOp[] {
  const op = decodeTabletOp(encodeTabletOp({ type: 'WRITE', ht: 123n, ops }));
  if (op.type !== 'WRITE') throw new Error(`decoded ${op.type}`);
  return op.ops;
}

describe('tablet op: large strings', () => {
  it('a string of LAZY_STRING_BYTES_MIN bytes or more decodes lazily to the same string and stores the same bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 0, maxLength: 40 }), fc.integer({ min: LAZY_STRING_BYTES_MIN - 2, max: LAZY_STRING_BYTES_MIN * 3 }), fc.option(fc.integer({ min: 1, max: 1e9 }), { nil: undefined }), (tail, pad, ttlMs) => {
        const value = 'é'.repeat(Math.ceil(pad / 2)).slice(0, Math.ceil(pad / 2)) + tail;
        const op: RowOp = ttlMs === undefined ? { type: 'upsert', key, columns: [{ columnId: 1, value }, { columnId: 2, value: 5n }] } : { type: 'upsert', key, columns: [{ columnId: 1, value }], ttlMs };
        const [got] = roundTrip([op]);
        if (got?.type !== 'upsert') throw new Error('not an upsert');
        const col = got.columns[0]!;
        const big = Buffer.byteLength(value) >= LAZY_STRING_BYTES_MIN;
        expect(col.utf8 !== undefined).toBe(big);
        if (col.utf8) expect(Buffer.from(col.utf8).equals(Buffer.from(value, 'utf8'))).toBe(true);
        const stored = cellsOf(got).map((c) => encodeStored(c.value));
        const expected = cellsOf(op).map((c) => encodeStored(c.value));
        expect(stored.map((b) => b.toString('hex'))).toEqual(expected.map((b) => b.toString('hex')));
        expect(col.value).toBe(value);
      }),
      { numRuns: 40 },
    );
  });

  it('corrupt UTF-8 in a large string is CORRUPTION when the value is read', () => {
    const value = 'a'.repeat(LAZY_STRING_BYTES_MIN + 10);
    const bytes = Buffer.from(encodeTabletOp({ type: 'WRITE', ht: 1n, ops: [{ type: 'upsert', key, columns: [{ columnId: 1, value }] }] }));
    const at = bytes.indexOf(Buffer.from('aaaa'));
    bytes[at + 5] = 0xff;
    const op = decodeTabletOp(bytes);
    if (op.type !== 'WRITE' || op.ops[0]?.type !== 'upsert') throw new Error('not a write');
    const col = op.ops[0].columns[0]!;
    expect(() => col.value).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });

  it('a truncated large string is CORRUPTION at decode', () => {
    const value = 'b'.repeat(LAZY_STRING_BYTES_MIN + 10);
    const bytes = Buffer.from(encodeTabletOp({ type: 'WRITE', ht: 1n, ops: [{ type: 'upsert', key, columns: [{ columnId: 1, value }] }] }));
    expect(() => decodeTabletOp(bytes.subarray(0, bytes.length - 100))).toThrow(expect.objectContaining({ code: ErrorCode.CORRUPTION }));
  });
});

describe('stored values: large strings', () => {
  it('decodeStored keeps a large string as bytes until read; the row assembles the same; a projection without it never decodes it', async () => {
    const { decodeStored } = await import('../../docdb/storage-keys');
    const { assembleRow } = await import('../../docdb/row-assembler');
    const value = 'x'.repeat(LAZY_STRING_BYTES_MIN) + 'ü';
    for (const ttlMs of [undefined, 5000]) {
      const stored = encodeStored(ttlMs === undefined ? { type: 'primitive', value } : { type: 'primitive', value, ttlMs });
      const v = decodeStored(stored);
      expect(v.type === 'primitive' && v.utf8 !== undefined).toBe(true);
      expect(v).toEqual(ttlMs === undefined ? { type: 'primitive', value } : { type: 'primitive', value, ttlMs });
      expect(encodeStored(v).equals(stored)).toBe(true);
    }
    let reads = 0;
    const lazy = decodeStored(encodeStored({ type: 'primitive', value }));
    const counted = Object.defineProperty({ type: 'primitive' as const, value: null }, 'value', { get: () => (reads++, value), enumerable: true });
    Object.defineProperty(counted, 'utf8', { value: lazy.type === 'primitive' ? lazy.utf8 : undefined, enumerable: false });
    const versions = [
      { sub: { kind: 'liveness' as const }, ht: 10n, writeId: 0, own: false, value: { type: 'liveness' as const } },
      { sub: { kind: 'column' as const, id: 1 }, ht: 10n, writeId: 1, own: false, value: counted },
      { sub: { kind: 'column' as const, id: 2 }, ht: 10n, writeId: 2, own: false, value: { type: 'primitive' as const, value: 7n } },
    ];
    const onlyKey = assembleRow(key, versions, 20n, undefined, [2]);
    expect(onlyKey.type === 'row' && [...onlyKey.row.columns]).toEqual([[2, 7n]]);
    expect(reads).toBe(0);
    const all = assembleRow(key, versions, 20n, undefined);
    expect(all.type === 'row' && all.row.columns.get(1)).toBe(value);
    expect(reads).toBe(1);
  });
});

describe('write RPCs: large strings as bytes (utf8Value)', () => {
  const SCHEMA = { columns: [{ name: 'k', id: 0, type: 'int64' as const, nullable: false }, { name: 'v', id: 1, type: 'string' as const, nullable: true }, { name: 'n', id: 2, type: 'int64' as const, nullable: true }], hashColumns: [], rangeColumns: ['k'] };
  const meta = { tabletId: 't', tableId: 'tbl', tableName: 'demo', schema: SCHEMA, partition: { start: 0, end: 65536 }, peers: [], schemaVersion: 0 };
  const pbKey = { hash: 0, hashed: [], range: [{ int64Value: 1n }] };

  it('the client sends strings of 16 KiB or more as bytes; the tablet keeps them as bytes into a log entry identical to the string form', async () => {
    const { columnValueToPb, valueFromPb, UTF8_VALUE_BYTES_MIN } = await import('../../client/table-schema');
    const { rowOpFromPb } = await import('../../tserver/row-pb');
    expect(UTF8_VALUE_BYTES_MIN).toBe(LAZY_STRING_BYTES_MIN);
    for (const value of ['short', 'ä'.repeat(LAZY_STRING_BYTES_MIN / 2 - 1), 'ä'.repeat(LAZY_STRING_BYTES_MIN / 2), 'z'.repeat(3 * LAZY_STRING_BYTES_MIN) + '€']) {
      const pbValue = columnValueToPb(value);
      const big = Buffer.byteLength(value) >= LAZY_STRING_BYTES_MIN;
      expect(pbValue.utf8Value !== undefined).toBe(big);
      expect(valueFromPb(pbValue)).toBe(value);
      const viaBytes = rowOpFromPb(meta as never, { type: 'UPSERT', key: pbKey, columns: [{ columnId: 1, value: pbValue }] });
      const viaString = rowOpFromPb(meta as never, { type: 'UPSERT', key: pbKey, columns: [{ columnId: 1, value: { stringValue: value } }] });
      if (viaBytes.op.type !== 'upsert') throw new Error('not an upsert');
      expect(viaBytes.op.columns[0]!.utf8 !== undefined).toBe(big);
      const a = Buffer.from(encodeTabletOp({ type: 'WRITE', ht: 9n, ops: [viaBytes.op] }));
      const b = Buffer.from(encodeTabletOp({ type: 'WRITE', ht: 9n, ops: [viaString.op] }));
      expect(a.equals(b)).toBe(true);
      expect(viaBytes.op.columns[0]!.value).toBe(value);
    }
  });

  it('utf8Value that is not UTF-8, or on a column that is not a string, is INVALID_ARGUMENT', async () => {
    const { rowOpFromPb, valueFromPb } = await import('../../tserver/row-pb');
    const bad = Buffer.alloc(LAZY_STRING_BYTES_MIN, 0x61);
    bad[100] = 0xc3; // a lead byte followed by an ASCII byte
    const invalid = expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT });
    expect(() => rowOpFromPb(meta as never, { type: 'UPSERT', key: pbKey, columns: [{ columnId: 1, value: { utf8Value: bad } }] })).toThrow(invalid);
    expect(() => rowOpFromPb(meta as never, { type: 'UPSERT', key: pbKey, columns: [{ columnId: 2, value: { utf8Value: Buffer.from('x'.repeat(LAZY_STRING_BYTES_MIN)) } }] })).toThrow(invalid);
    expect(() => valueFromPb({ utf8Value: bad })).toThrow(invalid);
    expect(valueFromPb({ utf8Value: Buffer.from('ok') })).toBe('ok');
  });
});
