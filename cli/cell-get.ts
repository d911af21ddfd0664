/**
 * `get`'s cell flags (docs/cells.md): --versions N --as_of T --time_range A,B --raw --families cf,...
 * Times: a hybrid time (17 digits or more), a wall-clock time in ms (fewer digits), or an ISO date.
 */
import { DbError, ErrorCode } from '../common/errors';
import { htToJson } from '../common/hybrid-time';
import type { CellReadOptions, CellRowResult, CellTime } from '../client/cells';
import type { ColumnValue, Row } from '../client/client-types';
import type { TesseraClient } from '../client/tessera-client';
import { print, printJson, printTable } from './cli-io';

export function bad(msg: string, part: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, msg, { part });
}

/** A time on the command line: hybrid time (≥ 17 digits), wall ms (fewer digits) or an ISO date. */
export function parseCellTime(text: string, what: string): CellTime {
  const s = text.trim();
  if (/^\d{17,20}$/.test(s)) return BigInt(s);
  if (/^\d{1,16}$/.test(s)) return Number(s);
  const ms = Date.parse(s);
  if (!Number.isFinite(ms)) throw bad(`${what} '${text}' is not a time: a hybrid time, a wall time in ms, or an ISO date`, what);
  return ms;
}

export interface CellGetFlags {
  versions?: string;
  as_of?: string;
  time_range?: string;
  raw?: boolean;
  families?: string;
}

export function wantsCells(o: CellGetFlags): boolean {
  return o.versions !== undefined || o.as_of !== undefined || o.time_range !== undefined || o.raw === true || o.families !== undefined;
}

/** get's cell flags as client read options (checked here; the tablet checks again). */
export function cellReadOptions(o: CellGetFlags, columns: string[] | undefined): CellReadOptions {
  const out: CellReadOptions = {};
  if (o.versions !== undefined) {
    const n = Number(o.versions);
    if (!/^\d+$/.test(o.versions) || n < 1) throw bad(`--versions ${o.versions} must be a positive integer`, 'VERSIONS');
    out.versions = n;
  }
  if (o.as_of !== undefined) out.asOf = parseCellTime(o.as_of, 'AS_OF');
  if (o.time_range !== undefined) {
    const parts = o.time_range.split(',');
    if (parts.length !== 2) throw bad(`--time_range ${o.time_range} must look like MIN,MAX`, 'TIME_RANGE');
    out.timeRange = [parseCellTime(parts[0]!, 'TIME_RANGE'), parseCellTime(parts[1]!, 'TIME_RANGE')];
  }
  if (o.raw) out.raw = true;
  if (o.families !== undefined) out.families = o.families.split(',').map((x) => x.trim()).filter(Boolean);
  if (columns) out.columns = columns;
  return out;
}

const shown = (v: ColumnValue | undefined): string => (v === undefined ? '' : v instanceof Uint8Array ? `0x${Buffer.from(v).toString('hex')}` : String(v));

export function printCells(row: CellRowResult | undefined, json: boolean): void {
  if (json) {
    return printJson({
      key: row?.key ?? null,
      cells: (row?.cells ?? []).map((c) => ({ column: c.column, family: c.family, timestamp: c.timestamp.toString(), time: htToJson(c.timestamp).iso, type: c.type, ...(c.value !== undefined ? { value: typeof c.value === 'bigint' ? c.value.toString() : c.value instanceof Uint8Array ? shown(c.value) : c.value } : {}), ...(c.ttlMs ? { ttlMs: c.ttlMs } : {}) })),
    });
  }
  if (!row || row.cells.length === 0) return print('(no cells)');
  printTable(['column', 'family', 'timestamp', 'time', 'type', 'value'], row.cells.map((c) => [c.column || '(row)', c.family, c.timestamp.toString(), htToJson(c.timestamp).iso, c.type, shown(c.value)]));
}

export async function getCells(c: TesseraClient, table: string, key: Row, o: CellGetFlags, columns: string[] | undefined): Promise<CellRowResult | undefined> {
  return c.table(table).getCells(key, cellReadOptions(o, columns));
}

