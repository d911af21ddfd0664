/**
 * A scan page as export lines (ScanRequestPB.row_format = EXPORT_LINES; docs/backup.md): the tablet
 * server writes each row's line itself, the same bytes a client's encodeRow gives for the row it would
 * have decoded (common/export-line.ts), so an export moves pre-encoded bytes — no RowPB per row to
 * encode here and decode there. Column order is the client's (client/table-schema.ts rowFromPb): hash
 * key columns, range key columns, then the other columns in schema order (only `columns` when given),
 * a missing value as null.
 */
import { encodeLine, type LineValue } from '../common/export-line';
import type { Row } from '../docdb';
import type { TableSchema } from './tablet/tablet-meta';

export function rowsToExportLines(schema: TableSchema, rows: readonly Row[], columns: readonly number[] | undefined): Buffer {
  const keys = new Set([...schema.hashColumns, ...schema.rangeColumns]);
  const wanted = columns && columns.length > 0 ? new Set(columns) : undefined;
  const others = schema.columns.filter((c) => !keys.has(c.name) && (!wanted || wanted.has(c.id)));
  const lines: string[] = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    const o: Record<string, LineValue> = {};
    schema.hashColumns.forEach((n, j) => (o[n] = r.key.hashed[j] ?? null));
    schema.rangeColumns.forEach((n, j) => (o[n] = r.key.range[j] ?? null));
    for (const c of others) o[c.name] = r.columns.get(c.id) ?? null;
    lines[i] = encodeLine(o);
  }
  return Buffer.from(lines.join(''), 'utf8');
}
