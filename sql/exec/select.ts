/**
 * SELECT: FROM (tables, generate_series, subqueries, joins) -> WHERE -> GROUP BY / aggregates ->
 * HAVING -> target list -> DISTINCT -> ORDER BY -> LIMIT/OFFSET. Base tables were read before the
 * statement runs (relations.ts: point reads and range scans from key predicates, else full scans),
 * so everything here is synchronous and in memory, bounded by ysql_rows_in_memory_max.
 */
import type { Node } from '../sql-parser';
import { baseName, names, syntax } from './ast';
import { compileExpr, truth, type CompileEnv, type SubPlan } from './expr';
import { compareOp } from './operators';
import { Scope, type Compiled, type EvalContext, type ScopeColumn, type Tuple } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';
import { coerce, textOf, type SqlTypeName, type SqlValue } from './sql-types';
import { expandSets, limitRows, srfOf, srfSlots, type SrfSlot } from './set-returning';
import { isSetReturning } from './functions';
import { aggregateBySets, groupingSets, type GroupingSets } from './grouping-sets';
import { computeWindows, windowSlots, type WindowSlot } from './window';
import { checkDistinctOrder, checkGrouped, groupingRule } from './grouping-check';
import { aggregateRows, aggregateSlots, distinctOnKeys, firstOfEach, groupExpr, sortKey, sortProjected, targetByRef, type AggSlot, type OutputField, type Projected, type SortKey, type Target } from './select-rows';

export type { OutputField } from './select-rows';

export interface LoadedRelation {
  columns: ScopeColumn[];
  rows: Tuple[];
  tableOid?: number;
}

export interface PlanEnv {
  paramTypes: SqlTypeName[];
  /** Rows of each base table reference (keyed by its RangeVar node), read before the statement runs. */
  relation: (rangeVar: object) => LoadedRelation;
  rowsMax: number;
  /** WITH queries in scope, by name (a later one and the main query may use an earlier one). */
  ctes?: ReadonlyMap<string, SelectPlan>;
}

export interface SelectPlan {
  fields: OutputField[];
  run: (ctx: EvalContext) => Tuple[];
  /** The same, yielding to the event loop between slices of work (top-level statements use it). */
  runAsync?: (ctx: EvalContext) => Promise<Tuple[]>;
  /**
   * Rows in chunks of about STREAM_CHUNK_BYTES as they are computed (no ORDER BY, DISTINCT, LIMIT or
   * OFFSET): INSERT … SELECT writes one chunk while the next is computed.
   */
  stream?: (ctx: EvalContext, onChunk: (rows: Tuple[]) => Promise<void>) => Promise<void>;
}

/** Size of one streamed chunk of rows (strings and bytes counted). */
export const STREAM_CHUNK_BYTES = 8 * 1024 * 1024;
/** Rows of one streamed chunk at most. */
export const STREAM_CHUNK_ROWS = 5000;

function approxBytes(row: Tuple): number {
  let n = 16;
  for (const v of row) n += typeof v === 'string' ? v.length : v instanceof Uint8Array ? v.length : 8;
  return n;
}

/** Longest stretch of projection work between two yields to the event loop. */
export const PROJECTION_SLICE_MS = 20;

type SelectStmt = Extract<Node, { SelectStmt: unknown }>['SelectStmt'];

export interface FromItem {
  columns: ScopeColumn[];
  /** `left`: for a LATERAL item (perLeft), the row of the items before it that it is read for. */
  rows: (ctx: EvalContext, left?: Tuple) => Tuple[];
  /** LATERAL: its rows depend on the row of the FROM items to its left (docs/sql.md, "Queries and DML"). */
  perLeft?: boolean;
}


/** A CompileEnv over `env` whose subqueries are planned against its relations (DML's SET and WHERE use it too). */
export function compileEnv(env: PlanEnv, aggregate?: CompileEnv['aggregate']): CompileEnv {
  return {
    paramTypes: env.paramTypes,
    subquery: (sel: Node, scope: Scope): SubPlan => {
      if (!('SelectStmt' in sel)) throw notSupported('this subquery');
      const p = compileSelect(sel.SelectStmt, env, scope);
      return { columns: p.fields.length, type: p.fields[0]?.type ?? 'text', run: p.run };
    },
    ...(aggregate ? { aggregate } : {}),
  };
}

