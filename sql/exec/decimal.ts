/**
 * Exact numeric arithmetic on PostgreSQL's decimal text (docs/sql.md "Types"): a numeric value is kept
 * as its text; here it is an unscaled BigInt and a scale (digits after the point), so 0.1 + 0.2 is
 * 0.3 and sums of money do not drift as they would through a double. Result scales follow
 * PostgreSQL's numeric rules: + and - the larger scale, * the sum of scales, / at least 16
 * significant digits (select_div_scale), results rounded half away from zero.
 */
import { SqlError, SqlState } from './sql-error';

export interface Decimal {
  /** The value times 10^scale. */
  unscaled: bigint;
  scale: number;
}

/** Scales past this are refused as PostgreSQL's NUMERIC_MAX_DISPLAY_SCALE. */
const SCALE_MAX = 1000;
/** Significant digits a division keeps at least (NUMERIC_MIN_SIG_DIGITS). */
const MIN_SIG_DIGITS = 16;

/** Plain decimal text ('-12.50', '.5', '3', '1e3'), or undefined (NaN, Infinity, junk). */
export function parseDecimal(s: string): Decimal | undefined {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/.exec(s);
  if (!m || (m[2] === '' && !m[3])) return undefined;
  const frac = m[3] ?? '';
  let unscaled = BigInt((m[2] || '0') + frac);
  let scale = frac.length;
  const exp = m[4] === undefined ? 0 : Number(m[4]);
  if (Math.abs(exp) > SCALE_MAX) return undefined;
  if (exp > 0) {
    const shift = Math.min(exp, scale);
    scale -= shift;
    unscaled *= 10n ** BigInt(exp - shift);
  } else scale -= exp;
  return { unscaled: m[1] === '-' ? -unscaled : unscaled, scale };
}

export function formatDecimal(d: Decimal): string {
  const neg = d.unscaled < 0n;
  const digits = (neg ? -d.unscaled : d.unscaled).toString().padStart(d.scale + 1, '0');
  const text = d.scale === 0 ? digits : `${digits.slice(0, -d.scale)}.${digits.slice(-d.scale)}`;
  return neg ? `-${text}` : text;
}

function rescale(d: Decimal, scale: number): bigint {
  return d.unscaled * 10n ** BigInt(scale - d.scale);
}

/** a / b rounded half away from zero. */
function divRound(a: bigint, b: bigint): bigint {
  const neg = a < 0n !== b < 0n;
  const x = a < 0n ? -a : a;
  const y = b < 0n ? -b : b;
  let q = x / y;
  if ((x % y) * 2n >= y) q++;
  return neg ? -q : q;
}

/** `d` at `scale` digits after the point, rounded half away from zero (round(), casts to integers). */
export function roundTo(d: Decimal, scale: number): Decimal {
  if (scale >= d.scale) return { unscaled: rescale(d, scale), scale };
  return { unscaled: divRound(d.unscaled, 10n ** BigInt(d.scale - scale)), scale };
}

/** d cut (toward zero) to `scale` fractional digits; a negative scale cuts whole digits (trunc(1234, -2) = 1200). */
export function truncTo(d: Decimal, scale: number): Decimal {
  if (scale >= d.scale) return { unscaled: rescale(d, Math.max(scale, 0)), scale: Math.max(scale, 0) };
  const cut = d.unscaled / 10n ** BigInt(d.scale - scale);
  return scale >= 0 ? { unscaled: cut, scale } : { unscaled: cut * 10n ** BigInt(-scale), scale: 0 };
}

/** Weight and leading digit of |d| in base 10,000 (PostgreSQL's numeric digits). */
function base10k(d: Decimal): { weight: number; first: bigint } {
  if (d.unscaled === 0n) return { weight: 0, first: 0n };
  const s4 = Math.ceil(d.scale / 4) * 4;
  let u = (d.unscaled < 0n ? -d.unscaled : d.unscaled) * 10n ** BigInt(s4 - d.scale);
  let n = 0;
  while (u >= 10_000n) { u /= 10_000n; n++; }
  return { weight: n - s4 / 4, first: u };
}

export function decimalOp(op: string, a: Decimal, b: Decimal): Decimal {
  switch (op) {
    case '+': case '-': {
      const scale = Math.max(a.scale, b.scale);
      const x = rescale(a, scale);
      const y = rescale(b, scale);
      return { unscaled: op === '+' ? x + y : x - y, scale };
    }
    case '*':
      return { unscaled: a.unscaled * b.unscaled, scale: a.scale + b.scale };
    case '/': {
      if (b.unscaled === 0n) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero');
      const wa = base10k(a);
      const wb = base10k(b);
      let qweight = wa.weight - wb.weight;
      if (wa.first <= wb.first) qweight--;
      const scale = Math.min(SCALE_MAX, Math.max(0, MIN_SIG_DIGITS - qweight * 4, a.scale, b.scale));
      // a/b = (ua/10^sa) / (ub/10^sb); times 10^scale: ua * 10^(scale + sb - sa) / ub.
      const shift = scale + b.scale - a.scale;
      const num = shift >= 0 ? a.unscaled * 10n ** BigInt(shift) : a.unscaled;
      const den = shift >= 0 ? b.unscaled : b.unscaled * 10n ** BigInt(-shift);
      return { unscaled: divRound(num, den), scale };
    }
    case '%': {
      if (b.unscaled === 0n) throw new SqlError(SqlState.DIVISION_BY_ZERO, 'division by zero');
      const scale = Math.max(a.scale, b.scale);
      return { unscaled: rescale(a, scale) % rescale(b, scale), scale };
    }
    default:
      throw new SqlError(SqlState.UNDEFINED_FUNCTION, `operator does not exist: numeric ${op} numeric`);
  }
}

/** An exact sum of numeric values (sum() and avg() of numeric): the largest scale seen. */
export class DecimalSum {
  private sum: Decimal = { unscaled: 0n, scale: 0 };

  add(d: Decimal): void {
    this.sum = decimalOp('+', this.sum, d);
  }

  total(): Decimal {
    return this.sum;
  }
}
