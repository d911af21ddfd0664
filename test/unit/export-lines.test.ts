/**
 * Export lines written by the tablet server (tserver/export-lines.ts, for a scan with row_format
 * EXPORT_LINES) are byte for byte the lines a client writes for the rows it decodes from the same
 * page (client/backup/backup-format.ts encodeRow of TableSchema.rowFromPb): the digests of exports
 * made either way, and of the tables an import checks, must agree.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { encodeRow } from '../../client/backup/backup-format';
import { TableSchema } from '../../client/table-schema';
import type { Primitive, Row } from '../../docdb';
import { rowsToExportLines } from '../../tserver/export-lines';
import { rowToPb } from '../../tserver/row-pb';
import type { TableSchema as TabletSchema } from '../../tserver/tablet/tablet-meta';

// Names a JSON object orders differently from insertion ("1" sorts first), quotes, non-ASCII.
const COLUMNS = [
  { name: 'id', id: 1, type: 'int64', nullable: false },
  { name: 'k', id: 2, type: 'string', nullable: false },
  { name: 'v', id: 3, type: 'double', nullable: true },
  { name: '1', id: 4, type: 'string', nullable: true },
  { name: 'b"q', id: 5, type: 'bytes', nullable: true },
  { name: 'ü', id: 6, type: 'bool', nullable: true },
  { name: 'n', id: 7, type: 'int64', nullable: true },
] as const;
const tabletSchema: TabletSchema = { columns: COLUMNS.map((c) => ({ ...c })), hashColumns: ['id'], rangeColumns: ['k'] };
const clientSchema = new TableSchema('t-id', 't', { schema: { columns: COLUMNS.map((c) => ({ ...c })), hashColumns: ['id'], rangeColumns: ['k'] }, schemaVersion: 0 });

const int64 = fc.bigInt(-(2n ** 63n), 2n ** 63n - 1n);
const str = fc.string({ unit: 'binary', maxLength: 12 });
const valueOf: Record<string, fc.Arbitrary<Primitive>> = {
  v: fc.oneof(fc.double(), fc.constant(null)),
  '1': fc.oneof(str, fc.constant(null)),
  'b"q': fc.oneof(fc.uint8Array({ maxLength: 9 }), fc.constant(null)),
  ü: fc.oneof(fc.boolean(), fc.constant(null)),
  n: fc.oneof(int64, fc.constant(null)),
};
const rowArb: fc.Arbitrary<Row> = fc
  .record({ id: int64, k: str, cols: fc.record(valueOf, { requiredKeys: [] }) })
  .map(({ id, k, cols }) => {
    const columns = new Map<number, Primitive>();
    for (const c of COLUMNS) if (c.name in cols) columns.set(c.id, (cols as Record<string, Primitive>)[c.name]!);
    return { key: { hash: 7, hashed: [id], range: [k] }, columns, writeHt: 1n };
  });

describe('export lines', () => {
  it('backup: the lines a tablet server writes equal the client\'s encodeRow of the rows it decodes (all value types, odd column names, absent columns)', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { maxLength: 20 }), (rows) => {
        const server = rowsToExportLines(tabletSchema, rows, undefined).toString('utf8');
        const client = rows.map((r) => encodeRow(clientSchema.rowFromPb(rowToPb(r)))).join('');
        expect(server).toBe(client);
      }),
      { numRuns: 300 },
    );
  });

  it('backup: with a column list, only those non-key columns are written, as a client asking for them decodes them', () => {
    const row: Row = { key: { hash: 7, hashed: [5n], range: ['a'] }, columns: new Map<number, Primitive>([[3, 1.5], [7, 9n]]), writeHt: 1n };
    const server = rowsToExportLines(tabletSchema, [row], [7]).toString('utf8');
    expect(server).toBe(encodeRow(clientSchema.rowFromPb(rowToPb(row), ['n'])));
    expect(server).toBe('{"id":{"$i":"5"},"k":"a","n":{"$i":"9"}}\n');
  });
});