function aliasName(alias: { aliasname?: string } | undefined, dflt: string): string {
  return alias?.aliasname ?? dflt;
}

function renameColumns(cols: ScopeColumn[], rel: string, colnames: Node[] | undefined): ScopeColumn[] {
  const renames = names(colnames);
  return cols.map((c, i) => ({ ...c, rel, name: renames[i] ?? c.name }));
}

/** `left`: the columns of the FROM items before this one, which a LATERAL item (or a function in FROM) may name. */
function fromItem(n: Node, env: PlanEnv, outer: Scope | undefined, left: ScopeColumn[] = []): FromItem {
  if ('RangeVar' in n) {
    const cte = !n.RangeVar.schemaname ? env.ctes?.get(n.RangeVar.relname ?? '') : undefined;
    if (cte) {
      const rel = aliasName(n.RangeVar.alias, n.RangeVar.relname ?? '');
      const columns = renameColumns(cte.fields.map((f) => ({ rel, name: f.name, type: f.type })), rel, n.RangeVar.alias?.colnames);
      return { columns, rows: (ctx) => cte.run(ctx) };
    }
    const rel = env.relation(n.RangeVar);
    const name = aliasName(n.RangeVar.alias, n.RangeVar.relname ?? '');
    const columns = renameColumns(rel.columns, name, n.RangeVar.alias?.colnames);
    return { columns, rows: () => rel.rows };
  }
  if ('RangeFunction' in n) {
    const rf = n.RangeFunction;
    const first = rf.functions?.[0];
    const call = first && 'List' in first ? first.List.items?.[0] : undefined;
    if (!call || !('FuncCall' in call)) throw notSupported('this function in FROM');
    const fname = baseName(call.FuncCall.funcname);
    if (!isSetReturning(fname)) throw notSupported(`function ${fname} in FROM (only set-returning functions: generate_series, unnest, regexp_matches, regexp_split_to_table, string_to_table)`);
    // A function in FROM may name the columns of the items before it (PostgreSQL's implicit LATERAL).
    const args = (call.FuncCall.args ?? []).map((a) => compileExpr(a, new Scope(left, outer), compileEnv(env)));
    const g = srfOf(fname, args.length, args[0]?.elementType);
    const rel = aliasName(rf.alias, fname);
    const colName = names(rf.alias?.colnames)[0] ?? rel;
    return { columns: [{ rel, name: colName, type: g.type }], perLeft: left.length > 0, rows: (ctx, l) => g.values(args.map((a) => a.eval(l ?? [], ctx)), env.rowsMax).map((v) => [v]) };
  }
  if ('RangeSubselect' in n) {
    const sub = n.RangeSubselect;
    if (!sub.subquery || !('SelectStmt' in sub.subquery)) throw notSupported('this subquery in FROM');
    // LATERAL: planned with the items before it as its outer query, run once per row of theirs.
    const lateral = sub.lateral === true && left.length > 0;
    const p = compileSelect(sub.subquery.SelectStmt, env, lateral ? new Scope(left, outer) : outer);
    const rel = aliasName(sub.alias, '');
    const columns = renameColumns(p.fields.map((f) => ({ rel, name: f.name, type: f.type })), rel, sub.alias?.colnames);
    if (!lateral) return { columns, rows: (ctx) => p.run(ctx) };
    return { columns, perLeft: true, rows: (ctx, l) => { ctx.outerRows.push(l ?? []); try { return p.run(ctx); } finally { ctx.outerRows.pop(); } } };
  }
  if ('JoinExpr' in n) return joinItem(n.JoinExpr, env, outer);
  throw notSupported(`this FROM item`);
}

/**
 * JOIN … ON / USING (cols) / NATURAL, INNER, LEFT, RIGHT and FULL, as nested loops. USING and NATURAL
 * put each joined column once in front (the left's value, the right's for RIGHT, the first non-null
 * for FULL), as PostgreSQL's `*` shows it; the two sides' own columns stay reachable by table name.
 */
