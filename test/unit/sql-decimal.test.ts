/**
 * Exact numeric arithmetic (sql/exec/decimal.ts): results checked against PostgreSQL 15, and
 * properties against BigInt rationals on random decimals.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decimalOp, formatDecimal, parseDecimal, type Decimal } from '../../sql/exec/decimal';

const d = (s: string): Decimal => parseDecimal(s)!;
const op = (a: string, o: string, b: string): string => formatDecimal(decimalOp(o, d(a), d(b)));

describe('numeric arithmetic', () => {
  it('decimal: + - * / % give PostgreSQL 15\'s text, scale included', () => {
    expect(op('0.1', '+', '0.2')).toBe('0.3');
    expect(op('0.3', '-', '0.1')).toBe('0.2');
    expect(op('1.10', '*', '3')).toBe('3.30');
    expect(op('7.0', '/', '2')).toBe('3.5000000000000000');
    expect(op('1', '/', '3.0')).toBe('0.33333333333333333333');
    expect(op('22', '/', '7.000')).toBe('3.1428571428571429');
    expect(op('1000000', '/', '3.0')).toBe('333333.333333333333');
    expect(op('0.0001', '/', '3')).toBe('0.000033333333333333333333');
    expect(op('123.456', '/', '0.001')).toBe('123456.000000000000');
    expect(op('-7.5', '%', '2')).toBe('-1.5');
    expect(op('12345678901234567890.12', '+', '1')).toBe('12345678901234567891.12');
    expect(op('0.000001', '*', '0.000001')).toBe('0.000000000001');
    expect(formatDecimal(d('1e3'))).toBe('1000');
    expect(formatDecimal(d('-.5'))).toBe('-0.5');
    expect(parseDecimal('NaN')).toBeUndefined();
    expect(() => op('5.0', '/', '0')).toThrow(/division by zero/);
  });

  it('decimal: + and - are exact and inverse, * matches rationals, / is within half a unit of the last digit', () => {
    const dec = fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 8 })).map(([u, s]): Decimal => ({ unscaled: u, scale: s }));
    fc.assert(fc.property(dec, dec, (a, b) => {
      const sum = decimalOp('+', a, b);
      const back = decimalOp('-', sum, b);
      const s = Math.max(a.scale, b.scale);
      expect(back.unscaled * 10n ** BigInt(s - back.scale)).toBe(a.unscaled * 10n ** BigInt(s - a.scale));
      const prod = decimalOp('*', a, b);
      expect(prod).toEqual({ unscaled: a.unscaled * b.unscaled, scale: a.scale + b.scale });
      if (b.unscaled !== 0n) {
        // q ≈ a/b: |q·b − a| ≤ |b|/2 in units of q's last digit.
        const q = decimalOp('/', a, b);
        const lhs = q.unscaled * b.unscaled * 10n ** BigInt(a.scale);
        const rhs = a.unscaled * 10n ** BigInt(q.scale + b.scale);
        const err = lhs - rhs;
        const bound = (b.unscaled < 0n ? -b.unscaled : b.unscaled) * 10n ** BigInt(a.scale);
        expect(2n * (err < 0n ? -err : err) <= bound).toBe(true);
        expect(q.scale).toBeGreaterThanOrEqual(Math.max(a.scale, b.scale));
      }
    }), { numRuns: 300 });
  });
});
