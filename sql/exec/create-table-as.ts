/**
 * CREATE TABLE … AS SELECT … [WITH [NO] DATA] (docs/sql.md, "DDL"): a table with the query's output
 * columns (names from the column list or the query, types from the query; no primary key, so a
 * hidden row id, as PostgreSQL's heap has none either), then `INSERT INTO it <query>` through the
 * session's own INSERT. Answers `SELECT n` as PostgreSQL does.
 */
import type { Node, ParsedStatement } from '../sql-parser';
import { names } from './ast';
import type { OutputField } from './select-rows';
import { notSupported, SqlError, SqlState } from './sql-error';

type CreateTableAsStmt = Extract<Node, { CreateTableAsStmt: unknown }>['CreateTableAsStmt'];
/** What the session answers (its StatementResult, the part this statement uses). */
type Answer = { tag: string; notices?: string[] };

export interface CreateTableAsDeps {
  /** The query's output columns, without running it. */
  describe(query: ParsedStatement): Promise<OutputField[] | undefined>;
  /** CREATE TABLE of the given statement; a notice when IF NOT EXISTS found the table. */
  createTable(stmt: Extract<Node, { CreateStmt: unknown }>): Promise<{ notice?: string }>;
  /** Runs an INSERT statement through the session. */
  insert(stmt: Node): Promise<{ tag: string }>;
}

export async function createTableAs(s: CreateTableAsStmt, sql: string, deps: CreateTableAsDeps): Promise<Answer> {
  if (s.objtype && s.objtype !== 'OBJECT_TABLE') throw notSupported('CREATE MATERIALIZED VIEW');
  const into = s.into;
  const rel = into?.rel;
  if (!into || !rel?.relname || !s.query) throw new SqlError(SqlState.SYNTAX_ERROR, 'CREATE TABLE AS needs a table name and a query');
  if (!('SelectStmt' in s.query)) throw notSupported('CREATE TABLE AS of a statement other than SELECT');
  const fields = (await deps.describe({ stmt: s.query, sql })) ?? [];
  const colNames = names(into.colNames);
  if (colNames.length > fields.length) throw new SqlError(SqlState.SYNTAX_ERROR, 'too many column names were specified');
  const tableElts: Node[] = fields.map((f, i) => ({
    ColumnDef: { colname: colNames[i] ?? f.name, typeName: { names: [{ String: { sval: f.type === 'unknown' ? 'text' : f.type } }], typemod: -1 }, is_local: true },
  }));
  const created = await deps.createTable({ CreateStmt: { relation: rel, tableElts, ...(s.if_not_exists ? { if_not_exists: true } : {}), oncommit: 'ONCOMMIT_NOOP' } });
  if (created.notice) return { tag: 'CREATE TABLE AS', notices: [created.notice] };
  if (into.skipData) return { tag: 'CREATE TABLE AS' };
  const r = await deps.insert({ InsertStmt: { relation: rel, selectStmt: s.query, override: 'OVERRIDING_NOT_SET' } });
  return { tag: `SELECT ${/\d+$/.exec(r.tag)?.[0] ?? '0'}` };
}
