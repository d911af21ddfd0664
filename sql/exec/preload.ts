/**
 * Before a statement runs, every table it reads is read: each table reference in a FROM list gets an
 * access path from its SELECT's WHERE (access.ts) and its rows are fetched through the client (inside
 * the session's transaction when there is one). pg_catalog / information_schema references are
 * built from the SQL catalog (pg-catalog.ts). Then the statement runs synchronously in memory.
 */
import type { Table } from '../../client';
import type { Node } from '../sql-parser';
import { chooseAccess, describePath, readRows } from './access';
import type { SqlCatalog, SqlTableDef } from './catalog';
import type { CompileEnv } from './expr';
import { describeFilter, tabletFilter } from './where-pushdown';
import { virtualRelation, isVirtualRelation } from './pg-catalog';
import type { EvalContext, ScopeColumn } from './scope';
import type { LoadedRelation } from './select';

export interface PreloadDeps {
  catalog: SqlCatalog;
  table: (name: string) => Table;
  env: CompileEnv;
  ctx: EvalContext;
  rowsMax: number;
  /** yb_read_time: every table is read as of this hybrid time. */
  readHt?: bigint;
  /** Evaluate what WHERE can on the tablets (where-pushdown.ts). */
  pushFilters?: boolean;
}

type RangeVarBody = Extract<Node, { RangeVar: unknown }>['RangeVar'];

type TableRef = { rv: RangeVarBody; where: Node | undefined };

/**
 * One walk of the statement's tree (every statement pays for it, so it allocates nothing per node):
 * every FROM-list table reference with the WHERE of the SELECT that owns it (`refs`), and the column
 * names the statement mentions (`cols`; the answer is false when it uses `*`, i.e. every column).
 */
function walk(node: unknown, refs: TableRef[], cols: Set<string>): boolean {
  if (Array.isArray(node)) {
    let all = true;
    for (const x of node) if (!walk(x, refs, cols)) all = false;
    return all;
  }
  if (!node || typeof node !== 'object') return true;
  const o = node as Record<string, unknown>;
  let all = columnRef(o, cols);
  collectHere(o, refs);
  for (const k in o) {
    const v = o[k];
    if (v && typeof v === 'object' && !walk(v, refs, cols)) all = false;
  }
  return all;
}

/** A ColumnRef's column name into `cols`; false for `*`. */
function columnRef(o: Record<string, unknown>, cols: Set<string>): boolean {
  const ref = o['ColumnRef'] as { fields?: Node[] } | undefined;
  if (!ref) return true;
  const last = ref.fields?.[ref.fields.length - 1];
  if (!last || 'A_Star' in last) return false;
  if ('String' in last) cols.add(last.String.sval ?? '');
  return true;
}

/** The table references this node itself brings (a SELECT's FROM list; a UNION's branches). */
function collectHere(o: Record<string, unknown>, out: TableRef[]): void {
  const sel = o['SelectStmt'] as { fromClause?: Node[]; whereClause?: Node } | undefined;
  // A UNION's branches are SELECT bodies without the SelectStmt wrapper.
  for (const branch of [o['larg'], o['rarg']]) if (branch && typeof branch === 'object' && !('SelectStmt' in branch) && ('targetList' in branch || 'op' in branch)) collect({ SelectStmt: branch }, out);
  if (sel) {
    const addFrom = (n: Node): void => {
      if ('RangeVar' in n) out.push({ rv: n.RangeVar, where: sel.whereClause });
      else if ('JoinExpr' in n) {
        addFrom(n.JoinExpr.larg!);
        addFrom(n.JoinExpr.rarg!);
      }
    };
    for (const f of sel.fromClause ?? []) addFrom(f);
  }
}

/** Every FROM-list table reference under `node` (a UNION branch's, as if it were a statement of its own). */
function collect(node: unknown, out: TableRef[]): void {
  walk(node, out, new Set());
}

export function columnsOf(def: SqlTableDef, rel: string): ScopeColumn[] {
  return def.columns.map((c) => ({ rel, name: c.name, type: c.type, ...(c.hidden ? { hidden: true } : {}) }));
}

/** The columns to read of `def` (projection: a scan ships only these), undefined for all. */
function projection(def: SqlTableDef, used: Set<string> | undefined): string[] | undefined {
  if (!used) return undefined;
  const keys = [...def.hash, ...def.range];
  const cols = def.columns.filter((c) => !keys.includes(c.name) && used.has(c.name)).map((c) => c.name);
  if (cols.length === def.columns.length - keys.length) return undefined;
  // No value column needed (count(*)): name a key column, which the tablet always returns anyway.
  return cols.length > 0 ? cols : keys.slice(0, 1);
}

export interface Preloaded {
  relations: Map<object, LoadedRelation>;
  /** EXPLAIN lines: the access path of each table reference. */
  plan: string[];
}

export async function preload(stmt: Node, deps: PreloadDeps, explainOnly = false): Promise<Preloaded> {
  const refs: TableRef[] = [];
  const usedSet = new Set<string>();
  const used = walk(stmt, refs, usedSet) ? usedSet : undefined;
  const relations = new Map<object, LoadedRelation>();
  const plan: string[] = [];
  await Promise.all(
    refs.map(async ({ rv, where }) => {
      const name = rv.relname ?? '';
      if (isVirtualRelation(rv.schemaname, name)) {
        relations.set(rv, await virtualRelation(rv.schemaname, name, deps.catalog, deps.ctx));
        if (explainOnly) plan.push(`Catalog scan on ${rv.schemaname ? rv.schemaname + '.' : ''}${name}`);
        return;
      }
      const def = await deps.catalog.require(name, rv.location);
      const alias = rv.alias?.aliasname ?? name;
      const path = chooseAccess(def, alias, where, deps.env, deps.ctx);
      const filter = deps.pushFilters && (path.type === 'full' || path.type === 'hashScan') ? tabletFilter(def, alias, where, deps.env, deps.ctx) : undefined;
      // EXPLAIN's line (only EXPLAIN asks: describing the path costs as much as choosing it).
      if (explainOnly) plan.push(describePath(def, path) + describeFilter(filter, where));
      const rows = explainOnly ? [] : await readRows(deps.table, def, path, deps.rowsMax, projection(def, used), deps.readHt, filter?.ast);
      relations.set(rv, { columns: columnsOf(def, alias), rows, tableOid: def.oid });
    }),
  );
  return { relations, plan };
}
