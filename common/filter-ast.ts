/**
 * The filter AST: what a client sends in a scan (as JSON) and what the tablet compiles into
 * evaluators (compile.ts). It speaks the user's terms — column names and literal values — so the
 * same tree means the same thing on every replica whatever the column ids; compile() resolves names
 * against the tablet's schema. Modelled on HBase's filters (docs/filters.md lists each one).
 *
 * Any client can send any JSON, so parseFilterJson checks every field and bounds the tree's size:
 * a bad tree is INVALID_ARGUMENT naming the path of the bad part, never a crash.
 */
import { DbError, ErrorCode } from './errors';

/** A literal in a filter: JSON scalars, an int64 as {int: "decimal"}, bytes as {bytes: "hex"}. */
export type FilterLiteral = string | number | boolean | { int: string } | { bytes: string };

export const COMPARE_OPS = ['=', '!=', '<', '<=', '>', '>='] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];

/**
 * HBase's comparators: `binary` compares typed values (the literal converted to the column's type),
 * `binaryprefix` and `substring` (case-insensitive, as HBase's SubstringComparator) and `regex` work
 * on the value's text form; the last three support only = and !=.
 */
export type Comparator =
  | { type: 'binary'; value: FilterLiteral }
  | { type: 'binaryprefix'; value: string }
  | { type: 'substring'; value: string }
  | { type: 'regex'; pattern: string };

export interface RowRange {
  /** Leading key value to start at (absent: the table's start). */
  start?: FilterLiteral;
  startInclusive: boolean;
  stop?: FilterLiteral;
  stopInclusive: boolean;
}

export type FilterAst =
  /** Rows whose leading key column starts with `prefix` (strings, bytes) or equals it (other types). */
  | { type: 'prefix'; prefix: FilterLiteral }
  | ({ type: 'rowRange' } & RowRange)
  | { type: 'multiRowRange'; ranges: RowRange[] }
  /** Rows whose leading (string) key column matches a pattern where '?' is any one byte. */
  | { type: 'fuzzyRow'; patterns: string[] }
  | { type: 'columnPrefix'; prefixes: string[] }
  | { type: 'columnRange'; min?: string; minInclusive: boolean; max?: string; maxInclusive: boolean }
  | { type: 'qualifier'; op: CompareOp; comparator: Comparator }
  | { type: 'value'; op: CompareOp; comparator: Comparator }
  | { type: 'singleColumnValue'; family?: string; column: string; op: CompareOp; comparator: Comparator; filterIfMissing: boolean }
  | { type: 'keyOnly' }
  | { type: 'firstKeyOnly' }
  | { type: 'page'; rows: number }
  | { type: 'columnPagination'; limit: number; offset: number }
  /** Cells written at these times (hybrid time's physical part, microseconds since the epoch, decimal). */
  | { type: 'timestamps'; timestamps: string[] }
  | { type: 'list'; op: 'AND' | 'OR'; filters: FilterAst[] }
  /** Drop a whole row when the inner filter rejects any of its cells (HBase SkipFilter). */
  | { type: 'skip'; filter: FilterAst }
  /** End the scan at the first row the inner filter rejects (HBase WhileMatchFilter). */
  | { type: 'while'; filter: FilterAst };

/** Nodes of one filter tree at most, and list depth (bounds the work a client can ask for). */
export const FILTER_NODES_MAX = 256;
export const FILTER_DEPTH_MAX = 16;
/** Characters of one string in a filter at most (regex patterns included). */
export const FILTER_STRING_CHARS_MAX = 1024;
/** Elements of one list field (patterns, ranges, timestamps, prefixes) at most. */
export const FILTER_LIST_MAX = 1024;

export function filterInvalid(path: string, why: string): DbError {
  return new DbError(ErrorCode.INVALID_ARGUMENT, `bad filter at ${path}: ${why}`, { filterPath: path });
}

type Obj = Record<string, unknown>;

class Checker {
  nodes = 0;
  constructor() {}

