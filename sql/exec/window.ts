/**
 * Window functions (docs/sql.md, "Window functions"): `f(…) OVER ([PARTITION BY …] [ORDER BY …]
 * [ROWS|RANGE frame])` and `WINDOW w AS (…)`. They run after WHERE, GROUP BY and HAVING, over the rows
 * those leave: each call gets a slot past the aggregates' slots, filled per row before the target list
 * is evaluated. Ranking (row_number, rank, dense_rank, percent_rank, cume_dist, ntile), offsets (lag,
 * lead, first_value, last_value, nth_value) and every aggregate over its frame, with PostgreSQL's
 * default frame (RANGE UNBOUNDED PRECEDING to the current row's last peer with ORDER BY, else the
 * whole partition).
 */
import type { Node } from '../sql-parser';
import { aggregateType, newAccumulator } from './aggregates';
import { baseName, syntax } from './ast';
import { compileExpr, type CompileEnv } from './expr';
import { isAggregate } from './functions';
import type { Compiled, EvalContext, Scope, Tuple } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';
import { sortKey, sortProjected, type Projected, type SortKey } from './select-rows';
import { coerce, textOf, type SqlValue } from './sql-types';

type WindowDef = Extract<Node, { WindowDef: unknown }>['WindowDef'];

// PostgreSQL's frame option bits (parsenodes.h).
const F = { RANGE: 0x2, ROWS: 0x4, GROUPS: 0x8, START_UNB_PREC: 0x20, START_CUR: 0x200, END_UNB_FOL: 0x100, END_CUR: 0x400, START_OFF_PREC: 0x800, END_OFF_PREC: 0x1000, START_OFF_FOL: 0x2000, END_OFF_FOL: 0x4000, EXCLUDE: 0x8000 | 0x10000 | 0x20000 };
const DEFAULT_FRAME = F.RANGE | F.START_UNB_PREC | F.END_CUR;

export interface WindowSlot {
  fn: string;
  args: Compiled[];
  star: boolean;
  partition: Compiled[];
  order: SortKey[];
  frame: number;
  startOffset?: Compiled;
  endOffset?: Compiled;
}

const RANKING = new Set(['row_number', 'rank', 'dense_rank', 'percent_rank', 'cume_dist', 'ntile']);
const VALUES = new Set(['lag', 'lead', 'first_value', 'last_value', 'nth_value']);

/** The window an OVER clause names or spells, merged with the WINDOW clause entry it refers to. */
function resolveWindow(over: WindowDef, named: ReadonlyMap<string, WindowDef>): WindowDef {
  const ref = over.name ?? over.refname;
  if (ref === undefined) return over;
  const base = named.get(ref);
  if (!base) throw new SqlError(SqlState.UNDEFINED_OBJECT, `window "${ref}" does not exist`);
  if (over.name !== undefined) return base;
  return { ...base, ...(over.orderClause ? { orderClause: over.orderClause } : {}), frameOptions: over.frameOptions ?? base.frameOptions };
}

