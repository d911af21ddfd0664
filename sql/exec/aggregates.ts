/** Aggregate functions: one accumulator per group per aggregate call. */
import { arrayElementText, compareValues } from './expr';
import { decimalOp, DecimalSum, formatDecimal, parseDecimal } from './decimal';
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
    case 'bool_and': case 'bool_or': case 'every': return 'bool';
    // array_agg's array travels in PostgreSQL's text form ('{1,2,3}'), typed text (docs/sql.md, "Limits").
    case 'string_agg': case 'array_agg': return 'text';
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
      if (aggregateType(fn, argType) === 'numeric' && !(argType !== undefined && isIntegerType(argType))) return numericSum(fn, fresh);
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
    case 'bool_and': case 'bool_or': case 'every': {
      let acc: boolean | null = null;
      const and = fn !== 'bool_or';
      return { add: (v) => { if (v === null) return; const b = coerce(v, 'bool') as boolean; acc = acc === null ? b : and ? acc && b : acc || b; }, result: () => acc };
    }
    case 'string_agg': {
      const parts: string[] = [];
      return { add: (v) => { if (v !== null && fresh(v)) parts.push(textOf(v)); }, result: () => (parts.length === 0 ? null : parts.join(separator ?? ',')) };
    }
    case 'array_agg': {
      const parts: string[] = [];
      let any = false;
      return { add: (v) => { if (fresh(v)) { any = true; parts.push(arrayElementText(v)); } }, result: () => (any ? `{${parts.join(',')}}` : null) };
    }
    default:
      throw notSupported(`aggregate ${fn}`);
  }
}

/**
 * sum() and avg() of numeric, exactly (decimal.ts): the sum at the largest scale of its inputs, the
 * average at PostgreSQL's division scale. A value that is not plain decimal text (NaN) makes the
 * result NaN, as in PostgreSQL.
 */
function numericSum(fn: string, fresh: (v: SqlValue) => boolean): Accumulator {
  const sum = new DecimalSum();
  let n = 0;
  let nan = false;
  return {
    add: (v) => {
      if (v === null || !fresh(v)) return;
      n++;
      const d = typeof v === 'bigint' ? { unscaled: v, scale: 0 } : parseDecimal(textOf(v));
      if (d) sum.add(d);
      else nan = true;
    },
    result: () => {
      if (n === 0) return null;
      if (nan) return 'NaN';
      return formatDecimal(fn === 'sum' ? sum.total() : decimalOp('/', sum.total(), { unscaled: BigInt(n), scale: 0 }));
    },
  };
}

/** numeric output of an average of non-integers: 16 fractional digits. */
function formatNumeric(v: number): string {
  return v.toFixed(16);
}

/**
 * avg() of integers, exactly as PostgreSQL computes it: the int8 sum divided by the count as numeric
 * (decimal.ts: its division scale, rounded half away from zero). 598 / 200 → 2.9900000000000000.
 */
export function intAverage(sum: bigint, count: bigint): string {
  return formatDecimal(decimalOp('/', { unscaled: sum, scale: 0 }, { unscaled: count, scale: 0 }));
}
