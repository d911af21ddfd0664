/**
 * WHERE on the tablets (docs/sql.md, "WHERE on the tablets"): the conjuncts of a statement's WHERE
 * that a tablet scan filter (docs/filters.md) evaluates exactly as the executor would become one
 * filter that travels with the scan, so rows it rejects never leave their tablet. A conjunct
 * `column op constant` is pushed when
 *  - the column is a value column: a SingleColumnValueFilter (with filterIfMissing, so NULL fails
 *    every comparison as in SQL), or the table's leading key column: a RowRangeFilter;
 *  - the comparison means the same on both sides: integer columns against integer constants, float
 *    columns against finite non-zero constants (the tablet orders -0 below 0, SQL does not),
 *    text and varchar against text (ordering only for constants below U+D800, where UTF-8 byte order
 *    and JavaScript's UTF-16 order agree), booleans for = and <>.
 * Everything else (OR, functions, other types, non-leading key columns) stays in the executor, which
 * applies the whole WHERE again to the rows that come back: a pushed filter may only make the
 * executor's input smaller, never its answer different.
 */
import type { FilterAst, FilterLiteral } from '../../common/filter-ast';
import type { Node } from '../sql-parser';
import { baseName, names } from './ast';
import type { SqlColumnDef, SqlTableDef } from './catalog';
import { compileExpr, type CompileEnv } from './expr';
import { Scope, type EvalContext } from './scope';
import { coerce, isFloatType, isIntegerType, type SqlTypeName, type SqlValue } from './sql-types';

/** The filter for a table's scan, and EXPLAIN's account of what went where. */
export interface TabletFilter {
  ast: FilterAst;
  /** The pushed conjuncts, as EXPLAIN shows them. */
  pushed: string[];
  /** How many conjuncts only the executor evaluates. */
  residual: number;
}

