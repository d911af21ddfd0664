/**
 * Plans of point SELECTs kept per parse-cache template (docs/sql.md "Plan cache"). `pgbench -S`
 * sends `SELECT abalance FROM pgbench_accounts WHERE aid = N;` with a new N each time: the parse
 * cache (sql/parse-cache.ts) already knows the statements differ only in N, so the access path (a
 * point read of the row whose key is N), the projection and the compiled target list are the same
 * every time. A template whose SELECT is exactly that shape — one table, no clause but the target
 * list and a WHERE of `key = literal` (or `key = $n`) on every primary key column (integers), the target list plain
 * columns — is planned once after its first run; later texts of the template read the row with
 * their own literals and run the kept target list, without a copy of the tree, its walk, the
 * access-path choice or a compile.
 *
 * Same answers: a point read returns the row whose key is the literals or nothing, so the WHERE
 * (equalities on the key) holds for every row it returns and is not evaluated again. A key given as
 * parameters (`$1`: a prepared statement, the extended protocol) is read with each execution's
 * values, made as the planner makes them, and the WHERE is kept (a parameter's comparison depends on
 * its Bind type); a NULL or unreadable parameter is planned as always. Same errors:
 * the template's first run went through the planner and succeeded; the constants are integers in
 * int4 range on int4 / int8 key columns, so no later value fails where the first did not.
 * Invalidation: a plan is used only while the catalog gives a definition of the table equal to the
 * one it was made with (DDL here or on any server, seen as the planner sees it, through the
 * catalog cache) and the same ysql_rows_in_memory_max; yb_read_time sessions are planned as always
 * (the caller does not ask). Bounded: kept per template node, which the parse cache bounds
 * (PARSE_CACHE_ENTRIES_MAX); a dropped template's plan goes with it (a WeakMap).
 */
import type { ColumnValue, Row, Table } from '../../client';
import type { Node } from '../sql-parser';
import type { TemplateRef } from '../parse-cache';
import { names } from './ast';
import { readRows } from './access';
import type { SqlTableDef } from './catalog';
import { isVirtualRelation } from './pg-catalog';
import { columnsOf, projection } from './preload';
import { compileExpr } from './expr';
import { Scope, type Compiled, type EvalContext, type Tuple } from './scope';
import { compileSelect, type LoadedRelation, type OutputField, type SelectPlan } from './select';
import { toStorage, type SqlTypeName } from './sql-types';

type SelectStmt = Extract<Node, { SelectStmt: unknown }>['SelectStmt'];

export interface PointPlan {
  def: SqlTableDef;
  /** The definition the plan was made with, as text: a reloaded definition equal to it keeps the plan. */
  defJson: string;
  rowsMax: number;
  /** Each key column's literal (its index in the template's values, negated for `-N`) or parameter (`$n`, compiled). */
  keys: Array<{ col: string; type: SqlTypeName; index: number; negate: boolean; param?: Compiled }>;
  /** The parameter types the plan was compiled for (a `$n` key's value is typed by them). */
  paramTypes: string;
  /** Columns the read ships (undefined: all). */
  columns: string[] | undefined;
  /** The relation the compiled target list reads: its rows are set for one synchronous run. */
  relation: LoadedRelation;
  select: SelectPlan;
  fields: OutputField[];
}

export interface PlanCatalog {
  get(name: string): Promise<SqlTableDef | undefined>;
}

/** Template statement node → its plan, or null when its shape is not a cached one. */
const plans = new WeakMap<object, PointPlan | null>();

/** Clauses a cached SELECT may have (anything else — ORDER BY, LIMIT, DISTINCT, WITH, locking … — is planned as always). */
const PLAIN_SELECT_KEYS = new Set(['targetList', 'fromClause', 'whereClause', 'limitOption', 'op']);
const KEY_TYPES = new Set<SqlTypeName>(['int4', 'int8']);

