/**
 * Dates and times in expressions (docs/sql.md, "Dates, times and intervals"): arithmetic between
 * date, timestamp[tz], interval and integers, extract / date_part, date_trunc, age, make_date,
 * make_timestamp, to_timestamp(epoch), with PostgreSQL's result types. Timestamps are UTC (the
 * session's TimeZone is UTC), held as microseconds since 1970 while computed.
 */
import { addIntervals, formatInterval, intervalSpan, MICROS_PER_DAY, negate, parseInterval, scaleInterval, type Interval } from './interval';
import type { Compiled } from './scope';
import { notSupported, SqlError, SqlState } from './sql-error';
import { coerce, formatTimestamp, isIntegerType, isNumericType, textOf, type SqlTypeName, type SqlValue } from './sql-types';

const floorDiv = (a: bigint, b: bigint): bigint => (a >= 0n ? a / b : -((-a + b - 1n) / b));
const mod = (a: bigint, b: bigint): bigint => a - floorDiv(a, b) * b;

export const isDateTimeType = (t: SqlTypeName): boolean => t === 'date' || t === 'timestamp' || t === 'timestamptz';

/** Microseconds since 1970-01-01 UTC of a date or timestamp's canonical text. */
export function tsMicros(text: string): bigint {
  const m = /^(\d{4,})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?/.exec(text);
  if (!m) throw new SqlError(SqlState.INVALID_DATETIME, `invalid input syntax for type timestamp: "${text}"`);
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0));
  return BigInt(ms) * 1000n + BigInt((m[7] ?? '').padEnd(6, '0') || '0');
}

/** The canonical text of a date or timestamp `us` microseconds after 1970. */
export function fromMicros(us: bigint, type: SqlTypeName): string {
  return formatTimestamp(type, new Date(Number(floorDiv(us, 1000n))), Number(mod(us, 1_000_000n)));
}

/** Broken-down UTC fields of a timestamp. */
interface Fields { year: number; month: number; day: number; hour: number; minute: number; second: number; micros: number; dow: number }
function fieldsOf(us: bigint): Fields {
  const d = new Date(Number(floorDiv(us, 1000n)));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(), hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds(), micros: Number(mod(us, 1_000_000n)), dow: d.getUTCDay() };
}
const daysInMonth = (y: number, m: number): number => new Date(Date.UTC(y, m, 0)).getUTCDate();
const toMicros = (f: Omit<Fields, 'dow'>): bigint => BigInt(Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second)) * 1000n + BigInt(f.micros);

/** timestamp + interval: months first (the day clamped to the month's last), then days, then time. */
export function addInterval(us: bigint, iv: Interval): bigint {
  let t = us;
  if (iv.months !== 0) {
    const f = fieldsOf(t);
    const m0 = f.month - 1 + iv.months;
    const year = f.year + Math.floor(m0 / 12);
    const month = (((m0 % 12) + 12) % 12) + 1;
    t = toMicros({ ...f, year, month, day: Math.min(f.day, daysInMonth(year, month)) });
  }
  return t + BigInt(iv.days) * MICROS_PER_DAY + iv.micros;
}

type Eval = Compiled['eval'];
const binary = (type: SqlTypeName, l: Eval, r: Eval, f: (a: SqlValue, b: SqlValue) => SqlValue): Compiled => ({
  type, name: '?column?', eval: (row, ctx) => { const a = l(row, ctx); const b = r(row, ctx); return a === null || b === null ? null : f(a, b); },
});
const iv = (v: SqlValue): Interval => parseInterval(textOf(v));
const days = (v: SqlValue): bigint => BigInt(Number(coerce(v, 'int8')));

