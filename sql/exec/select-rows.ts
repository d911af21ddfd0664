/**
 * The row-level steps a SELECT shares with its set operations: output fields, the target list's
 * compiled expressions, aggregate slots and grouping, and ORDER BY keys and sorting (select.ts
 * plans the statement around them).
 */
import type { Node } from '../sql-parser';
import { newAccumulator, aggregateType, type Accumulator } from './aggregates';
import { baseName, names, syntax } from './ast';
import { compareValues, compileExpr, truth, type CompileEnv } from './expr';
import type { Compiled, EvalContext, Scope, Tuple } from './scope';
import { SqlError, SqlState } from './sql-error';
import { textOf, type SqlTypeName, type SqlValue } from './sql-types';

export interface OutputField {
  name: string;
  type: SqlTypeName;
  tableOid: number;
  attnum: number;
}

export interface Target {
  compiled: Compiled;
  field: OutputField;
  /** The expression as written (a column of `*` as a qualified ColumnRef), for the grouping rules. */
  node?: Node;
}

export interface AggSlot {
  fn: string;
  arg?: Compiled;
  star: boolean;
  distinct: boolean;
  separator?: string;
  /** FILTER (WHERE …): only rows for which it is true reach the aggregate. */
  filter?: Compiled;
  /** ORDER BY inside the call (string_agg(s, ',' ORDER BY s)): the values reach it in this order. */
  order?: SortKey[];
}

export type SortKey = ReturnType<typeof sortKey>;
/** A target row and its sort keys, before DISTINCT, ORDER BY and LIMIT. */
/** A projected row: its output, its ORDER BY keys, and its DISTINCT ON values when the SELECT has them. */
export type Projected = { out: Tuple; keys: SqlValue[]; on?: SqlValue[] };

/** The aggregate hook of a CompileEnv: each aggregate call takes the next slot after the FROM columns. */
export function aggregateSlots(slots: AggSlot[], base: number, scope: Scope, baseEnv: CompileEnv): CompileEnv['aggregate'] {
  return (call) => {
    if (!('FuncCall' in call)) throw syntax('malformed aggregate');
    const f = call.FuncCall;
    const fn = baseName(f.funcname);
    const args = (f.args ?? []).map((a) => compileExpr(a, scope, baseEnv));
    const sep = fn === 'string_agg' && f.args?.[1] && 'A_Const' in f.args[1] ? f.args[1].A_Const.sval?.sval : undefined;
    const slot = slots.length;
    const filter = f.agg_filter ? compileExpr(f.agg_filter, scope, baseEnv) : undefined;
    // An aggregate over DISTINCT values sees them sorted (PostgreSQL sorts to find the duplicates), unless ORDER BY says otherwise.
    const order = f.agg_order?.map((o) => sortKey(o, [], scope, baseEnv)) ?? (f.agg_distinct && args[0] && fn !== 'count' ? [{ expr: args[0], desc: false, nullsFirst: false }] : undefined);
    slots.push({ fn, ...(args[0] ? { arg: args[0] } : {}), star: f.agg_star === true, distinct: f.agg_distinct === true, ...(sep !== undefined ? { separator: sep } : {}), ...(filter ? { filter } : {}), ...(order?.length ? { order } : {}) });
    return { type: aggregateType(fn, args[0]?.type), name: fn, eval: (row) => row[base + slot] ?? null };
  };
}

/** Sorts projected rows in place by ORDER BY (NULLS FIRST / LAST, DESC). */
export function sortProjected(out: Projected[], sorts: SortKey[]): void {
  out.sort((a, b) => {
    for (let i = 0; i < sorts.length; i++) {
      const x = a.keys[i]!;
      const y = b.keys[i]!;
      const s = sorts[i]!;
      if (x === null || y === null) {
        if (x === y) continue;
        return (x === null) === s.nullsFirst ? -1 : 1;
      }
      const c = compareValues(x, y);
      if (c !== 0) return s.desc ? -c : c;
    }
    return 0;
  });
}

export function targetByRef(n: Node, targets: Target[]): number | undefined {
  if ('A_Const' in n && n.A_Const.ival !== undefined) {
    const i = (n.A_Const.ival.ival ?? 0) - 1;
    if (i < 0 || i >= targets.length) throw new SqlError(SqlState.UNDEFINED_COLUMN, `position ${i + 1} is not in select list`);
    return i;
  }
  if ('ColumnRef' in n && n.ColumnRef.fields?.length === 1) {
    const name = names(n.ColumnRef.fields)[0];
    const i = targets.findIndex((t) => t.field.name === name);
    return i >= 0 ? i : undefined;
  }
  return undefined;
}

