/**
 * Expression compiler: a parse-tree expression -> a typed closure over a row. Types are settled at
 * compile time (so Describe knows a statement's columns before it runs); values of type `unknown`
 * (quoted literals and untyped parameters, as in PostgreSQL) take the type of what they meet.
 */
import type { Node } from '../sql-parser';
import { baseName, constInt, names, nodeKind, str, syntax } from './ast';
import { tableOid } from './catalog';
import { datetimeCall } from './datetime-calls';
import { negateInterval } from './datetime';
import { callFunction, isAggregate, isSetReturning } from './functions';
import { Scope, type Compiled, type EvalContext, type Tuple } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';
import { arith, compareOp, compareValues, matchOp, prefixOp, truth, unify } from './operators';
import './functions-extra';
import { jsonCall, jsonOperator } from './jsonb';
import { checkIntRange, coerce, fitNumeric, isIntegerType, numericToInt, sqlTypeFromName, textOf, TYPES, type SqlTypeName, type SqlValue } from './sql-types';

const STRING_TYPES = new Set<SqlTypeName>(['text', 'varchar', 'bpchar']);

/** A compiled subquery: rows for the current outer row. */
export interface SubPlan {
  columns: number;
  type: SqlTypeName;
  run: (ctx: EvalContext) => Tuple[];
}

export interface CompileEnv {
  /** Types of $1..$n (unknown when the client did not say). */
  paramTypes: SqlTypeName[];
  subquery: (select: Node, scope: Scope) => SubPlan;
  /** Aggregate calls, compiled by the select planner (undefined: aggregates are not allowed here). */
  aggregate?: (call: Node, scope: Scope) => Compiled;
  /** Window calls (f(…) OVER …), compiled by the select planner (undefined: not allowed here). */
  window?: (call: Node, scope: Scope) => Compiled;
  /** Set-returning calls (generate_series, unnest) in a target list (undefined: not allowed here). */
  setReturning?: (call: Node, scope: Scope) => Compiled;
}


type AExpr = Extract<Node, { A_Expr: unknown }>['A_Expr'];

/** `x [NOT] IN (list)`: true on a match, else NULL if any comparison was NULL. */
function compileInList(e: AExpr, op: string, scope: Scope, env: CompileEnv): Compiled {
  const l = compileExpr(e.lexpr!, scope, env);
  const list = ('List' in e.rexpr! ? e.rexpr.List.items ?? [] : [e.rexpr!]).map((x) => compileExpr(x, scope, env));
  const tests = list.map((x) => compareOp('=', l, x));
  const negate = op === '<>';
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    let sawNull = false;
    for (const t of tests) {
      const v = t(row, ctx);
      if (v === true) return !negate;
      if (v === null) sawNull = true;
    }
    return sawNull ? null : negate;
  } };
}

/** `x [NOT] BETWEEN [SYMMETRIC] lo AND hi`, with SQL's three-valued logic (SYMMETRIC: either order of the bounds). */
function compileBetween(e: AExpr, kind: string, scope: Scope, env: CompileEnv): Compiled {
  const x = compileExpr(e.lexpr!, scope, env);
  const [lo, hi] = ('List' in e.rexpr! ? e.rexpr.List.items ?? [] : []).map((n) => compileExpr(n, scope, env));
  const within = (a: Compiled, b: Compiled): Compiled['eval'] => {
    const ge = compareOp('>=', x, a);
    const le = compareOp('<=', x, b);
    return (row, ctx) => {
      const p = ge(row, ctx);
      const q = le(row, ctx);
      return p === false || q === false ? false : p === null || q === null ? null : true;
    };
  };
  const fwd = within(lo!, hi!);
  const back = kind.endsWith('_SYM') ? within(hi!, lo!) : undefined;
  const neg = kind.startsWith('AEXPR_NOT_BETWEEN');
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    const a = fwd(row, ctx);
    const v = back && a !== true ? (back(row, ctx) === true ? true : a === null || back(row, ctx) === null ? null : false) : a;
    return v === null ? null : v !== neg;
  } };
}

