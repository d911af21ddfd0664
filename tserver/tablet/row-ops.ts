/**
 * Atomic row operations (docs/rows.md): increment, append, checkAndMutate, mutateRow and mutateRows
 * of one tablet, as Bigtable and HBase give them. The pure core here evaluates conditions and
 * mutations against the rows' current values and answers the concrete RowOps to write; the tablet
 * leader runs it under the rows' locks at a read time above every earlier write of those rows, and
 * replicates what it answers as ONE ordinary WRITE entry at a hybrid time above that read time — so
 * followers only apply puts, and a resent request (retryable requests) finds the entry instead of
 * adding twice (tablet-types.ts: WriteRequest.computed).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { DocKey, Primitive, Row, RowOp } from '../../docdb';
import type { HeldLock } from './row-locks';

export const CompareOp = { EQ: 'EQ', NE: 'NE', LT: 'LT', GT: 'GT', EXISTS: 'EXISTS', ABSENT: 'ABSENT' } as const;
export type CompareOp = (typeof CompareOp)[keyof typeof CompareOp];

/**
 * A condition on one cell. EQ/NE/LT/GT compare a present cell with `value` (an absent cell fails
 * them all: test it with EXISTS / ABSENT); values of different types never compare.
 */
export interface RowCondition {
  columnId: number;
  op: CompareOp;
  value?: Primitive;
}

export type CellMutation =
  /** Set a cell (null: delete the cell). */
  | { type: 'PUT'; columnId: number; value: Primitive }
  /** Tombstone the whole row (mutations after it in the list start a new row). */
  | { type: 'DELETE_ROW' }
  /** Add to an int64 cell (absent counts as 0); the new value is answered. */
  | { type: 'INCREMENT'; columnId: number; by: bigint }
  /** Append to a string or bytes cell (absent counts as empty); the new value is answered. */
  | { type: 'APPEND'; columnId: number; value: string | Uint8Array };

/** What to do to one row: all conditions must hold (for every row of the call) for anything to be written. */
export interface RowMutation {
  key: DocKey;
  conditions: RowCondition[];
  mutations: CellMutation[];
  /** The row lock this write carries (row-locks.ts). */
  lock?: HeldLock;
  /** Release `lock` with this write (its UNLOCK entry right behind the write's, one Raft round). */
  unlockAfter?: boolean;
}

export interface Evaluated {
  /** Undefined: a condition failed, nothing is written. */
  ops: RowOp[] | undefined;
  /** Per row, the final values of the cells its INCREMENTs and APPENDs changed. */
  results: Array<Map<number, Primitive>>;
}

export const INT64_MIN = -(1n << 63n);
export const INT64_MAX = (1n << 63n) - 1n;

/** Order of two values of the same type (undefined: not comparable). */
export function compareValues(a: Primitive, b: Primitive): number | undefined {
  if (a === null || b === null) return undefined;
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  return undefined;
}

export function conditionHolds(c: RowCondition, cells: ReadonlyMap<number, Primitive> | undefined): boolean {
  const v = cells?.get(c.columnId) ?? null;
  if (c.op === CompareOp.EXISTS) return v !== null;
  if (c.op === CompareOp.ABSENT) return v === null;
  const cmp = compareValues(v, c.value ?? null);
  if (cmp === undefined) return false;
  switch (c.op) {
    case CompareOp.EQ:
      return cmp === 0;
    case CompareOp.NE:
      return cmp !== 0;
    case CompareOp.LT:
      return cmp < 0;
    case CompareOp.GT:
      return cmp > 0;
  }
}

/**
 * Evaluate `rows` (their current values in `current`, same order): when every condition holds, the
 * RowOps that make each row what its mutations say, in one entry; else none. Throws
 * INVALID_ARGUMENT (an increment past int64, a cell of the wrong type) or VALUE_TOO_LARGE (an
 * append past `cellBytesMax`) — nothing is written then either.
 */
