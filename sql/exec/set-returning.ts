/**
 * Set-returning functions (docs/sql.md, "Queries and DML"): generate_series and unnest, in FROM and
 * in the target list. In the target list they run after window functions, as PostgreSQL's
 * ProjectSet: each source row becomes as many rows as its longest result, shorter results padded with
 * NULL, every other target repeated.
 */
import type { Node } from '../sql-parser';
import { baseName } from './ast';
import { compileExpr, parseArrayText, type CompileEnv } from './expr';
import type { Compiled, EvalContext, Scope, Tuple } from './scope';
import { SqlError, SqlState } from './sql-error';
import { coerce, textOf, type SqlTypeName, type SqlValue } from './sql-types';
import { regexMatches, regexSplit } from './functions-extra';
import { jsonRows } from './jsonb';

export function limitRows(rows: number, max: number): void {
  if (rows > max) throw new SqlError(SqlState.PROGRAM_LIMIT, `statement holds more than ${max} rows in memory (ysql_rows_in_memory_max)`);
}

/** generate_series(from, to [, step]) of integers: empty when an argument is NULL. */
export function seriesValues(args: SqlValue[], rowsMax: number): SqlValue[] {
  const [a, b, s] = args;
  if (a === null || b === null || s === null || a === undefined || b === undefined) return [];
  const from = coerce(a, 'int8') as bigint;
  const to = coerce(b, 'int8') as bigint;
  const step = s === undefined ? 1n : (coerce(s, 'int8') as bigint);
  if (step === 0n) throw new SqlError(SqlState.INVALID_PARAMETER, 'step size cannot equal zero');
  const n = step > 0n ? (to >= from ? (to - from) / step + 1n : 0n) : from >= to ? (from - to) / -step + 1n : 0n;
  limitRows(Number(n), rowsMax);
  const out: SqlValue[] = [];
  for (let v = from, i = 0n; i < n; i++, v += step) out.push(v);
  return out;
}

/** unnest(array): the elements of the array's text form (tessera's arrays), NULL elements kept. */
export function unnestValues(v: SqlValue, rowsMax: number): SqlValue[] {
  if (v === null) return [];
  const items = parseArrayText(textOf(v));
  limitRows(items.length, rowsMax);
  return items;
}

/** A set-returning call's compiled arguments and how they become values. */
export interface SrfSlot {
  args: Compiled[];
  values: (args: SqlValue[], rowsMax: number) => SqlValue[];
}

/** Checks a call's arity and gives its result type and value function. */
export function srfOf(fname: string, argc: number, elementType?: SqlTypeName): { type: SqlTypeName; values: SrfSlot['values'] } {
  if (fname === 'generate_series') {
    if (argc < 2 || argc > 3) throw new SqlError(SqlState.UNDEFINED_FUNCTION, 'generate_series takes 2 or 3 arguments');
    return { type: 'int4', values: seriesValues };
  }
  const text = textSrf(fname, argc);
  if (text) return { type: 'text', values: text };
  if (/^jsonb?_(object_keys|array_elements(_text)?)$/.test(fname)) {
    if (argc !== 1) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${fname}() takes one argument`);
    const doc: SqlTypeName = fname.startsWith('jsonb') ? 'jsonb' : 'json';
    return { type: fname.endsWith('_elements') ? doc : 'text', values: (a, max) => { const out = jsonRows(fname, a[0]!); limitRows(out.length, max); return out; } };
  }
  if (argc !== 1) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'unnest of several arrays is not supported by tessera');
  // unnest: elements of the array's element type when known (ARRAY[…], a cast), else text.
  if (elementType) return { type: elementType, values: (a, max) => unnestValues(a[0]!, max).map((v) => (v === null ? null : coerce(v, elementType))) };
  return { type: 'text', values: (a, max) => unnestValues(a[0]!, max) };
}

/** The target list's hook for set-returning calls: each takes the next slot after `offset()`. */
export function srfSlots(slots: SrfSlot[], offset: () => number, scope: Scope, env: CompileEnv): (call: Node, scope: Scope) => Compiled {
  return (call) => {
    if (!('FuncCall' in call)) throw new SqlError(SqlState.SYNTAX_ERROR, 'malformed call');
    const fname = baseName(call.FuncCall.funcname);
    const args = (call.FuncCall.args ?? []).map((a) => compileExpr(a, scope, env));
    const { type, values } = srfOf(fname, args.length, args[0]?.elementType);
    const slot = slots.length;
    slots.push({ args, values });
    return { type, name: fname, eval: (row) => row[offset() + slot] ?? null };
  };
}

/** Each row as many times as its longest set-returning result, the results' values appended. */
export function expandSets(rows: Tuple[], slots: SrfSlot[], width: number, rowsMax: number, ctx: EvalContext): Tuple[] {
  const out: Tuple[] = [];
  for (const r of rows) {
    const lists = slots.map((s) => s.values(s.args.map((a) => a.eval(r, ctx)), rowsMax));
    const n = Math.max(0, ...lists.map((l) => l.length));
    for (let k = 0; k < n; k++) {
      const x = r.slice(0, width);
      x.length = width;
      for (const l of lists) x.push(l[k] ?? null);
      out.push(x);
    }
    limitRows(out.length, rowsMax);
  }
  return out;
}

/** regexp_matches, regexp_split_to_table, string_to_table: their values, or undefined for another name. */
function textSrf(fname: string, argc: number): SrfSlot['values'] | undefined {
  const arity = (lo: number, hi: number): void => {
    if (argc < lo || argc > hi) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${fname}() does not exist with ${argc} arguments`);
  };
  const limited = (f: (a: SqlValue[]) => SqlValue[]): SrfSlot['values'] => (a, max) => {
    if (a.slice(0, 2).some((v) => v === null)) return [];
    const out = f(a);
    limitRows(out.length, max);
    return out;
  };
  if (fname === 'regexp_matches') { arity(2, 3); return limited((a) => regexMatches(textOf(a[0]!), textOf(a[1]!), a[2] == null ? '' : textOf(a[2]))); }
  if (fname === 'regexp_split_to_table') { arity(2, 3); return limited((a) => regexSplit(textOf(a[0]!), textOf(a[1]!), a[2] == null ? '' : textOf(a[2]))); }
  if (fname === 'string_to_table') {
    arity(2, 3);
    return (a, max) => {
      if (a[0] === null) return [];
      const s = textOf(a[0]!);
      const parts = a[1] === null ? [...s] : textOf(a[1]!) === '' ? [s] : s.split(textOf(a[1]!));
      limitRows(parts.length, max);
      const nul = a[2] == null ? undefined : textOf(a[2]);
      return parts.map((p) => (p === nul ? null : p));
    };
  }
  return undefined;
}
