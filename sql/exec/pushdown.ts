/**
 * Aggregates on the tablets (docs/sql.md, "Aggregates on the tablets"): `SELECT count(*), sum(c),
 * min(c), max(c), count(c) FROM t [WHERE …]` — one table, no GROUP BY, HAVING, DISTINCT or ORDER BY, a WHERE
 * the tablets' scan filter can evaluate entirely (where-pushdown.ts), each output an aggregate of a
 * column (or a cast of one) — is answered by Table.aggregate: every tablet folds its
 * rows and only partial results cross the network, instead of every row coming to the SQL layer.
 * The statement is then run with each aggregate replaced by its value as a typed constant, so names,
 * types, casts and output formatting are the executor's own.
 */
import type { AggregateSpec, Table } from '../../client';
import type { Node } from '../sql-parser';
import { baseName, names } from './ast';
import { aggregateType } from './aggregates';
import type { SqlCatalog, SqlTableDef } from './catalog';
import type { CompileEnv } from './expr';
import type { EvalContext } from './scope';
import { tabletFilter, type TabletFilter } from './where-pushdown';
import { isFloatType, isIntegerType, textOf, type SqlTypeName, type SqlValue } from './sql-types';

type SelectStmt = Extract<Node, { SelectStmt: unknown }>['SelectStmt'];
type FuncCall = Extract<Node, { FuncCall: unknown }>['FuncCall'];

const FNS = new Set(['count', 'sum', 'min', 'max']);

/** What evaluating a WHERE's constants needs. */
export interface WhereEnv {
  env: CompileEnv;
  ctx: EvalContext;
}

interface Pushed {
  def: SqlTableDef;
  filter?: TabletFilter;
  calls: Array<{ target: number; call: FuncCall; spec: AggregateSpec; type: SqlTypeName }>;
}

/** The aggregate under a target (itself, or the argument of a cast). */
function aggregateCall(n: Node | undefined): FuncCall | undefined {
  if (!n) return undefined;
  if ('FuncCall' in n) return n.FuncCall;
  if ('TypeCast' in n && n.TypeCast.arg && 'FuncCall' in n.TypeCast.arg) return n.TypeCast.arg.FuncCall;
  return undefined;
}

/** Whether `sel` can be answered on the tablets, and how. */
export async function pushdownPlan(sel: SelectStmt, catalog: SqlCatalog, w?: WhereEnv): Promise<Pushed | undefined> {
  if ((sel.whereClause && !w) || sel.groupClause || sel.havingClause || sel.distinctClause || sel.sortClause || sel.withClause || sel.valuesLists || sel.op !== 'SETOP_NONE' || sel.windowClause || sel.lockingClause) return undefined;
  const from = sel.fromClause ?? [];
  if (from.length !== 1 || !('RangeVar' in from[0]!) || from[0].RangeVar.schemaname) return undefined;
  // Every output must be an aggregate: most statements (pgbench's point SELECT) stop here, before
  // the catalog and the WHERE are looked at.
  if (!(sel.targetList ?? []).every((t) => 'ResTarget' in t && aggregateCall(t.ResTarget.val) !== undefined)) return undefined;
  const def = await catalog.get(from[0].RangeVar.relname ?? '');
  if (!def) return undefined;
  const alias = from[0].RangeVar.alias?.aliasname ?? def.name;
  // A WHERE goes along only when the tablets can evaluate all of it.
  const filter = sel.whereClause && w ? tabletFilter(def, alias, sel.whereClause, w.env, w.ctx) : undefined;
  if (sel.whereClause && (!filter || filter.residual > 0)) return undefined;
  const calls: Pushed['calls'] = [];
  for (const [i, t] of (sel.targetList ?? []).entries()) {
    if (!('ResTarget' in t)) return undefined;
    const call = aggregateCall(t.ResTarget.val);
    if (!call) return undefined;
    const fn = baseName(call.funcname);
    if (!FNS.has(fn) || call.agg_distinct || call.agg_filter || call.over || call.agg_order || call.agg_within_group || call.func_variadic) return undefined;
    if (call.agg_star) {
      if (fn !== 'count') return undefined;
      calls.push({ target: i, call, spec: { fn: 'count' }, type: 'int8' });
      continue;
    }
    const args = call.args ?? [];
    if (args.length !== 1 || !('ColumnRef' in args[0]!)) return undefined;
    const parts = names(args[0].ColumnRef.fields);
    if (parts.length > 2 || (parts.length === 2 && parts[0] !== alias)) return undefined;
    const col = def.columns.find((c) => c.name === parts[parts.length - 1] && !c.hidden);
    if (!col) return undefined;
    // Values the tablets compare and add exactly as the executor would: integers, floats, text.
    const numeric = isIntegerType(col.type) || isFloatType(col.type);
    if (fn === 'sum' && !numeric) return undefined;
    if ((fn === 'min' || fn === 'max') && !numeric && col.type !== 'text' && col.type !== 'varchar') return undefined;
    calls.push({ target: i, call, spec: { fn: fn as AggregateSpec['fn'], column: col.name }, type: fn === 'count' ? 'int8' : aggregateType(fn, col.type) });
  }
  return calls.length > 0 ? { def, calls, ...(filter ? { filter } : {}) } : undefined;
}

