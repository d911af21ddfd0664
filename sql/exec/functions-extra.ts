/**
 * More of PostgreSQL's scalar functions (docs/sql.md, "Functions"): regular expressions
 * (regexp_match, substring … FROM pattern, SIMILAR TO), format(), quoting, integer arithmetic
 * (div, gcd, lcm, factorial, width_bucket), overlay, bit_length and pg_sleep. Registered into
 * functions.ts's table at load; their result types are in expr.ts's returnType.
 */
import { SqlError, SqlState } from './sql-error';
import { registerFunction } from './functions';
import { arrayElementText, parseArrayText } from './array-text';
import { parseDecimal } from './decimal';
import { coerce, textOf, type SqlValue } from './sql-types';
import type { EvalContext } from './scope';

/** pg_sleep's longest sleep (PostgreSQL has none; a lab session should not hang a connection for hours). */
export const PG_SLEEP_MS_MAX = 10 * 60 * 1000;

const int = (v: SqlValue): bigint => coerce(v, 'int8') as bigint;

/** A POSIX-style pattern as a JavaScript RegExp; a pattern JavaScript refuses is PostgreSQL's 2201B. */
export function sqlRegex(pattern: string, flags = ''): RegExp {
  try {
    return new RegExp(pattern, flags);
  } catch (e) {
    throw new SqlError(SqlState.INVALID_REGULAR_EXPRESSION, `invalid regular expression: ${(e as Error).message.replace(/^Invalid regular expression: /, '')}`);
  }
}

/** regexp_match's flags: i (case-insensitive), c (sensitive), n/s (newline-sensitive, as JavaScript's default); g is refused. */
function regexFlags(flags: string, fname: string): string {
  let out = '';
  for (const f of flags) {
    if (f === 'g') throw new SqlError(SqlState.INVALID_PARAMETER, `${fname}() does not support the "global" option`, { hint: 'Use the regexp_matches function instead.' });
    if (f === 'i') out = 'i';
    else if (f === 'c') out = '';
    else if (!'nsmpwx'.includes(f)) throw new SqlError(SqlState.INVALID_PARAMETER, `invalid regular expression option: "${f}"`);
  }
  return out;
}

/** regexp_matches: each match's groups as an array's text form; every match with the g flag, else the first. */
export function regexMatches(s: string, pattern: string, flags: string): string[] {
  const g = flags.includes('g');
  const re = sqlRegex(pattern, regexFlags(flags.replace(/g/g, ''), 'regexp_matches') + 'g');
  const out: string[] = [];
  for (const m of s.matchAll(re)) {
    out.push(matchArray(m as RegExpExecArray));
    if (!g) break;
  }
  return out;
}

/** regexp_split_to_table: the text between the pattern's matches. */
export function regexSplit(s: string, pattern: string, flags: string): string[] {
  if (flags.includes('g')) throw new SqlError(SqlState.INVALID_PARAMETER, 'regexp_split_to_table() does not support the "global" option');
  const re = sqlRegex(pattern, regexFlags(flags, 'regexp_split_to_table') + 'g');
  const out: string[] = [];
  let at = 0;
  for (const m of s.matchAll(re)) {
    if (m[0] === '' && (m.index === 0 || m.index >= s.length)) continue;
    out.push(s.slice(at, m.index));
    at = m.index + m[0].length;
  }
  out.push(s.slice(at));
  return out;
}

/** An array's text form of regexp_match's result: the capture groups, or the whole match without any. */
function matchArray(m: RegExpExecArray): string {
  const parts = m.length > 1 ? m.slice(1) : [m[0]];
  return `{${parts.map((p) => arrayElementText(p ?? null)).join(',')}}`;
}

/** SIMILAR TO's pattern as a JavaScript regex source, anchored (PostgreSQL's similar_to_escape). */
export function similarToRegex(pattern: string, escape = '\\'): string {
  if ([...escape].length > 1) throw new SqlError(SqlState.INVALID_ESCAPE_SEQUENCE, 'invalid escape string', { hint: 'Escape string must be empty or one character.' });
  let out = '';
  let inBracket = false;
  const cs = [...pattern];
  for (let i = 0; i < cs.length; i++) {
    const c = cs[i]!;
    if (escape !== '' && c === escape) {
      if (i + 1 >= cs.length) throw new SqlError(SqlState.INVALID_ESCAPE_SEQUENCE, 'SIMILAR TO pattern must not end with escape character');
      out += cs[++i]!.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
    } else if (inBracket) {
      if (c === ']') inBracket = false;
      out += c === '\\' ? '\\\\' : c;
    } else if (c === '[') { inBracket = true; out += c; }
    else if (c === '%') out += '[\\s\\S]*';
    else if (c === '_') out += '[\\s\\S]';
    else if (c === '.' || c === '^' || c === '$' || c === '\\' || c === '/') out += `\\${c}`;
    else out += c;
  }
  return `^(?:${out})$`;
}

