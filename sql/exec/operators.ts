/**
 * Operators of the expression compiler (expr.ts): the order of values (PostgreSQL's, NaN above every
 * number), the common type of two operands, comparisons, arithmetic, and LIKE / regular expressions.
 */
import { SqlError, SqlState } from './sql-error';
import { datetimeArith, intervalKey } from './datetime';
import { decimalOp, formatDecimal, parseDecimal, type Decimal } from './decimal';
import type { Compiled } from './scope';
import { boolText, checkIntRange, coerce, isFloatType, isIntegerType, isNumericType, textOf, TYPES, type SqlTypeName, type SqlValue } from './sql-types';

/** Compare two non-null values of comparable types: <0, 0, >0. */
export function compareValues(a: SqlValue, b: SqlValue): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) {
    const x = Number(a);
    const y = Number(b);
    // PostgreSQL's order: NaN equals NaN and is above every other number (as the tablets order it).
    if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) === Number.isNaN(y) ? 0 : Number.isNaN(x) ? 1 : -1;
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b ? 0 : a ? 1 : -1;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  const s = textOf(a);
  const t = textOf(b);
  return s < t ? -1 : s > t ? 1 : 0;
}

/** The common type of two operands: unknown takes the other side's type. */
export function unify(a: SqlTypeName, b: SqlTypeName): SqlTypeName {
  if (a === 'unknown') return b;
  if (b === 'unknown') return a;
  if (a === b) return a;
  // date < timestamp < timestamptz: the wider one (PostgreSQL's implicit casts).
  const rank: Partial<Record<SqlTypeName, number>> = { date: 1, timestamp: 2, timestamptz: 3 };
  if (rank[a] && rank[b]) return rank[a]! > rank[b]! ? a : b;
  if (isNumericType(a) && isNumericType(b)) {
    if (isFloatType(a) || isFloatType(b)) return 'float8';
    if (a === 'numeric' || b === 'numeric') return 'numeric';
    return 'int8';
  }
  return a;
}

function castTo(c: Compiled, t: SqlTypeName): Compiled['eval'] {
  if (c.type === t || t === 'unknown') return c.eval;
  return (row, ctx) => coerce(c.eval(row, ctx), t);
}

export function truth(v: SqlValue): boolean | null {
  if (v === null) return null;
  if (typeof v === 'boolean') return v;
  return coerce(v, 'bool') as boolean;
}

const STRINGS = new Set<SqlTypeName>(['text', 'varchar', 'bpchar']);
const NUMBERS = new Set<SqlTypeName>(['int2', 'int4', 'int8', 'float4', 'float8', 'numeric']);

