/**
 * to_char (docs/sql.md, "Dates, times and intervals"): PostgreSQL's template patterns for
 * timestamps (YYYY, MM, DD, HH24, MI, SS, MS, US, Month, Mon, Day, Dy, AM, Q, WW, IW, DDD, D, ID, J,
 * TZ, the FM prefix, "quoted text") and for numbers (9, 0, '.', ',', D, G, S, MI, FM).
 */
import { dayOfYear, fieldsOf, isoWeek, tsMicros } from './datetime';
import { notSupported } from './sql-error';
import { coerce, textOf, type SqlTypeName, type SqlValue } from './sql-types';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Patterns, longest first (so HH24 is not read as HH then 24). */
const PATTERNS = ['HH24', 'HH12', 'HH', 'MI', 'SS', 'MS', 'US', 'YYYY', 'IYYY', 'YYY', 'YY', 'Y', 'MONTH', 'Month', 'month', 'MON', 'Mon', 'mon', 'MM', 'DAY', 'Day', 'day', 'DY', 'Dy', 'dy', 'DDD', 'DD', 'ID', 'D', 'A.M.', 'P.M.', 'a.m.', 'p.m.', 'AM', 'PM', 'am', 'pm', 'Q', 'WW', 'IW', 'CC', 'J', 'TZ', 'tz', 'OF'];

function caseLike(word: string, pattern: string): string {
  if (pattern === pattern.toUpperCase()) return word.toUpperCase();
  if (pattern === pattern.toLowerCase()) return word.toLowerCase();
  return word;
}

/** One pattern's text for the timestamp's fields; `fm` drops the padding. */
function field(p: string, us: bigint, fm: boolean): string {
  const f = fieldsOf(us);
  const num = (n: number, w: number): string => (fm ? String(n) : String(n).padStart(w, '0'));
  const word = (w: string, width: number): string => (fm ? w : w.padEnd(width, ' '));
  const h12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
  switch (p) {
    case 'HH24': return num(f.hour, 2);
    case 'HH12': case 'HH': return num(h12, 2);
    case 'MI': return num(f.minute, 2);
    case 'SS': return num(f.second, 2);
    case 'MS': return num(Math.floor(f.micros / 1000), 3);
    case 'US': return num(f.micros, 6);
    case 'YYYY': return num(f.year, 4);
    case 'IYYY': return num(isoWeek(f).year, 4);
    case 'YYY': return num(f.year % 1000, 3);
    case 'YY': return num(f.year % 100, 2);
    case 'Y': return String(f.year % 10);
    case 'MM': return num(f.month, 2);
    case 'DD': return num(f.day, 2);
    case 'DDD': return num(dayOfYear(f), 3);
    case 'D': return String(f.dow + 1);
    case 'ID': return String(f.dow === 0 ? 7 : f.dow);
    case 'Q': return String(Math.floor((f.month - 1) / 3) + 1);
    case 'WW': return num(Math.floor((dayOfYear(f) - 1) / 7) + 1, 2);
    case 'IW': return num(isoWeek(f).week, 2);
    case 'CC': return num(Math.floor((f.year + 99) / 100), 2);
    case 'J': return String(Number(us / 86_400_000_000n) + 2440588);
    case 'TZ': return 'UTC';
    case 'tz': return 'utc';
    case 'OF': return '+00';
    default: break;
  }
  const up = p.toUpperCase();
  if (up === 'MONTH') return caseLike(word(MONTHS[f.month - 1]!, 9), p);
  if (up === 'MON') return caseLike(MONTHS[f.month - 1]!.slice(0, 3), p);
  if (up === 'DAY') return caseLike(word(DAYS[f.dow]!, 9), p);
  if (up === 'DY') return caseLike(DAYS[f.dow]!.slice(0, 3), p);
  if (up === 'AM' || up === 'PM') return caseLike(f.hour < 12 ? 'AM' : 'PM', p);
  return caseLike(f.hour < 12 ? 'A.M.' : 'P.M.', p);
}

function timestampToChar(us: bigint, fmt: string): string {
  let out = '';
  let fm = false;
  for (let i = 0; i < fmt.length;) {
    if (fmt.startsWith('FM', i)) { fm = true; i += 2; continue; }
    if (fmt[i] === '"') {
      const end = fmt.indexOf('"', i + 1);
      out += fmt.slice(i + 1, end < 0 ? undefined : end);
      i = end < 0 ? fmt.length : end + 1;
      continue;
    }
    const p = PATTERNS.find((x) => fmt.startsWith(x, i));
    if (p) { out += field(p, us, fm); i += p.length; fm = false; continue; }
    if (fmt[i] === '\\' && i + 1 < fmt.length) { out += fmt[i + 1]; i += 2; continue; }
    out += fmt[i];
    i++;
  }
  return out;
}

/** to_char(number, '9,999.99'): digit positions 9 (blank when leading) and 0, '.'/D, ','/G, S/MI, FM. */
function numberToChar(x: number, fmt: string): string {
  const fm = /^FM/i.test(fmt);
  const body = fmt.replace(/^FM/i, '');
  if (!/^([90.,DG]|S|MI)*$/i.test(body)) throw notSupported(`to_char number pattern "${fmt}"`);
  const explicitSign = /S|MI/i.test(body);
  const digits = body.replace(/S|MI/gi, '').replace(/D/gi, '.').replace(/G/gi, ',');
  const dot = digits.indexOf('.');
  const ip = dot < 0 ? digits : digits.slice(0, dot);
  const fp = dot < 0 ? '' : digits.slice(dot + 1).replace(/[^90]/g, '');
  const [whole = '0', frac = ''] = Math.abs(x).toFixed(fp.length).split('.');
  const sig = whole === '0' ? '' : whole;
  // More digits than positions: PostgreSQL fills the field with '#'.
  if (sig.length > ip.replace(/,/g, '').length) return ' ' + digits.replace(/[90]/g, '#');
  const firstZero = ip.indexOf('0');
  let out = '';
  let k = sig.length - 1;
  for (let j = ip.length - 1; j >= 0; j--) {
    const forced = firstZero >= 0 && j >= firstZero;
    if (ip[j] === ',') out = (k >= 0 || forced ? ',' : ' ') + out;
    else out = (k >= 0 ? sig[k--]! : forced ? '0' : ' ') + out;
  }
  const lead = /^ */.exec(out)![0].length;
  let res = out.slice(0, lead) + (x < 0 ? '-' : explicitSign ? '+' : ' ') + out.slice(lead);
  if (dot >= 0) {
    let f = frac;
    // FM drops the fraction's trailing zeros where the pattern has 9 (0 positions keep theirs).
    if (fm) for (let j = f.length - 1; j >= 0 && fp[j] === '9' && f[j] === '0'; j--) f = f.slice(0, j);
    res += '.' + f;
  }
  return fm ? res.trimStart() : res;
}

/** to_char(value, format) for a timestamp, date, interval-free number. */
export function toChar(v: SqlValue, type: SqlTypeName, fmt: string): string {
  if (type === 'date' || type === 'timestamp' || type === 'timestamptz') return timestampToChar(tsMicros(textOf(v)), fmt);
  if (type === 'interval') throw notSupported('to_char of an interval');
  return numberToChar(Number(coerce(v, 'float8')), fmt);
}