export function evaluateRowMutations(rows: readonly RowMutation[], current: ReadonlyArray<Row | undefined>, cellBytesMax: number): Evaluated {
  const results = rows.map(() => new Map<number, Primitive>());
  for (let i = 0; i < rows.length; i++) {
    for (const c of rows[i]!.conditions) if (!conditionHolds(c, current[i]?.columns)) return { ops: undefined, results };
  }
  const ops: RowOp[] = [];
  rows.forEach((r, i) => ops.push(...rowOps(r, current[i], cellBytesMax, results[i]!)));
  return { ops, results };
}

/** One row's RowOps: a delete when the mutations delete it, then an upsert of the cells set after. */
function rowOps(r: RowMutation, row: Row | undefined, cellBytesMax: number, result: Map<number, Primitive>): RowOp[] {
  const cells = new Map<number, Primitive>(row?.columns ?? []);
  const touched = new Set<number>();
  let deleted = false;
  for (const m of r.mutations) {
    switch (m.type) {
      case 'DELETE_ROW':
        deleted = true;
        cells.clear();
        touched.clear();
        result.clear();
        break;
      case 'PUT':
        cells.set(m.columnId, m.value);
        touched.add(m.columnId);
        if (result.has(m.columnId)) result.set(m.columnId, m.value);
        break;
      case 'INCREMENT': {
        const v = incremented(cells.get(m.columnId) ?? null, m.by, m.columnId);
        cells.set(m.columnId, v);
        touched.add(m.columnId);
        result.set(m.columnId, v);
        break;
      }
      case 'APPEND': {
        const v = appended(cells.get(m.columnId) ?? null, m.value, m.columnId, cellBytesMax);
        cells.set(m.columnId, v);
        touched.add(m.columnId);
        result.set(m.columnId, v);
        break;
      }
    }
  }
  const out: RowOp[] = [];
  if (deleted) out.push({ type: 'delete', key: r.key });
  if (touched.size > 0) out.push({ type: 'upsert', key: r.key, columns: [...touched].sort((a, b) => a - b).map((columnId) => ({ columnId, value: cells.get(columnId) ?? null })) });
  return out;
}

function incremented(cur: Primitive, by: bigint, columnId: number): bigint {
  if (cur !== null && typeof cur !== 'bigint') throw new DbError(ErrorCode.INVALID_ARGUMENT, `increment: column ${columnId} holds a ${cur instanceof Uint8Array ? 'bytes' : typeof cur} value, not an int64`, { columnId });
  const v = (cur ?? 0n) + by;
  if (v < INT64_MIN || v > INT64_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `increment: column ${columnId} would leave int64 (${cur ?? 0n} + ${by})`, { columnId, overflow: true });
  return v;
}

function appended(cur: Primitive, add: string | Uint8Array, columnId: number, cellBytesMax: number): string | Uint8Array {
  let v: string | Uint8Array;
  if (typeof add === 'string') {
    if (cur !== null && typeof cur !== 'string') throw new DbError(ErrorCode.INVALID_ARGUMENT, `append: column ${columnId} does not hold a string`, { columnId });
    v = (cur ?? '') + add;
  } else {
    if (cur !== null && !(cur instanceof Uint8Array)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `append: column ${columnId} does not hold bytes`, { columnId });
    v = Buffer.concat([cur ?? new Uint8Array(0), add]);
  }
  const bytes = typeof v === 'string' ? Buffer.byteLength(v) : v.byteLength;
  if (bytes > cellBytesMax) throw new DbError(ErrorCode.VALUE_TOO_LARGE, `append: column ${columnId} would hold ${bytes} bytes; at most ${cellBytesMax} (row_cell_bytes_max)`, { columnId, bytes, cellBytesMax });
  return v;
}

/** Whether evaluating `rows` needs their current values (conditions, increments, appends). */
export function readsRows(rows: readonly RowMutation[]): boolean {
  return rows.some((r) => r.conditions.length > 0 || r.mutations.some((m) => m.type === 'INCREMENT' || m.type === 'APPEND'));
}

/** The cells a resent request answers (its entry was applied before: read back at its hybrid time). */
export function resultColumns(r: RowMutation): number[] {
  const ids: number[] = [];
  for (const m of r.mutations) {
    if (m.type === 'DELETE_ROW') ids.length = 0;
    else if ((m.type === 'INCREMENT' || m.type === 'APPEND') && !ids.includes(m.columnId)) ids.push(m.columnId);
  }
  return ids;
}