/** `(a, b) = (c, d)` and `<>`: pairwise, with SQL's three-valued logic. */
function compileRowCompare(op: string, l: Extract<Node, { RowExpr: unknown }>['RowExpr'], r: Extract<Node, { RowExpr: unknown }>['RowExpr'], scope: Scope, env: CompileEnv): Compiled {
  const ls = (l.args ?? []).map((n) => compileExpr(n, scope, env));
  const rs = (r.args ?? []).map((n) => compileExpr(n, scope, env));
  if (ls.length !== rs.length) throw new SqlError(SqlState.SYNTAX_ERROR, 'unequal number of entries in row expressions');
  if (op !== '=' && op !== '<>') throw notSupported(`row comparison with ${op}`);
  const eqs = ls.map((x, i) => compareOp('=', x, rs[i]!));
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    let sawNull = false;
    for (const t of eqs) {
      const v = t(row, ctx);
      if (v === false) return op === '<>';
      if (v === null) sawNull = true;
    }
    return sawNull ? null : op === '=';
  } };
}

/** `a IS [NOT] DISTINCT FROM b`: NULLs compare equal to each other, never NULL. */
function compileIsDistinct(e: AExpr, kind: string, scope: Scope, env: CompileEnv): Compiled {
  const l = compileExpr(e.lexpr!, scope, env);
  const r = compileExpr(e.rexpr!, scope, env);
  const eq = compareOp('=', l, r);
  const want = kind === 'AEXPR_NOT_DISTINCT';
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    const a = l.eval(row, ctx);
    const b = r.eval(row, ctx);
    if (a === null || b === null) return (a === null && b === null) === want;
    return (eq(row, ctx) === true) === want;
  } };
}

/** `x op ANY (array)` / `x op ALL (array)`. */
function compileOpAnyAll(e: AExpr, op: string, kind: string, scope: Scope, env: CompileEnv): Compiled {
  // Arrays exist only as PostgreSQL's text form ('{a,b}', catalog columns and ARRAY(subquery)).
  const l = compileExpr(e.lexpr!, scope, env);
  const r = compileExpr(e.rexpr!, scope, env);
  const holder: SqlValue[] = [null];
  const test = compareOp(op, l, { type: l.type, name: '', eval: () => holder[0]! });
  const any = kind === 'AEXPR_OP_ANY';
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    const arr = r.eval(row, ctx);
    if (arr === null) return null;
    for (const el of parseArrayText(textOf(arr))) {
      holder[0] = el;
      if ((test(row, ctx) === true) === any) return any;
    }
    return !any;
  } };
}

/** A plain operator: prefix `-` / `+`, comparison, pattern match or arithmetic. */
function compileOperator(e: AExpr, op: string, scope: Scope, env: CompileEnv): Compiled {
  if (!e.lexpr) {
    const r = compileExpr(e.rexpr!, scope, env);
    if (op === '-' && r.type === 'interval') return { type: 'interval', name: '?column?', eval: (row, ctx) => negateInterval(r.eval(row, ctx)) };
    if (op === '-') {
      const t = r.type === 'unknown' ? 'numeric' : r.type;
      return { type: t, name: '?column?', eval: (row, ctx) => { const v = r.eval(row, ctx); if (v === null) return null; const c = coerce(v, t); return typeof c === 'bigint' ? -c : typeof c === 'number' ? -c : coerce(-Number(c), t); } };
    }
    if (op === '+') return r;
    const p = prefixOp(op, r);
    if (p) return p;
    throw notSupported(`prefix operator ${op}`);
  }
  const l = compileExpr(e.lexpr, scope, env);
  const r = compileExpr(e.rexpr!, scope, env);
  const json = jsonOperator(op, l, r);
  if (json) return json;
  if (['=', '<>', '!=', '<', '<=', '>', '>='].includes(op)) return { type: 'bool', name: '?column?', eval: compareOp(op, l, r) };
  const m = matchOp(op, l, r);
  if (m) return { type: 'bool', name: '?column?', eval: m };
  return arith(op, l, r);
}

