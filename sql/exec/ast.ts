/** Small readers over the PostgreSQL parse tree (libpg-query's JSON: one key per node, its type). */
import type { Node } from '../sql-parser';
import { SqlError, SqlState } from './sql-error';

export function nodeKind(n: Node | undefined): string {
  return n ? Object.keys(n)[0] ?? '' : '';
}

/** A String node's text (names, operator names). */
export function str(n: Node | undefined): string {
  if (n && 'String' in n) return n.String.sval ?? '';
  return '';
}

/** Dotted name parts (funcname, typename, ColumnRef fields) as strings; '*' for A_Star. */
export function names(list: Node[] | undefined): string[] {
  return (list ?? []).map((n) => ('A_Star' in n ? '*' : str(n)));
}

/** The last part of a qualified name, dropping pg_catalog / public qualifiers. */
export function baseName(list: Node[] | undefined): string {
  const parts = names(list);
  return parts[parts.length - 1] ?? '';
}

export function syntax(msg: string, location?: number): SqlError {
  return new SqlError(SqlState.SYNTAX_ERROR, msg, location !== undefined && location >= 0 ? { position: location + 1 } : {});
}

/** An integer constant node's value (LIMIT 10, SPLIT INTO 3, typmods). */
export function constInt(n: Node | undefined): number | undefined {
  if (n && 'A_Const' in n && n.A_Const.ival) return n.A_Const.ival.ival ?? 0;
  if (n && 'A_Const' in n && n.A_Const.ival === undefined && !n.A_Const.sval && !n.A_Const.fval && !n.A_Const.boolval && !n.A_Const.isnull) return 0;
  if (n && 'Integer' in n) return n.Integer.ival ?? 0;
  return undefined;
}

/** RETURNING's targets of an INSERT, UPDATE or DELETE. */
export function returningOf(s: Node): Node[] | undefined {
  if ('InsertStmt' in s) return s.InsertStmt.returningClause?.exprs;
  if ('UpdateStmt' in s) return s.UpdateStmt.returningClause?.exprs;
  if ('DeleteStmt' in s) return s.DeleteStmt.returningClause?.exprs;
  return undefined;
}

export function hasReturning(s: Node): boolean {
  return (returningOf(s)?.length ?? 0) > 0;
}

/** INSERT … VALUES of exactly one row. */
export function isSingleRowValues(i: Extract<Node, { InsertStmt: unknown }>['InsertStmt']): boolean {
  const sel = i.selectStmt && 'SelectStmt' in i.selectStmt ? i.selectStmt.SelectStmt : undefined;
  return !!sel?.valuesLists && sel.valuesLists.length === 1;
}

/** EXPLAIN's ANALYZE option (`EXPLAIN ANALYZE …`, `EXPLAIN (ANALYZE [true|on]) …`). */
export function explainAnalyze(options: Node[] | undefined): boolean {
  return (options ?? []).some((o) => {
    if (!('DefElem' in o) || o.DefElem.defname !== 'analyze') return false;
    const a = o.DefElem.arg;
    if (!a) return true;
    const v = 'String' in a ? a.String.sval : 'Boolean' in a ? String(a.Boolean.boolval ?? false) : 'Integer' in a ? String(a.Integer.ival ?? 0) : 'true';
    return !/^(false|off|0|no)$/i.test(v ?? '');
  });
}

/** Statements that read or write tables (DDL, COPY FROM, SET … do not use the block's transaction). */
export function needsTransaction(s: Node): boolean {
  return 'SelectStmt' in s || 'InsertStmt' in s || 'UpdateStmt' in s || 'DeleteStmt' in s || ('CopyStmt' in s && !s.CopyStmt.is_from);
}

/** The target table of an INSERT, UPDATE or DELETE. */
export function dmlRelation(s: Node): { relname?: string; alias?: { aliasname?: string }; location?: number } {
  if ('InsertStmt' in s) return s.InsertStmt.relation ?? {};
  if ('UpdateStmt' in s) return s.UpdateStmt.relation ?? {};
  if ('DeleteStmt' in s) return s.DeleteStmt.relation ?? {};
  return {};
}