/** A typed constant: `'text'::type`, or NULL of that type. */
function constant(v: SqlValue, type: SqlTypeName): Node {
  const typeName = { names: [{ String: { sval: 'pg_catalog' } }, { String: { sval: type } }], typemod: -1 };
  const arg: Node = v === null ? { A_Const: { isnull: true } } : { A_Const: { sval: { sval: textOf(v) } } };
  return { TypeCast: { arg, typeName } } as Node;
}

/**
 * Compute the aggregates on the tablets and return the statement with each replaced by its value
 * (a copy; FROM dropped). `table` reads in the session's transaction or at its read time.
 */
export async function runPushdown(sel: SelectStmt, p: Pushed, table: Table, o: { readHt?: bigint; timeoutMs: number }): Promise<SelectStmt> {
  // With no aggregate of a column (count(*) only), the tablets read keys and no value column.
  const keysOnly = p.calls.every((c) => c.spec.column === undefined) ? { columns: [...p.def.hash, ...p.def.range].slice(0, 1) } : {};
  const values = await table.aggregate(p.calls.map((c) => c.spec), { timeoutMs: o.timeoutMs, ...keysOnly, ...(p.filter ? { filter: p.filter.ast } : {}), ...(o.readHt !== undefined ? { readHt: o.readHt } : {}) });
  const copy = structuredClone(sel);
  const targets = copy.targetList!;
  p.calls.forEach((c, k) => {
    const t = targets[c.target]!;
    if (!('ResTarget' in t)) return;
    let v: SqlValue = values[k] as SqlValue;
    // sum of int8 is numeric in PostgreSQL (text here), as the executor's own accumulator answers it.
    if (v !== null && c.type === 'numeric') v = String(v);
    const replacement = constant(v, c.type);
    const val = t.ResTarget.val!;
    if ('TypeCast' in val) val.TypeCast.arg = replacement;
    else t.ResTarget.val = replacement;
    // The output keeps the aggregate's name (count, sum, …), as PostgreSQL names it.
    t.ResTarget.name ??= baseName(c.call.funcname);
  });
  delete copy.fromClause;
  delete copy.whereClause;
  return copy;
}

/** EXPLAIN's line for a pushed-down statement. */
export function describePushdown(p: Pushed): string {
  const what = p.calls.map((c) => `${c.spec.fn}(${c.spec.column ?? '*'})`).join(', ');
  const where = p.filter ? `; filter on the tablets: ${p.filter.pushed.join(' AND ')}` : '';
  return `Aggregate on the tablets of ${p.def.name} (${what}${where}; every tablet folds its rows, only partial results are sent)`;
}