/** A string compared with a number has no operator in PostgreSQL (42883): tessera compared their text and found no rows. */
function checkComparable(op: string, a: SqlTypeName, b: SqlTypeName): void {
  if ((STRINGS.has(a) && NUMBERS.has(b)) || (NUMBERS.has(a) && STRINGS.has(b))) {
    throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: ${TYPES[a].display} ${op} ${TYPES[b].display}`, { hint: 'No operator matches the given name and argument types. You might need to add explicit type casts.' });
  }
}

export function compareOp(op: string, l: Compiled, r: Compiled): Compiled['eval'] {
  checkComparable(op, l.type, r.type);
  const t = unify(l.type, r.type);
  const cl = castTo(l, t === 'numeric' ? 'float8' : t);
  const cr = castTo(r, t === 'numeric' ? 'float8' : t);
  // Intervals compare by size (a month as 30 days), not by their text.
  const le: Compiled['eval'] = t === 'interval' ? (row, ctx) => intervalKey(cl(row, ctx)) : cl;
  const re: Compiled['eval'] = t === 'interval' ? (row, ctx) => intervalKey(cr(row, ctx)) : cr;
  const test: (c: number) => boolean =
    op === '=' ? (c) => c === 0 : op === '<>' || op === '!=' ? (c) => c !== 0 : op === '<' ? (c) => c < 0 : op === '<=' ? (c) => c <= 0 : op === '>' ? (c) => c > 0 : (c) => c >= 0;
  return (row, ctx) => {
    const a = le(row, ctx);
    if (a === null) return null;
    const b = re(row, ctx);
    if (b === null) return null;
    return test(compareValues(a, b));
  };
}

export function arith(op: string, l: Compiled, r: Compiled): Compiled {
  const dt = op === '||' ? undefined : datetimeArith(op, l, r);
  if (dt) return dt;
  let t = unify(l.type, r.type);
  if (t === 'unknown' || !isNumericType(t)) {
    if (op === '||') t = 'text';
    else if (!isNumericType(t)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: ${l.type} ${op} ${r.type}`);
  }
  if (op === '||') return { type: 'text', name: '?column?', eval: (row, ctx) => { const a = l.eval(row, ctx); const b = r.eval(row, ctx); return a === null || b === null ? null : boolText(a) + boolText(b); } };
  // int ^ int is double precision in PostgreSQL (there is no integer ^).
  if (op === '^' && isIntegerType(t)) t = 'float8';
  if (t === 'numeric' && op !== '^') return numericArith(op, l, r);
  const asInt = isIntegerType(t);
  const le = castTo(l, asInt ? 'int8' : 'float8');
  const re = castTo(r, asInt ? 'int8' : 'float8');
  // int4 op int4 stays int4 (PostgreSQL's int4 operators), anything with int8 is int8.
  const small = (x: SqlTypeName): boolean => x === 'int4' || x === 'int2' || x === 'unknown';
  // int2 op int2 is int2 (32767::smallint + 1::smallint is 22003, as in PostgreSQL).
  const outType: SqlTypeName = asInt ? (l.type === 'int2' && r.type === 'int2' ? 'int2' : small(l.type) && small(r.type) ? 'int4' : 'int8') : t === 'numeric' ? 'numeric' : 'float8';
  const f = asInt ? intOp(op, outType === 'int8' ? 64 : 32) : floatOp(op);
  return {
    type: outType,
    name: '?column?',
    eval: (row, ctx) => {
      const a = le(row, ctx);
      const b = re(row, ctx);
      if (a === null || b === null) return null;
      const v = f(a, b);
      return outType === 'numeric' ? coerce(v, 'numeric') : outType === 'int4' || outType === 'int2' ? checkIntRange(outType, v as bigint) : v;
    },
  };
}

/** numeric op numeric (or with an integer), exactly (decimal.ts); NaN and non-decimal text through a double. */
function numericArith(op: string, l: Compiled, r: Compiled): Compiled {
  const dec = (v: SqlValue): Decimal | undefined => (typeof v === 'bigint' ? { unscaled: v, scale: 0 } : typeof v === 'string' ? parseDecimal(v) : typeof v === 'number' && Number.isFinite(v) ? parseDecimal(String(v)) : undefined);
  const viaFloat = floatOp(op);
  return {
    type: 'numeric',
    name: '?column?',
    eval: (row, ctx) => {
      const a = l.eval(row, ctx);
      const b = r.eval(row, ctx);
      if (a === null || b === null) return null;
      const x = dec(a);
      const y = dec(b);
      if (x && y) return formatDecimal(decimalOp(op, x, y));
      return coerce(viaFloat(coerce(a, 'float8'), coerce(b, 'float8')), 'numeric');
    },
  };
}

