/**
 * One row as a line of tessera's export format (docs/backup.md): a JSON object of the row's columns,
 * values keeping their types — int64 as {"$i":"…"}, bytes as {"$b":"base64"}, doubles JSON cannot
 * hold as {"$d":"NaN"|"Infinity"|"-Infinity"}; strings, finite doubles, booleans and null as
 * themselves — and a newline. The client writes these lines from rows it read, and a tablet server
 * writes them itself for an export's scan (ScanRequestPB.row_format = EXPORT_LINES): both through
 * this one function, so the bytes (and the digests over them) are the same either way.
 */

export type LineValue = bigint | number | string | boolean | Uint8Array | null;

export function encodeLineValue(v: LineValue): unknown {
  if (typeof v === 'bigint') return { $i: v.toString() };
  if (v instanceof Uint8Array) return { $b: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') };
  if (typeof v === 'number' && !Number.isFinite(v)) return { $d: String(v) };
  return v;
}

/** The row's line (with its newline); columns in the object's own key order. */
export function encodeLine(row: Readonly<Record<string, LineValue>>): string {
  const o: Record<string, unknown> = {};
  for (const k in row) o[k] = encodeLineValue(row[k]!);
  return `${JSON.stringify(o)}\n`;
}