function joinItem(j: Extract<Node, { JoinExpr: unknown }>['JoinExpr'], env: PlanEnv, outer: Scope | undefined): FromItem {
  const l = fromItem(j.larg!, env, outer);
  const r = fromItem(j.rarg!, env, outer, l.columns);
  const kind = j.jointype ?? 'JOIN_INNER';
  if (kind !== 'JOIN_INNER' && kind !== 'JOIN_LEFT' && kind !== 'JOIN_RIGHT' && kind !== 'JOIN_FULL') throw notSupported(`${kind.replace('JOIN_', '')} JOIN`);
  if (r.perLeft && kind !== 'JOIN_INNER' && kind !== 'JOIN_LEFT') throw new SqlError(SqlState.INVALID_COLUMN_REFERENCE, 'The combining JOIN type must be INNER or LEFT for a LATERAL reference.');
  const using = j.isNatural ? l.columns.filter((c) => !c.hidden && r.columns.some((d) => !d.hidden && d.name === c.name)).map((c) => c.name) : names(j.usingClause);
  const side = (cols: ScopeColumn[], name: string, what: string): number => {
    const hits = cols.flatMap((c, i) => (c.name === name && !c.hidden ? [i] : []));
    if (hits.length !== 1) throw new SqlError(hits.length === 0 ? SqlState.UNDEFINED_COLUMN : SqlState.AMBIGUOUS_COLUMN, `column "${name}" specified in USING clause ${hits.length === 0 ? `does not exist in ${what} table` : `appears more than once in ${what} table`}`);
    return hits[0]!;
  };
  const pairs = using.map((name) => ({ name, li: side(l.columns, name, 'left'), ri: side(r.columns, name, 'right') }));
  const raw = [...l.columns, ...r.columns];
  const scope = new Scope(raw, outer);
  const tests = [
    ...pairs.map((p) => compareOp('=', { type: l.columns[p.li]!.type, name: p.name, eval: (row) => row[p.li] ?? null }, { type: r.columns[p.ri]!.type, name: p.name, eval: (row) => row[l.columns.length + p.ri] ?? null })),
    ...(j.quals ? [compileExpr(j.quals, scope, compileEnv(env)).eval] : []),
  ];
  const nullsL = l.columns.map(() => null);
  const nullsR = r.columns.map(() => null);
  const merged: ScopeColumn[] = pairs.map((p) => ({ rel: j.alias?.aliasname ?? '', name: p.name, type: l.columns[p.li]!.type }));
  // A joined column is named once: the sides' copies answer only to their table's name.
  const columns = [...merged, ...raw.map((c) => (using.includes(c.name) && !c.hidden ? { ...c, hidden: true, qualifiedOnly: true } : c))];
  const front = (row: Tuple): Tuple => [...pairs.map((p) => {
    const a = row[p.li] ?? null;
    const b = row[l.columns.length + p.ri] ?? null;
    return kind === 'JOIN_RIGHT' ? b : kind === 'JOIN_FULL' ? (a ?? b) : a;
  }), ...row];
  return {
    columns,
    rows: (ctx) => {
      const ls = l.rows(ctx);
      const rs = r.perLeft ? [] : r.rows(ctx);
      const out: Tuple[] = [];
      const rightMatched = new Set<number>();
      const outerSide = kind === 'JOIN_RIGHT' ? rs : ls;
      for (const o of outerSide) {
        let matched = false;
        (kind === 'JOIN_RIGHT' ? ls : r.perLeft ? r.rows(ctx, o) : rs).forEach((i, k) => {
          const row = kind === 'JOIN_RIGHT' ? [...i, ...o] : [...o, ...i];
          if (tests.every((t) => truth(t(row, ctx)) === true)) {
            matched = true;
            rightMatched.add(k);
            out.push(front(row));
            limitRows(out.length, env.rowsMax);
          }
        });
        if (!matched && (kind === 'JOIN_LEFT' || kind === 'JOIN_FULL')) out.push(front([...o, ...nullsR]));
        if (!matched && kind === 'JOIN_RIGHT') out.push(front([...nullsL, ...o]));
      }
      if (kind === 'JOIN_FULL') rs.forEach((i, k) => { if (!rightMatched.has(k)) out.push(front([...nullsL, ...i])); });
      return out;
    },
  };
}

/** The FROM list's items joined (UPDATE … FROM, DELETE … USING): their columns and rows. */
export function fromList(list: Node[], env: PlanEnv, outer?: Scope): FromItem {
  return crossJoin(fromItems(list, env, outer), env);
}

