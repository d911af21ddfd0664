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

/** What one walk of a statement's tree finds. */
interface Found {
  /** Every FROM-list table reference, with the WHERE of the SELECT that owns it. */
  refs: TableRef[];
  /** The column names the statement mentions. */
  cols: Set<string>;
  /** Names of the WITH queries anywhere in the statement: a FROM item naming one reads no table. */
  ctes: Set<string>;
}

/**
 * One walk of the statement's tree (every statement pays for it, so it allocates nothing per plain
 * node): see Found. Answers false when the statement uses `*` (every column). A UNION's branches
 * are SELECT bodies without the SelectStmt wrapper: each is visited once, as a SELECT.
 */
function walk(node: unknown, f: Found): boolean {
  if (Array.isArray(node)) {
    let all = true;
    for (const x of node) if (!walk(x, f)) all = false;
    return all;
  }
  if (!node || typeof node !== 'object') return true;
  const o = node as Record<string, unknown>;
  let all = columnRef(o, f.cols);
  // JOIN … USING names its columns outside any ColumnRef; NATURAL joins on every common one.
  const join = o['JoinExpr'] as { usingClause?: Node[]; isNatural?: boolean } | undefined;
  if (join?.isNatural) all = false;
  for (const u of join?.usingClause ?? []) if ('String' in u) f.cols.add(u.String.sval ?? '');
  const cte = o['CommonTableExpr'] as { ctename?: string } | undefined;
  if (cte?.ctename) f.ctes.add(cte.ctename);
  addFromList(o, f.refs);
  const larg = unionBranch(o['larg']);
  const rarg = unionBranch(o['rarg']);
  if (larg && !walk({ SelectStmt: larg }, f)) all = false;
  if (rarg && !walk({ SelectStmt: rarg }, f)) all = false;
  for (const k in o) {
    const v = o[k];
    if (v && typeof v === 'object' && v !== larg && v !== rarg && !walk(v, f)) all = false;
  }
  return all;
}

function unionBranch(b: unknown): object | undefined {
  return b && typeof b === 'object' && !('SelectStmt' in b) && ('targetList' in b || 'op' in b) ? b : undefined;
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

/** The table references of a SELECT's FROM list (joins included), with its WHERE. */
function addFromList(o: Record<string, unknown>, out: TableRef[]): void {
  // UPDATE … FROM and DELETE … USING read their other tables whole (the WHERE joins them to the target).
  const dml = (o['UpdateStmt'] ?? o['DeleteStmt']) as { fromClause?: Node[]; usingClause?: Node[] } | undefined;
  const sel = (o['SelectStmt'] as { fromClause?: Node[]; whereClause?: Node } | undefined) ?? (dml ? { fromClause: dml.fromClause ?? dml.usingClause } : undefined);
  if (!sel) return;
  const addFrom = (n: Node): void => {
    if ('RangeVar' in n) out.push({ rv: n.RangeVar, where: sel.whereClause });
    else if ('JoinExpr' in n) {
      addFrom(n.JoinExpr.larg!);
      addFrom(n.JoinExpr.rarg!);
    }
  };
  for (const f of sel.fromClause ?? []) addFrom(f);
}

export function columnsOf(def: SqlTableDef, rel: string): ScopeColumn[] {
  const keys = def.hasPrimaryKey ? new Set([...def.hash, ...def.range]) : new Set<string>();
  return def.columns.map((c) => ({ rel, name: c.name, type: c.type, ...(c.hidden ? { hidden: true } : {}), ...(keys.has(c.name) ? { key: true } : {}) }));
}

/** The columns to read of `def` (projection: a scan ships only these), undefined for all. */
export function projection(def: SqlTableDef, used: Set<string> | undefined): string[] | undefined {
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
  const found: Found = { refs: [], cols: new Set(), ctes: new Set() };
  const used = walk(stmt, found) ? found.cols : undefined;
  const { refs, ctes } = found;
  const relations = new Map<object, LoadedRelation>();
  const plan: string[] = [];
  await Promise.all(
    refs.filter(({ rv }) => rv.schemaname || !ctes.has(rv.relname ?? '')).map(async ({ rv, where }) => {
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
