/**
 * SQL types: how each is stored in a tessera column type, its PostgreSQL type OID, and text
 * input/output. Values in the executor are JS values: integers bigint, floating point number,
 * numeric / text / dates / uuid / jsonb string (their canonical text), boolean, bytea Uint8Array.
 */
import type { ColumnType } from '../../client';
import { SqlError, SqlState } from './sql-error';
import { formatDecimal, parseDecimal, roundTo } from './decimal';
import { intervalText } from './interval';

export type SqlValue = null | bigint | number | string | boolean | Uint8Array;

export type SqlTypeName =
  | 'int2' | 'int4' | 'int8' | 'float4' | 'float8' | 'numeric' | 'text' | 'varchar' | 'bpchar' | 'bool' | 'bytea'
  | 'timestamp' | 'timestamptz' | 'date' | 'interval' | 'uuid' | 'jsonb' | 'json' | 'name' | 'oid' | 'char' | 'regclass' | 'regtype' | 'regproc' | 'regnamespace' | 'unknown';

interface TypeInfo {
  oid: number;
  size: number;
  storage: ColumnType;
  /** The SQL spelling format_type() gives. */
  display: string;
}

export const TYPES: Record<SqlTypeName, TypeInfo> = {
  int2: { oid: 21, size: 2, storage: 'int64', display: 'smallint' },
  int4: { oid: 23, size: 4, storage: 'int64', display: 'integer' },
  int8: { oid: 20, size: 8, storage: 'int64', display: 'bigint' },
  float4: { oid: 700, size: 4, storage: 'double', display: 'real' },
  float8: { oid: 701, size: 8, storage: 'double', display: 'double precision' },
  numeric: { oid: 1700, size: -1, storage: 'string', display: 'numeric' },
  text: { oid: 25, size: -1, storage: 'string', display: 'text' },
  varchar: { oid: 1043, size: -1, storage: 'string', display: 'character varying' },
  bpchar: { oid: 1042, size: -1, storage: 'string', display: 'character' },
  bool: { oid: 16, size: 1, storage: 'bool', display: 'boolean' },
  bytea: { oid: 17, size: -1, storage: 'bytes', display: 'bytea' },
  timestamp: { oid: 1114, size: 8, storage: 'string', display: 'timestamp without time zone' },
  timestamptz: { oid: 1184, size: 8, storage: 'string', display: 'timestamp with time zone' },
  date: { oid: 1082, size: 4, storage: 'string', display: 'date' },
  interval: { oid: 1186, size: 16, storage: 'string', display: 'interval' },
  uuid: { oid: 2950, size: 16, storage: 'string', display: 'uuid' },
  jsonb: { oid: 3802, size: -1, storage: 'string', display: 'jsonb' },
  json: { oid: 114, size: -1, storage: 'string', display: 'json' },
  name: { oid: 19, size: 64, storage: 'string', display: 'name' },
  oid: { oid: 26, size: 4, storage: 'int64', display: 'oid' },
  char: { oid: 18, size: 1, storage: 'string', display: '"char"' },
  regclass: { oid: 2205, size: 4, storage: 'int64', display: 'regclass' },
  regtype: { oid: 2206, size: 4, storage: 'int64', display: 'regtype' },
  regproc: { oid: 24, size: 4, storage: 'int64', display: 'regproc' },
  regnamespace: { oid: 4089, size: 4, storage: 'int64', display: 'regnamespace' },
  unknown: { oid: 25, size: -1, storage: 'string', display: 'text' },
};

const BY_OID = new Map<number, SqlTypeName>(Object.entries(TYPES).filter(([n]) => n !== 'unknown').map(([n, t]) => [t.oid, n as SqlTypeName]));
export const typeByOid = (oid: number): SqlTypeName | undefined => BY_OID.get(oid);