/** The FROM list's items in order, each knowing the columns of those before it (for LATERAL). */
function fromItems(list: Node[], env: PlanEnv, outer: Scope | undefined): FromItem[] {
  const items: FromItem[] = [];
  for (const f of list) items.push(fromItem(f, env, outer, items.flatMap((i) => i.columns)));
  return items;
}

function crossJoin(items: FromItem[], env: PlanEnv): FromItem {
  if (items.length === 0) return { columns: [], rows: () => [[]] };
  return items.reduce((a, b) => ({
    columns: [...a.columns, ...b.columns],
    rows: (ctx) => {
      const out: Tuple[] = [];
      const bs = b.perLeft ? [] : b.rows(ctx);
      for (const x of a.rows(ctx)) for (const y of b.perLeft ? b.rows(ctx, x) : bs) {
        out.push([...x, ...y]);
        limitRows(out.length, env.rowsMax);
      }
      return out;
    },
  }));
}

function expandTargets(list: Node[], scope: Scope, cenv: CompileEnv, relOids: Map<string, number>): Target[] {
  const out: Target[] = [];
  for (const t of list) {
    if (!('ResTarget' in t)) throw syntax('malformed target list');
    const val = t.ResTarget.val!;
    if ('ColumnRef' in val && val.ColumnRef.fields?.some((f) => 'A_Star' in f)) {
      const parts = names(val.ColumnRef.fields);
      const rel = parts.length > 1 ? parts[parts.length - 2] : undefined;
      let any = false;
      scope.columns.forEach((c, i) => {
        if ((c.hidden && !(rel !== undefined && c.qualifiedOnly)) || (rel !== undefined && c.rel !== rel)) return;
        any = true;
        const node: Node = { ColumnRef: { fields: [{ String: { sval: c.rel } }, { String: { sval: c.name } }] } };
        out.push({ compiled: { type: c.type, name: c.name, eval: (row) => row[i] ?? null }, field: { name: c.name, type: c.type, tableOid: relOids.get(c.rel) ?? 0, attnum: 0 }, node });
      });
      if (!any && rel !== undefined) throw new SqlError(SqlState.UNDEFINED_TABLE, `missing FROM-clause entry for table "${rel}"`);
      continue;
    }
    const c = compileExpr(val, scope, cenv);
    const type = c.type === 'unknown' ? 'text' : c.type;
    out.push({ compiled: c, field: { name: t.ResTarget.name ?? c.name, type, tableOid: 0, attnum: 0 }, node: val });
  }
  return out;
}

/** The compiled parts of a plain SELECT that its run steps share. */
interface SelectParts {
  from: FromItem;
  where: Compiled | undefined;
  grouped: boolean;
  groupExprs: Compiled[];
  /** ROLLUP / CUBE / GROUPING SETS: the sets over groupExprs (grouping-sets.ts). */
  groupSets: GroupingSets | undefined;
  slots: AggSlot[];
  /** Window calls: their values follow the aggregates' in each row (window.ts). */
  windows: WindowSlot[];
  /** Set-returning calls of the target list: their values follow the windows' (set-returning.ts). */
  sets: SrfSlot[];
  rowsMax: number;
  base: number;
  having: Compiled | undefined;
  targets: Target[];
  sorts: SortKey[];
  distinct: boolean;
  /** DISTINCT ON's keys: the first row of each group after ORDER BY is kept. */
  distinctOn: SortKey[] | undefined;
  limit: Compiled | undefined;
  offset: Compiled | undefined;
}