/** A date, timestamp or interval operator, or undefined when neither side is one (operators.ts's arith). */
export function datetimeArith(op: string, l: Compiled, r: Compiled): Compiled | undefined {
  const lt = l.type === 'unknown' && isDateTimeType(r.type) && op === '-' ? r.type : l.type === 'unknown' && r.type === 'interval' ? 'interval' : l.type;
  const rt = r.type === 'unknown' ? (isDateTimeType(lt) && op === '-' ? lt : isDateTimeType(lt) || lt === 'interval' ? 'interval' : 'unknown') : r.type;
  if (!isDateTimeType(lt) && !isDateTimeType(rt) && lt !== 'interval' && rt !== 'interval') return undefined;
  const le: Eval = (row, ctx) => coerce(l.eval(row, ctx), lt);
  const re: Eval = (row, ctx) => coerce(r.eval(row, ctx), rt);
  const shifted = (t: SqlTypeName): SqlTypeName => (t === 'date' ? 'timestamp' : t);
  if (isDateTimeType(lt) && rt === 'interval' && (op === '+' || op === '-')) {
    return binary(shifted(lt), le, re, (a, b) => fromMicros(addInterval(tsMicros(textOf(a)), op === '-' ? negate(iv(b)) : iv(b)), shifted(lt)));
  }
  if (lt === 'interval' && isDateTimeType(rt) && op === '+') return binary(shifted(rt), le, re, (a, b) => fromMicros(addInterval(tsMicros(textOf(b)), iv(a)), shifted(rt)));
  if (lt === 'date' && isIntegerType(rt) && (op === '+' || op === '-')) return binary('date', le, re, (a, b) => fromMicros(tsMicros(textOf(a)) + (op === '-' ? -days(b) : days(b)) * MICROS_PER_DAY, 'date'));
  if (isIntegerType(lt) && rt === 'date' && op === '+') return binary('date', le, re, (a, b) => fromMicros(tsMicros(textOf(b)) + days(a) * MICROS_PER_DAY, 'date'));
  if (lt === 'date' && rt === 'date' && op === '-') return binary('int4', le, re, (a, b) => (tsMicros(textOf(a)) - tsMicros(textOf(b))) / MICROS_PER_DAY);
  if (isDateTimeType(lt) && isDateTimeType(rt) && op === '-') {
    const t: SqlTypeName = lt === 'timestamptz' || rt === 'timestamptz' ? 'timestamptz' : 'timestamp';
    return binary('interval', (row, ctx) => coerce(le(row, ctx), t), (row, ctx) => coerce(re(row, ctx), t), (a, b) => {
      const d = tsMicros(textOf(a)) - tsMicros(textOf(b));
      // PostgreSQL's timestamp - timestamp: whole days as days, the rest as time (justify_hours).
      const whole = d / MICROS_PER_DAY;
      return formatInterval({ months: 0, days: Number(whole), micros: d - whole * MICROS_PER_DAY });
    });
  }
  if (lt === 'interval' && rt === 'interval' && (op === '+' || op === '-')) return binary('interval', le, re, (a, b) => formatInterval(addIntervals(iv(a), op === '-' ? negate(iv(b)) : iv(b))));
  if (lt === 'interval' && isNumericType(rt) && (op === '*' || op === '/')) {
    return binary('interval', le, re, (a, b) => {
      const f = Number(b);
      if (op === '/' && f === 0) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero');
      return formatInterval(scaleInterval(iv(a), op === '/' ? 1 / f : f));
    });
  }
  if (isNumericType(lt) && rt === 'interval' && op === '*') return binary('interval', le, re, (a, b) => formatInterval(scaleInterval(iv(b), Number(a))));
  throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: ${lt} ${op} ${rt}`);
}

/** -interval. */
export function negateInterval(v: SqlValue): SqlValue {
  return v === null ? null : formatInterval(negate(iv(v)));
}

/** An interval's comparable size (for =, <, ORDER BY): PostgreSQL's 30-day months. */
export function intervalKey(v: SqlValue): SqlValue {
  return v === null ? null : intervalSpan(iv(v));
}

/** ISO 8601 week number and its year. */
function isoWeek(f: Fields): { week: number; year: number } {
  const date = Date.UTC(f.year, f.month - 1, f.day);
  const isoDow = f.dow === 0 ? 7 : f.dow;
  const thursday = new Date(date + (4 - isoDow) * 86_400_000);
  const y = thursday.getUTCFullYear();
  return { week: Math.floor((thursday.getTime() - Date.UTC(y, 0, 1)) / (7 * 86_400_000)) + 1, year: y };
}
const dayOfYear = (f: Fields): number => Math.round((Date.UTC(f.year, f.month - 1, f.day) - Date.UTC(f.year, 0, 1)) / 86_400_000) + 1;

/** A decimal text of `us` microseconds as seconds (or milliseconds) with PostgreSQL's fixed scale. */
function scaled(us: bigint, unit: bigint, scale: number): string {
  const neg = us < 0n;
  const a = neg ? -us : us;
  const whole = a / unit;
  const frac = ((a % unit) * 10n ** BigInt(scale)) / unit;
  return `${neg ? '-' : ''}${whole}.${frac.toString().padStart(scale, '0')}`;
}

const DATE_UNITS = new Set(['year', 'month', 'day', 'dow', 'doy', 'isodow', 'week', 'quarter', 'decade', 'century', 'millennium', 'isoyear', 'epoch', 'julian']);

/** extract(field FROM value): numeric text, as PostgreSQL 14+ gives it. */
export function extractField(field: string, v: SqlValue, type: SqlTypeName): string {
  const unit = field.toLowerCase().replace(/s$/, '').replace(/^(millisecon|msec)$/, 'millisecond').replace(/^(microsecon|usec)$/, 'microsecond');
  const u = unit === 'millisecond' || unit === 'microsecond' || unit === 'second' || unit === 'minute' || unit === 'hour' || unit === 'isodow' ? unit : field.toLowerCase();
  if (type === 'interval') return extractInterval(u, iv(v));
  if (type === 'date' && !DATE_UNITS.has(u)) throw new SqlError(SqlState.FEATURE_NOT_SUPPORTED, `unit "${field}" not supported for type date`);
  const us = tsMicros(textOf(coerce(v, isDateTimeType(type) ? type : 'timestamptz')));
  const f = fieldsOf(us);
  switch (u) {
    case 'year': return String(f.year);
    case 'month': return String(f.month);
    case 'day': return String(f.day);
    case 'hour': return String(f.hour);
    case 'minute': return String(f.minute);
    case 'second': return scaled(BigInt(f.second) * 1_000_000n + BigInt(f.micros), 1_000_000n, 6);
    case 'millisecond': return scaled(BigInt(f.second) * 1_000_000n + BigInt(f.micros), 1000n, 3);
    case 'microsecond': return String(f.second * 1_000_000 + f.micros);
    case 'dow': return String(f.dow);
    case 'isodow': return String(f.dow === 0 ? 7 : f.dow);
    case 'doy': return String(dayOfYear(f));
    case 'week': return String(isoWeek(f).week);
    case 'isoyear': return String(isoWeek(f).year);
    case 'quarter': return String(Math.floor((f.month - 1) / 3) + 1);
    case 'decade': return String(Math.floor(f.year / 10));
    case 'century': return String(Math.floor((f.year + 99) / 100));
    case 'millennium': return String(Math.floor((f.year + 999) / 1000));
    case 'epoch': return type === 'date' ? String(us / 1_000_000n) : scaled(us, 1_000_000n, 6);
    case 'julian': return String(Math.floor(Number(floorDiv(us, MICROS_PER_DAY))) + 2440588);
    case 'timezone': case 'timezone_hour': case 'timezone_minute': return '0';
    default: throw new SqlError(SqlState.INVALID_PARAMETER, `unit "${field}" not recognized for type ${type === 'date' ? 'date' : 'timestamp'}`);
  }
}

function extractInterval(u: string, x: Interval): string {
  switch (u) {
    case 'epoch': {
      const months = BigInt(x.months);
      const secs = (months / 12n) * 31_557_600n + (months % 12n) * 2_592_000n + BigInt(x.days) * 86_400n;
      return scaled(secs * 1_000_000n + x.micros, 1_000_000n, 6);
    }
    case 'year': return String(Math.trunc(x.months / 12));
    case 'month': return String(x.months % 12);
    case 'day': return String(x.days);
    case 'hour': return String(x.micros / 3_600_000_000n);
    case 'minute': return String((x.micros / 60_000_000n) % 60n);
    case 'second': return scaled(x.micros % 60_000_000n, 1_000_000n, 6);
    case 'millisecond': return scaled(x.micros % 60_000_000n, 1000n, 3);
    case 'microsecond': return String(x.micros % 60_000_000n);
    default: throw new SqlError(SqlState.INVALID_PARAMETER, `unit "${u}" not supported for type interval`);
  }
}

/** date_trunc(field, value): the value with every smaller field at its start. */
export function dateTrunc(field: string, v: SqlValue, type: SqlTypeName): string {
  const out: SqlTypeName = type === 'timestamp' ? 'timestamp' : 'timestamptz';
  if (type === 'interval') throw notSupported('date_trunc of an interval');
  const f = fieldsOf(tsMicros(textOf(coerce(v, out))));
  const u = field.toLowerCase();
  const start = { ...f, micros: 0 };
  const order = ['microseconds', 'milliseconds', 'second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year', 'decade', 'century', 'millennium'];
  const at = order.indexOf(u);
  if (at < 0) throw new SqlError(SqlState.INVALID_PARAMETER, `unit "${field}" not recognized for type ${out === 'timestamp' ? 'timestamp without time zone' : 'timestamp with time zone'}`);
  if (u === 'microseconds') return fromMicros(toMicros(f), out);
  if (u === 'milliseconds') return fromMicros(toMicros({ ...f, micros: f.micros - (f.micros % 1000) }), out);
  if (at >= 3) start.second = 0;
  if (at >= 4) start.minute = 0;
  if (at >= 5) start.hour = 0;
  if (u === 'week') return fromMicros(toMicros(start) - BigInt((f.dow + 6) % 7) * MICROS_PER_DAY, out);
  if (at >= 7) start.day = 1;
  if (u === 'quarter') start.month = Math.floor((f.month - 1) / 3) * 3 + 1;
  if (at >= 9) start.month = 1;
  if (u === 'decade') start.year = Math.floor(f.year / 10) * 10;
  if (u === 'century') start.year = Math.floor((f.year - 1) / 100) * 100 + 1;
  if (u === 'millennium') start.year = Math.floor((f.year - 1) / 1000) * 1000 + 1;
  return fromMicros(toMicros(start), out);
}

/** age(a, b): years, months and days between them, borrowing as PostgreSQL's timestamp_age does. */
export function age(a: SqlValue, b: SqlValue): string {
  const x = tsMicros(textOf(coerce(a, 'timestamp')));
  const y = tsMicros(textOf(coerce(b, 'timestamp')));
  const f1 = fieldsOf(x);
  const f2 = fieldsOf(y);
  const sign = x < y ? -1 : 1;
  const d = { us: sign * (f1.micros - f2.micros), sec: sign * (f1.second - f2.second), min: sign * (f1.minute - f2.minute), hour: sign * (f1.hour - f2.hour), day: sign * (f1.day - f2.day), mon: sign * (f1.month - f2.month), year: sign * (f1.year - f2.year) };
  while (d.us < 0) { d.us += 1_000_000; d.sec--; }
  while (d.sec < 0) { d.sec += 60; d.min--; }
  while (d.min < 0) { d.min += 60; d.hour--; }
  while (d.hour < 0) { d.hour += 24; d.day--; }
  while (d.day < 0) { const f = x < y ? f1 : f2; d.day += daysInMonth(f.year, f.month); d.mon--; }
  while (d.mon < 0) { d.mon += 12; d.year--; }
  const us = BigInt(((d.hour * 60 + d.min) * 60 + d.sec) * 1_000_000 + d.us);
  return formatInterval({ months: sign * (d.year * 12 + d.mon), days: sign * d.day, micros: BigInt(sign) * us });
}

/** make_date / make_timestamp: out-of-range fields are 22008, as in PostgreSQL. */
export function makeTimestamp(parts: number[], type: 'date' | 'timestamp'): string {
  const [year, month, day, hour = 0, minute = 0, second = 0] = parts;
  const bad = (): SqlError => new SqlError(SqlState.DATETIME_FIELD_OVERFLOW, `date field value out of range: ${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`);
  if (!Number.isInteger(year) || !Number.isInteger(month) || !Number.isInteger(day) || month! < 1 || month! > 12 || day! < 1 || day! > daysInMonth(year!, month!)) throw bad();
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second >= 60) throw new SqlError(SqlState.DATETIME_FIELD_OVERFLOW, `time field value out of range: ${hour}:${minute}:${second}`);
  const whole = Math.floor(second);
  return fromMicros(toMicros({ year: year!, month: month!, day: day!, hour, minute, second: whole, micros: Math.round((second - whole) * 1e6) }), type);
}

/** to_timestamp(seconds since 1970) as timestamptz. */
export function fromEpoch(seconds: number): string {
  if (!Number.isFinite(seconds)) throw new SqlError(SqlState.DATETIME_FIELD_OVERFLOW, 'timestamp out of range');
  return fromMicros(BigInt(Math.round(seconds * 1e6)), 'timestamptz');
}

export { fieldsOf, isoWeek, dayOfYear, type Fields };
