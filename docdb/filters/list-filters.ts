/**
 * Filter lists (HBase FilterList MUST_PASS_ALL / MUST_PASS_ONE) and the wrappers SkipFilter and
 * WhileMatchFilter, with HBase's rules for merging the children's codes and hints:
 * - AND: a row needs every child; the most restrictive code wins (DONE, then the farthest row
 *   seek, then NEXT_ROW). Cells go through the children in order and stop at the first that does not
 *   include (so a counting child after a value test counts only cells that passed it).
 * - OR: a row needs one child, and a cell needs one of the children that accepted its row; the least
 *   restrictive code wins (the nearest seek), DONE only when every child is done.
 */
import { BaseFilter, ReturnCode, type CellFilter, type FilterCell, type FilterRow, type SeekHint } from './evaluator';

function maxRowHint(a: Buffer | undefined, b: Buffer): Buffer {
  return a === undefined || Buffer.compare(b, a) > 0 ? b : a;
}
function minRowHint(a: Buffer | undefined, b: Buffer): Buffer {
  return a === undefined || Buffer.compare(b, a) < 0 ? b : a;
}
function rowHintOf(f: CellFilter): Buffer | undefined {
  const h = f.hint();
  return h !== undefined && 'row' in h ? h.row : undefined;
}
function columnHintOf(f: CellFilter): number | undefined {
  const h = f.hint();
  return h !== undefined && 'column' in h ? h.column : undefined;
}

/** What AND and OR lists share: cells pass through every child in turn; every child hears each row's end. */
abstract class ListFilter extends BaseFilter {
  constructor(protected readonly children: readonly CellFilter[]) {
    super();
  }
  override transformCell(cell: FilterCell): FilterCell {
    let out = cell;
    for (const c of this.children) out = c.transformCell(out);
    return out;
  }
  override rowDone(included: boolean): void {
    for (const c of this.children) c.rowDone(included);
  }
  override countsCells(): boolean {
    return this.children.some((c) => c.countsCells());
  }
}

export class AndFilter extends ListFilter {
  private decider: CellFilter | undefined;
  constructor(children: readonly CellFilter[]) {
    super(children);
  }
  override startRow(row: FilterRow): ReturnCode {
    this.decider = undefined;
    this.lastHint = undefined;
    let seekTo: Buffer | undefined;
    let nextRow = false;
    let done = false;
    // Every child sees every row start (their per-row state resets), whatever the others say.
    for (const c of this.children) {
      const code = c.startRow(row);
      if (code === ReturnCode.DONE) done = true;
      else if (code === ReturnCode.SEEK) {
        const h = rowHintOf(c);
        if (h !== undefined) seekTo = maxRowHint(seekTo, h);
        else nextRow = true;
      } else if (code !== ReturnCode.INCLUDE) nextRow = true;
    }
    if (done) return ReturnCode.DONE;
    if (seekTo !== undefined) return this.seek({ row: seekTo });
    return nextRow ? ReturnCode.NEXT_ROW : ReturnCode.INCLUDE;
  }
  override filterCell(cell: FilterCell): ReturnCode {
    let counted = false;
    for (const c of this.children) {
      const code = c.filterCell(cell);
      if (code !== ReturnCode.INCLUDE) {
        this.decider = c;
        // A counting child before this one must see the cells a column hint would skip.
        if (code === ReturnCode.SEEK && counted && columnHintOf(c) !== undefined) return ReturnCode.SKIP;
        return code;
      }
      counted ||= c.countsCells();
    }
    return ReturnCode.INCLUDE;
  }
  override hint(): SeekHint | undefined {
    return this.decider !== undefined ? this.decider.hint() : this.lastHint;
  }
  override filterAllRemaining(): boolean {
    return this.children.some((c) => c.filterAllRemaining());
  }
}

export class OrFilter extends ListFilter {
  /** Children that accepted the current row (only they judge its cells). */
  private active: boolean[] = [];
  constructor(children: readonly CellFilter[]) {
    super(children);
  }
  override startRow(row: FilterRow): ReturnCode {
    let seekTo: Buffer | undefined;
    let nextRow = false;
    let allDone = true;
    this.active = this.children.map((c) => {
      const code = c.startRow(row);
      if (code !== ReturnCode.DONE) allDone = false;
      if (code === ReturnCode.SEEK) {
        const h = rowHintOf(c);
        if (h !== undefined) seekTo = minRowHint(seekTo, h);
        else nextRow = true;
      } else if (code === ReturnCode.NEXT_ROW || code === ReturnCode.SKIP || code === ReturnCode.NEXT_COL) nextRow = true;
      return code === ReturnCode.INCLUDE;
    });
    if (this.active.some((a) => a)) return ReturnCode.INCLUDE;
    if (allDone) return ReturnCode.DONE;
    if (nextRow || seekTo === undefined) return ReturnCode.NEXT_ROW;
    return this.seek({ row: seekTo });
  }
  override filterCell(cell: FilterCell): ReturnCode {
    let include = false;
    let skip = false;
    let seekCol: number | undefined;
    // Every active child sees the cell (a counting child keeps its count whatever the others say).
    this.children.forEach((c, i) => {
      if (!this.active[i]) return;
      const code = c.filterCell(cell);
      if (code === ReturnCode.INCLUDE) include = true;
      else if (code === ReturnCode.NEXT_ROW || code === ReturnCode.DONE) this.active[i] = false;
      else if (code === ReturnCode.SEEK && columnHintOf(c) !== undefined) seekCol = Math.min(seekCol ?? Infinity, columnHintOf(c)!);
      else skip = true;
    });
    if (include) return ReturnCode.INCLUDE;
    if (!this.active.some((a) => a)) return ReturnCode.NEXT_ROW;
    if (skip || seekCol === undefined) return ReturnCode.SKIP;
    return this.seek({ column: seekCol });
  }
  override filterAllRemaining(): boolean {
    return this.children.every((c) => c.filterAllRemaining());
  }
}

/**
 * The inner filter judged over the whole row: the row passes only if the inner filter accepts the
 * row and each of its cells (SkipFilter); WhileMatchFilter ends the scan at the first row that fails.
 */
export class WholeRowFilter extends BaseFilter {
  private ended = false;
  constructor(
    private readonly inner: CellFilter,
    private readonly endOnFailure: boolean,
  ) {
    super();
  }
  override startRow(row: FilterRow): ReturnCode {
    if (this.ended) return ReturnCode.DONE;
    const code = this.inner.startRow(row);
    let pass = code === ReturnCode.INCLUDE;
    for (let i = 0; pass && i < row.cells.length; i++) pass = this.inner.filterCell(row.cells[i]!) === ReturnCode.INCLUDE;
    if (pass) return ReturnCode.INCLUDE;
    if (this.endOnFailure || code === ReturnCode.DONE) {
      this.ended = true;
      return ReturnCode.DONE;
    }
    const h = code === ReturnCode.SEEK ? rowHintOf(this.inner) : undefined;
    return h !== undefined ? this.seek({ row: h }) : ReturnCode.NEXT_ROW;
  }
  override transformCell(cell: FilterCell): FilterCell {
    return this.inner.transformCell(cell);
  }
  override rowDone(included: boolean): void {
    this.inner.rowDone(included);
  }
  override filterAllRemaining(): boolean {
    return this.ended || this.inner.filterAllRemaining();
  }
  override countsCells(): boolean {
    return this.inner.countsCells();
  }
}