/** Compiles the clauses of a plain SELECT (no set operation, no VALUES) into its parts. */
function compileSelectParts(sel: SelectStmt, env: PlanEnv, outer: Scope | undefined): SelectParts {
  const from = crossJoin(fromItems(sel.fromClause ?? [], env, outer), env);
  const scope = new Scope(from.columns, outer);
  const relOids = new Map<string, number>();
  const baseEnv = compileEnv(env);
  const where = sel.whereClause ? compileExpr(sel.whereClause, scope, baseEnv) : undefined;

  const slots: AggSlot[] = [];
  const base = from.columns.length;
  const aggEnv = compileEnv(env, aggregateSlots(slots, base, scope, baseEnv));
  const windows: WindowSlot[] = [];
  const named = new Map((sel.windowClause ?? []).flatMap((w) => ('WindowDef' in w && w.WindowDef.name ? [[w.WindowDef.name, w.WindowDef] as const] : [])));
  const winEnv: CompileEnv = { ...aggEnv, window: windowSlots(windows, () => base + slots.length, scope, aggEnv, named) };
  const sets: SrfSlot[] = [];
  const targets = expandTargets(sel.targetList ?? [], scope, { ...winEnv, setReturning: srfSlots(sets, () => base + slots.length + windows.length, scope, winEnv) }, relOids);
  const having = sel.havingClause ? compileExpr(sel.havingClause, scope, aggEnv) : undefined;
  const groupSets = groupingSets(sel.groupClause, scope);
  const groupExprs = (groupSets?.exprs ?? sel.groupClause ?? []).map((g) => groupExpr(g, targets, scope, baseEnv));
  const sorts = (sel.sortClause ?? []).map((s) => sortKey(s, targets, scope, winEnv));
  const grouped = slots.length > 0 || groupExprs.length > 0;
  const distinct = sel.distinctClause !== undefined;
  const onNodes = (sel.distinctClause ?? []).filter((d) => Object.keys(d).length > 0);
  const distinctOn = onNodes.length > 0 ? distinctOnKeys(onNodes, sel.sortClause ?? [], targets, scope, winEnv) : undefined;
  const checked = groupSets ? { ...sel, groupClause: groupSets.exprs } : sel;
  if (!distinctOn) checkClauses(checked, targets, scope, grouped);
  else if (grouped) checkClauses({ ...checked, distinctClause: undefined }, targets, scope, grouped);
  const limit = sel.limitCount ? compileExpr(sel.limitCount, new Scope([], outer), baseEnv) : undefined;
  const offset = sel.limitOffset ? compileExpr(sel.limitOffset, new Scope([], outer), baseEnv) : undefined;
  return { from, where, grouped, groupExprs, groupSets, slots, windows, sets, base, having, targets, sorts, distinct, distinctOn, limit, offset, rowsMax: env.rowsMax };
}

/** PostgreSQL's refusals of a grouped query's ungrouped columns (42803) and of DISTINCT's ORDER BY (42P10): grouping-check.ts. */
function checkClauses(sel: SelectStmt, targets: Target[], scope: Scope, grouped: boolean): void {
  const byTarget = (n: Node): Node | undefined => {
    const i = targetByRef(n, targets);
    return i !== undefined && !('ColumnRef' in n && scope.find(undefined, names(n.ColumnRef.fields)[0]!).length > 0) ? targets[i]!.node : undefined;
  };
  const sortNodes = (sel.sortClause ?? []).flatMap((s) => ('SortBy' in s && s.SortBy.node ? [s.SortBy.node] : []));
  if (grouped) {
    const rule = groupingRule((sel.groupClause ?? []).map((g) => byTarget(g) ?? g), scope);
    for (const t of targets) checkGrouped(t.node, rule, scope);
    checkGrouped(sel.havingClause, rule, scope);
    for (const n of sortNodes) if (targetByRef(n, targets) === undefined) checkGrouped(n, rule, scope);
  }
  if (sel.distinctClause) for (const n of sortNodes) if (targetByRef(n, targets) === undefined) checkDistinctOrder(n, targets.flatMap((t) => (t.node ? [t.node] : [])));
}

/** The rows FROM yields, filtered by WHERE, grouped and aggregated, filtered by HAVING. */
function selectSource(p: SelectParts, ctx: EvalContext): Tuple[] {
  let rows = p.from.rows(ctx);
  if (p.where) { const where = p.where; rows = rows.filter((r) => truth(where.eval(r, ctx)) === true); }
  if (p.grouped) rows = p.groupSets ? aggregateBySets(rows, p.groupSets, p.groupExprs, p.slots, p.base, ctx) : aggregateRows(rows, p.groupExprs, p.slots, p.base, ctx, p.groupExprs.length === 0);
  if (p.having) { const having = p.having; rows = rows.filter((r) => truth(having.eval(r, ctx)) === true); }
  if (p.windows.length > 0) rows = computeWindows(rows, p.windows, p.base + p.slots.length, ctx);
  if (p.sets.length > 0) rows = expandSets(rows, p.sets, p.base + p.slots.length + p.windows.length, p.rowsMax, ctx);
  return rows;
}

