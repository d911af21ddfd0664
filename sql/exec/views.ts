/**
 * Views (docs/sql.md, "DDL"): CREATE [OR REPLACE] VIEW, DROP VIEW, and their use in FROM. A view is
 * its query's parse tree, kept in the SQL catalog (catalog.ts, rows `view:NAME`). Before a
 * statement runs, every FROM reference to a view becomes a subquery of that tree (`FROM v` →
 * `FROM (query) AS v`), views inside views too; the statement then reads the tables as any
 * statement does. Views are read-only: INSERT, UPDATE or DELETE on one is 0A000.
 */
import type { Node } from '../sql-parser';
import { names } from './ast';
import type { SqlCatalog, SqlViewDef } from './catalog';
import { notSupported, SqlError, SqlState } from './sql-error';
import type { SqlTypeName } from './sql-types';

type ViewStmt = Extract<Node, { ViewStmt: unknown }>['ViewStmt'];
type RangeVar = Extract<Node, { RangeVar: unknown }>['RangeVar'];

/** Statements whose FROM may name a view (a view's own query is a SelectStmt). */
const VIEW_READERS = ['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt', 'ExplainStmt', 'CreateTableAsStmt', 'CopyStmt'];

/** Views within views expanded at most this deep (a view that names itself is refused when created). */
export const VIEW_NESTING_MAX = 16;

/** The names a statement reads in FROM / USING / JOIN positions, and the WITH names that shadow them. */
function fromNames(n: unknown, out: Set<string>, ctes: Set<string>): void {
  if (Array.isArray(n)) { for (const x of n) fromNames(x, out, ctes); return; }
  if (n === null || typeof n !== 'object') return;
  const o = n as Record<string, unknown>;
  const cte = o['CommonTableExpr'] as { ctename?: string } | undefined;
  if (cte?.ctename) ctes.add(cte.ctename);
  const rv = o['RangeVar'] as RangeVar | undefined;
  if (rv?.relname && (!rv.schemaname || rv.schemaname === 'public')) out.add(rv.relname);
  for (const v of Object.values(o)) fromNames(v, out, ctes);
}

/** A copy of `n` with each FROM item naming a view replaced by the view's query (`key`: the property `n` is under). */
function rewrite(n: unknown, views: ReadonlyMap<string, SqlViewDef>, key = ''): unknown {
  if (Array.isArray(n)) return n.map((x) => rewrite(x, views, key));
  if (n === null || typeof n !== 'object') return n;
  const o = n as Record<string, unknown>;
  const rv = o['RangeVar'] as RangeVar | undefined;
  // FROM items and JOIN sides only: not a DML target (`relation`) nor FOR UPDATE OF's names.
  if (rv && (key === 'fromClause' || key === 'usingClause' || key === 'larg' || key === 'rarg') && rv.relname && views.has(rv.relname) && (!rv.schemaname || rv.schemaname === 'public')) {
    const v = views.get(rv.relname)!;
    const cols = rv.alias?.colnames ?? v.columns?.map((c) => ({ String: { sval: c } }));
    return { RangeSubselect: { subquery: JSON.parse(v.ast) as Node, alias: { aliasname: rv.alias?.aliasname ?? rv.relname, ...(cols ? { colnames: cols } : {}) } } };
  }
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = rewrite(v, views, k);
  return out;
}

/** The statement with its views expanded; the same object when it names none (the common case costs a walk and cache lookups). */
export async function expandViews(stmt: Node, catalog: SqlCatalog): Promise<Node> {
  if (!VIEW_READERS.some((k) => k in stmt)) return stmt;
  let cur = stmt;
  for (let depth = 0; ; depth++) {
    const found = new Set<string>();
    const ctes = new Set<string>();
    fromNames(cur, found, ctes);
    const views = new Map<string, SqlViewDef>();
    for (const name of found) {
      if (ctes.has(name)) continue;
      const v = await catalog.getView(name);
      if (v) views.set(name, v);
    }
    const target = dmlTarget(cur);
    if (target && (await catalog.getView(target))) throw notSupported(`writing to view "${target}" (views are read-only)`);
    if (views.size === 0) return cur;
    if (depth >= VIEW_NESTING_MAX) throw new SqlError(SqlState.INVALID_RECURSION, `views nested more than ${VIEW_NESTING_MAX} deep`);
    cur = rewrite(cur, views) as Node;
  }
}