/** A SQL type name as written (pg_catalog.int8, bigint, character varying, serial...) to its type. */
export function sqlTypeFromName(name: string): { type: SqlTypeName; serial?: boolean } | undefined {
  switch (name.toLowerCase()) {
    case 'int2': case 'smallint': return { type: 'int2' };
    case 'int4': case 'int': case 'integer': return { type: 'int4' };
    case 'int8': case 'bigint': return { type: 'int8' };
    case 'serial': case 'serial4': return { type: 'int4', serial: true };
    case 'bigserial': case 'serial8': return { type: 'int8', serial: true };
    case 'smallserial': case 'serial2': return { type: 'int2', serial: true };
    case 'float4': case 'real': return { type: 'float4' };
    case 'float8': case 'double precision': case 'float': return { type: 'float8' };
    case 'numeric': case 'decimal': return { type: 'numeric' };
    case 'text': return { type: 'text' };
    case 'varchar': case 'character varying': return { type: 'varchar' };
    case 'bpchar': case 'char': case 'character': return { type: 'bpchar' };
    case 'bool': case 'boolean': return { type: 'bool' };
    case 'bytea': return { type: 'bytea' };
    case 'timestamp': return { type: 'timestamp' };
    case 'timestamptz': return { type: 'timestamptz' };
    case 'date': return { type: 'date' };
    case 'interval': return { type: 'interval' };
    case 'uuid': return { type: 'uuid' };
    case 'jsonb': return { type: 'jsonb' };
    case 'json': return { type: 'json' };
    case 'name': return { type: 'name' };
    case 'oid': return { type: 'oid' };
    case 'regclass': return { type: 'regclass' };
    case 'regtype': return { type: 'regtype' };
    case 'regproc': return { type: 'regproc' };
    case 'regnamespace': return { type: 'regnamespace' };
    default: return undefined;
  }
}

export const isIntegerType = (t: SqlTypeName): boolean => t === 'int2' || t === 'int4' || t === 'int8' || t === 'oid' || t === 'regclass' || t === 'regtype' || t === 'regproc' || t === 'regnamespace';
export const isFloatType = (t: SqlTypeName): boolean => t === 'float4' || t === 'float8';
export const isNumericType = (t: SqlTypeName): boolean => isIntegerType(t) || isFloatType(t) || t === 'numeric';

const INT_RANGE: Partial<Record<SqlTypeName, [bigint, bigint]>> = {
  int2: [-32768n, 32767n],
  int4: [-2147483648n, 2147483647n],
  int8: [-(1n << 63n), (1n << 63n) - 1n],
};

function invalidText(type: SqlTypeName, s: string): SqlError {
  return new SqlError(SqlState.INVALID_TEXT, `invalid input syntax for type ${TYPES[type].display}: "${s}"`);
}

export function checkIntRange(type: SqlTypeName, v: bigint): bigint {
  const r = INT_RANGE[type];
  if (r && (v < r[0] || v > r[1])) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, `value ${v} is out of range for type ${TYPES[type].display}`);
  return v;
}

function parseBytea(s: string): Uint8Array {
  if (s.startsWith('\\x')) {
    if (!/^[0-9a-fA-F]*$/.test(s.slice(2)) || s.length % 2 !== 0) throw invalidText('bytea', s);
    return Uint8Array.from(Buffer.from(s.slice(2), 'hex'));
  }
  return Uint8Array.from(Buffer.from(s, 'latin1'));
}

/**
 * A numeric value (its text) as an integer type: PostgreSQL rounds numeric halves away from zero
 * (2.5 → 3, -2.5 → -3), unlike text input, which takes digits only.
 */
export function numericToInt(v: SqlValue, type: SqlTypeName): SqlValue {
  if (typeof v !== 'string') return coerce(v, type);
  const d = parseDecimal(v);
  if (d) return checkIntRange(type, roundTo(d, 0).unscaled);
  if (v.trim().toLowerCase() === 'nan') throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `cannot convert NaN to ${TYPES[type].display}`);
  return coerce(Number(v), type);
}