/** An A_Expr node: dispatches on its kind to the step that compiles it. */
function compileAExpr(e: AExpr, scope: Scope, env: CompileEnv): Compiled {
  const op = baseName(e.name);
  const kind = e.kind ?? 'AEXPR_OP';
  if (kind === 'AEXPR_IN') return compileInList(e, op, scope, env);
  if (kind.startsWith('AEXPR_BETWEEN') || kind.startsWith('AEXPR_NOT_BETWEEN')) return compileBetween(e, kind, scope, env);
  if (kind === 'AEXPR_OP' && e.lexpr && e.rexpr && 'RowExpr' in e.lexpr && 'RowExpr' in e.rexpr) return compileRowCompare(op === '!=' ? '<>' : op, e.lexpr.RowExpr, e.rexpr.RowExpr, scope, env);
  if (kind === 'AEXPR_LIKE' || kind === 'AEXPR_ILIKE') {
    const mop = kind === 'AEXPR_ILIKE' ? (op === '!~~*' ? '!~~*' : '~~*') : op === '!~~' ? '!~~' : '~~';
    return { type: 'bool', name: '?column?', eval: matchOp(mop, compileExpr(e.lexpr!, scope, env), compileExpr(e.rexpr!, scope, env))! };
  }
  if (kind === 'AEXPR_NULLIF') {
    const l = compileExpr(e.lexpr!, scope, env);
    const eq = compareOp('=', l, compileExpr(e.rexpr!, scope, env));
    return { type: l.type, name: 'nullif', eval: (row, ctx) => (eq(row, ctx) === true ? null : l.eval(row, ctx)) };
  }
  // SIMILAR TO: the parser wraps the pattern in similar_to_escape(), whose result is a regex (functions-extra.ts).
  if (kind === 'AEXPR_SIMILAR') return { type: 'bool', name: '?column?', eval: matchOp(op === '!~' ? '!~' : '~', compileExpr(e.lexpr!, scope, env), compileExpr(e.rexpr!, scope, env))! };
  if (kind === 'AEXPR_DISTINCT' || kind === 'AEXPR_NOT_DISTINCT') return compileIsDistinct(e, kind, scope, env);
  if (kind === 'AEXPR_OP_ANY' || kind === 'AEXPR_OP_ALL') return compileOpAnyAll(e, op, kind, scope, env);
  if (kind !== 'AEXPR_OP') throw notSupported(`the expression ${kind}`);
  return compileOperator(e, op, scope, env);
}

function compileColumnRef(fields: string[], scope: Scope, location: number | undefined): Compiled {
  const name = fields[fields.length - 1]!;
  const rel = fields.length >= 2 ? fields[fields.length - 2] : undefined;
  let depth = 0;
  for (let s: Scope | undefined = scope; s; s = s.outer, depth++) {
    const hits = s.find(rel, name);
    if (hits.length > 1) throw new SqlError(SqlState.AMBIGUOUS_COLUMN, `column reference "${name}" is ambiguous`, location !== undefined ? { position: location + 1 } : {});
    if (hits.length === 1) {
      const i = hits[0]!;
      const type = s.columns[i]!.type;
      if (depth === 0) return { type, name, eval: (row) => row[i] ?? null };
      const d = depth;
      return { type, name, eval: (_row, ctx) => ctx.outerRows[ctx.outerRows.length - d]?.[i] ?? null };
    }
  }
  const what = rel ? `${rel}.${name}` : name;
  throw new SqlError(SqlState.UNDEFINED_COLUMN, `column "${what}" does not exist`, location !== undefined ? { position: location + 1 } : {});
}

