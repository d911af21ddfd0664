/**
 * jsonb and json beyond storage and equality (docs/sql.md, "Types"): the operators `->` `->>` `#>`
 * `#>>` `?` `?|` `?&` `@>` `<@` `||` `-`, and the functions that build, inspect and take apart
 * documents. Values stay their canonical text (sql-types.ts's jsonbText); an operator parses it.
 */
import { parseArrayText } from './array-text';
import type { Compiled, EvalContext, Tuple } from './scope';
import { SqlError, SqlState } from './sql-error';
import { boolText, isFloatType, isIntegerType, jsonbText, textOf, type SqlTypeName, type SqlValue } from './sql-types';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isJsonType = (t: SqlTypeName): boolean => t === 'jsonb' || t === 'json';

function parse(v: SqlValue): Json {
  try {
    return JSON.parse(textOf(v)) as Json;
  } catch {
    throw new SqlError(SqlState.INVALID_TEXT, `invalid input syntax for type json: "${textOf(v)}"`);
  }
}

const isObject = (j: Json): j is { [k: string]: Json } => j !== null && typeof j === 'object' && !Array.isArray(j);

/** One step into a document: an object's key, or an array's index (negative from the end). */
function step(j: Json, k: SqlValue): Json | undefined {
  if (Array.isArray(j)) {
    const i = typeof k === 'bigint' ? Number(k) : /^-?\d+$/.test(textOf(k)) ? Number(textOf(k)) : Number.NaN;
    if (!Number.isInteger(i)) return undefined;
    return j[i < 0 ? j.length + i : i];
  }
  if (isObject(j) && typeof k !== 'bigint') return Object.prototype.hasOwnProperty.call(j, textOf(k)) ? j[textOf(k)] : undefined;
  return undefined;
}

/** PostgreSQL's @>: every key and element of b is in a (arrays: each element of b is contained by some element of a). */
function contains(a: Json, b: Json): boolean {
  if (Array.isArray(a)) {
    if (Array.isArray(b)) return b.every((x) => a.some((y) => contains(y, x)));
    return !isObject(b) && a.some((y) => !Array.isArray(y) && !isObject(y) && y === b);
  }
  if (isObject(a)) return isObject(b) && Object.keys(b).every((k) => Object.prototype.hasOwnProperty.call(a, k) && contains(a[k]!, b[k]!));
  return a === b;
}

/** `->>`, `#>>`: a string's own text, anything else its JSON text, null for JSON null. */
function asText(j: Json | undefined): SqlValue {
  if (j === undefined || j === null) return null;
  return typeof j === 'string' ? j : jsonbText(j);
}

const out = (j: Json | undefined): SqlValue => (j === undefined ? null : jsonbText(j));

/** A SQL value of type `t` as a JSON value (to_jsonb and the build functions). */
export function toJson(v: SqlValue, t: SqlTypeName): Json {
  if (v === null) return null;
  if (isJsonType(t)) return parse(v);
  if (typeof v === 'boolean') return v;
  if (isIntegerType(t) || isFloatType(t) || t === 'numeric') {
    const n = Number(v);
    return Number.isFinite(n) ? n : textOf(v);
  }
  return boolText(v);
}

function binary(type: SqlTypeName, l: Compiled, r: Compiled, f: (a: Json, b: SqlValue) => SqlValue): Compiled {
  return { type, name: '?column?', eval: (row: Tuple, ctx: EvalContext) => { const a = l.eval(row, ctx); const b = r.eval(row, ctx); return a === null || b === null ? null : f(parse(a), b); } };
}

function path(b: SqlValue): SqlValue[] {
  return parseArrayText(textOf(b));
}

/** The jsonb operators when the left side is json or jsonb; undefined for anything else. */
export function jsonOperator(op: string, l: Compiled, r: Compiled): Compiled | undefined {
  if (!isJsonType(l.type)) return undefined;
  const doc: SqlTypeName = l.type;
  switch (op) {
    case '->': return binary(doc, l, r, (a, b) => out(step(a, b)));
    case '->>': return binary('text', l, r, (a, b) => asText(step(a, b)));
    case '#>': return binary(doc, l, r, (a, b) => out(path(b).reduce<Json | undefined>((j, k) => (j === undefined || k === null ? undefined : step(j, k)), a)));
    case '#>>': return binary('text', l, r, (a, b) => asText(path(b).reduce<Json | undefined>((j, k) => (j === undefined || k === null ? undefined : step(j, k)), a)));
    case '?': return binary('bool', l, r, (a, b) => hasKey(a, textOf(b)));
    case '?|': return binary('bool', l, r, (a, b) => path(b).some((k) => k !== null && hasKey(a, textOf(k))));
    case '?&': return binary('bool', l, r, (a, b) => path(b).every((k) => k !== null && hasKey(a, textOf(k))));
    case '@>': return binary('bool', l, r, (a, b) => contains(a, parse(b)));
    case '<@': return binary('bool', l, r, (a, b) => contains(parse(b), a));
    case '||': return binary('jsonb', l, r, (a, b) => jsonbText(concat(a, isJsonType(r.type) || r.type === 'unknown' ? parse(b) : toJson(b, r.type))));
    case '-': return binary('jsonb', l, r, (a, b) => jsonbText(remove(a, b)));
    default: return undefined;
  }
}

