/**
 * Access paths: which rows of a table a statement reads. Equality on every hash key column (and every
 * range column) is a point read; equality on the hash columns a scan of that hash key, narrowed by
 * bounds on the first range column; anything else a full scan. The statement's WHERE is still
 * applied to what comes back, so a path only has to return a superset.
 */
import type { Row, Table } from '../../client';
import type { Node } from '../sql-parser';
import { baseName, names } from './ast';
import { compileExpr, type CompileEnv } from './expr';
import type { SqlTableDef } from './catalog';
import { Scope, type EvalContext, type Tuple } from './scope';
import { isIntegerType, toStorage, type SqlValue } from './sql-types';
import { SqlError, SqlState } from './sql-error';

/** Deadline of one table read of a statement (a full scan of a large table takes longer than the client's 10 s default). */
export const SCAN_TIMEOUT_MS = 120_000;

export type AccessPath =
  | { type: 'point'; key: Row }
  | { type: 'hashScan'; hashKey: Row; rangeStart?: Row; rangeEnd?: Row }
  | { type: 'full' };

function conjuncts(n: Node | undefined): Node[] {
  if (!n) return [];
  if ('BoolExpr' in n && n.BoolExpr.boolop === 'AND_EXPR') return (n.BoolExpr.args ?? []).flatMap(conjuncts);
  return [n];
}

const FLIP: Record<string, string> = { '=': '=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

/** Conditions `column op constant` on this table's columns (constants may use parameters). */
function keyConditions(where: Node | undefined, def: SqlTableDef, alias: string, env: CompileEnv, ctx: EvalContext): Array<{ col: string; op: string; value: SqlValue }> {
  const out: Array<{ col: string; op: string; value: SqlValue }> = [];
  for (const c of conjuncts(where)) {
    if (!('A_Expr' in c) || (c.A_Expr.kind ?? 'AEXPR_OP') !== 'AEXPR_OP' || !c.A_Expr.lexpr || !c.A_Expr.rexpr) continue;
    const op = baseName(c.A_Expr.name);
    if (!FLIP[op]) continue;
    for (const [colSide, valSide, o] of [[c.A_Expr.lexpr, c.A_Expr.rexpr, op], [c.A_Expr.rexpr, c.A_Expr.lexpr, FLIP[op]!]] as const) {
      if (!('ColumnRef' in colSide)) continue;
      const parts = names(colSide.ColumnRef.fields);
      if (parts.length > 2 || (parts.length === 2 && parts[0] !== alias)) continue;
      const col = def.columns.find((x) => x.name === parts[parts.length - 1]);
      if (!col) continue;
      let value: SqlValue;
      try {
        value = compileExpr(valSide, new Scope([]), env).eval([], ctx);
      } catch {
        continue;
      }
      if (value === null) continue;
      out.push({ col: col.name, op: o, value: toStorage(value, col.type) });
      break;
    }
  }
  return out;
}

export function chooseAccess(def: SqlTableDef, alias: string, where: Node | undefined, env: CompileEnv, ctx: EvalContext): AccessPath {
  const conds = keyConditions(where, def, alias, env, ctx);
  const eq = new Map(conds.filter((c) => c.op === '=').map((c) => [c.col, c.value]));
  if (def.hash.length > 0 && !def.hash.every((h) => eq.has(h))) return { type: 'full' };
  const hashKey: Row = Object.fromEntries(def.hash.map((h) => [h, eq.get(h)!]));
  if (def.range.every((r) => eq.has(r))) {
    if (def.hash.length === 0 && def.range.length === 0) return { type: 'full' };
    return { type: 'point', key: { ...hashKey, ...Object.fromEntries(def.range.map((r) => [r, eq.get(r)!])) } };
  }
  if (def.hash.length === 0 && def.range.length === 0) return { type: 'full' };
  const first = def.range[0];
  const firstDef = def.columns.find((c) => c.name === first);
  let rangeStart: Row | undefined;
  let rangeEnd: Row | undefined;
  if (first && firstDef && isIntegerType(firstDef.type)) {
    for (const c of conds.filter((x) => x.col === first && typeof x.value === 'bigint')) {
      const v = c.value as bigint;
      if (c.op === '=') { rangeStart = { [first]: v }; rangeEnd = { [first]: v + 1n }; }
      if (c.op === '>=' && !rangeStart) rangeStart = { [first]: v };
      if (c.op === '>' && !rangeStart) rangeStart = { [first]: v + 1n };
      if (c.op === '<' && !rangeEnd) rangeEnd = { [first]: v };
      if (c.op === '<=' && !rangeEnd) rangeEnd = { [first]: v + 1n };
    }
  }
  if (def.hash.length === 0 && !rangeStart && !rangeEnd) return { type: 'full' };
  return { type: 'hashScan', hashKey, ...(rangeStart ? { rangeStart } : {}), ...(rangeEnd ? { rangeEnd } : {}) };
}

/** Rows of `def` through `path`, as tuples in the table's column order. */
export async function readRows(table: Table, def: SqlTableDef, path: AccessPath, rowsMax: number, columns?: string[]): Promise<Tuple[]> {
  let rows: Row[];
  const proj = { ...(columns ? { columns } : {}), timeoutMs: SCAN_TIMEOUT_MS };
  if (path.type === 'point') {
    const r = await table.get(path.key, proj);
    rows = r ? [r] : [];
  } else if (path.type === 'hashScan') {
    rows = await table.scan({ ...(def.hash.length > 0 ? { hashKey: path.hashKey } : {}), ...(path.rangeStart ? { rangeStart: path.rangeStart } : {}), ...(path.rangeEnd ? { rangeEnd: path.rangeEnd } : {}), limit: rowsMax + 1, ...proj });
  } else rows = await table.scan({ limit: rowsMax + 1, ...proj });
  if (rows.length > rowsMax) throw new SqlError(SqlState.PROGRAM_LIMIT, `statement reads more than ${rowsMax} rows of ${def.name} (ysql_rows_in_memory_max)`);
  return rows.map((r) => def.columns.map((c) => r[c.name] ?? null));
}

export function describePath(def: SqlTableDef, path: AccessPath): string {
  const kv = (r: Row): string => Object.entries(r).map(([k, v]) => `${k} = ${String(v)}`).join(' AND ');
  if (path.type === 'point') return `Point read on ${def.name} (key: ${kv(path.key)}; one tablet)`;
  if (path.type === 'hashScan') {
    const parts = [def.hash.length > 0 ? `hash key: ${kv(path.hashKey)}; one tablet` : 'range-partitioned'];
    if (path.rangeStart) parts.push(`from ${kv(path.rangeStart)}`);
    if (path.rangeEnd) parts.push(`before ${kv(path.rangeEnd)}`);
    return `Range scan on ${def.name} (${parts.join('; ')})`;
  }
  return `Full scan on ${def.name} (every tablet)`;
}