function dmlTarget(s: Node): string | undefined {
  const rel = 'InsertStmt' in s ? s.InsertStmt.relation : 'UpdateStmt' in s ? s.UpdateStmt.relation : 'DeleteStmt' in s ? s.DeleteStmt.relation : undefined;
  return rel?.relname;
}

export interface ViewDeps {
  catalog: SqlCatalog;
  /** The query's output columns (planning it checks that its tables and columns exist). */
  describe(query: Node): Promise<Array<{ name: string; type: SqlTypeName }>>;
}

/** CREATE [OR REPLACE] VIEW name [(cols)] AS SELECT …; `sql` is the statement's text. */
export async function createView(s: ViewStmt, sql: string, deps: ViewDeps): Promise<void> {
  const name = s.view?.relname ?? '';
  if (!s.query || !('SelectStmt' in s.query)) throw notSupported('a view of a statement other than SELECT');
  if (s.view?.relpersistence === 't') throw notSupported('temporary views');
  if (await deps.catalog.get(name)) throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${name}" already exists`);
  const old = await deps.catalog.getView(name);
  if (old && !s.replace) throw new SqlError(SqlState.DUPLICATE_TABLE, `relation "${name}" already exists`);
  const found = new Set<string>();
  fromNames(s.query, found, new Set());
  if (found.has(name)) throw new SqlError(SqlState.INVALID_RECURSION, `infinite recursion detected in rules for relation "${name}"`);
  // Planned once now, views inside it expanded: unknown tables and columns are the CREATE's error.
  const fields = await deps.describe(await expandViews(s.query, deps.catalog));
  const cols = fields.map((f) => f.name);
  const given = names(s.aliases);
  if (given.length > cols.length) throw new SqlError(SqlState.SYNTAX_ERROR, 'CREATE VIEW specifies more column names than columns');
  const columns = cols.map((c, i) => given[i] ?? c);
  if (new Set(columns).size !== columns.length) throw new SqlError(SqlState.DUPLICATE_COLUMN, `column "${columns.find((c, i) => columns.indexOf(c) !== i)}" specified more than once`);
  if (old?.columns && old.columns.some((c, i) => columns[i] !== c)) throw new SqlError(SqlState.INVALID_TABLE_DEFINITION, 'cannot change name of view column', { hint: 'Use ALTER VIEW … RENAME COLUMN … to change name of view column instead.' });
  const text = /\bas\s+([\s\S]*?);?\s*$/i.exec(sql)?.[1] ?? '';
  await deps.catalog.storeView({ name, ast: JSON.stringify(s.query), sql: text, columns, types: fields.map((f) => f.type) });
}

/** DROP VIEW [IF EXISTS] a, b: notices for the missing ones with IF EXISTS. */
export async function dropViews(objects: Node[], missingOk: boolean, catalog: SqlCatalog): Promise<string[]> {
  const notices: string[] = [];
  for (const o of objects) {
    const p = 'List' in o ? names(o.List.items) : [];
    const name = p[p.length - 1] ?? '';
    if (!(await catalog.getView(name))) {
      if (await catalog.get(name)) throw new SqlError(SqlState.WRONG_OBJECT_TYPE, `"${name}" is not a view`, { hint: 'Use DROP TABLE to remove a table.' });
      if (!missingOk) throw new SqlError(SqlState.UNDEFINED_TABLE, `view "${name}" does not exist`);
      notices.push(`view "${name}" does not exist, skipping`);
      continue;
    }
    await catalog.removeView(name);
  }
  return notices;
}