/** A value of any type converted to `type` (text input for strings): casts and assignments. */
export function coerce(v: SqlValue, type: SqlTypeName): SqlValue {
  if (v === null) return null;
  switch (type) {
    case 'int2': case 'int4': case 'int8': case 'oid': case 'regclass': case 'regtype': case 'regproc': case 'regnamespace': {
      if (typeof v === 'bigint') return checkIntRange(type, v);
      if (typeof v === 'number') {
        if (!Number.isFinite(v)) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, `${v} is out of range for type ${TYPES[type].display}`);
        // PostgreSQL's float-to-integer cast is rint(): halves go to the even neighbour (2.5 → 2, 3.5 → 4).
        const r = Math.round(v);
        return checkIntRange(type, BigInt(r - v === 0.5 && r % 2 !== 0 ? r - 1 : r));
      }
      if (typeof v === 'boolean') return v ? 1n : 0n;
      const s = String(v).trim();
      if (!/^[+-]?\d+$/.test(s)) throw invalidText(type, String(v));
      return checkIntRange(type, BigInt(s));
    }
    case 'float4': case 'float8': {
      if (typeof v === 'number') return v;
      if (typeof v === 'bigint') return Number(v);
      const s = String(v).trim().toLowerCase();
      if (s === 'nan') return NaN;
      if (s === 'infinity' || s === '+infinity' || s === 'inf' || s === '+inf') return Infinity;
      if (s === '-infinity' || s === '-inf') return -Infinity;
      const n = Number(s);
      if (s === '' || Number.isNaN(n)) throw invalidText(type, String(v));
      return n;
    }
    case 'numeric': {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'number') return numberText(v);
      const s = String(v).trim();
      if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s) && s.toLowerCase() !== 'nan') throw invalidText(type, s);
      return s;
    }
    case 'bool': {
      if (typeof v === 'boolean') return v;
      const s = String(v).trim().toLowerCase();
      if (['t', 'true', 'yes', 'y', 'on', '1'].includes(s)) return true;
      if (['f', 'false', 'no', 'n', 'off', '0'].includes(s)) return false;
      throw invalidText(type, String(v));
    }
    case 'bytea':
      if (v instanceof Uint8Array) return v;
      return parseBytea(String(v));
    case 'uuid': {
      const s = textOf(v).trim().toLowerCase();
      if (!/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/.test(s.replace(/[{}]/g, ''))) throw invalidText(type, s);
      const h = s.replace(/[{}-]/g, '');
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
    }
    case 'jsonb': case 'json': {
      const s = textOf(v);
      try {
        const parsed: unknown = JSON.parse(s);
        return type === 'jsonb' ? jsonbText(parsed) : s;
      } catch {
        throw new SqlError(SqlState.INVALID_TEXT, `invalid input syntax for type json: "${s}"`);
      }
    }
    case 'date': case 'timestamp': case 'timestamptz':
      return dateText(type, textOf(v));
    case 'interval':
      return intervalText(textOf(v));
    case 'bpchar': case 'text': case 'varchar': case 'name':
      return type === 'bpchar' ? boolText(v).replace(/ +$/, '') : boolText(v);
    default:
      return textOf(v);
  }
}

/**
 * jsonb's canonical text, as PostgreSQL prints it: object keys ordered by length, then bytewise (the
 * last of duplicate keys wins), `": "` and `", "` between parts. Equal documents get equal text, so
 * equality compares the text.
 */
export function jsonbText(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(jsonbText).join(', ')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((v as Record<string, unknown>)[k])}`).join(', ')}}`;
  }
  return JSON.stringify(v);
}