type Op = '=' | '!=' | '<' | '<=' | '>' | '>=';
const OPS: Record<string, Op> = { '=': '=', '<>': '!=', '!=': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const FLIP: Record<Op, Op> = { '=': '=', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/**
 * The conditions ANDed in `n`; `x BETWEEN a AND b` counts as `x >= a` and `x <= b` (exactly what it
 * means; NOT BETWEEN and BETWEEN SYMMETRIC stay whole), so it can bound a scan like those two.
 */
export function conjuncts(n: Node | undefined): Node[] {
  if (!n) return [];
  if ('BoolExpr' in n && n.BoolExpr.boolop === 'AND_EXPR') return (n.BoolExpr.args ?? []).flatMap(conjuncts);
  if ('A_Expr' in n && n.A_Expr.kind === 'AEXPR_BETWEEN' && n.A_Expr.lexpr && n.A_Expr.rexpr && 'List' in n.A_Expr.rexpr) {
    const [lo, hi, ...more] = n.A_Expr.rexpr.List.items ?? [];
    if (lo && hi && more.length === 0) {
      const cmp = (op: string, rexpr: Node): Node => ({ A_Expr: { kind: 'AEXPR_OP', name: [{ String: { sval: op } }], lexpr: n.A_Expr.lexpr, rexpr, location: n.A_Expr.location } });
      return [cmp('>=', lo), cmp('<=', hi)];
    }
  }
  return [n];
}

/** The column of `def` a reference names (bare, or qualified by the table's alias). */
function columnOf(n: Node, def: SqlTableDef, alias: string): SqlColumnDef | undefined {
  if (!('ColumnRef' in n)) return undefined;
  const parts = names(n.ColumnRef.fields);
  if (parts.length === 0 || parts.length > 2 || (parts.length === 2 && parts[0] !== alias)) return undefined;
  return def.columns.find((c) => c.name === parts[parts.length - 1] && !c.hidden);
}

/** The constant as the executor compares it with a column of type `t` (compareOp's unify), if the tablet compares it the same way. */
function literalFor(col: SqlColumnDef, op: Op, k: { type: SqlTypeName; value: SqlValue }): FilterLiteral | undefined {
  if (k.value === null) return undefined;
  const ct = col.type;
  const kt = k.type;
  let v: SqlValue;
  try {
    if (isIntegerType(ct) && (kt === 'unknown' || isIntegerType(kt))) {
      v = coerce(k.value, kt === 'unknown' ? ct : 'int8');
      return typeof v === 'bigint' ? { int: v.toString() } : undefined;
    }
    if (isFloatType(ct) && (kt === 'unknown' || isIntegerType(kt) || isFloatType(kt))) {
      v = coerce(k.value, 'float8');
      return typeof v === 'number' && Number.isFinite(v) && v !== 0 ? v : undefined;
    }
    if ((ct === 'text' || ct === 'varchar') && (kt === 'unknown' || kt === 'text' || kt === 'varchar')) {
      v = coerce(k.value, ct);
      if (typeof v !== 'string') return undefined;
      return op === '=' || op === '!=' || !/[\uD800-\uFFFF]/.test(v) ? v : undefined;
    }
    if (ct === 'bool' && (kt === 'unknown' || kt === 'bool') && (op === '=' || op === '!=')) {
      v = coerce(k.value, 'bool');
      return typeof v === 'boolean' ? v : undefined;
    }
  } catch {
    // A constant the column's type refuses: the executor reports it (or finds no rows to compare).
  }
  return undefined;
}

function rowRange(op: Op, lit: FilterLiteral): FilterAst | undefined {
  switch (op) {
    case '=':
      return { type: 'rowRange', start: lit, startInclusive: true, stop: lit, stopInclusive: true };
    case '<':
    case '<=':
      return { type: 'rowRange', startInclusive: true, stop: lit, stopInclusive: op === '<=' };
    case '>':
    case '>=':
      return { type: 'rowRange', start: lit, startInclusive: op === '>=', stopInclusive: false };
    default:
      return undefined; // != is two ranges; left to the executor
  }
}

function show(col: string, op: Op, lit: FilterLiteral): string {
  const v = typeof lit === 'object' && 'int' in lit ? lit.int : typeof lit === 'string' ? `'${lit.replace(/'/g, "''")}'` : String(lit);
  return `${col} ${op === '!=' ? '<>' : op} ${v}`;
}

/** One conjunct as a filter, or undefined when only the executor can evaluate it. */
function pushConjunct(c: Node, def: SqlTableDef, alias: string, env: CompileEnv, ctx: EvalContext): { ast: FilterAst; text: string } | undefined {
  if (!('A_Expr' in c) || (c.A_Expr.kind ?? 'AEXPR_OP') !== 'AEXPR_OP' || !c.A_Expr.lexpr || !c.A_Expr.rexpr) return undefined;
  const op0 = OPS[baseName(c.A_Expr.name)];
  if (!op0) return undefined;
  for (const [colSide, valSide, op] of [[c.A_Expr.lexpr, c.A_Expr.rexpr, op0], [c.A_Expr.rexpr, c.A_Expr.lexpr, FLIP[op0]]] as const) {
    const col = columnOf(colSide, def, alias);
    if (!col) continue;
    let k: { type: SqlTypeName; value: SqlValue };
    try {
      const compiled = compileExpr(valSide, new Scope([]), env);
      k = { type: compiled.type, value: compiled.eval([], ctx) };
    } catch {
      return undefined; // not a constant (another column, a subquery): the executor's
    }
    const lit = literalFor(col, op, k);
    if (lit === undefined) return undefined;
    const leading = def.hash[0] ?? def.range[0];
    const isKey = def.hash.includes(col.name) || def.range.includes(col.name);
    if (isKey && col.name !== leading) return undefined;
    const ast: FilterAst | undefined = isKey ? rowRange(op, lit) : { type: 'singleColumnValue', column: col.name, op, comparator: { type: 'binary', value: lit }, filterIfMissing: true };
    return ast ? { ast, text: show(col.name, op, lit) } : undefined;
  }
  return undefined;
}

/** The scan filter for `def`'s rows under `where` (undefined: nothing can be pushed). */
export function tabletFilter(def: SqlTableDef, alias: string, where: Node | undefined, env: CompileEnv, ctx: EvalContext): TabletFilter | undefined {
  const parts = conjuncts(where);
  const pushed: Array<{ ast: FilterAst; text: string }> = [];
  for (const c of parts) {
    const p = pushConjunct(c, def, alias, env, ctx);
    if (p) pushed.push(p);
  }
  if (pushed.length === 0) return undefined;
  const ast: FilterAst = pushed.length === 1 ? pushed[0]!.ast : { type: 'list', op: 'AND', filters: pushed.map((p) => p.ast) };
  return { ast, pushed: pushed.map((p) => p.text), residual: parts.length - pushed.length };
}

/** EXPLAIN's words for a filter (appended to the access path's line). */
export function describeFilter(f: TabletFilter | undefined, where: Node | undefined): string {
  if (!f) return where ? '; WHERE in the executor' : '';
  const rest = f.residual > 0 ? `; the other ${f.residual} condition${f.residual === 1 ? '' : 's'} of WHERE in the executor` : '';
  return `; filter on the tablets: ${f.pushed.join(' AND ')}${rest}`;
}
