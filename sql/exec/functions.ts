/**
 * Scalar functions and aggregates. `dbms_random.*` are orafce's (YugabyteDB ships orafce; the blog's
 * experiment uses dbms_random.string), available once `CREATE EXTENSION orafce` ran in the database.
 */
import * as crypto from 'node:crypto';
import type { EvalContext } from './scope';
import { SqlError, SqlState } from './sql-error';
import { formatDecimal, parseDecimal, roundTo, truncTo } from './decimal';
import { coerce, formatTimestamp, textOf, type SqlValue } from './sql-types';

/** Longest string a function may build (PostgreSQL's 1 GB field limit, lowered): past it 54000. */
export const FUNCTION_RESULT_BYTES_MAX = 64 * 1024 * 1024;

const AGGREGATES = new Set(['count', 'sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'string_agg', 'array_agg']);
export const isAggregate = (name: string): boolean => AGGREGATES.has(name);
/** Set-returning functions (set-returning.ts evaluates them, in FROM and in the target list). */
const SET_RETURNING = new Set(['generate_series', 'unnest', 'regexp_matches', 'regexp_split_to_table', 'string_to_table', 'jsonb_object_keys', 'json_object_keys', 'jsonb_array_elements', 'json_array_elements', 'jsonb_array_elements_text', 'json_array_elements_text']);
export const isSetReturning = (name: string): boolean => SET_RETURNING.has(name);

function tooLarge(n: number): SqlError {
  return new SqlError(SqlState.PROGRAM_LIMIT, `requested length ${n} is too large (at most ${FUNCTION_RESULT_BYTES_MAX})`);
}

const int = (v: SqlValue): number => Number(coerce(v, 'int8'));
const text = (v: SqlValue): string => textOf(v);

/** Longest dbms_random.string built in the reused buffer (longer ones take a buffer of their own). */
const SCRATCH_BYTES_MAX = 4 * 1024 * 1024;
let scratchBuf: Buffer | undefined;

/**
 * A buffer of `bytes` to build a string in before it is copied into a JavaScript string: reused up to
 * SCRATCH_BYTES_MAX, since a fresh MiB is 256 page faults, which cost this machine's virtual CPUs more
 * than generating the characters (2.4 ms of 3.2 ms per MiB, measured).
 */
function scratch(bytes: number): Buffer {
  if (bytes > SCRATCH_BYTES_MAX) return Buffer.allocUnsafe(bytes);
  if (!scratchBuf || scratchBuf.length < bytes) scratchBuf = Buffer.allocUnsafe(Math.max(bytes, 64 * 1024));
  return scratchBuf.subarray(0, bytes);
}

/** orafce's dbms_random.string(opt, len): u/U upper, l/L lower, a/A mixed, x/X upper+digits, p/P any printable. */
export function dbmsRandomString(opt: string, len: number): string {
  if (len < 0) return '';
  if (len > FUNCTION_RESULT_BYTES_MAX) throw tooLarge(len);
  const upper = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  const lowerc = 'abcdefghijklmnopqrstuvwxyz';
  const digits = '0123456789';
  let alphabet: string;
  switch (opt.toLowerCase()) {
    case 'u': alphabet = upper; break;
    case 'l': alphabet = lowerc; break;
    case 'a': alphabet = upper + lowerc; break;
    case 'x': alphabet = upper + digits; break;
    case 'p': alphabet = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join(''); break;
    default: alphabet = upper;
  }
  // Four characters per step of two xorshift32 generators seeded by the CSPRNG (test data needs no
  // cryptographic randomness), each 32-bit output giving two 16-bit draws scaled to the alphabet (bias
  // below 1/600), stored as one 32-bit word: the blog's 100 MiB were ~5 % of the SQL node's main
  // thread with a store per character.
  const n = alphabet.length;
  const codes = Uint8Array.from(alphabet, (c) => c.charCodeAt(0));
  const out = scratch((len + 3) & ~3);
  const words = new Uint32Array(out.buffer, out.byteOffset, out.length >>> 2);
  const seed = crypto.randomBytes(8);
  let a = seed.readInt32LE(0) | 1;
  let b = seed.readInt32LE(4) | 1;
  for (let i = 0; i < words.length; i++) {
    a ^= a << 13; a ^= a >>> 17; a ^= a << 5;
    b ^= b << 17; b ^= b >>> 13; b ^= b << 5;
    words[i] = (codes[((a & 0xffff) * n) >>> 16]! | (codes[((a >>> 16) * n) >>> 16]! << 8) | (codes[((b & 0xffff) * n) >>> 16]! << 16) | (codes[((b >>> 16) * n) >>> 16]! << 24)) >>> 0;
  }
  return out.toString('latin1', 0, len);
}

function needExtension(ctx: EvalContext, ext: string, fname: string): void {
  if (!ctx.session.extensions.has(ext)) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${fname} does not exist`, { hint: `CREATE EXTENSION ${ext} provides it` });
}

type Fn = (a: SqlValue[], ctx: EvalContext) => SqlValue;

const FUNCTIONS: Record<string, Fn> = {
  length: (a) => (a[0] instanceof Uint8Array ? a[0].length : charLength(text(a[0]!))),
  char_length: (a) => charLength(text(a[0]!)),
  octet_length: (a) => (a[0] instanceof Uint8Array ? a[0].length : Buffer.byteLength(text(a[0]!))),
  upper: (a) => text(a[0]!).toUpperCase(),
  lower: (a) => text(a[0]!).toLowerCase(),
  substr: (a) => substr(text(a[0]!), int(a[1]!), a[2] === undefined ? undefined : int(a[2])),
  substring: (a) => substr(text(a[0]!), int(a[1]!), a[2] === undefined ? undefined : int(a[2])),
  md5: (a) => crypto.createHash('md5').update(a[0] instanceof Uint8Array ? a[0] : text(a[0]!)).digest('hex'),
  repeat: (a) => {
    const s = text(a[0]!);
    const n = Math.max(0, int(a[1]!));
    if (s.length * n > FUNCTION_RESULT_BYTES_MAX) throw tooLarge(s.length * n);
    return s.repeat(n);
  },
  concat: (a) => a.map((v) => (v === null ? '' : text(v))).join(''),
  // trim(s) / btrim(s, chars), ltrim, rtrim: PostgreSQL trims spaces only by default, else the given characters.
  trim: (a) => trimChars(text(a[0]!), a[1] === undefined ? ' ' : text(a[1]!), true, true),
  btrim: (a) => trimChars(text(a[0]!), a[1] === undefined ? ' ' : text(a[1]!), true, true),
  ltrim: (a) => trimChars(text(a[0]!), a[1] === undefined ? ' ' : text(a[1]!), true, false),
  rtrim: (a) => trimChars(text(a[0]!), a[1] === undefined ? ' ' : text(a[1]!), false, true),
  // position(sub IN s) arrives as position(s, sub).
  position: (a) => text(a[0]!).indexOf(text(a[1]!)) + 1,
  reverse: (a) => [...text(a[0]!)].reverse().join(''),
  lpad: (a) => pad(text(a[0]!), int(a[1]!), a[2] === undefined ? ' ' : text(a[2]!), true),
  rpad: (a) => pad(text(a[0]!), int(a[1]!), a[2] === undefined ? ' ' : text(a[2]!), false),
  // LIKE … ESCAPE e arrives as like_escape(pattern, e): the pattern rewritten with backslash as its escape.
  like_escape: (a) => likeEscape(text(a[0]!), text(a[1]!)),
  concat_ws: (a) => (a[0] === null ? null : a.slice(1).filter((v) => v !== null).map((v) => text(v!)).join(text(a[0]!))),
  replace: (a) => text(a[0]!).split(text(a[1]!)).join(text(a[2]!)),
  strpos: (a) => text(a[0]!).indexOf(text(a[1]!)) + 1,
  left: (a) => text(a[0]!).slice(0, int(a[1]!)),
  right: (a) => text(a[0]!).slice(-int(a[1]!)),
  abs: (a) => (typeof a[0] === 'bigint' ? (a[0] < 0n ? -a[0] : a[0]) : Math.abs(Number(a[0]))),
  round: (a) => {
    const d = a[1] === undefined ? 0 : int(a[1]);
    if ((typeof a[0] === 'string' || (typeof a[0] === 'bigint' && a[1] !== undefined)) && d >= 0) { const r = roundDecimal(String(a[0]), d); if (r !== undefined) return r; }
    const f = 10 ** d;
    const x = Number(a[0]) * f;
    // float8: rint (halves to even), as PostgreSQL's round(double precision); numeric: halves away from zero.
    const r = typeof a[0] === 'number' ? (Math.abs(x % 1) === 0.5 ? 2 * Math.round(x / 2) : Math.round(x)) : Math.sign(x) * Math.round(Math.abs(x));
    const v = r / f;
    return typeof a[0] === 'bigint' ? BigInt(v) : d > 0 ? v.toFixed(d) : v;
  },
  floor: (a) => (typeof a[0] === 'bigint' ? a[0] : Math.floor(Number(a[0]))),
  ceil: (a) => (typeof a[0] === 'bigint' ? a[0] : Math.ceil(Number(a[0]))),
  ceiling: (a) => (typeof a[0] === 'bigint' ? a[0] : Math.ceil(Number(a[0]))),
  trunc: (a) => {
    if (a[1] !== undefined || typeof a[0] === 'string') { const x = parseDecimal(String(a[0])); if (x) return formatDecimal(truncTo(x, a[1] === undefined ? 0 : int(a[1]))); }
    return typeof a[0] === 'bigint' ? a[0] : Math.trunc(Number(a[0]));
  },
  sign: (a) => (typeof a[0] === 'bigint' ? BigInt(Math.sign(Number(a[0]))) : typeof a[0] === 'string' ? String(Math.sign(Number(a[0]))) : Math.sign(Number(a[0]))),
  exp: (a) => Math.exp(Number(a[0])),
  ln: (a) => logOf(Number(a[0]), Math.log),
  log: (a) => (a.length === 2 ? logOf(Number(a[1]), Math.log) / logOf(Number(a[0]), Math.log) : logOf(Number(a[0]), Math.log10)),
  log10: (a) => logOf(Number(a[0]), Math.log10),
  cbrt: (a) => Math.cbrt(Number(a[0])),
  degrees: (a) => (Number(a[0]) * 180) / Math.PI,
  radians: (a) => (Number(a[0]) * Math.PI) / 180,
  split_part: (a) => {
    const n = int(a[2]!);
    if (n === 0) throw new SqlError(SqlState.INVALID_PARAMETER, 'field position must not be zero');
    const parts = text(a[1]!) === '' ? [text(a[0]!)] : text(a[0]!).split(text(a[1]!));
    return (n > 0 ? parts[n - 1] : parts[parts.length + n]) ?? '';
  },
  initcap: (a) => text(a[0]!).toLowerCase().replace(/(^|[^\p{L}\p{N}])(\p{L})/gu, (_m, p: string, c: string) => p + c.toUpperCase()),
  translate: (a) => {
    const from = [...text(a[1]!)];
    const to = [...text(a[2]!)];
    return [...text(a[0]!)].map((c) => { const i = from.indexOf(c); return i < 0 ? c : (to[i] ?? ''); }).join('');
  },
  chr: (a) => {
    const n = int(a[0]!);
    if (n <= 0 || n > 0x10ffff) throw new SqlError(SqlState.PROGRAM_LIMIT, n === 0 ? 'null character not permitted' : 'requested character too large for encoding: ' + n);
    return String.fromCodePoint(n);
  },
  ascii: (a) => text(a[0]!).codePointAt(0) ?? 0,
  starts_with: (a) => text(a[0]!).startsWith(text(a[1]!)),
  // A negative value in two's complement: 32 bits when it fits an integer, else 64 (to_hex(-1) is ffffffff).
  to_hex: (a) => { const v = coerce(a[0]!, 'int8') as bigint; return (v < 0n ? v + (v >= -(1n << 31n) ? 1n << 32n : 1n << 64n) : v).toString(16); },
  sha224: (a) => digest('sha224', a[0]!),
  sha256: (a) => digest('sha256', a[0]!),
  sha384: (a) => digest('sha384', a[0]!),
  sha512: (a) => digest('sha512', a[0]!),
  regexp_replace: (a) => {
    const flags = a[3] === undefined ? '' : text(a[3]);
    let re: RegExp;
    try { re = new RegExp(text(a[1]!), (flags.includes('g') ? 'g' : '') + (flags.includes('i') ? 'i' : '')); } catch { throw new SqlError(SqlState.INVALID_REGULAR_EXPRESSION, `invalid regular expression: ${text(a[1]!)}`); }
    // PostgreSQL's \1 back-references in the replacement are JavaScript's $1.
    return text(a[0]!).replace(re, text(a[2]!).replace(/\$/g, '$$$$').replace(/\\(\d)/g, '$$$1').replace(/\\&/g, '$$&'));
  },
  mod: (a) => (typeof a[0] === 'bigint' && typeof a[1] === 'bigint' ? a[0] % a[1] : Number(a[0]) % Number(a[1])),
  sqrt: (a) => { if (Number(a[0]) < 0) throw new SqlError(SqlState.INVALID_POWER_ARGUMENT, 'cannot take square root of a negative number'); return Math.sqrt(Number(a[0])); },
  power: (a) => Number(a[0]) ** Number(a[1]),
  pi: () => Math.PI,
  random: () => Math.random(),
  now: (_a, ctx) => formatTimestamp('timestamptz', ctx.session.now),
  transaction_timestamp: (_a, ctx) => formatTimestamp('timestamptz', ctx.session.now),
  statement_timestamp: (_a, ctx) => formatTimestamp('timestamptz', ctx.session.now),
  clock_timestamp: () => formatTimestamp('timestamptz', new Date()),
  gen_random_uuid: () => crypto.randomUUID(),
  version: () => 'PostgreSQL 15.2-tessera on x86_64-pc-linux-gnu, compiled by tessera (a YugabyteDB-style lab), 64-bit',
  current_database: (_a, ctx) => ctx.session.database,
  current_schema: () => 'public',
  current_user: (_a, ctx) => ctx.session.user,
  session_user: (_a, ctx) => ctx.session.user,
  pg_backend_pid: (_a, ctx) => BigInt(ctx.session.pid),
  current_setting: (a, ctx) => {
    const v = ctx.session.settings.get(text(a[0]!).toLowerCase());
    if (v === undefined) throw new SqlError(SqlState.UNDEFINED_OBJECT, `unrecognized configuration parameter "${text(a[0]!)}"`);
    return v;
  },
  nextval: (a, ctx) => ctx.nextval(text(a[0]!)),
  encode: (a) => Buffer.from(a[0] instanceof Uint8Array ? a[0] : Buffer.from(text(a[0]!))).toString(text(a[1]!) === 'base64' ? 'base64' : 'hex'),
  decode: (a) => Uint8Array.from(Buffer.from(text(a[0]!), text(a[1]!) === 'base64' ? 'base64' : 'hex')),
  'dbms_random.string': (a, ctx) => {
    needExtension(ctx, 'orafce', 'dbms_random.string');
    return dbmsRandomString(text(a[0]!), int(a[1]!));
  },
  'dbms_random.value': (a, ctx) => {
    needExtension(ctx, 'orafce', 'dbms_random.value');
    const lo = a.length >= 2 ? Number(a[0]) : 0;
    const hi = a.length >= 2 ? Number(a[1]) : 1;
    return lo + Math.random() * (hi - lo);
  },
  gen_random_bytes: (a, ctx) => {
    needExtension(ctx, 'pgcrypto', 'gen_random_bytes');
    return Uint8Array.from(crypto.randomBytes(int(a[0]!)));
  },
};

function digest(alg: string, v: SqlValue): Uint8Array {
  return Uint8Array.from(crypto.createHash(alg).update(v instanceof Uint8Array ? v : Buffer.from(text(v))).digest());
}

/** ln/log of a non-positive number: PostgreSQL's 2201E. */
function logOf(x: number, f: (x: number) => number): number {
  if (x === 0) throw new SqlError(SqlState.INVALID_LOG_ARGUMENT, 'cannot take logarithm of zero');
  if (x < 0) throw new SqlError(SqlState.INVALID_LOG_ARGUMENT, 'cannot take logarithm of a negative number');
  return f(x);
}

/** Characters (code points), not UTF-16 units; the common case without surrogate pairs is just .length. */
export function charLength(s: string): number {
  return /[\uD800-\uDFFF]/.test(s) ? [...s].length : s.length;
}

function substr(s: string, start: number, len?: number): string {
  const chars = [...s];
  const from = Math.max(start, 1) - 1;
  const end = len === undefined ? chars.length : Math.max(start + len - 1, 0);
  if (len !== undefined && len < 0) throw new SqlError(SqlState.INVALID_PARAMETER, 'negative substring length not allowed');
  return chars.slice(from, end).join('');
}

/** Functions registered by other files (the pg_catalog functions, which need the catalog). */
const EXTRA = new Map<string, Fn>();
function likeEscape(pattern: string, esc: string): string {
  if ([...esc].length > 1) throw new SqlError(SqlState.INVALID_ESCAPE_SEQUENCE, 'invalid escape string', { hint: 'Escape string must be empty or one character.' });
  let out = '';
  const cs = [...pattern];
  for (let i = 0; i < cs.length; i++) {
    const c = cs[i]!;
    if (esc !== '' && c === esc) {
      // The escaped character, taken literally; a trailing escape is PostgreSQL's 22025.
      if (i + 1 >= cs.length) throw new SqlError(SqlState.INVALID_ESCAPE_SEQUENCE, 'LIKE pattern must not end with escape character');
      out += `\\${cs[++i]!}`;
    } else out += c === '\\' ? '\\\\' : c;
  }
  return out;
}

function trimChars(s: string, chars: string, left: boolean, right: boolean): string {
  const set = new Set(chars);
  const cs = [...s];
  let i = 0;
  let j = cs.length;
  while (left && i < j && set.has(cs[i]!)) i++;
  while (right && j > i && set.has(cs[j - 1]!)) j--;
  return cs.slice(i, j).join('');
}

/** lpad/rpad: to `len` characters, filled with `fill` repeated, or cut to `len` (PostgreSQL's rules). */
function pad(s: string, len: number, fill: string, left: boolean): string {
  const cs = [...s];
  if (len <= 0) return '';
  if (len > FUNCTION_RESULT_BYTES_MAX) throw tooLarge(len);
  if (cs.length >= len || fill === '') return cs.slice(0, len).join('');
  const f = [...fill];
  const extra = Array.from({ length: len - cs.length }, (_, i) => f[i % f.length]).join('');
  return left ? extra + s : s + extra;
}

/** round(numeric, d) on the decimal text, exactly: halves away from zero; undefined if `s` is not plain decimal. */
export function roundDecimal(s: string, d: number): string | undefined {
  const x = parseDecimal(s);
  return x ? formatDecimal(roundTo(x, d)) : undefined;
}

export function registerFunction(name: string, fn: Fn): void {
  EXTRA.set(name, fn);
}

/** Strict functions return null on a null argument, as PostgreSQL's do (concat and a few others are not strict). */
const NOT_STRICT = new Set(['concat', 'concat_ws', 'now', 'random', 'version', 'current_database', 'current_schema', 'current_user', 'session_user', 'pg_backend_pid', 'gen_random_uuid', 'pi', 'clock_timestamp', 'transaction_timestamp', 'statement_timestamp', 'dbms_random.value', 'pg_get_expr', 'format_type', 'format', 'quote_nullable', 'lastval', 'string_to_array', 'array_position', 'array_append', 'array_prepend', 'array_cat', 'array_remove']);

export function callFunction(name: string, args: SqlValue[], ctx: EvalContext): SqlValue {
  const f = FUNCTIONS[name] ?? EXTRA.get(name);
  if (!f) throw new SqlError(SqlState.UNDEFINED_FUNCTION, `function ${name}() does not exist`);
  if (!NOT_STRICT.has(name) && args.some((a) => a === null)) return null;
  return f(args, ctx);
}

export function functionExists(name: string): boolean {
  return name in FUNCTIONS || EXTRA.has(name) || AGGREGATES.has(name);
}
