/** Aggregate functions: one accumulator per group per aggregate call. */
import { compareValues } from './expr';
import { notSupported } from './sql-error';
import { coerce, isFloatType, isIntegerType, textOf, type SqlTypeName, type SqlValue } from './sql-types';

export interface Accumulator {
  add(v: SqlValue): void;
  result(): SqlValue;
}

export function aggregateType(fn: string, arg: SqlTypeName | undefined): SqlTypeName {
  switch (fn) {
    case 'count': return 'int8';
    case 'avg': return isFloatType(arg ?? 'numeric') ? 'float8' : 'numeric';
    case 'sum': return arg && isIntegerType(arg) ? (arg === 'int8' ? 'numeric' : 'int8') : arg && isFloatType(arg) ? 'float8' : 'numeric';
    case 'bool_and': case 'bool_or': return 'bool';
    case 'string_agg': return 'text';
    default: return arg ?? 'text';
  }
}

export function newAccumulator(fn: string, argType: SqlTypeName | undefined, star: boolean, distinct: boolean, separator?: string): Accumulator {
  const seen = distinct ? new Set<string>() : undefined;
  const fresh = (v: SqlValue): boolean => {
    if (!seen) return true;
    const k = textOf(v);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  };
  switch (fn) {
    case 'count': {
      let n = 0n;
      return { add: (v) => { if ((star || v !== null) && fresh(v)) n++; }, result: () => n };
    }
    case 'sum': case 'avg': {
      const intSum = argType !== undefined && isIntegerType(argType);
      let si = 0n;
      let sf = 0;
      let n = 0;
      const out = aggregateType(fn, argType);
      return {
        add: (v) => {
          if (v === null || !fresh(v)) return;
          n++;
          if (intSum) si += coerce(v, 'int8') as bigint;
          else sf += Number(coerce(v, 'float8'));
        },
        result: () => {
          if (n === 0) return null;
          if (fn === 'sum') return intSum ? (out === 'numeric' ? si.toString() : si) : out === 'numeric' ? coerce(sf, 'numeric') : sf;
          if (intSum) return intAverage(si, BigInt(n));
          const avg = sf / n;
          return out === 'float8' ? avg : formatNumeric(avg);
        },
      };
    }
    case 'min': case 'max': {
      let best: SqlValue = null;
      const want = fn === 'max' ? 1 : -1;
      return { add: (v) => { if (v !== null && (best === null || Math.sign(compareValues(v, best)) === want)) best = v; }, result: () => best };
    }
    case 'bool_and': case 'bool_or': {
      let acc: boolean | null = null;
      const and = fn === 'bool_and';
      return { add: (v) => { if (v === null) return; const b = coerce(v, 'bool') as boolean; acc = acc === null ? b : and ? acc && b : acc || b; }, result: () => acc };
    }
    case 'string_agg': {
      const parts: string[] = [];
      return { add: (v) => { if (v !== null && fresh(v)) parts.push(textOf(v)); }, result: () => (parts.length === 0 ? null : parts.join(separator ?? ',')) };
    }
    default:
      throw notSupported(`aggregate ${fn}`);
  }
}

/** numeric output of an average of non-integers: 16 fractional digits. */
function formatNumeric(v: number): string {
  return v.toFixed(16);
}

/** Weight and leading digit of |v| in base 10,000 (PostgreSQL's numeric digits). */
function base10k(v: bigint): { weight: number; first: bigint } {
  let a = v < 0n ? -v : v;
  let weight = 0;
  while (a >= 10_000n) { a /= 10_000n; weight++; }
  return { weight, first: a };
}

/**
 * avg() of integers, exactly as PostgreSQL computes it: the int8 sum divided by the count as numeric,
 * to the scale its division picks (select_div_scale: at least 16 significant digits), rounded half
 * away from zero. 598 / 200 → 2.9900000000000000; 30,150 / 200 → 150.7500000000000000.
 */
export function intAverage(sum: bigint, count: bigint): string {
  const a = base10k(sum);
  const b = base10k(count);
  let qweight = a.weight - b.weight;
  if (a.first <= b.first) qweight--;
  const scale = Math.min(1000, Math.max(0, 16 - qweight * 4));
  const m = 10n ** BigInt(scale);
  const neg = sum < 0n;
  const abs = neg ? -sum : sum;
  let q = (abs * m) / count;
  if (((abs * m) % count) * 2n >= count) q++;
  const digits = q.toString().padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return neg && q !== 0n ? `-${text}` : text;
}