/** Integer operators; `bits` is the result's width (a shift wraps within it, as PostgreSQL's C shifts do). */
function intOp(op: string, bits: 32 | 64): (a: SqlValue, b: SqlValue) => SqlValue {
  const div = (x: bigint, y: bigint): bigint => {
    if (y === 0n) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero');
    return x / y;
  };
  const shift = (y: bigint): bigint => BigInt(Number(BigInt.asUintN(32, y)) & (bits - 1));
  const ops: Record<string, (x: bigint, y: bigint) => bigint> = {
    '+': (x, y) => x + y, '-': (x, y) => x - y, '*': (x, y) => x * y, '/': div,
    '%': (x, y) => (y === 0n ? div(x, y) : x % y),
    '&': (x, y) => x & y, '|': (x, y) => x | y, '#': (x, y) => x ^ y,
    '<<': (x, y) => BigInt.asIntN(bits, x << shift(y)), '>>': (x, y) => x >> shift(y),
  };
  const f = ops[op];
  if (!f) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: bigint ${op} bigint`);
  return (a, b) => {
    const v = f(a as bigint, b as bigint);
    if (v < -(1n << 63n) || v >= 1n << 63n) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, 'bigint out of range');
    return v;
  };
}

function floatOp(op: string): (a: SqlValue, b: SqlValue) => SqlValue {
  const ops: Record<string, (x: number, y: number) => number> = {
    '+': (x, y) => x + y, '-': (x, y) => x - y, '*': (x, y) => x * y,
    '/': (x, y) => { if (y === 0) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero'); return x / y; },
    '%': (x, y) => x % y, '^': (x, y) => x ** y,
  };
  const f = ops[op];
  if (!f) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: double precision ${op} double precision`);
  return (a, b) => f(Number(a), Number(b));
}

function likeRegex(pattern: string, insensitive: boolean): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\' && i + 1 < pattern.length) re += pattern[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else if (ch === '%') re += '[\\s\\S]*';
    else if (ch === '_') re += '[\\s\\S]';
    else re += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, insensitive ? 'i' : '');
}

export function matchOp(op: string, l: Compiled, r: Compiled): Compiled['eval'] | undefined {
  const like = op === '~~' || op === '~~*' || op === '!~~' || op === '!~~*';
  const regex = op === '~' || op === '~*' || op === '!~' || op === '!~*';
  if (!like && !regex) return undefined;
  const negate = op.startsWith('!');
  const ci = op.endsWith('*');
  const cache = new Map<string, RegExp>();
  return (row, ctx) => {
    const a = l.eval(row, ctx);
    const b = r.eval(row, ctx);
    if (a === null || b === null) return null;
    const p = textOf(b);
    let re = cache.get(p);
    if (!re) {
      try {
        re = like ? likeRegex(p, ci) : new RegExp(p, ci ? 'i' : '');
      } catch {
        throw new SqlError(SqlState.INVALID_REGULAR_EXPRESSION, `invalid regular expression: ${p}`);
      }
      if (cache.size < 64) cache.set(p, re);
    }
    return re.test(textOf(a)) !== negate;
  };
}

/** Prefix operators besides - and +: ~ (bitwise not), |/ (square root), ||/ (cube root), @ (absolute value). */
export function prefixOp(op: string, r: Compiled): Compiled | undefined {
  const t = r.type === 'unknown' ? 'numeric' : r.type;
  const num = (row: Parameters<Compiled['eval']>[0], ctx: Parameters<Compiled['eval']>[1]): number | null => { const v = r.eval(row, ctx); return v === null ? null : Number(coerce(v, 'float8')); };
  if (op === '~') {
    if (!isIntegerType(r.type)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: ~ ${TYPES[r.type].display}`);
    return { type: r.type, name: '?column?', eval: (row, ctx) => { const v = r.eval(row, ctx); return v === null ? null : ~(v as bigint); } };
  }
  if (op === '|/') return { type: 'float8', name: '?column?', eval: (row, ctx) => { const x = num(row, ctx); if (x !== null && x < 0) throw new SqlError(SqlState.INVALID_POWER_ARGUMENT, 'cannot take square root of a negative number'); return x === null ? null : Math.sqrt(x); } };
  if (op === '||/') return { type: 'float8', name: '?column?', eval: (row, ctx) => { const x = num(row, ctx); return x === null ? null : Math.cbrt(x); } };
  if (op === '@') {
    if (!isNumericType(t)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: @ ${TYPES[t].display}`);
    return { type: t, name: '?column?', eval: (row, ctx) => { const v = r.eval(row, ctx); if (v === null) return null; const c = coerce(v, t); return typeof c === 'bigint' ? (c < 0n ? -c : c) : typeof c === 'number' ? Math.abs(c) : String(c).replace(/^-/, ''); } };
  }
  return undefined;
}