/** One source row's target values and sort keys. */
function selectProject(p: SelectParts, r: Tuple, ctx: EvalContext): Projected {
  const out = p.targets.map((t) => t.compiled.eval(r, ctx));
  const key = (s: SortKey): SqlValue => (s.output !== undefined ? out[s.output]! : s.expr.eval(r, ctx));
  return { out, keys: p.sorts.map(key), ...(p.distinctOn ? { on: p.distinctOn.map(key) } : {}) };
}

/** DISTINCT, ORDER BY, OFFSET and LIMIT over the projected rows. */
function selectFinish(p: SelectParts, projected: Projected[], ctx: EvalContext): Tuple[] {
  let out = projected;
  if (p.distinctOn) {
    sortProjected(out, p.sorts);
    out = firstOfEach(out);
  } else if (p.distinct) {
    const seen = new Set<string>();
    out = out.filter((o) => { const k = JSON.stringify(o.out.map((v) => (v === null ? null : textOf(v)))); if (seen.has(k)) return false; seen.add(k); return true; });
  }
  if (p.sorts.length > 0 && !p.distinctOn) sortProjected(out, p.sorts);
  let result = out.map((o) => o.out);
  const off = p.offset ? Number(coerce(p.offset.eval([], ctx), 'int8') ?? 0) : 0;
  const lim = p.limit ? p.limit.eval([], ctx) : null;
  if (off > 0 || lim !== null) result = result.slice(off, lim === null ? undefined : off + Number(coerce(lim, 'int8')));
  return result;
}

/** Runs the SELECT, yielding to the event loop during the projection. */
async function runSelectAsync(p: SelectParts, ctx: EvalContext): Promise<Tuple[]> {
  // The projection is where the work is (dbms_random.string of 1 MiB per row): yield to the event
  // loop every PROJECTION_SLICE_MS so the tserver sharing this process keeps serving (Raft, heartbeats).
  const rows = selectSource(p, ctx);
  const out: Projected[] = [];
  let slice = performance.now();
  for (const r of rows) {
    out.push(selectProject(p, r, ctx));
    if (performance.now() - slice > PROJECTION_SLICE_MS) {
      await new Promise((res) => setImmediate(res));
      slice = performance.now();
    }
  }
  return selectFinish(p, out, ctx);
}

/** Streams the projected rows in chunks of at most STREAM_CHUNK_BYTES / STREAM_CHUNK_ROWS. */
async function streamSelect(p: SelectParts, ctx: EvalContext, onChunk: (rows: Tuple[]) => Promise<void>): Promise<void> {
  let chunk: Tuple[] = [];
  let bytes = 0;
  let slice = performance.now();
  for (const r of selectSource(p, ctx)) {
    const out = selectProject(p, r, ctx).out;
    chunk.push(out);
    bytes += approxBytes(out);
    if (bytes >= STREAM_CHUNK_BYTES || chunk.length >= STREAM_CHUNK_ROWS) {
      await onChunk(chunk);
      chunk = [];
      bytes = 0;
      slice = performance.now();
    } else if (performance.now() - slice > PROJECTION_SLICE_MS) {
      await new Promise((res) => setImmediate(res));
      slice = performance.now();
    }
  }
  if (chunk.length > 0) await onChunk(chunk);
}

/** WITH name [(cols)] AS (SELECT …), …: planned in order (a later one may read an earlier one), computed once per run (as MATERIALIZED). */
export function withCtes(w: NonNullable<SelectStmt['withClause']>, env: PlanEnv, outer: Scope | undefined): PlanEnv {
  const ctes = new Map(env.ctes ?? []);
  const here = new Set<string>();
  for (const n of w.ctes ?? []) {
    const c = 'CommonTableExpr' in n ? n.CommonTableExpr : undefined;
    if (!c || !c.ctequery || !('SelectStmt' in c.ctequery)) throw notSupported('a WITH query that is not a SELECT (INSERT/UPDATE/DELETE … RETURNING)');
    const name = c.ctename ?? '';
    if (here.has(name)) throw new SqlError(SqlState.DUPLICATE_ALIAS, `WITH query name "${name}" specified more than once`);
    here.add(name);
    const cols = names(c.aliascolnames);
    const self = w.recursive === true && JSON.stringify(c.ctequery.SelectStmt).includes(`"relname":${JSON.stringify(name)}`);
    const plan = self ? recursivePlan(c.ctequery.SelectStmt, name, cols, { ...env, ctes }, outer) : compileSelect(c.ctequery.SelectStmt, { ...env, ctes }, outer);
    if (cols.length > plan.fields.length) throw new SqlError(SqlState.INVALID_COLUMN_REFERENCE, `WITH query "${name}" has ${plan.fields.length} columns available but ${cols.length} columns specified`);
    const fields = plan.fields.map((f, i) => (cols[i] !== undefined ? { ...f, name: cols[i]! } : f));
    const memo = new WeakMap<EvalContext, Tuple[]>();
    ctes.set(name, { ...plan, fields, run: (ctx) => { let r = memo.get(ctx); if (!r) memo.set(ctx, (r = plan.run(ctx))); return r; } });
  }
  return { ...env, ctes };
}

