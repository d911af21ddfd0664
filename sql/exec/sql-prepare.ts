/**
 * PREPARE / EXECUTE / DEALLOCATE in SQL (docs/sql.md, "Queries and DML"): a session's named
 * statements with typed parameters. They are the session's own: the extended protocol's named
 * statements (Parse/Bind) are the connection's (sql/wire/pg-connection.ts), a separate namespace.
 */
import type { Node, ParsedStatement } from '../sql-parser';
import { evalConstant, typeOfTypeName, type CompileEnv } from './expr';
import type { EvalContext } from './scope';
import { SqlError, SqlState } from './sql-error';
import { coerce, type SqlTypeName, type SqlValue } from './sql-types';

type PrepareStmt = Extract<Node, { PrepareStmt: unknown }>['PrepareStmt'];
type ExecuteStmt = Extract<Node, { ExecuteStmt: unknown }>['ExecuteStmt'];
type DeallocateStmt = Extract<Node, { DeallocateStmt: unknown }>['DeallocateStmt'];

/** Named statements a session holds at most (as the connection's own limit). */
export const SQL_PREPARED_MAX = 1000;

interface Held {
  stmt: Node;
  sql: string;
  types: SqlTypeName[];
}

export class SqlPrepared {
  private readonly byName = new Map<string, Held>();

  prepare(p: PrepareStmt, sql: string): void {
    const name = p.name ?? '';
    if (this.byName.has(name)) throw new SqlError(SqlState.DUPLICATE_PSTATEMENT, `prepared statement "${name}" already exists`);
    if (this.byName.size >= SQL_PREPARED_MAX) throw new SqlError(SqlState.PROGRAM_LIMIT, `a session holds at most ${SQL_PREPARED_MAX} prepared statements`);
    if (!p.query) throw new SqlError(SqlState.SYNTAX_ERROR, 'PREPARE without a statement');
    if ('PrepareStmt' in p.query || 'ExecuteStmt' in p.query || 'TransactionStmt' in p.query) throw new SqlError(SqlState.SYNTAX_ERROR, `cannot prepare ${Object.keys(p.query)[0]!.replace('Stmt', '').toUpperCase()}`);
    const types = (p.argtypes ?? []).map((t) => ('TypeName' in t ? typeOfTypeName(t.TypeName).type : 'unknown'));
    // The statement's text for EXPLAIN and logs: what follows AS.
    this.byName.set(name, { stmt: p.query, sql: sql.replace(/^[\s\S]*?\bas\b\s*/i, ''), types });
  }

  /** EXECUTE name(args): the statement with its arguments evaluated and cast to the declared types. */
  bind(e: ExecuteStmt, env: CompileEnv, ctx: EvalContext): { ps: ParsedStatement; params: SqlValue[]; types: SqlTypeName[] } {
    const name = e.name ?? '';
    const h = this.byName.get(name);
    if (!h) throw new SqlError(SqlState.INVALID_PSTATEMENT, `prepared statement "${name}" does not exist`);
    const args = e.params ?? [];
    if (args.length !== h.types.length) throw new SqlError(SqlState.SYNTAX_ERROR, `wrong number of parameters for prepared statement "${name}"`, { detail: `Expected ${h.types.length} parameters but got ${args.length}.` });
    const params = args.map((a, i) => {
      const v = evalConstant(a, env, ctx);
      const t = h.types[i]!;
      return v === null || t === 'unknown' ? v : coerce(v, t);
    });
    return { ps: { stmt: h.stmt, sql: h.sql }, params, types: h.types };
  }

  deallocate(d: DeallocateStmt): void {
    if (d.isall) {
      this.byName.clear();
      return;
    }
    const name = d.name ?? '';
    if (!this.byName.delete(name)) throw new SqlError(SqlState.INVALID_PSTATEMENT, `prepared statement "${name}" does not exist`);
  }
}