function constValue(c: Extract<Node, { A_Const: unknown }>['A_Const']): Compiled {
  if (c.isnull) return { type: 'unknown', name: '?column?', eval: () => null };
  if (c.ival) { const v = BigInt(c.ival.ival ?? 0); return { type: v >= -2147483648n && v <= 2147483647n ? 'int4' : 'int8', name: '?column?', eval: () => v }; }
  if (c.fval) {
    const s = c.fval.fval ?? '0';
    // An integer the lexer could not take as int4 (2147483648 and up) — once negated, -2147483648 is int4 again, as in PostgreSQL.
    if (/^-?\d+$/.test(s)) { const v = BigInt(s); return { type: v >= -2147483648n && v <= 2147483647n ? 'int4' : 'int8', name: '?column?', eval: () => v }; }
    return { type: 'numeric', name: '?column?', eval: () => s };
  }
  if (c.boolval) { const v = c.boolval.boolval === true; return { type: 'bool', name: 'bool', eval: () => v }; }
  if (c.sval) { const v = c.sval.sval ?? ''; return { type: 'unknown', name: '?column?', eval: () => v }; }
  if (c.bsval) throw notSupported('bit string constants');
  return { type: 'int4', name: '?column?', eval: () => 0n };
}

/** A TypeName to tessera's SQL type (arrays and unknown names: 0A000 / 42704). */
export function typeOfTypeName(t: { names?: Node[]; arrayBounds?: Node[]; typmods?: Node[] } | undefined): { type: SqlTypeName; serial?: boolean } {
  const parts = names(t?.names).filter((p) => p !== 'pg_catalog');
  const name = parts.join('.');
  // Arrays exist only in their text form (catalog queries cast to int2[], oid[]...).
  if (t?.arrayBounds && t.arrayBounds.length > 0) return { type: 'text' };
  const r = sqlTypeFromName(name === 'timestamptz' ? 'timestamptz' : name);
  if (!r) throw new SqlError(SqlState.UNDEFINED_OBJECT, `type "${name}" does not exist`);
  return r;
}

function compileCase(c: Extract<Node, { CaseExpr: unknown }>['CaseExpr'], scope: Scope, env: CompileEnv): Compiled {
  const arg = c.arg ? compileExpr(c.arg, scope, env) : undefined;
  const whens = (c.args ?? []).map((w) => {
    if (!('CaseWhen' in w)) throw syntax('malformed CASE');
    const cond = compileExpr(w.CaseWhen.expr!, scope, env);
    return { test: arg ? compareOp('=', arg, cond) : cond.eval, result: compileExpr(w.CaseWhen.result!, scope, env) };
  });
  const def = c.defresult ? compileExpr(c.defresult, scope, env) : undefined;
  const type = [...whens.map((w) => w.result.type), def?.type ?? 'unknown'].reduce(unify, 'unknown' as SqlTypeName);
  return { type: type === 'unknown' ? 'text' : type, name: 'case', eval: (row, ctx) => {
    for (const w of whens) if (truth(w.test(row, ctx)) === true) return w.result.eval(row, ctx);
    return def ? def.eval(row, ctx) : null;
  } };
}

function compileSubLink(s: Extract<Node, { SubLink: unknown }>['SubLink'], scope: Scope, env: CompileEnv): Compiled {
  const plan = env.subquery(s.subselect!, scope);
  const withOuter = (row: Tuple, ctx: EvalContext): Tuple[] => plan.run({ ...ctx, outerRows: [...ctx.outerRows, row] });
  switch (s.subLinkType) {
    case 'ARRAY_SUBLINK':
      return { type: 'text', name: 'array', eval: (row, ctx) => `{${withOuter(row, ctx).map((r) => arrayElementText(r[0] ?? null)).join(',')}}` };
    case 'EXISTS_SUBLINK':
      return { type: 'bool', name: 'exists', eval: (row, ctx) => withOuter(row, ctx).length > 0 };
    case 'EXPR_SUBLINK':
      return { type: plan.type, name: '?column?', eval: (row, ctx) => {
        const rows = withOuter(row, ctx);
        if (rows.length > 1) throw new SqlError(SqlState.CARDINALITY, 'more than one row returned by a subquery used as an expression');
        return rows[0]?.[0] ?? null;
      } };
    case 'ALL_SUBLINK': case 'ANY_SUBLINK': {
      // x op ANY: true at the first true comparison; x op ALL: false at the first false one; else NULL if one was NULL.
      const l = compileExpr(s.testexpr!, scope, env);
      const probe: Compiled = { type: plan.type, name: '', eval: (row) => row[0] ?? null };
      const holder: Tuple[] = [[]];
      const test = compareOp(baseName(s.operName) || '=', { ...l, eval: (_r, ctx) => l.eval(holder[0]!, ctx) }, probe);
      const decides = s.subLinkType === 'ANY_SUBLINK';
      return { type: 'bool', name: '?column?', eval: (row, ctx) => {
        let sawNull = false;
        for (const r of withOuter(row, ctx)) {
          holder[0] = row;
          const v = test(r, ctx);
          if (v === decides) return decides;
          if (v === null) sawNull = true;
        }
        return sawNull ? null : !decides;
      } };
    }
    default:
      throw notSupported(`subquery kind ${s.subLinkType ?? ''}`);
  }
}