/** The template's SELECT when it is a one-table SELECT of plain clauses, else undefined. */
function plainSelect(stmt: Node): { sel: SelectStmt; rv: Extract<Node, { RangeVar: unknown }>['RangeVar'] } | undefined {
  if (!('SelectStmt' in stmt)) return undefined;
  const sel = stmt.SelectStmt;
  for (const k in sel) if (!PLAIN_SELECT_KEYS.has(k)) return undefined;
  if ((sel.op ?? 'SETOP_NONE') !== 'SETOP_NONE' || (sel.limitOption ?? 'LIMIT_OPTION_DEFAULT') !== 'LIMIT_OPTION_DEFAULT') return undefined;
  const from = sel.fromClause ?? [];
  const f = from[0];
  if (from.length !== 1 || !f || !('RangeVar' in f)) return undefined;
  const rv = f.RangeVar;
  if (rv.schemaname || !rv.relname || rv.alias?.colnames || isVirtualRelation(undefined, rv.relname)) return undefined;
  // Plain column names only: nothing in the target list can depend on the constants.
  for (const t of sel.targetList ?? []) {
    const val = 'ResTarget' in t ? t.ResTarget.val : undefined;
    if (!val || !('ColumnRef' in val) || !(val.ColumnRef.fields ?? []).every((x) => 'String' in x)) return undefined;
  }
  return { sel, rv };
}

/** `col = literal` conjuncts of WHERE, each literal one of the template's; undefined for anything else. */
function keyEqualities(where: Node | undefined, alias: string, consts: ReadonlyMap<object, number>): Array<{ col: string; slot: number; param?: Node }> | undefined {
  if (!where) return undefined;
  const parts = 'BoolExpr' in where && where.BoolExpr.boolop === 'AND_EXPR' ? where.BoolExpr.args ?? [] : [where];
  const out: Array<{ col: string; slot: number; param?: Node }> = [];
  for (const c of parts) {
    if (!('A_Expr' in c) || (c.A_Expr.kind ?? 'AEXPR_OP') !== 'AEXPR_OP' || names(c.A_Expr.name).join('.') !== '=') return undefined;
    const { lexpr, rexpr } = c.A_Expr;
    const [ref, lit] = lexpr && 'ColumnRef' in lexpr ? [lexpr, rexpr] : [rexpr, lexpr];
    if (!ref || !('ColumnRef' in ref) || !lit || !('A_Const' in lit || 'ParamRef' in lit)) return undefined;
    const slot = 'A_Const' in lit ? consts.get(lit.A_Const) : 0;
    const path = names(ref.ColumnRef.fields);
    if (slot === undefined || path.length > 2 || (path.length === 2 && path[0] !== alias)) return undefined;
    out.push({ col: path[path.length - 1]!, slot, ...('ParamRef' in lit ? { param: lit } : {}) });
  }
  return out;
}