  node(v: unknown, path: string, depth: number): FilterAst {
    if (++this.nodes > FILTER_NODES_MAX) throw filterInvalid(path, `more than ${FILTER_NODES_MAX} filters`);
    if (depth > FILTER_DEPTH_MAX) throw filterInvalid(path, `nested deeper than ${FILTER_DEPTH_MAX}`);
    const o = obj(v, path);
    const t = o['type'];
    switch (t) {
      case 'prefix':
        return { type: t, prefix: literal(o['prefix'], `${path}.prefix`) };
      case 'rowRange':
        return { type: t, ...range(o, path) };
      case 'multiRowRange':
        return { type: t, ranges: list(o['ranges'], `${path}.ranges`).map((r, i) => range(obj(r, `${path}.ranges[${i}]`), `${path}.ranges[${i}]`)) };
      case 'fuzzyRow':
        return { type: t, patterns: list(o['patterns'], `${path}.patterns`).map((p, i) => str(p, `${path}.patterns[${i}]`, true)) };
      case 'columnPrefix':
        return { type: t, prefixes: list(o['prefixes'], `${path}.prefixes`).map((p, i) => str(p, `${path}.prefixes[${i}]`)) };
      case 'columnRange':
        return {
          type: t,
          ...(o['min'] !== undefined ? { min: str(o['min'], `${path}.min`) } : {}),
          minInclusive: bool(o['minInclusive'], `${path}.minInclusive`),
          ...(o['max'] !== undefined ? { max: str(o['max'], `${path}.max`) } : {}),
          maxInclusive: bool(o['maxInclusive'], `${path}.maxInclusive`),
        };
      case 'qualifier':
      case 'value':
        return { type: t, op: op(o['op'], `${path}.op`), comparator: comparator(o['comparator'], `${path}.comparator`, o['op'] as CompareOp) };
      case 'singleColumnValue':
        return {
          type: t,
          ...(o['family'] !== undefined ? { family: str(o['family'], `${path}.family`) } : {}),
          column: str(o['column'], `${path}.column`, true),
          op: op(o['op'], `${path}.op`),
          comparator: comparator(o['comparator'], `${path}.comparator`, o['op'] as CompareOp),
          filterIfMissing: bool(o['filterIfMissing'], `${path}.filterIfMissing`),
        };
      case 'keyOnly':
      case 'firstKeyOnly':
        return { type: t };
      case 'page':
        return { type: t, rows: count(o['rows'], `${path}.rows`) };
      case 'columnPagination':
        return { type: t, limit: count(o['limit'], `${path}.limit`), offset: count(o['offset'], `${path}.offset`) };
      case 'timestamps':
        return { type: t, timestamps: list(o['timestamps'], `${path}.timestamps`).map((x, i) => micros(x, `${path}.timestamps[${i}]`)) };
      case 'list': {
        const lop = o['op'];
        if (lop !== 'AND' && lop !== 'OR') throw filterInvalid(`${path}.op`, 'must be AND or OR');
        const fs = list(o['filters'], `${path}.filters`);
        if (fs.length === 0) throw filterInvalid(`${path}.filters`, 'a filter list needs at least one filter');
        return { type: t, op: lop, filters: fs.map((f, i) => this.node(f, `${path}.filters[${i}]`, depth + 1)) };
      }
      case 'skip':
      case 'while':
        return { type: t, filter: this.node(o['filter'], `${path}.filter`, depth + 1) };
      default:
        throw filterInvalid(`${path}.type`, `unknown filter type ${JSON.stringify(t)?.slice(0, 40)}`);
    }
  }
}

function obj(v: unknown, path: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw filterInvalid(path, 'must be an object');
  return v as Obj;
}

function list(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) throw filterInvalid(path, 'must be a list');
  if (v.length > FILTER_LIST_MAX) throw filterInvalid(path, `more than ${FILTER_LIST_MAX} elements`);
  return v;
}

function str(v: unknown, path: string, nonEmpty = false): string {
  if (typeof v !== 'string') throw filterInvalid(path, 'must be a string');
  if (v.length > FILTER_STRING_CHARS_MAX) throw filterInvalid(path, `longer than ${FILTER_STRING_CHARS_MAX} characters`);
  if (nonEmpty && v.length === 0) throw filterInvalid(path, 'must not be empty');
  return v;
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw filterInvalid(path, 'must be true or false');
  return v;
}

function count(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw filterInvalid(path, 'must be an integer >= 0');
  return v;
}

function micros(v: unknown, path: string): string {
  if (typeof v !== 'string' || !/^[0-9]{1,20}$/.test(v)) throw filterInvalid(path, 'must be a decimal string of microseconds');
  return v;
}

function op(v: unknown, path: string): CompareOp {
  if (typeof v !== 'string' || !(COMPARE_OPS as readonly string[]).includes(v)) throw filterInvalid(path, `must be one of ${COMPARE_OPS.join(' ')}`);
  return v as CompareOp;
}

