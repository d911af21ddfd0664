/**
 * GROUP BY ROLLUP (…), CUBE (…), GROUPING SETS (…) (docs/sql.md, "Queries and DML"): the GROUP BY
 * list as the grouping sets it stands for (PostgreSQL's expansion: items of the list combine as a
 * cross product), each a subset of one list of distinct grouping expressions. select.ts aggregates
 * once per set; a row of a set has NULL in the columns that set does not group by.
 */
import type { Node } from '../sql-parser';
import { names } from './ast';
import type { EvalContext, Scope, Tuple } from './scope';
import { aggregateRows, type AggSlot } from './select-rows';
import type { Compiled } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';

/** Sets a GROUP BY may expand to (PostgreSQL refuses more than 4096). */
export const GROUPING_SETS_MAX = 4096;

type Unit = Node[];

const sig = (n: Node): string => JSON.stringify(n, (k, v: unknown) => (k === 'location' ? undefined : v));

function units(content: Node[] | undefined): Unit[] {
  return (content ?? []).map((n) => ('RowExpr' in n ? n.RowExpr.args ?? [] : [n]));
}

/** The alternative sets one GROUP BY item stands for. */
function alternatives(n: Node): Node[][] {
  if (!('GroupingSet' in n)) return [[n]];
  const g = n.GroupingSet;
  const us = units(g.content);
  switch (g.kind) {
    case 'GROUPING_SET_EMPTY': return [[]];
    case 'GROUPING_SET_SIMPLE': return [us.flat()];
    case 'GROUPING_SET_ROLLUP': return us.map((_u, i) => us.slice(0, us.length - i).flat()).concat([[]]);
    case 'GROUPING_SET_CUBE': {
      if (us.length > 12) throw new SqlError(SqlState.PROGRAM_LIMIT, 'CUBE is limited to 12 elements');
      const out: Node[][] = [];
      for (let mask = (1 << us.length) - 1; mask >= 0; mask--) out.push(us.filter((_u, i) => (mask & (1 << (us.length - 1 - i))) !== 0).flat());
      return out;
    }
    case 'GROUPING_SET_SETS': return (g.content ?? []).flatMap((c) => ('RowExpr' in c ? [c.RowExpr.args ?? []] : alternatives(c)));
    default: throw notSupported(`grouping set ${g.kind ?? ''}`);
  }
}

export interface GroupingSets {
  /** The distinct grouping expressions, in first-seen order. */
  exprs: Node[];
  /** Per set: which of `exprs` it groups by. */
  sets: boolean[][];
  /** Per expression: the source column (scope index) it names, nulled in the rows of sets without it. */
  columns: number[];
}

/** Undefined for a plain GROUP BY (no ROLLUP, CUBE or GROUPING SETS). */
export function groupingSets(groupClause: Node[] | undefined, scope: Scope): GroupingSets | undefined {
  if (!(groupClause ?? []).some((n) => 'GroupingSet' in n)) return undefined;
  let sets: Node[][] = [[]];
  for (const item of groupClause ?? []) {
    const alts = alternatives(item);
    sets = sets.flatMap((s) => alts.map((a) => [...s, ...a]));
    if (sets.length > GROUPING_SETS_MAX) throw new SqlError(SqlState.STATEMENT_TOO_COMPLEX, `too many grouping sets present (maximum ${GROUPING_SETS_MAX})`);
  }
  const exprs: Node[] = [];
  const index = new Map<string, number>();
  for (const s of sets) for (const e of s) if (!index.has(sig(e))) { index.set(sig(e), exprs.length); exprs.push(e); }
  const columns = exprs.map((e) => {
    const hit = 'ColumnRef' in e ? scope.find(names(e.ColumnRef.fields).length > 1 ? names(e.ColumnRef.fields).at(-2) : undefined, names(e.ColumnRef.fields).at(-1)!) : [];
    if (hit.length !== 1) throw notSupported('grouping sets of expressions other than column names');
    return hit[0]!;
  });
  return { exprs, sets: sets.map((s) => { const has = new Set(s.map(sig)); return exprs.map((e) => has.has(sig(e))); }), columns };
}

/** Aggregates once per grouping set; a set's rows have NULL in the columns it does not group by. */
export function aggregateBySets(rows: Tuple[], g: GroupingSets, keys: Compiled[], slots: AggSlot[], base: number, ctx: EvalContext): Tuple[] {
  return g.sets.flatMap((mask) => {
    const own = keys.filter((_k, i) => mask[i]);
    const out = aggregateRows(rows, own, slots, base, ctx, own.length === 0);
    for (const r of out) mask.forEach((has, i) => { if (!has) r[g.columns[i]!] = null; });
    return out;
  });
}