/**
 * WITH RECURSIVE name AS (base UNION [ALL] step): the base's rows, then the step run again and again
 * over the rows the previous round added (the working table) until it adds none, as PostgreSQL
 * evaluates it; UNION drops rows already produced. Bounded by ysql_rows_in_memory_max (54000), so a
 * recursion that never ends stops there.
 */
function recursivePlan(sel: SelectStmt, name: string, cols: string[], env: PlanEnv, outer: Scope | undefined): SelectPlan {
  if (sel.op !== 'SETOP_UNION' || !sel.larg || !sel.rarg) throw new SqlError(SqlState.INVALID_RECURSION, `recursive query "${name}" does not have the form non-recursive-term UNION [ALL] recursive-term`);
  const base = compileSelect(sel.larg, env, outer);
  const fields = base.fields.map((f, i) => (cols[i] !== undefined ? { ...f, name: cols[i]! } : f));
  let working: Tuple[] = [];
  const step = compileSelect(sel.rarg, { ...env, ctes: new Map([...(env.ctes ?? []), [name, { fields, run: () => working }]]) }, outer);
  if (step.fields.length !== fields.length) throw new SqlError(SqlState.SYNTAX_ERROR, 'each UNION query must have the same number of columns');
  return {
    fields,
    run: (ctx) => {
      const seen = new Set<string>();
      const keep = (rows: Tuple[]): Tuple[] => (sel.all ? rows : rows.filter((o) => { const k = JSON.stringify(o.map((v) => (v === null ? null : textOf(v)))); if (seen.has(k)) return false; seen.add(k); return true; }));
      working = keep(base.run(ctx));
      const out = [...working];
      while (working.length > 0) {
        working = keep(step.run(ctx));
        limitRows(out.length + working.length, env.rowsMax);
        out.push(...working);
      }
      return out;
    },
  };
}

/** A SELECT's plan. `outer` is the enclosing query's scope (correlated subqueries). */
export function compileSelect(sel: SelectStmt, env: PlanEnv, outer?: Scope): SelectPlan {
  if (sel.withClause) return compileSelect({ ...sel, withClause: undefined }, withCtes(sel.withClause, env, outer), outer);
  if (sel.op && sel.op !== 'SETOP_NONE') return setOpPlan(sel, env, outer);
  if (sel.valuesLists) return valuesPlan(sel.valuesLists, env, outer);
  const p = compileSelectParts(sel, env, outer);
  return {
    fields: p.targets.map((t) => t.field),
    run: (ctx) => selectFinish(p, selectSource(p, ctx).map((r) => selectProject(p, r, ctx)), ctx),
    runAsync: (ctx) => runSelectAsync(p, ctx),
    // Streaming needs no DISTINCT, ORDER BY or LIMIT: every row is final as soon as it is projected.
    ...(!p.distinct && p.sorts.length === 0 && !p.limit && !p.offset
      ? { stream: (ctx: EvalContext, onChunk: (rows: Tuple[]) => Promise<void>): Promise<void> => streamSelect(p, ctx, onChunk) }
      : {}),
  };
}

