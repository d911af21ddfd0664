/** Shared by the executor's unit tests: a statement context and SELECTs over in-memory relations. */
import { parseSql } from '../../sql/sql-parser';
import { compileSelect, type LoadedRelation } from '../../sql/exec/select';
import type { EvalContext, Tuple } from '../../sql/exec/scope';
import { SqlError } from '../../sql/exec/sql-error';

/** A statement's context: no parameters, the given clock, sequences answering 1. */
export function evalContext(now = new Date(0)): EvalContext {
  return { params: [], session: { user: 'yugabyte', database: 'yugabyte', now, pid: 1, settings: new Map(), extensions: new Set() }, outerRows: [], nextval: () => 1n };
}

/** Runs a SELECT over the named relations (the parser must be loaded). */
export function runSelect(sql: string, relations: Record<string, LoadedRelation>, ctx = evalContext()): { names: string[]; types: string[]; rows: Tuple[] } {
  const [ps] = parseSql(sql);
  if (!ps || !('SelectStmt' in ps.stmt)) throw new Error('not a select');
  const plan = compileSelect(ps.stmt.SelectStmt, { paramTypes: [], rowsMax: 1000, relation: (rv) => { const r = relations[(rv as { relname: string }).relname]; if (!r) throw new Error('no such relation'); return r; } });
  return { names: plan.fields.map((f) => f.name), types: plan.fields.map((f) => f.type), rows: plan.run(ctx) };
}

/** The SQLSTATE and message `f` fails with; undefined when it does not fail. */
export function failure(f: () => unknown): { state: string; message: string } | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof SqlError) return { state: e.sqlState, message: e.message };
    throw e;
  }
  return undefined;
}