function numberText(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  return String(n);
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

/** Dates and timestamps are kept as PostgreSQL's ISO text (UTC), which also sorts correctly for years 1000-9999. */
function dateText(type: SqlTypeName, s: string): string {
  let t = s.trim();
  // new Date() rolls 2024-02-30 over to March 1st; PostgreSQL refuses a day the month does not have.
  const ymd = /^(\d{4})-(\d{2})-(\d{2})/.exec(t);
  if (ymd) {
    const [y, m, d] = [Number(ymd[1]), Number(ymd[2]), Number(ymd[3])];
    if (m < 1 || m > 12 || d < 1 || d > new Date(Date.UTC(y, m, 0)).getUTCDate()) throw new SqlError(SqlState.DATETIME_FIELD_OVERFLOW, `date/time field value out of range: "${s}"`);
  }
  if (/^\d{4}-\d{2}-\d{2}$/.test(t)) t += 'T00:00:00Z';
  else {
    t = t.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00').replace(/([+-]\d\d)(\d\d)$/, '$1:$2');
    if (!/[zZ]$|[+-]\d\d:\d\d$/.test(t)) t += 'Z';
  }
  const d = new Date(t);
  // Bad date/time text is PostgreSQL's 22007 (invalid_datetime_format), not 22P02.
  if (Number.isNaN(d.getTime())) throw new SqlError(SqlState.INVALID_DATETIME, invalidText(type, s).message);
  return formatTimestamp(type, d, fractionalMicros(s));
}

function fractionalMicros(s: string): number {
  const m = /\.(\d+)/.exec(s);
  return m ? Number((m[1]! + '000000').slice(0, 6)) : 0;
}

export function formatTimestamp(type: SqlTypeName, d: Date, micros = d.getUTCMilliseconds() * 1000): string {
  const date = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  if (type === 'date') return date;
  let frac = micros > 0 ? '.' + pad(micros, 6).replace(/0+$/, '') : '';
  if (frac === '.') frac = '';
  const t = `${date} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac}`;
  return type === 'timestamptz' ? t + '+00' : t;
}

/**
 * A numeric value for a numeric(precision, scale) column or cast: rounded to the scale (halves away
 * from zero), and 22003 if its integer digits do not fit precision - scale (PostgreSQL's rule).
 */
export function fitNumeric(v: string, precision: number, scale: number): string {
  const d = parseDecimal(v);
  if (!d) return v;
  const r = roundTo(d, scale);
  const digits = (r.unscaled < 0n ? -r.unscaled : r.unscaled).toString().length - scale;
  if (r.unscaled !== 0n && digits > precision - scale) {
    throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, 'numeric field overflow', { detail: `A field with precision ${precision}, scale ${scale} must round to an absolute value less than ${precision - scale === 0 ? '1' : `10^${precision - scale}`}.` });
  }
  return formatDecimal(r);
}

/** A value as text in an expression: a boolean cast to text is 'true' / 'false' in PostgreSQL (its output on the wire is t / f). */
export function boolText(v: SqlValue): string {
  return typeof v === 'boolean' ? String(v) : textOf(v);
}

/** Canonical text of any value (PostgreSQL's output functions). */
export function textOf(v: SqlValue): string {
  if (v === null) return '';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') return numberText(v);
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return '\\x' + Buffer.from(v).toString('hex');
  return v;
}

/** The value's wire text in the result of a column of `type` (bool as t/f, floats as PostgreSQL prints them). */
export function outputText(v: SqlValue, type: SqlTypeName): string | null {
  if (v === null) return null;
  if (type === 'bool' && typeof v !== 'boolean') return textOf(coerce(v, 'bool'));
  return textOf(v);
}

/** The type a value has when nothing else says (constants). */
export function typeOfValue(v: SqlValue): SqlTypeName {
  if (typeof v === 'bigint') return 'int8';
  if (typeof v === 'number') return 'float8';
  if (typeof v === 'boolean') return 'bool';
  if (v instanceof Uint8Array) return 'bytea';
  return v === null ? 'unknown' : 'text';
}

/** How the column type stores a SQL value (int64 bigint, double number, ...). */
export function toStorage(v: SqlValue, type: SqlTypeName): SqlValue {
  const c = coerce(v, type);
  if (c === null) return null;
  const st = TYPES[type].storage;
  if (st === 'string' && typeof c !== 'string') return textOf(c);
  return c;
}