/** quote_ident: as is when it needs no quotes (lower-case, not starting with a digit), else double-quoted. */
function quoteIdent(s: string): string {
  return /^[a-z_][a-z0-9_$]*$/.test(s) ? s : `"${s.replace(/"/g, '""')}"`;
}

/** quote_literal: single-quoted, quotes doubled; a backslash makes it an E'' string with backslashes doubled. */
function quoteLiteral(s: string): string {
  const q = `'${s.replace(/'/g, "''")}'`;
  return s.includes('\\') ? `E${q.replace(/\\/g, '\\\\')}` : q;
}

/** format(): %s, %I, %L with PostgreSQL's position (n$), '-' flag and width; %% is a percent sign. */
function format(args: SqlValue[]): SqlValue {
  if (args[0] === null || args[0] === undefined) return null;
  const fmt = textOf(args[0]);
  let next = 1;
  return fmt.replace(/%(?:(\d+)\$)?(-)?(\d+)?([sIL%])|%(.?)/g, (_m, pos: string | undefined, minus: string | undefined, width: string | undefined, conv: string | undefined, bad: string | undefined) => {
    if (conv === undefined) throw new SqlError(SqlState.INVALID_PARAMETER, bad ? `unrecognized format() type specifier "${bad}"` : 'unterminated format() type specifier', { hint: 'For a single "%" use "%%".' });
    if (conv === '%') return '%';
    const at = pos !== undefined ? Number(pos) : next;
    if (pos !== undefined && at < 1) throw new SqlError(SqlState.INVALID_PARAMETER, 'format specifies argument 0, but arguments are numbered from 1');
    next = at + 1;
    if (at >= args.length) throw new SqlError(SqlState.INVALID_PARAMETER, 'too few arguments for format()');
    const v = args[at]!;
    let s: string;
    if (conv === 'I') {
      if (v === null) throw new SqlError(SqlState.NULL_VALUE_NOT_ALLOWED, 'null values cannot be formatted as an SQL identifier');
      s = quoteIdent(textOf(v));
    } else if (conv === 'L') s = v === null ? 'NULL' : quoteLiteral(textOf(v));
    else s = v === null ? '' : textOf(v);
    const w = width === undefined ? 0 : Number(width);
    return minus ? s.padEnd(w) : s.padStart(w);
  });
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** div(a, b): the integer quotient, truncated toward zero, as numeric text. */
function div(a: SqlValue, b: SqlValue): string {
  const x = parseDecimal(typeof a === 'bigint' ? a.toString() : textOf(a));
  const y = parseDecimal(typeof b === 'bigint' ? b.toString() : textOf(b));
  if (!x || !y) throw new SqlError(SqlState.INVALID_TEXT, 'div() needs numbers');
  if (y.unscaled === 0n) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero');
  // x/10^sx ÷ y/10^sy = (x·10^sy) ÷ (y·10^sx)
  return ((x.unscaled * 10n ** BigInt(y.scale)) / (y.unscaled * 10n ** BigInt(x.scale))).toString();
}

function factorial(n: bigint): string {
  if (n < 0n) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, 'factorial of a negative number is undefined');
  if (n > 10000n) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, 'value overflows numeric format');
  let r = 1n;
  for (let i = 2n; i <= n; i++) r *= i;
  return r.toString();
}

/** width_bucket(operand, low, high, count): which of `count` equal buckets of [low, high) holds the operand. */
function widthBucket(op: number, lo: number, hi: number, count: bigint): bigint {
  if (count <= 0n) throw new SqlError(SqlState.INVALID_ARGUMENT_FOR_WIDTH_BUCKET, 'count must be greater than zero');
  if (lo === hi) throw new SqlError(SqlState.INVALID_ARGUMENT_FOR_WIDTH_BUCKET, 'lower bound cannot equal upper bound');
  const n = Number(count);
  if (lo < hi) return op < lo ? 0n : op >= hi ? count + 1n : BigInt(Math.floor(((op - lo) * n) / (hi - lo)) + 1);
  return op > lo ? 0n : op <= hi ? count + 1n : BigInt(Math.floor(((lo - op) * n) / (lo - hi)) + 1);
}

/** pg_sleep: the statement waits before it answers (session.ts awaits ctx.sleep after the rows are made). */
function pgSleep(a: SqlValue[], ctx: EvalContext): SqlValue {
  const ms = Number(a[0]) * 1000;
  if (!Number.isFinite(ms)) throw new SqlError(SqlState.INVALID_PARAMETER, 'pg_sleep() needs a finite number of seconds');
  if (!ctx.sleep) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'pg_sleep() is supported in SELECT statements only');
  ctx.sleep.ms = Math.min(PG_SLEEP_MS_MAX, ctx.sleep.ms + Math.max(0, ms));
  return '';
}

