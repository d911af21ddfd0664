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

/** Every FROM-list table reference in the tree, with the WHERE of the SELECT that owns it. */
function collect(node: unknown, out: Array<{ rv: RangeVarBody; where: Node | undefined }>): void {
  if (Array.isArray(node)) {
    for (const x of node) collect(x, out);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  const sel = o['SelectStmt'] as { fromClause?: Node[]; whereClause?: Node } | undefined;
  // A UNION's branches are SELECT bodies without the SelectStmt wrapper (visited once, as SELECTs).
  const branches = [o['larg'], o['rarg']].filter((b): b is object => !!b && typeof b === 'object' && !('SelectStmt' in b) && ('targetList' in b || 'op' in b));
  for (const branch of branches) collect({ SelectStmt: branch }, out);
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
  for (const v of Object.values(o)) if (v && typeof v === 'object' && !branches.includes(v)) collect(v, out);
}

/** Names of the WITH queries anywhere in the statement: a FROM item naming one reads no table. */
function cteNames(node: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(node)) node.forEach((x) => cteNames(x, out));
  else if (node && typeof node === 'object') {
    const c = (node as Record<string, unknown>)['CommonTableExpr'] as { ctename?: string } | undefined;
    if (c?.ctename) out.add(c.ctename);
    for (const v of Object.values(node)) if (v && typeof v === 'object') cteNames(v, out);
  }
  return out;
}

export function columnsOf(def: SqlTableDef, rel: string): ScopeColumn[] {
  return def.columns.map((c) => ({ rel, name: c.name, type: c.type, ...(c.hidden ? { hidden: true } : {}) }));
}

/** Column names a statement mentions anywhere; undefined when it uses `*` (every column). */
function referencedColumns(node: unknown, out: Set<string>): boolean {
  if (Array.isArray(node)) return node.every((x) => referencedColumns(x, out));
  if (!node || typeof node !== 'object') return true;
  const o = node as Record<string, unknown>;
  const ref = o['ColumnRef'] as { fields?: Node[] } | undefined;
  if (ref) {
    const last = ref.fields?.[ref.fields.length - 1];
    if (!last || 'A_Star' in last) return false;
    if ('String' in last) out.add(last.String.sval ?? '');
  }
  return Object.values(o).every((v) => (v && typeof v === 'object' ? referencedColumns(v, out) : true));
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
  const refs: Array<{ rv: RangeVarBody; where: Node | undefined }> = [];
  collect(stmt, refs);
  const ctes = cteNames(stmt, new Set());
  const relations = new Map<object, LoadedRelation>();
  const plan: string[] = [];
  const usedSet = new Set<string>();
  const used = referencedColumns(stmt, usedSet) ? usedSet : undefined;
  await Promise.all(
    refs.filter(({ rv }) => rv.schemaname || !ctes.has(rv.relname ?? '')).map(async ({ rv, where }) => {
      const name = rv.relname ?? '';
      if (isVirtualRelation(rv.schemaname, name)) {
        relations.set(rv, await virtualRelation(rv.schemaname, name, deps.catalog, deps.ctx));
        plan.push(`Catalog scan on ${rv.schemaname ? rv.schemaname + '.' : ''}${name}`);
        return;
      }
      const def = await deps.catalog.require(name, rv.location);
      const alias = rv.alias?.aliasname ?? name;
      const path = chooseAccess(def, alias, where, deps.env, deps.ctx);
      const filter = deps.pushFilters && (path.type === 'full' || path.type === 'hashScan') ? tabletFilter(def, alias, where, deps.env, deps.ctx) : undefined;
      plan.push(describePath(def, path) + describeFilter(filter, where));
      const rows = explainOnly ? [] : await readRows(deps.table, def, path, deps.rowsMax, projection(def, used), deps.readHt, filter?.ast);
      relations.set(rv, { columns: columnsOf(def, alias), rows, tableOid: def.oid });
    }),
  );
  return { relations, plan };
}