/** The window hook of a CompileEnv: each call takes the next slot; `offset()` is where slots start in a row (known once compiled). */
export function windowSlots(slots: WindowSlot[], offset: () => number, scope: Scope, env: CompileEnv, named: ReadonlyMap<string, WindowDef>): CompileEnv['window'] {
  return (call) => {
    if (!('FuncCall' in call) || !call.FuncCall.over) throw syntax('malformed window call');
    const f = call.FuncCall;
    const fn = baseName(f.funcname);
    if (!RANKING.has(fn) && !VALUES.has(fn) && !isAggregate(fn)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${fn}() is not a window function or an aggregate`);
    if (f.agg_distinct) throw notSupported('DISTINCT in a window aggregate');
    if (f.agg_filter || f.agg_order) throw notSupported('FILTER or ORDER BY inside a window aggregate');
    const w = resolveWindow(f.over!, named);
    const frame = w.frameOptions ?? DEFAULT_FRAME;
    if (frame & (F.GROUPS | F.EXCLUDE)) throw notSupported('GROUPS frames and EXCLUDE');
    if (frame & F.RANGE && frame & (F.START_OFF_PREC | F.START_OFF_FOL | F.END_OFF_PREC | F.END_OFF_FOL)) throw notSupported('RANGE frames with an offset');
    // Arguments and keys see the grouped rows, so they may hold aggregates (sum(sum(x)) OVER ()).
    const args = (f.args ?? []).map((a) => compileExpr(a, scope, env));
    const slot = slots.length;
    slots.push({
      fn, args, star: f.agg_star === true, frame,
      partition: (w.partitionClause ?? []).map((p) => compileExpr(p, scope, env)),
      order: (w.orderClause ?? []).map((o) => sortKey(o, [], scope, env)),
      ...(w.startOffset ? { startOffset: compileExpr(w.startOffset, scope, env) } : {}),
      ...(w.endOffset ? { endOffset: compileExpr(w.endOffset, scope, env) } : {}),
    });
    const type = RANKING.has(fn) ? (fn === 'percent_rank' || fn === 'cume_dist' ? 'float8' : fn === 'ntile' ? 'int4' : 'int8') : VALUES.has(fn) ? args[0]?.type ?? 'text' : aggregateType(fn, args[0]?.type);
    return { type, name: fn, eval: (row) => row[offset() + slot] ?? null };
  };
}

/** Rows extended with every window slot's value (`width` values per row before the slots). */
export function computeWindows(rows: Tuple[], slots: WindowSlot[], width: number, ctx: EvalContext): Tuple[] {
  const out = rows.map((r) => { const x = r.slice(0, width); x.length = width; return x; });
  slots.forEach((s, si) => {
    const parts = new Map<string, Projected[]>();
    rows.forEach((r, i) => {
      const k = JSON.stringify(s.partition.map((p) => { const v = p.eval(r, ctx); return v === null ? null : textOf(v); }));
      let list = parts.get(k);
      if (!list) parts.set(k, (list = []));
      // out[0] carries the row's index; keys are the ORDER BY values.
      list.push({ out: [BigInt(i)], keys: s.order.map((o) => o.expr.eval(r, ctx)) });
    });
    for (const list of parts.values()) {
      if (s.order.length > 0) sortProjected(list, s.order);
      const values = partitionValues(s, list.map((p) => rows[Number(p.out[0])]!), list.map((p) => p.keys), ctx);
      list.forEach((p, k) => { out[Number(p.out[0])]![width + si] = values[k]!; });
    }
  });
  return out;
}

/** Index ranges of peers (rows equal on ORDER BY) in a sorted partition: peerEnd[i] is the last peer of i. */
function peers(keys: SqlValue[][]): { start: number[]; end: number[] } {
  const same = (a: SqlValue[], b: SqlValue[]): boolean => JSON.stringify(a.map((v) => (v === null ? null : textOf(v)))) === JSON.stringify(b.map((v) => (v === null ? null : textOf(v))));
  const start: number[] = [];
  const end: number[] = new Array<number>(keys.length);
  keys.forEach((k, i) => start.push(i > 0 && same(keys[i - 1]!, k) ? start[i - 1]! : i));
  for (let i = keys.length - 1; i >= 0; i--) end[i] = i < keys.length - 1 && start[i + 1] === start[i] ? end[i + 1]! : i;
  return { start, end };
}

function offsetOf(c: Compiled | undefined, row: Tuple, ctx: EvalContext): number {
  const v = c ? c.eval(row, ctx) : null;
  const n = v === null ? NaN : Number(coerce(v, 'int8'));
  if (!(n >= 0)) throw new SqlError(SqlState.INVALID_PARAMETER, 'frame starting or ending offset must not be null or negative');
  return n;
}

/** The frame [from, to] of row i (inclusive; empty when from > to). */
function frameOf(s: WindowSlot, i: number, n: number, pe: { start: number[]; end: number[] }, row: Tuple, ctx: EvalContext): [number, number] {
  const rows = (s.frame & F.ROWS) !== 0;
  const noOrder = s.order.length === 0;
  let from = 0;
  if (s.frame & F.START_CUR) from = rows ? i : noOrder ? 0 : pe.start[i]!;
  else if (s.frame & F.START_OFF_PREC) from = i - offsetOf(s.startOffset, row, ctx);
  else if (s.frame & F.START_OFF_FOL) from = i + offsetOf(s.startOffset, row, ctx);
  let to = n - 1;
  if (s.frame & F.END_CUR) to = rows ? i : noOrder ? n - 1 : pe.end[i]!;
  else if (s.frame & F.END_OFF_PREC) to = i - offsetOf(s.endOffset, row, ctx);
  else if (s.frame & F.END_OFF_FOL) to = i + offsetOf(s.endOffset, row, ctx);
  return [Math.max(from, 0), Math.min(to, n - 1)];
}

/** One slot's values for a sorted partition's rows. */
function partitionValues(s: WindowSlot, rows: Tuple[], keys: SqlValue[][], ctx: EvalContext): SqlValue[] {
  const n = rows.length;
  const pe = peers(keys);
  const arg = (k: number, i: number): SqlValue => s.args[k]?.eval(rows[i]!, ctx) ?? null;
  switch (s.fn) {
    case 'row_number': return rows.map((_, i) => BigInt(i + 1));
    case 'rank': return rows.map((_, i) => BigInt(pe.start[i]! + 1));
    case 'dense_rank': { let d = 0; return rows.map((_, i) => { if (pe.start[i] === i) d++; return BigInt(d); }); }
    case 'percent_rank': return rows.map((_, i) => (n <= 1 ? 0 : pe.start[i]! / (n - 1)));
    case 'cume_dist': return rows.map((_, i) => (pe.end[i]! + 1) / n);
    case 'ntile': return rows.map((_, i) => {
      const b = Number(coerce(arg(0, i), 'int8'));
      if (!(b > 0)) throw new SqlError(SqlState.INVALID_PARAMETER, 'argument of ntile must be greater than zero');
      const small = Math.floor(n / b);
      const big = n % b;
      return BigInt(i < big * (small + 1) ? Math.floor(i / (small + 1)) + 1 : big + Math.floor((i - big * (small + 1)) / Math.max(small, 1)) + 1);
    });
    case 'lag': case 'lead': return rows.map((_, i) => {
      const k = s.args[1] ? Number(coerce(arg(1, i), 'int8')) : 1;
      const j = s.fn === 'lag' ? i - k : i + k;
      return j >= 0 && j < n ? arg(0, j) : s.args[2] ? arg(2, i) : null;
    });
    default: break;
  }
  const out: SqlValue[] = [];
  // An aggregate whose frame starts at the partition's first row adds rows as the frame's end moves on.
  const growing = (s.frame & F.START_UNB_PREC) !== 0 && (s.frame & (F.END_OFF_PREC | F.END_OFF_FOL)) === 0 && !VALUES.has(s.fn);
  const running = growing ? newAccumulator(s.fn, s.args[0]?.type, s.star, false) : undefined;
  let added = 0;
  for (let i = 0; i < n; i++) {
    const [from, to] = frameOf(s, i, n, pe, rows[i]!, ctx);
    if (VALUES.has(s.fn)) {
      const at = s.fn === 'first_value' ? from : s.fn === 'last_value' ? to : from + Number(coerce(arg(1, i), 'int8')) - 1;
      out.push(from <= to && at >= from && at <= to ? arg(0, at) : null);
      continue;
    }
    if (running) {
      for (; added <= to; added++) running.add(s.star ? 1n : arg(0, added));
      out.push(running.result());
      continue;
    }
    const acc = newAccumulator(s.fn, s.args[0]?.type, s.star, false);
    for (let j = from; j <= to; j++) acc.add(s.star ? 1n : arg(0, j));
    out.push(acc.result());
  }
  return out;
}