function compileBool(b: Extract<Node, { BoolExpr: unknown }>['BoolExpr'], scope: Scope, env: CompileEnv): Compiled {
  const args = (b.args ?? []).map((a) => compileExpr(a, scope, env).eval);
  if (b.boolop === 'NOT_EXPR') return { type: 'bool', name: '?column?', eval: (row, ctx) => { const v = truth(args[0]!(row, ctx)); return v === null ? null : !v; } };
  const isAnd = b.boolop === 'AND_EXPR';
  return { type: 'bool', name: '?column?', eval: (row, ctx) => {
    let sawNull = false;
    for (const a of args) {
      const v = truth(a(row, ctx));
      if (v === null) sawNull = true;
      else if (v !== isAnd) return v;
    }
    return sawNull ? null : isAnd;
  } };
}

// Long by design (docs/conventions.md): one switch over the parse tree's node kinds, each a few lines or a call.
export function compileExpr(n: Node, scope: Scope, env: CompileEnv): Compiled {
  if ('A_Const' in n) return constValue(n.A_Const);
  if ('ColumnRef' in n) return compileColumnRef(names(n.ColumnRef.fields), scope, n.ColumnRef.location);
  if ('ParamRef' in n) {
    const i = (n.ParamRef.number ?? 1) - 1;
    const type = env.paramTypes[i] ?? 'unknown';
    return { type, name: '?column?', eval: (_r, ctx) => {
      if (i >= ctx.params.length) throw new SqlError(SqlState.INVALID_PARAMETER, `there is no parameter $${i + 1}`);
      return ctx.params[i]!;
    } };
  }
  if ('A_Expr' in n) return compileAExpr(n.A_Expr, scope, env);
  if ('BoolExpr' in n) return compileBool(n.BoolExpr, scope, env);
  if ('TypeCast' in n) {
    const inner = compileExpr(n.TypeCast.arg!, scope, env);
    const { type } = typeOfTypeName(n.TypeCast.typeName);
    // '{1,2}'::int[]: the text form, with its element type known.
    if ((n.TypeCast.typeName?.arrayBounds?.length ?? 0) > 0) {
      const { arrayBounds: _b, ...elementName } = n.TypeCast.typeName!;
      return { type: 'text', name: inner.name === '?column?' ? baseName(n.TypeCast.typeName!.names) : inner.name, elementType: typeOfTypeName(elementName).type, eval: (row, ctx) => coerce(inner.eval(row, ctx), 'text') };
    }
    const name = inner.name === '?column?' ? (n.TypeCast.typeName?.names ? baseName(n.TypeCast.typeName.names) : type) : inner.name;
    if (type === 'regclass') return { type: 'oid', name, eval: (row, ctx) => { const v = inner.eval(row, ctx); return v === null ? null : typeof v === 'bigint' ? v : BigInt(tableOid(textOf(v).replace(/^(public|pg_catalog)\./, '').replace(/"/g, ''))); } };
    if (inner.type === 'numeric' && isIntegerType(type)) return { type, name, eval: (row, ctx) => numericToInt(inner.eval(row, ctx), type) };
    const mods = n.TypeCast.typeName?.typmods;
    if (type === 'numeric' && mods?.length) {
      const p = constInt(mods[0]) ?? 0;
      const sc = constInt(mods[1]) ?? 0;
      return { type, name, eval: (row, ctx) => { const v = coerce(inner.eval(row, ctx), 'numeric'); return v === null ? null : fitNumeric(textOf(v), p, sc); } };
    }
    return { type, name, eval: (row, ctx) => coerce(inner.eval(row, ctx), type) };
  }
  if ('CollateClause' in n) return compileExpr(n.CollateClause.arg!, scope, env);
  if ('NullTest' in n) {
    const a = compileExpr(n.NullTest.arg!, scope, env);
    const isNull = n.NullTest.nulltesttype === 'IS_NULL';
    return { type: 'bool', name: '?column?', eval: (row, ctx) => (a.eval(row, ctx) === null) === isNull };
  }
  if ('BooleanTest' in n) {
    const a = compileExpr(n.BooleanTest.arg!, scope, env);
    const t = n.BooleanTest.booltesttype ?? 'IS_TRUE';
    return { type: 'bool', name: '?column?', eval: (row, ctx) => {
      const v = truth(a.eval(row, ctx));
      return t === 'IS_TRUE' ? v === true : t === 'IS_NOT_TRUE' ? v !== true : t === 'IS_FALSE' ? v === false : t === 'IS_NOT_FALSE' ? v !== false : t === 'IS_UNKNOWN' ? v === null : v !== null;
    } };
  }
  if ('CaseExpr' in n) return compileCase(n.CaseExpr, scope, env);
  if ('CoalesceExpr' in n) {
    const args = (n.CoalesceExpr.args ?? []).map((a) => compileExpr(a, scope, env));
    const type = args.map((a) => a.type).reduce(unify, 'unknown' as SqlTypeName);
    return { type: type === 'unknown' ? 'text' : type, name: 'coalesce', eval: (row, ctx) => {
      for (const a of args) { const v = a.eval(row, ctx); if (v !== null) return type === 'unknown' ? v : coerce(v, type); }
      return null;
    } };
  }
  if ('MinMaxExpr' in n) {
    const args = (n.MinMaxExpr.args ?? []).map((a) => compileExpr(a, scope, env));
    const type = args.map((a) => a.type).reduce(unify, 'unknown' as SqlTypeName);
    const greatest = n.MinMaxExpr.op === 'IS_GREATEST';
    return { type, name: greatest ? 'greatest' : 'least', eval: (row, ctx) => {
      let best: SqlValue = null;
      for (const a of args) { const v = coerce(a.eval(row, ctx), type); if (v !== null && (best === null || (compareValues(v, best) > 0) === greatest)) best = v; }
      return best;
    } };
  }
  if ('SubLink' in n) return compileSubLink(n.SubLink, scope, env);
  if ('SQLValueFunction' in n) return compileValueFunction(n.SQLValueFunction.op ?? 'SVFOP_CURRENT_TIMESTAMP');
  if ('FuncCall' in n) return compileFuncCall(n, scope, env);
  if ('A_ArrayExpr' in n) {
    // ARRAY[…]: PostgreSQL's text form, typed text as tessera's other arrays (docs/sql.md, "Limits"); an inner ARRAY[…] is a sub-array.
    const items = (n.A_ArrayExpr.elements ?? []).map((el) => ({ nested: 'A_ArrayExpr' in el, c: compileExpr(el, scope, env) }));
    const elementType = items.reduce<SqlTypeName>((t, { nested, c }) => unify(t, nested ? c.elementType ?? 'unknown' : c.type), 'unknown');
    return { type: 'text', name: 'array', ...(elementType !== 'unknown' ? { elementType } : {}), eval: (row, ctx) => `{${items.map(({ nested, c }) => { const v = c.eval(row, ctx); return nested && v !== null ? textOf(v) : arrayElementText(v); }).join(',')}}` };
  }
  if ('A_Indirection' in n) {
    const arr = compileExpr(n.A_Indirection.arg!, scope, env);
    const ind = n.A_Indirection.indirection?.[0];
    if (!ind || !('A_Indices' in ind) || !ind.A_Indices.uidx) throw notSupported('this subscript');
    const idx = compileExpr(ind.A_Indices.uidx, scope, env);
    // Elements of a text-form array have the array's element type where it is known (ARRAY[…], a cast);
    // else, like a quoted literal, they take the type they meet.
    const et = arr.elementType;
    return { type: et ?? 'unknown', name: arr.name, eval: (row, ctx) => {
      const a = arr.eval(row, ctx);
      const i = idx.eval(row, ctx);
      if (a === null || i === null) return null;
      const v = parseArrayText(textOf(a))[Number(coerce(i, 'int8')) - 1] ?? null;
      return et && v !== null ? coerce(v, et) : v;
    } };
  }
  throw notSupported(`the expression ${nodeKind(n)}`);
}

function compileValueFunction(op: string): Compiled {
  switch (op) {
    case 'SVFOP_CURRENT_TIMESTAMP': case 'SVFOP_CURRENT_TIMESTAMP_N': case 'SVFOP_LOCALTIMESTAMP': case 'SVFOP_LOCALTIMESTAMP_N':
      return { type: 'timestamptz', name: 'current_timestamp', eval: (_r, ctx) => callFunction('now', [], ctx) };
    case 'SVFOP_CURRENT_DATE':
      return { type: 'date', name: 'current_date', eval: (_r, ctx) => coerce(callFunction('now', [], ctx), 'date') };
    case 'SVFOP_CURRENT_USER': case 'SVFOP_USER': case 'SVFOP_SESSION_USER': case 'SVFOP_CURRENT_ROLE':
      return { type: 'name', name: 'current_user', eval: (_r, ctx) => ctx.session.user };
    case 'SVFOP_CURRENT_CATALOG':
      return { type: 'name', name: 'current_catalog', eval: (_r, ctx) => ctx.session.database };
    case 'SVFOP_CURRENT_SCHEMA':
      return { type: 'name', name: 'current_schema', eval: () => 'public' };
    default:
      throw notSupported(op.replace('SVFOP_', '').toLowerCase());
  }
}

function compileFuncCall(n: Extract<Node, { FuncCall: unknown }>, scope: Scope, env: CompileEnv): Compiled {
  const f = n.FuncCall;
  const parts = names(f.funcname).filter((p) => p !== 'pg_catalog');
  const fname = parts.join('.');
  if (isAggregate(fname) && !f.over) {
    if (!env.aggregate) throw new SqlError(SqlState.GROUPING_ERROR, `aggregate functions are not allowed here`, f.location !== undefined ? { position: f.location + 1 } : {});
    return env.aggregate(n, scope);
  }
  if (f.over) {
    if (!env.window) throw new SqlError(SqlState.WINDOWING_ERROR, 'window functions are not allowed here', f.location !== undefined ? { position: f.location + 1 } : {});
    return env.window(n, scope);
  }
  if (isSetReturning(fname)) {
    if (!env.setReturning) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `set-returning function ${fname}() is only allowed in FROM or directly in a SELECT list`, f.location !== undefined ? { position: f.location + 1 } : {});
    return env.setReturning(n, scope);
  }
  const { setReturning: _srf, ...inner } = env;
  const args = (f.args ?? []).map((a) => compileExpr(a, scope, inner));
  const dt = datetimeCall(fname, args) ?? jsonCall(fname, args);
  if (dt) return dt;
  if (fname === 'pg_typeof') {
    const t = TYPES[args[0]?.type ?? 'unknown'].display;
    return { type: 'text', name: 'pg_typeof', eval: () => (args[0]?.type === 'unknown' ? 'unknown' : t) };
  }
  // substring(s FROM pattern): a text second argument is a regular expression (PostgreSQL's substring(text, text)).
  const regex = fname === 'substring' && args.length === 2 && (STRING_TYPES.has(args[1]!.type) || (args[1]!.type === 'unknown' && f.args?.[1] !== undefined && 'A_Const' in f.args[1]));
  if (regex) return { type: 'text', name: 'substring', eval: (row, ctx) => callFunction('substring_regex', args.map((a) => a.eval(row, ctx)), ctx) };
  const type = returnType(fname, args.map((a) => a.type));
  const evals = args.map((a) => a.eval);
  const name = parts[parts.length - 1]!;
  // Integer results are bigint in the executor, whatever the function computed them as.
  if (isIntegerType(type)) return { type, name, eval: (row, ctx) => { const v = callFunction(fname, evals.map((e) => e(row, ctx)), ctx); const b = typeof v === 'number' ? BigInt(Math.trunc(v)) : v; return typeof b === 'bigint' && (type === 'int4' || type === 'int2') ? checkIntRange(type, b) : b; } };
  return { type, name, eval: (row, ctx) => callFunction(fname, evals.map((e) => e(row, ctx)), ctx) };
}

/** Return types of the scalar functions (functions.ts implements them; an unknown name is 42883 there). */
function returnType(fname: string, args: SqlTypeName[]): SqlTypeName {
  switch (fname) {
    case 'length': case 'char_length': case 'octet_length': case 'strpos': case 'position': case 'pg_backend_pid': case 'array_position': case 'ascii': case 'array_length': case 'array_upper':
      return 'int4';
    case 'starts_with':
      return 'bool';
    case 'bit_length': case 'width_bucket': case 'cardinality':
      return 'int4';
    case 'gcd': case 'lcm':
      return args[0] === 'int8' || args[1] === 'int8' ? 'int8' : 'int4';
    case 'div': case 'factorial':
      return 'numeric';
    case 'exp': case 'ln': case 'log': case 'log10': case 'cbrt': case 'degrees': case 'radians':
      return args[0] === 'numeric' ? 'numeric' : 'float8';
    case 'random': case 'dbms_random.value': case 'pi': case 'sqrt': case 'power':
      return 'float8';
    case 'now': case 'transaction_timestamp': case 'statement_timestamp': case 'clock_timestamp':
      return 'timestamptz';
    case 'nextval': case 'currval': case 'setval': case 'lastval': case 'to_regclass': case 'to_regclass_strict': case 'pg_table_size': case 'pg_relation_size': case 'pg_total_relation_size': case 'pg_indexes_size': case 'pg_database_size': case 'pg_tablespace_size':
      return 'int8';
    case 'abs': case 'round': case 'floor': case 'ceil': case 'ceiling': case 'trunc': case 'mod': case 'sign':
      return args[0] === 'unknown' || args[0] === undefined ? 'numeric' : (fname === 'round' || fname === 'trunc') && args.length > 1 ? 'numeric' : args[0];
    case 'pg_table_is_visible': case 'has_table_privilege': case 'has_schema_privilege': case 'pg_is_in_recovery': case 'has_database_privilege':
      return 'bool';
    case 'pg_get_userbyid': case 'current_database': case 'current_schema': case 'current_user': case 'session_user':
      return 'name';
    case 'gen_random_uuid':
      return 'uuid';
    case 'decode': case 'sha224': case 'sha256': case 'sha384': case 'sha512':
      return 'bytea';
    default:
      return 'text';
  }
}

/** A constant expression's value (DEFAULT clauses, LIMIT, pushed-down key values): no columns allowed. */
export function evalConstant(n: Node, env: CompileEnv, ctx: EvalContext): SqlValue {
  return compileExpr(n, new Scope([]), env).eval([], ctx);
}

import { arrayElementText, parseArrayText } from './array-text';

export { arrayElementText, parseArrayText };
export { compareValues, str, truth };
