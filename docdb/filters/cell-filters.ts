/**
 * Cell filters: column sets (ColumnPrefixFilter, ColumnRangeFilter, QualifierFilter), value tests
 * (ValueFilter, SingleColumnValueFilter), and the counting and shaping ones (KeyOnlyFilter,
 * FirstKeyOnlyFilter, PageFilter, ColumnPaginationFilter, TimestampsFilter). Cells come in column
 * id order (the storage order within a DocKey), which is what makes column hints valid.
 */
import { htPhysicalMicros } from '../../common/hybrid-time';
import { BaseFilter, ReturnCode, type FilterCell, type FilterRow } from './evaluator';

/** A compiled value test of one cell's value (the literal already converted per column type). */
export type ValueTest = (cell: FilterCell) => boolean;

/**
 * Cells of a fixed set of columns (sorted ids). With `seekHints` a cell of another column seeks to
 * the next column of the set, or drops the rest of the row past the last one (HBase's
 * ColumnPrefixFilter and ColumnRangeFilter hints); without, it is skipped (QualifierFilter).
 */
export class ColumnSetFilter extends BaseFilter {
  private readonly set: ReadonlySet<number>;
  constructor(
    private readonly ids: readonly number[],
    private readonly seekHints: boolean,
  ) {
    super();
    this.set = new Set(ids);
  }
  override filterCell(cell: FilterCell): ReturnCode {
    if (this.set.has(cell.columnId)) return ReturnCode.INCLUDE;
    if (!this.seekHints) return ReturnCode.SKIP;
    const next = this.ids.find((id) => id > cell.columnId);
    return next === undefined ? ReturnCode.NEXT_ROW : this.seek({ column: next });
  }
}

export class ValueFilter extends BaseFilter {
  constructor(private readonly test: ValueTest) {
    super();
  }
  override filterCell(cell: FilterCell): ReturnCode {
    return this.test(cell) ? ReturnCode.INCLUDE : ReturnCode.SKIP;
  }
}

/**
 * Rows by one column's value (HBase SingleColumnValueFilter, latest version only): the row passes
 * when the column holds a value that passes the test, or when it holds none and !filterIfMissing.
 * Decided at the start of the row, from the row's cells, so a failing row is never looked at cell
 * by cell.
 */
export class SingleColumnValueFilter extends BaseFilter {
  constructor(
    private readonly columnId: number,
    private readonly test: ValueTest,
    private readonly filterIfMissing: boolean,
  ) {
    super();
  }
  override startRow(row: FilterRow): ReturnCode {
    const c = row.cells.find((x) => x.columnId === this.columnId);
    if (c === undefined) return this.filterIfMissing ? ReturnCode.NEXT_ROW : ReturnCode.INCLUDE;
    return this.test(c) ? ReturnCode.INCLUDE : ReturnCode.NEXT_ROW;
  }
}

/** Keys only: every cell's value is dropped (the row comes back with its key and null columns). */
export class KeyOnlyFilter extends BaseFilter {
  override transformCell(cell: FilterCell): FilterCell {
    return { ...cell, value: null };
  }
}

export class FirstKeyOnlyFilter extends BaseFilter {
  private seen = false;
  override countsCells(): boolean {
    return true;
  }
  override startRow(_row: FilterRow): ReturnCode {
    this.seen = false;
    return ReturnCode.INCLUDE;
  }
  override filterCell(_cell: FilterCell): ReturnCode {
    if (this.seen) return ReturnCode.NEXT_ROW;
    this.seen = true;
    return ReturnCode.INCLUDE;
  }
}

/** At most `rows` rows (per tablet and scan call, as HBase's per region; the client caps the total). */
export class PageFilter extends BaseFilter {
  private accepted = 0;
  constructor(private readonly rows: number) {
    super();
  }
  override startRow(_row: FilterRow): ReturnCode {
    return this.accepted >= this.rows ? ReturnCode.DONE : ReturnCode.INCLUDE;
  }
  override rowDone(included: boolean): void {
    if (included) this.accepted++;
  }
  override filterAllRemaining(): boolean {
    return this.accepted >= this.rows;
  }
}

/** Per row, skip the first `offset` cells that reach it and keep the next `limit`. */
export class ColumnPaginationFilter extends BaseFilter {
  private count = 0;
  override countsCells(): boolean {
    return true;
  }
  constructor(
    private readonly limit: number,
    private readonly offset: number,
  ) {
    super();
  }
  override startRow(_row: FilterRow): ReturnCode {
    this.count = 0;
    return ReturnCode.INCLUDE;
  }
  override filterCell(_cell: FilterCell): ReturnCode {
    const i = this.count++;
    if (i < this.offset) return ReturnCode.NEXT_COL;
    return i < this.offset + this.limit ? ReturnCode.INCLUDE : ReturnCode.NEXT_ROW;
  }
}

/** Cells whose version was written at one of these times (the hybrid time's physical microseconds). */
export class TimestampsFilter extends BaseFilter {
  constructor(private readonly micros: ReadonlySet<bigint>) {
    super();
  }
  override filterCell(cell: FilterCell): ReturnCode {
    return this.micros.has(htPhysicalMicros(cell.ht)) ? ReturnCode.INCLUDE : ReturnCode.SKIP;
  }
}