/** UNION / INTERSECT / EXCEPT [ALL], then the set operation's own ORDER BY and LIMIT. */
function setOpPlan(sel: SelectStmt, env: PlanEnv, outer: Scope | undefined): SelectPlan {
  const what = sel.op!.replace('SETOP_', '');
  const l = compileSelect(sel.larg!, env, outer);
  const r = compileSelect(sel.rarg!, env, outer);
  if (l.fields.length !== r.fields.length) throw new SqlError(SqlState.SYNTAX_ERROR, `each ${what} query must have the same number of columns`);
  const fields = l.fields.map((f, i) => ({ ...f, type: f.type === 'unknown' ? r.fields[i]!.type : f.type }));
  const scope = new Scope(fields.map((f) => ({ rel: '', name: f.name, type: f.type })), outer);
  const sorts = (sel.sortClause ?? []).map((s) => sortKey(s, fields.map((f) => ({ compiled: { type: f.type, name: f.name, eval: () => null }, field: f })), scope, compileEnv(env)));
  // A branch's literals take the column's type ('a' under an integer column is 22P02, as in PostgreSQL).
  const retype = (p: SelectPlan): ((t: Tuple) => Tuple) | undefined => {
    const cols = p.fields.flatMap((f, i) => ((f.type === 'unknown' || f.type === 'text') && fields[i]!.type !== f.type && fields[i]!.type !== 'unknown' ? [i] : []));
    return cols.length === 0 ? undefined : (t) => t.map((v, i) => (cols.includes(i) ? coerce(v, fields[i]!.type) : v));
  };
  const lt = retype(l);
  const rt = retype(r);
  const limit = sel.limitCount ? compileExpr(sel.limitCount, new Scope([], outer), compileEnv(env)) : undefined;
  const offset = sel.limitOffset ? compileExpr(sel.limitOffset, new Scope([], outer), compileEnv(env)) : undefined;
  return {
    fields,
    run: (ctx) => {
      const lr = l.run(ctx);
      const rr = r.run(ctx);
      const rows = combine(what, sel.all === true, lt ? lr.map(lt) : lr, rt ? rr.map(rt) : rr);
      const keyed: Projected[] = rows.map((o) => ({ out: o, keys: sorts.map((s) => (s.output !== undefined ? o[s.output]! : s.expr.eval(o, ctx))) }));
      if (sorts.length > 0) sortProjected(keyed, sorts);
      let out = keyed.map((k) => k.out);
      // ORDER BY, OFFSET and LIMIT of a UNION apply to the whole of it (LIMIT was ignored).
      const off = offset ? Number(coerce(offset.eval([], ctx), 'int8') ?? 0) : 0;
      const lim = limit ? limit.eval([], ctx) : null;
      if (off > 0 || lim !== null) out = out.slice(off, lim === null ? undefined : off + Number(coerce(lim, 'int8')));
      return out;
    },
  };
}

/**
 * The rows of `l op r` (NULLs equal, as set operations compare): UNION appends, INTERSECT keeps l's rows
 * also in r, EXCEPT those not in r; without ALL each distinct row once, with ALL by counts
 * (INTERSECT ALL min(m, n) copies, EXCEPT ALL max(m − n, 0)).
 */
function combine(op: string, all: boolean, l: Tuple[], r: Tuple[]): Tuple[] {
  const key = (o: Tuple): string => JSON.stringify(o.map((v) => (v === null ? null : textOf(v))));
  const distinct = (rows: Tuple[]): Tuple[] => { const seen = new Set<string>(); return rows.filter((o) => { const k = key(o); if (seen.has(k)) return false; seen.add(k); return true; }); };
  if (op === 'UNION') return all ? [...l, ...r] : distinct([...l, ...r]);
  const counts = new Map<string, number>();
  for (const o of r) counts.set(key(o), (counts.get(key(o)) ?? 0) + 1);
  const out: Tuple[] = [];
  for (const o of all ? l : distinct(l)) {
    const k = key(o);
    const n = counts.get(k) ?? 0;
    if (op === 'INTERSECT' ? n > 0 : n === 0) out.push(o);
    if (all && n > 0) counts.set(k, n - 1);
    else if (!all && op === 'INTERSECT' && n > 0) counts.set(k, 0);
  }
  return out;
}

function valuesPlan(lists: Node[], env: PlanEnv, outer: Scope | undefined): SelectPlan {
  const scope = new Scope([], outer);
  const rows = lists.map((l) => ('List' in l ? l.List.items ?? [] : []).map((e) => compileExpr(e, scope, compileEnv(env))));
  const fields = (rows[0] ?? []).map((c, i) => ({ name: `column${i + 1}`, type: (c.type === 'unknown' ? 'text' : c.type) as SqlTypeName, tableOid: 0, attnum: 0 }));
  return { fields, run: (ctx) => rows.map((r) => r.map((c) => c.eval([], ctx))) };
}