export function literal(v: unknown, path: string): FilterLiteral {
  if (typeof v === 'string') return str(v, path);
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw filterInvalid(path, 'must be a finite number');
    return v;
  }
  const o = obj(v, path);
  if (typeof o['int'] === 'string' && Object.keys(o).length === 1) {
    if (!/^-?[0-9]{1,19}$/.test(o['int'])) throw filterInvalid(path, 'int must be a decimal int64');
    const n = BigInt(o['int']);
    if (n < -(1n << 63n) || n >= 1n << 63n) throw filterInvalid(path, 'int out of the int64 range');
    return { int: o['int'] };
  }
  if (typeof o['bytes'] === 'string' && Object.keys(o).length === 1) {
    const h = str(o['bytes'], path);
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(h)) throw filterInvalid(path, 'bytes must be hex');
    return { bytes: h.toLowerCase() };
  }
  throw filterInvalid(path, 'must be a string, number, boolean, {int} or {bytes}');
}

/**
 * The tablet runs regular expressions on its one event loop, and JavaScript's engine backtracks: a
 * pattern like (a+)+$ takes exponential time on a long non-matching value and would stall every
 * tablet of the server. Refuse the usual culprits — a quantified group that itself holds a
 * quantifier (star height above one) and backreferences. A heuristic, not a proof: docs/filters.md.
 */
export function backtrackingRisk(pattern: string): string | undefined {
  if (/\\[1-9]|\\k</.test(pattern)) return 'backreferences are not allowed in filter patterns';
  const quantifiedInside: boolean[] = [false];
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\') {
      i++;
      continue;
    }
    if (ch === '[') {
      // A character class: skip to its end (escapes inside included).
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
      continue;
    }
    if (ch === '(') quantifiedInside.push(false);
    else if (ch === ')') {
      const inner = quantifiedInside.pop() ?? false;
      const next = pattern[i + 1];
      const quantified = next === '*' || next === '+' || next === '?' || next === '{';
      if (inner && quantified && next !== '?') return 'a repeated group that itself repeats (such as (a+)+) can take exponential time: not allowed in filter patterns';
      if (inner || quantified) quantifiedInside[quantifiedInside.length - 1] = true;
    } else if (ch === '*' || ch === '+' || ch === '{') quantifiedInside[quantifiedInside.length - 1] = true;
  }
  return undefined;
}

function range(o: Obj, path: string): RowRange {
  return {
    ...(o['start'] !== undefined ? { start: literal(o['start'], `${path}.start`) } : {}),
    startInclusive: bool(o['startInclusive'], `${path}.startInclusive`),
    ...(o['stop'] !== undefined ? { stop: literal(o['stop'], `${path}.stop`) } : {}),
    stopInclusive: bool(o['stopInclusive'], `${path}.stopInclusive`),
  };
}

function comparator(v: unknown, path: string, cmpOp: CompareOp): Comparator {
  const o = obj(v, path);
  const t = o['type'];
  let c: Comparator;
  if (t === 'binary') c = { type: t, value: literal(o['value'], `${path}.value`) };
  else if (t === 'binaryprefix' || t === 'substring') c = { type: t, value: str(o['value'], `${path}.value`) };
  else if (t === 'regex') {
    const pattern = str(o['pattern'], `${path}.pattern`);
    try {
      new RegExp(pattern, 'u');
    } catch (e) {
      throw filterInvalid(`${path}.pattern`, `not a regular expression: ${(e as Error).message}`);
    }
    const risky = backtrackingRisk(pattern);
    if (risky) throw filterInvalid(`${path}.pattern`, risky);
    c = { type: t, pattern };
  } else throw filterInvalid(`${path}.type`, 'must be binary, binaryprefix, substring or regex');
  if (c.type !== 'binary' && cmpOp !== '=' && cmpOp !== '!=') throw filterInvalid(path, `a ${c.type} comparator supports only = and !=`);
  return c;
}

/** Check an untrusted JSON value (a parsed scan request field) and return it as a filter tree. */
export function parseFilterJson(v: unknown): FilterAst {
  return new Checker().node(v, 'filter', 0);
}

/** Parse the filter JSON text of a scan request: INVALID_ARGUMENT for bad JSON or a bad tree. */
export function parseFilterText(text: string): FilterAst {
  if (text.length > FILTER_NODES_MAX * FILTER_STRING_CHARS_MAX) throw filterInvalid('filter', 'too long');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw filterInvalid('filter', `not JSON: ${(e as Error).message}`);
  }
  return parseFilterJson(v);
}

/**
 * Rows the whole scan may return at most under this filter: HBase's PageFilter limits each region
 * (here each tablet and each page call), so the client also stops after that many rows.
 */
export function filterRowLimit(f: FilterAst): number {
  if (f.type === 'page') return f.rows;
  if (f.type === 'list' && f.op === 'AND') return Math.min(...f.filters.map(filterRowLimit));
  return Infinity;
}
