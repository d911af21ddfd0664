/**
 * PostgreSQL's rules for what a grouped query may name (docs/sql.md, "Queries and DML"): outside an
 * aggregate's arguments, a target, HAVING or ORDER BY expression may use a FROM column only if the
 * column is grouped, the expression is a GROUP BY expression, or the column's table has its whole
 * primary key grouped (functional dependency). Else 42803, where PostgreSQL would have refused too
 * (tessera used to answer with an arbitrary row's value). And SELECT DISTINCT may only ORDER BY
 * expressions it selects (42P10).
 */
import type { Node } from '../sql-parser';
import { names } from './ast';
import { isAggregate } from './functions';
import type { Scope } from './scope';
import { SqlError, SqlState } from './sql-error';

/** A node's shape without its source positions, for "is this the same expression" tests. */
export function exprKey(n: unknown): string {
  return JSON.stringify(n, (k, v: unknown) => (k === 'location' ? undefined : v));
}

/** The FROM column a ColumnRef names in `scope` itself (not an outer query's), if any. */
function resolve(fields: string[], scope: Scope): number | undefined {
  const name = fields[fields.length - 1]!;
  const rel = fields.length >= 2 ? fields[fields.length - 2] : undefined;
  const hits = scope.find(rel, name);
  return hits.length === 1 ? hits[0] : undefined;
}

/** The expressions a grouped query may use whole, and the columns it may use anywhere. */
export interface GroupingRule {
  exprs: Set<string>;
  columns: Set<number>;
}

/**
 * The rule of a query grouped by `groupNodes` (GROUP BY 1 and GROUP BY alias already replaced by
 * the targets they name): its grouped columns, plus every column of a table whose primary key
 * columns are all grouped.
 */
export function groupingRule(groupNodes: Node[], scope: Scope): GroupingRule {
  const columns = new Set<number>();
  for (const g of groupNodes) if ('ColumnRef' in g) { const i = resolve(names(g.ColumnRef.fields), scope); if (i !== undefined) columns.add(i); }
  const rels = new Set(scope.columns.map((c) => c.rel));
  for (const rel of rels) {
    const keys = scope.columns.map((c, i) => ({ c, i })).filter((x) => x.c.rel === rel && x.c.key);
    if (keys.length > 0 && keys.every((k) => columns.has(k.i))) scope.columns.forEach((c, i) => { if (c.rel === rel) columns.add(i); });
  }
  return { exprs: new Set(groupNodes.map(exprKey)), columns };
}

function ungrouped(scope: Scope, i: number, location: number | undefined): SqlError {
  const c = scope.columns[i]!;
  return new SqlError(SqlState.GROUPING_ERROR, `column "${c.rel ? `${c.rel}.` : ''}${c.name}" must appear in the GROUP BY clause or be used in an aggregate function`, location !== undefined ? { position: location + 1 } : {});
}

/** Throws 42803 at the first column `n` uses against `rule` outside an aggregate call. */
export function checkGrouped(n: unknown, rule: GroupingRule, scope: Scope): void {
  if (Array.isArray(n)) { for (const x of n) checkGrouped(x, rule, scope); return; }
  if (!n || typeof n !== 'object') return;
  const node = n as Node;
  if (rule.exprs.has(exprKey(node))) return;
  if ('FuncCall' in node && !node.FuncCall.over && isAggregate(names(node.FuncCall.funcname).filter((p) => p !== 'pg_catalog').join('.'))) return;
  // A subquery's own columns are its business; its references to this query's columns are rare and not checked.
  if ('SubLink' in node) { checkGrouped(node.SubLink.testexpr, rule, scope); return; }
  if ('ColumnRef' in node) {
    const fields = names(node.ColumnRef.fields);
    if (fields[fields.length - 1] === '*') {
      const rel = fields.length >= 2 ? fields[fields.length - 2] : undefined;
      scope.columns.forEach((c, i) => { if (!c.hidden && (rel === undefined || c.rel === rel) && !rule.columns.has(i)) throw ungrouped(scope, i, node.ColumnRef.location); });
      return;
    }
    const i = resolve(fields, scope);
    if (i !== undefined && !rule.columns.has(i)) throw ungrouped(scope, i, node.ColumnRef.location);
    return;
  }
  for (const v of Object.values(node)) checkGrouped(v, rule, scope);
}

/** SELECT DISTINCT … ORDER BY e: e must be one of the selected expressions (42P10). */
export function checkDistinctOrder(sortNode: Node, targetNodes: Node[]): void {
  const k = exprKey(sortNode);
  if (targetNodes.some((t) => exprKey(t) === k)) return;
  const loc = (sortNode as { ColumnRef?: { location?: number } }).ColumnRef?.location;
  throw new SqlError(SqlState.INVALID_COLUMN_REFERENCE, 'for SELECT DISTINCT, ORDER BY expressions must appear in select list', loc !== undefined ? { position: loc + 1 } : {});
}