/** `?`: a top-level key of an object, or a string element of an array. */
function hasKey(j: Json, k: string): boolean {
  if (Array.isArray(j)) return j.some((x) => x === k);
  return isObject(j) && Object.prototype.hasOwnProperty.call(j, k);
}

function concat(a: Json, b: Json): Json {
  if (isObject(a) && isObject(b)) return { ...a, ...b };
  const arr = (j: Json): Json[] => (Array.isArray(j) ? j : [j]);
  return [...arr(a), ...arr(b)];
}

function remove(a: Json, k: SqlValue): Json {
  if (Array.isArray(a)) {
    if (typeof k === 'bigint') { const i = Number(k) < 0 ? a.length + Number(k) : Number(k); return a.filter((_x, j) => j !== i); }
    return a.filter((x) => x !== textOf(k));
  }
  if (isObject(a)) {
    if (typeof k === 'bigint') throw new SqlError(SqlState.INVALID_PARAMETER, 'cannot delete from object using integer index');
    const { [textOf(k)]: _gone, ...rest } = a;
    return rest;
  }
  throw new SqlError(SqlState.INVALID_PARAMETER, 'cannot delete from scalar');
}

function typeOf(j: Json): string {
  return j === null ? 'null' : Array.isArray(j) ? 'array' : typeof j === 'object' ? 'object' : typeof j === 'number' ? 'number' : typeof j === 'boolean' ? 'boolean' : 'string';
}

function call(type: SqlTypeName, name: string, args: Compiled[], f: (v: SqlValue[]) => SqlValue, strict = true): Compiled {
  return { type, name, eval: (row, ctx) => { const v = args.map((a) => a.eval(row, ctx)); return strict && v.some((x) => x === null) ? null : f(v); } };
}

/** The json/jsonb functions that need their arguments' types; undefined for another name. */
export function jsonCall(fname: string, args: Compiled[]): Compiled | undefined {
  const doc: SqlTypeName = fname.startsWith('jsonb') || fname === 'to_jsonb' ? 'jsonb' : 'json';
  switch (fname) {
    case 'jsonb_typeof': case 'json_typeof': return call('text', fname, args, (v) => typeOf(parse(v[0]!)));
    case 'jsonb_array_length': case 'json_array_length':
      return call('int4', fname, args, (v) => {
        const j = parse(v[0]!);
        if (!Array.isArray(j)) throw new SqlError(SqlState.INVALID_PARAMETER, `cannot get array length of a ${typeOf(j) === 'object' ? 'non-array' : 'scalar'}`);
        return BigInt(j.length);
      });
    case 'to_jsonb': case 'to_json': return call(doc, fname, args, (v) => jsonbText(toJson(v[0]!, args[0]!.type)));
    case 'jsonb_build_array': case 'json_build_array': return call(doc, fname, args, (v) => jsonbText(v.map((x, i) => toJson(x, args[i]!.type))), false);
    case 'jsonb_build_object': case 'json_build_object':
      if (args.length % 2 !== 0) throw new SqlError(SqlState.INVALID_PARAMETER, 'argument list must have even number of elements', { hint: `The arguments of ${fname}() must consist of alternating keys and values.` });
      return call(doc, fname, args, (v) => {
        const o: { [k: string]: Json } = {};
        for (let i = 0; i < v.length; i += 2) {
          if (v[i] === null) throw new SqlError(SqlState.NULL_VALUE_NOT_ALLOWED, 'argument 1: key must not be null');
          o[textOf(v[i]!)] = toJson(v[i + 1]!, args[i + 1]!.type);
        }
        return jsonbText(o);
      }, false);
    case 'jsonb_extract_path': case 'json_extract_path': return call(doc, fname, args, (v) => out(v.slice(1).reduce<Json | undefined>((j, k) => (j === undefined ? undefined : step(j, textOf(k!))), parse(v[0]!))), false);
    case 'jsonb_extract_path_text': case 'json_extract_path_text': return call('text', fname, args, (v) => asText(v.slice(1).reduce<Json | undefined>((j, k) => (j === undefined ? undefined : step(j, textOf(k!))), parse(v[0]!))), false);
    case 'jsonb_strip_nulls': case 'json_strip_nulls': return call(doc, fname, args, (v) => jsonbText(stripNulls(parse(v[0]!))));
    case 'jsonb_pretty': return call('text', fname, args, (v) => JSON.stringify(parse(v[0]!), null, 4));
    default: return undefined;
  }
}

function stripNulls(j: Json): Json {
  if (Array.isArray(j)) return j.map(stripNulls);
  if (isObject(j)) return Object.fromEntries(Object.entries(j).filter(([, x]) => x !== null).map(([k, x]) => [k, stripNulls(x)]));
  return j;
}

/** jsonb_object_keys, jsonb_array_elements[_text]: a document's keys or elements (set-returning.ts). */
export function jsonRows(fname: string, v: SqlValue): SqlValue[] {
  if (v === null) return [];
  const j = parse(v);
  if (fname.endsWith('object_keys')) {
    if (!isObject(j)) throw new SqlError(SqlState.INVALID_PARAMETER, `cannot call ${fname} on a${Array.isArray(j) ? 'n array' : ' scalar'}`);
    return Object.keys(j).sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }
  if (!Array.isArray(j)) throw new SqlError(SqlState.INVALID_PARAMETER, `cannot extract elements from ${isObject(j) ? 'an object' : 'a scalar'}`);
  return fname.endsWith('_text') ? j.map(asText) : j.map((x) => jsonbText(x));
}
