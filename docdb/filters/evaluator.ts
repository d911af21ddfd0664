/**
 * The evaluator side of filters: HBase's ReturnCode model (Filter.filterCell) adapted to DocDB,
 * where a scan reads a whole row's versions at once (a DocKey group) and resolves them to cells.
 *
 * Per row the scan calls startRow with the row's key and every visible cell (so row-level filters —
 * row key filters, SingleColumnValueFilter — decide before any cell is looked at), then filterCell
 * for each cell in column order, then rowDone. Codes:
 *   INCLUDE   keep the row (startRow) / the cell (filterCell);
 *   SKIP      drop this cell, look at the next one;
 *   NEXT_COL  drop the rest of this column's versions (one visible version per column here: as SKIP);
 *   NEXT_ROW  drop this row (startRow) / the rest of its cells (filterCell; cells kept so far stay);
 *   SEEK      drop, and seek to hint(): from startRow a row key (every row below it fails too, so the
 *             scan seeks its storage iterators there); from filterCell a column id (cells of this row
 *             below it fail);
 *   DONE      nothing at or after this row can pass: the scan ends (no resume key).
 * A hint is a promise: everything the scan skips because of it would have been rejected. The
 * property test (test/unit/filters-seek-property.test.ts) checks that promise against a scan that
 * reads and evaluates every cell.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { Primitive } from '../encoding/types';

export const ReturnCode = {
  INCLUDE: 'INCLUDE',
  SKIP: 'SKIP',
  NEXT_COL: 'NEXT_COL',
  NEXT_ROW: 'NEXT_ROW',
  SEEK: 'SEEK',
  DONE: 'DONE',
} as const;
export type ReturnCode = (typeof ReturnCode)[keyof typeof ReturnCode];

/** One visible cell of a row: its column, the hybrid time of the version read, its value. */
export interface FilterCell {
  columnId: number;
  ht: HybridTime;
  value: Primitive;
}

export interface FilterRow {
  /** The encoded DocKey (the storage order of rows). */
  key: Buffer;
  /** Non-null cells in column id order (the storage order within a row). */
  cells: readonly FilterCell[];
}

export type SeekHint = { row: Buffer } | { column: number };

export interface CellFilter {
  startRow(row: FilterRow): ReturnCode;
  filterCell(cell: FilterCell): ReturnCode;
  /** The hint of the last SEEK this filter returned. */
  hint(): SeekHint | undefined;
  transformCell(cell: FilterCell): FilterCell;
  /** The row was returned (`included`) or not: row-counting filters (PageFilter) count here. */
  rowDone(included: boolean): void;
  /** Nothing more can pass: the scan may stop before reading another row. */
  filterAllRemaining(): boolean;
  /**
   * Keeps state over the cells it is shown (a count): a list must not pass a column hint of a later
   * child past it, since the cells the hint skips would have changed that state.
   */
  countsCells(): boolean;
}

/** Defaults for filters that decide per cell only. */
export abstract class BaseFilter implements CellFilter {
  protected lastHint: SeekHint | undefined;
  startRow(_row: FilterRow): ReturnCode {
    return ReturnCode.INCLUDE;
  }
  filterCell(_cell: FilterCell): ReturnCode {
    return ReturnCode.INCLUDE;
  }
  hint(): SeekHint | undefined {
    return this.lastHint;
  }
  transformCell(cell: FilterCell): FilterCell {
    return cell;
  }
  rowDone(_included: boolean): void {}
  filterAllRemaining(): boolean {
    return false;
  }
  countsCells(): boolean {
    return false;
  }
  protected seek(h: SeekHint): ReturnCode {
    this.lastHint = h;
    return ReturnCode.SEEK;
  }
}

/** Does a code keep the thing it was asked about? */
export function isInclude(c: ReturnCode): boolean {
  return c === ReturnCode.INCLUDE;
}