export function groupExpr(g: Node, targets: Target[], scope: Scope, env: CompileEnv): Compiled {
  const i = targetByRef(g, targets);
  if (i !== undefined && !('ColumnRef' in g && scope.find(undefined, names(g.ColumnRef.fields)[0]!).length > 0)) return targets[i]!.compiled;
  return compileExpr(g, scope, env);
}

export function sortKey(s: Node, targets: Target[], scope: Scope, env: CompileEnv): { expr: Compiled; output?: number; desc: boolean; nullsFirst: boolean } {
  if (!('SortBy' in s)) throw syntax('malformed ORDER BY');
  const node = s.SortBy.node!;
  const desc = s.SortBy.sortby_dir === 'SORTBY_DESC';
  const nullsFirst = s.SortBy.sortby_nulls === 'SORTBY_NULLS_FIRST' ? true : s.SortBy.sortby_nulls === 'SORTBY_NULLS_LAST' ? false : desc;
  const i = targetByRef(node, targets);
  const dummy: Compiled = { type: 'text', name: '', eval: () => null };
  if (i !== undefined) return { expr: dummy, output: i, desc, nullsFirst };
  return { expr: compileExpr(node, scope, env), desc, nullsFirst };
}

export function aggregateRows(rows: Tuple[], keys: Compiled[], slots: AggSlot[], base: number, ctx: EvalContext, single: boolean): Tuple[] {
  type Group = { first: Tuple; accs: Accumulator[]; held: Projected[][] };
  const groups = new Map<string, Group>();
  const fresh = (first: Tuple): Group => ({ first, accs: slots.map((s) => newAccumulator(s.fn, s.arg?.type, s.star, s.distinct, s.separator)), held: slots.map(() => []) });
  for (const r of rows) {
    const k = single ? '' : JSON.stringify(keys.map((e) => { const v = e.eval(r, ctx); return v === null ? null : textOf(v as SqlValue); }));
    let g = groups.get(k);
    if (!g) groups.set(k, (g = fresh(r)));
    slots.forEach((s, i) => {
      if (s.filter && truth(s.filter.eval(r, ctx)) !== true) return;
      const v = s.star ? 1n : s.arg ? s.arg.eval(r, ctx) : null;
      // An ordered aggregate sees its values once they are all in, sorted.
      if (s.order) g.held[i]!.push({ out: [v], keys: s.order.map((o) => o.expr.eval(r, ctx)) });
      else g.accs[i]!.add(v);
    });
  }
  if (single && groups.size === 0) groups.set('', fresh(new Array<SqlValue>(base).fill(null)));
  return [...groups.values()].map((g) => {
    slots.forEach((s, i) => {
      if (!s.order) return;
      sortProjected(g.held[i]!, s.order);
      for (const h of g.held[i]!) g.accs[i]!.add(h.out[0]!);
    });
    return [...g.first.slice(0, base), ...g.accs.map((a) => a.result())];
  });
}

/**
 * DISTINCT ON (e, …): its expressions as keys. ORDER BY must start with them, in any order, as
 * PostgreSQL requires (42P10), so that "the first row of each group" is the ORDER BY's first.
 */
export function distinctOnKeys(on: Node[], sortClause: Node[], targets: Target[], scope: Scope, env: CompileEnv): SortKey[] {
  const keys = on.map((n) => sortKey({ SortBy: { node: n, sortby_dir: 'SORTBY_DEFAULT', sortby_nulls: 'SORTBY_NULLS_DEFAULT' } } as Node, targets, scope, env));
  const sig = (n: Node): string => { const i = targetByRef(n, targets); return i !== undefined ? `#${i}` : JSON.stringify(n, (k, v: unknown) => (k === 'location' ? undefined : v)); };
  const onSigs = new Set(on.map(sig));
  for (const s of sortClause.slice(0, on.length)) {
    if (!('SortBy' in s) || !s.SortBy.node || !onSigs.has(sig(s.SortBy.node))) {
      throw new SqlError(SqlState.INVALID_COLUMN_REFERENCE, 'SELECT DISTINCT ON expressions must match initial ORDER BY expressions');
    }
  }
  return keys;
}

/** The first row of each DISTINCT ON group, in the rows' (sorted) order. */
export function firstOfEach(rows: Projected[]): Projected[] {
  const seen = new Set<string>();
  return rows.filter((o) => {
    const k = JSON.stringify((o.on ?? []).map((v) => (v === null ? null : textOf(v))));
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
