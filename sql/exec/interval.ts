/**
 * PostgreSQL's interval (docs/sql.md, "Dates, times and intervals"): months, days and microseconds
 * kept apart, as PostgreSQL keeps them (a month is not a fixed number of days), read from its
 * verbose input ('1 day 03:00:00', '2 hours 30 minutes', '1.5 days', '-1 mons') and printed in its
 * default `postgres` output style ('1 year 2 mons 3 days 04:05:06').
 */
import { SqlError, SqlState } from './sql-error';

export interface Interval {
  months: number;
  days: number;
  micros: bigint;
}

const US_PER_SEC = 1_000_000n;
const US_PER_DAY = 86_400n * US_PER_SEC;

/** Microseconds per unit below a day; days and months per unit above. */
const UNITS: Record<string, { micros?: bigint; days?: number; months?: number }> = {
  microsecond: { micros: 1n }, us: { micros: 1n }, usec: { micros: 1n },
  millisecond: { micros: 1000n }, ms: { micros: 1000n }, msec: { micros: 1000n },
  second: { micros: US_PER_SEC }, sec: { micros: US_PER_SEC }, s: { micros: US_PER_SEC },
  minute: { micros: 60n * US_PER_SEC }, min: { micros: 60n * US_PER_SEC }, m: { micros: 60n * US_PER_SEC },
  hour: { micros: 3600n * US_PER_SEC }, hr: { micros: 3600n * US_PER_SEC }, h: { micros: 3600n * US_PER_SEC },
  day: { days: 1 }, d: { days: 1 },
  week: { days: 7 }, w: { days: 7 },
  month: { months: 1 }, mon: { months: 1 },
  year: { months: 12 }, yr: { months: 12 }, y: { months: 12 },
  decade: { months: 120 }, century: { months: 1200 }, millennium: { months: 12000 },
};

function unitOf(word: string): (typeof UNITS)[string] | undefined {
  const w = word.toLowerCase();
  return UNITS[w] ?? UNITS[w.replace(/s$/, '')] ?? (w === 'centuries' ? UNITS.century : w === 'millennia' ? UNITS.millennium : undefined);
}

function bad(s: string): SqlError {
  return new SqlError(SqlState.INVALID_DATETIME, `invalid input syntax for type interval: "${s}"`);
}

/** `n unit` added to `iv`; a fraction spills into the smaller units as PostgreSQL does (1.5 days = 1 day 12:00:00). */
function addUnit(iv: Interval, n: number, u: (typeof UNITS)[string]): void {
  if (u.micros !== undefined) { iv.micros += BigInt(Math.round(n * Number(u.micros))); return; }
  if (u.days !== undefined) {
    const whole = Math.trunc(n * u.days);
    iv.days += whole;
    iv.micros += BigInt(Math.round((n * u.days - whole) * Number(US_PER_DAY)));
    return;
  }
  const m = n * u.months!;
  const whole = Math.trunc(m);
  iv.months += whole;
  const fracDays = (m - whole) * 30;
  iv.days += Math.trunc(fracDays);
  iv.micros += BigInt(Math.round((fracDays - Math.trunc(fracDays)) * Number(US_PER_DAY)));
}

/** Reads PostgreSQL's interval input (verbose units, `[-]hh:mm[:ss[.f]]`, and `@ … ago`). */
export function parseInterval(text: string): Interval {
  const iv: Interval = { months: 0, days: 0, micros: 0n };
  let s = text.trim().toLowerCase();
  let ago = false;
  if (s.startsWith('@')) s = s.slice(1).trim();
  if (/\bago$/.test(s)) { ago = true; s = s.replace(/\s*ago$/, ''); }
  if (s === '') throw bad(text);
  const tokens = s.split(/\s+|,/).filter((t) => t !== '');
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    const clock = /^([+-]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d+)?))?$/.exec(t);
    if (clock) {
      const us = BigInt(clock[2]!) * 3600n * US_PER_SEC + BigInt(clock[3]!) * 60n * US_PER_SEC + BigInt(Math.round(Number(clock[4] ?? '0') * 1e6));
      iv.micros += clock[1] === '-' ? -us : us;
      continue;
    }
    const num = /^([+-]?(?:\d+\.?\d*|\.\d+))([a-z]*)$/.exec(t);
    if (!num) throw bad(text);
    let unitWord = num[2]!;
    if (unitWord === '') unitWord = tokens[++i] ?? 'second';
    const u = unitOf(unitWord);
    if (!u) throw bad(text);
    addUnit(iv, Number(num[1]), u);
  }
  return ago ? negate(iv) : iv;
}

export function negate(iv: Interval): Interval {
  return { months: -iv.months, days: -iv.days, micros: -iv.micros };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** PostgreSQL's `postgres` output style. */
export function formatInterval(iv: Interval): string {
  const parts: string[] = [];
  const years = Math.trunc(iv.months / 12);
  const mons = iv.months % 12;
  if (years !== 0) parts.push(plural(years, 'year'));
  if (mons !== 0) parts.push(plural(mons, 'mon'));
  if (iv.days !== 0) parts.push(plural(iv.days, 'day'));
  if (iv.micros !== 0n || parts.length === 0) {
    const neg = iv.micros < 0n;
    let us = neg ? -iv.micros : iv.micros;
    const h = us / (3600n * US_PER_SEC);
    us -= h * 3600n * US_PER_SEC;
    const m = us / (60n * US_PER_SEC);
    us -= m * 60n * US_PER_SEC;
    const sec = us / US_PER_SEC;
    const frac = us % US_PER_SEC;
    const two = (x: bigint): string => x.toString().padStart(2, '0');
    const f = frac === 0n ? '' : `.${frac.toString().padStart(6, '0').replace(/0+$/, '')}`;
    parts.push(`${neg ? '-' : ''}${two(h)}:${two(m)}:${two(sec)}${f}`);
  }
  return parts.join(' ');
}

export const intervalText = (text: string): string => formatInterval(parseInterval(text));

/** Comparable size (PostgreSQL's: a month is 30 days, a day 24 hours). */
export function intervalSpan(iv: Interval): bigint {
  return (BigInt(iv.months) * 30n + BigInt(iv.days)) * US_PER_DAY + iv.micros;
}

export function addIntervals(a: Interval, b: Interval): Interval {
  return { months: a.months + b.months, days: a.days + b.days, micros: a.micros + b.micros };
}

/** interval * factor (and / by 1/factor): fractions of months spill into days, of days into time. */
export function scaleInterval(iv: Interval, f: number): Interval {
  if (!Number.isFinite(f)) throw new SqlError(SqlState.NUMERIC_OUT_OF_RANGE, 'interval out of range');
  const out: Interval = { months: 0, days: 0, micros: BigInt(Math.round(Number(iv.micros) * f)) };
  addUnit(out, iv.months * f, { months: 1 });
  addUnit(out, iv.days * f, { days: 1 });
  return out;
}

export const MICROS_PER_DAY = US_PER_DAY;