registerFunction('pg_sleep', pgSleep);
registerFunction('regexp_match', (a) => {
  const m = sqlRegex(textOf(a[1]!), regexFlags(a[2] === undefined ? '' : textOf(a[2]), 'regexp_match')).exec(textOf(a[0]!));
  return m ? matchArray(m) : null;
});
registerFunction('substring_regex', (a) => {
  const m = sqlRegex(textOf(a[1]!)).exec(textOf(a[0]!));
  // The first parenthesized group's text when the pattern has one, else the whole match.
  return m ? (m.length > 1 ? (m[1] ?? null) : m[0]) : null;
});
registerFunction('similar_to_escape', (a) => similarToRegex(textOf(a[0]!), a[1] === undefined ? '\\' : textOf(a[1])));
registerFunction('format', format);
registerFunction('quote_ident', (a) => quoteIdent(textOf(a[0]!)));
registerFunction('quote_literal', (a) => quoteLiteral(textOf(a[0]!)));
registerFunction('quote_nullable', (a) => (a[0] === null ? 'NULL' : quoteLiteral(textOf(a[0]!))));
registerFunction('bit_length', (a) => BigInt((a[0] instanceof Uint8Array ? a[0].length : Buffer.byteLength(textOf(a[0]!))) * 8));
registerFunction('div', (a) => div(a[0]!, a[1]!));
registerFunction('gcd', (a) => gcd(int(a[0]!), int(a[1]!)));
registerFunction('lcm', (a) => {
  const x = int(a[0]!);
  const y = int(a[1]!);
  if (x === 0n || y === 0n) return 0n;
  const l = (x / gcd(x, y)) * y;
  return l < 0n ? -l : l;
});
registerFunction('factorial', (a) => factorial(int(a[0]!)));
registerFunction('width_bucket', (a) => widthBucket(Number(a[0]), Number(a[1]), Number(a[2]), int(a[3]!)));
registerFunction('overlay', (a) => {
  const s = [...textOf(a[0]!)];
  const r = textOf(a[1]!);
  const from = Number(int(a[2]!));
  const len = a[3] === undefined ? [...r].length : Number(int(a[3]));
  if (from < 1 || len < 0) throw new SqlError(SqlState.SUBSTRING_ERROR, 'negative substring length not allowed');
  return s.slice(0, from - 1).join('') + r + s.slice(from - 1 + len).join('');
});
registerFunction('currval', (a, ctx) => {
  if (!ctx.currval) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'currval() here');
  return ctx.currval(textOf(a[0]!));
});
registerFunction('lastval', (_a, ctx) => {
  if (!ctx.currval) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'lastval() here');
  return ctx.currval(undefined);
});
registerFunction('setval', (a, ctx) => {
  if (!ctx.setval) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, 'setval() outside a SELECT');
  const v = int(a[1]!);
  // setval(name, v, false): the next nextval returns v itself.
  const last = a[2] === false ? v - 1n : v;
  ctx.setval(textOf(a[0]!), last);
  return v;
});
registerFunction('cardinality', (a) => BigInt((textOf(a[0]!).match(/[^{},]+|"(?:[^"\\]|\\.)*"/g) ?? []).length));

const arrayText = (items: SqlValue[]): string => `{${items.map(arrayElementText).join(',')}}`;
/** Elements of an array argument (its text form), NULL ones kept. */
const elements = (v: SqlValue): SqlValue[] => parseArrayText(textOf(v));
registerFunction('string_to_array', (a) => {
  if (a[0] === null) return null;
  const s = textOf(a[0]!);
  if (s === '') return '{}';
  const parts = a[1] === null ? [...s] : textOf(a[1]!) === '' ? [s] : s.split(textOf(a[1]!));
  const nul = a[2] == null ? undefined : textOf(a[2]);
  return arrayText(parts.map((p) => (p === nul ? null : p)));
});
registerFunction('array_position', (a) => {
  if (a[0] === null) return null;
  const i = elements(a[0]!).findIndex((v) => v !== null && a[1] !== null && textOf(v) === textOf(a[1]!));
  return i < 0 ? null : BigInt(i + 1);
});
registerFunction('array_append', (a) => (a[0] === null ? arrayText([a[1] ?? null]) : arrayText([...elements(a[0]!), a[1] ?? null])));
registerFunction('array_prepend', (a) => (a[1] === null ? arrayText([a[0] ?? null]) : arrayText([a[0] ?? null, ...elements(a[1]!)])));
registerFunction('array_cat', (a) => (a[0] === null ? a[1] ?? null : a[1] === null ? a[0]! : arrayText([...elements(a[0]!), ...elements(a[1]!)])));
registerFunction('array_remove', (a) => (a[0] === null ? null : arrayText(elements(a[0]!).filter((v) => (a[1] === null ? v !== null : v === null || textOf(v) !== textOf(a[1]!))))));