/** A plan for the template's statement on `def`, or null when the statement is not a cached shape. */
export function makePointPlan(ref: TemplateRef, def: SqlTableDef, rowsMax: number, paramTypes: SqlTypeName[] = []): PointPlan | null {
  const found = plainSelect(ref.stmt);
  if (!found) return null;
  const { sel, rv } = found;
  const alias = rv.alias?.aliasname ?? def.name;
  const eqs = keyEqualities(sel.whereClause, alias, ref.consts);
  const keyCols = [...def.hash, ...def.range];
  if (!eqs || !def.hasPrimaryKey || keyCols.length === 0 || eqs.length !== keyCols.length) return null;
  // All literals (the WHERE is dropped: its constants are the template's) or all parameters (the
  // WHERE is kept and evaluated as the planner does: `$n` is typed by the Bind, read at run time).
  const byParams = eqs.every((e) => e.param);
  if (!byParams && eqs.some((e) => e.param)) return null;
  const env = { paramTypes, subquery: () => { throw new Error('unreachable: no subquery in a cached plan'); } };
  const keys: PointPlan['keys'] = [];
  for (const col of keyCols) {
    const e = eqs.filter((x) => x.col === col);
    const type = def.columns.find((c) => c.name === col)?.type;
    if (e.length !== 1 || !type || !KEY_TYPES.has(type)) return null;
    const param = e[0]!.param ? compileExpr(e[0]!.param, new Scope([]), env) : undefined;
    keys.push({ col, type, index: e[0]!.slot >= 0 ? e[0]!.slot : ~e[0]!.slot, negate: e[0]!.slot < 0, ...(param ? { param } : {}) });
  }
  const relation: LoadedRelation = { columns: columnsOf(def, alias), rows: [], tableOid: def.oid };
  const select = compileSelect({ targetList: sel.targetList, fromClause: sel.fromClause, ...(byParams ? { whereClause: sel.whereClause } : {}), limitOption: 'LIMIT_OPTION_DEFAULT', op: 'SETOP_NONE' }, { paramTypes, rowsMax, relation: () => relation });
  const used = new Set<string>(keyCols);
  for (const t of sel.targetList ?? []) if ('ResTarget' in t && t.ResTarget.val && 'ColumnRef' in t.ResTarget.val) used.add(names(t.ResTarget.val.ColumnRef.fields).at(-1)!);
  return { def, defJson: JSON.stringify(def), rowsMax, keys, paramTypes: paramTypes.join(), columns: projection(def, used), relation, select, fields: select.fields };
}

/** The template's plan if it has one that still holds (see the file comment), else undefined. */
export async function cachedPointPlan(ref: TemplateRef, catalog: PlanCatalog, rowsMax: number, paramTypes: SqlTypeName[] = []): Promise<PointPlan | undefined> {
  const p = plans.get(ref.stmt);
  if (!p) return undefined;
  let def: SqlTableDef | undefined;
  try {
    def = await catalog.get(p.def.name);
  } catch {
    // The planner reads the catalog again inside the statement, where its error is the statement's.
    return undefined;
  }
  if (def !== p.def) {
    // The catalog cache reloads definitions (a new object each time): an equal one keeps the plan.
    if (!def || JSON.stringify(def) !== p.defJson) {
      plans.delete(ref.stmt);
      return undefined;
    }
    p.def = def;
  }
  return p.rowsMax === rowsMax && p.paramTypes === paramTypes.join() ? p : undefined;
}

/** After a planned run of the template's statement: keep its plan (once per template and definition). */
export async function rememberPointPlan(ref: TemplateRef, catalog: PlanCatalog, rowsMax: number, paramTypes: SqlTypeName[] = []): Promise<void> {
  if (plans.get(ref.stmt) !== undefined) return;
  const found = plainSelect(ref.stmt);
  const def = found ? await catalog.get(found.rv.relname!) : undefined;
  plans.set(ref.stmt, def ? makePointPlan(ref, def, rowsMax, paramTypes) : null);
}

/**
 * Run a kept plan with the statement's own literals or parameters: one point read, then the kept
 * target list (and WHERE, for parameters). Undefined when a parameter is NULL or does not evaluate:
 * the planner's path then (a key condition it skips), so the caller plans the statement.
 */
export async function runPointPlan(p: PointPlan, values: number[], tableOf: (name: string) => Table, ctx: EvalContext): Promise<{ fields: OutputField[]; rows: Tuple[] } | undefined> {
  const key: Row = {};
  for (const k of p.keys) {
    let v;
    if (k.param) {
      try {
        v = k.param.eval([], ctx);
      } catch {
        return undefined;
      }
      if (v === null) return undefined;
    } else v = BigInt(k.negate ? -values[k.index]! : values[k.index]!);
    key[k.col] = toStorage(v, k.type) as ColumnValue;
  }
  const rows = await readRows(tableOf, p.def, { type: 'point', key }, p.rowsMax, p.columns);
  // The compiled list reads `relation` synchronously: no other statement runs between these lines.
  p.relation.rows = rows;
  try {
    return { fields: p.fields, rows: p.select.run(ctx) };
  } finally {
    p.relation.rows = [];
  }
}
