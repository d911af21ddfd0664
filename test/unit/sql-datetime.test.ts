/**
 * Dates, times and intervals in the executor (sql/exec/datetime.ts, interval.ts, to-char.ts) and the
 * other scalar functions checked against PostgreSQL 15 (each expectation is what PostgreSQL printed
 * for the same statement).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../sql/sql-parser';
import type { Tuple } from '../../sql/exec/scope';
import { evalContext, failure, runSelect } from './sql-test-helpers';

function one(sql: string): { row: Tuple; types: string[] } {
  const r = runSelect(sql, {}, evalContext(new Date('2026-01-02T03:04:05Z')));
  return { row: r.rows[0]!, types: r.types };
}

function state(sql: string): string | undefined {
  const f = failure(() => one(sql));
  return f && `${f.state} ${f.message}`;
}

beforeAll(async () => {
  await loadParser();
});

describe('sql dates, times and intervals', () => {
  it('sql datetime: interval input and PostgreSQL output style; comparison by size', () => {
    const r = one("select interval '1.5 days', interval '90 minutes', interval '1 year 13 months', interval '-1 day 2 hours', interval '2 weeks', interval '0', interval '1 day ago', interval '00:00:01.5'");
    expect(r.row).toEqual(['1 day 12:00:00', '01:30:00', '2 years 1 mon', '-1 days 02:00:00', '14 days', '00:00:00', '-1 days', '00:00:01.5']);
    expect(r.types).toEqual(Array(8).fill('interval'));
    expect(one("select interval '1 day' = interval '24 hours', interval '1 day' < interval '25 hours', interval '1 mon' = interval '30 days'").row).toEqual([true, true, true]);
    expect(state("select interval 'abc'")).toBe('22007 invalid input syntax for type interval: "abc"');
  });

  it('sql datetime: date, timestamp and interval arithmetic with their result types (month ends clamp)', () => {
    const r = one("select timestamp '2024-01-31 10:30:00.123456' + interval '1 month', date '2024-01-31' + interval '1 month', date '2024-01-31' + 1, date '2024-03-01' - date '2024-02-01', timestamp '2024-01-01 00:00' - timestamp '2023-12-25 12:00'");
    expect(r.row).toEqual(['2024-02-29 10:30:00.123456', '2024-02-29 00:00:00', '2024-02-01', 29n, '6 days 12:00:00']);
    expect(r.types).toEqual(['timestamp', 'timestamp', 'date', 'int4', 'interval']);
    expect(one("select interval '1 day 02:00:00' * 2, interval '1 day 02:00:00' / 2, -interval '3 hours', interval '1 day' + interval '30 minutes'").row).toEqual(['2 days 04:00:00', '13:00:00', '-03:00:00', '1 day 00:30:00']);
  });

  it('sql datetime: extract (numeric), date_part (float), date_trunc, age, make_date, to_timestamp', () => {
    expect(one("select extract(epoch from timestamp '2024-01-31 10:30:00.123456'), extract(second from timestamp '2024-01-31 10:30:00.123456'), extract(week from date '2024-01-31'), extract(epoch from interval '1 year 2 months'), date_part('year', date '2024-01-31')").row)
      .toEqual(['1706697000.123456', '0.123456', '5', '36741600.000000', 2024]);
    expect(one("select date_trunc('week', timestamp '2024-01-31 10:30:00'), date_trunc('quarter', timestamp '2024-05-31 10:30:00'), date_trunc('month', date '2024-01-31')").row)
      .toEqual(['2024-01-29 00:00:00', '2024-04-01 00:00:00', '2024-01-01 00:00:00+00']);
    expect(one("select age(timestamp '2024-03-31 10:00', timestamp '2023-02-28 12:30'), age('2024-01-15'::timestamp, '2024-03-01'::timestamp), make_date(2024, 2, 29), to_timestamp(1700000000)").row)
      .toEqual(['1 year 1 mon 2 days 21:30:00', '-1 mons -17 days', '2024-02-29', '2023-11-14 22:13:20+00']);
    expect(state('select make_date(2023, 2, 29)')).toBe('22008 date field value out of range: 2023-02-29');
    expect(state("select extract(hour from date '2024-01-01')")).toBe('0A000 unit "hour" not supported for type date');
  });

  it('sql datetime: to_char of timestamps and numbers', () => {
    expect(one("select to_char(timestamp '2024-01-31 10:30:00.123456', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS'), to_char(timestamp '2024-01-31 15:30:00', 'FMMonth FMDD Day Dy HH12 AM'), to_char(1234567.891, 'FM9,999,999.999'), to_char(-0.5, 'FM999999990.00'), to_char(1234.5, '9999999.99')").row)
      .toEqual(['2024-01-31T10:30:00.123', 'January 31 Wednesday Wed 03 PM', '1,234,567.891', '-0.50', '    1234.50']);
  });

  it('sql functions: a string compared with a number is 42883; sign, trunc to digits, split_part, initcap, regexp_replace', () => {
    expect(state("select 'a'::text = 1")).toBe('42883 operator does not exist: text = integer');
    expect(one("select '1' = 1, 1 = 1.0").row).toEqual([true, true]);
    expect(one("select sign(-2.5), trunc(1789, -2), trunc(1.789, 2), split_part('a,b,c', ',', -1), initcap('hello wORLD foo-bar'), regexp_replace('abc', '(b)', '[\\1]')").row)
      .toEqual(['-1', '1700', '1.78', 'c', 'Hello World Foo-Bar', 'a[b]c']);
    expect(state('select ln(0)')).toBe('2201E cannot take logarithm of zero');
    expect(one('select 12.345::numeric(5,2), 0.005::numeric(3,2), round(7, 2), abs(-5::int2)').row).toEqual(['12.35', '0.01', '7.00', 5n]);
    expect(state('select 123.45::numeric(4,2)')).toBe('22003 numeric field overflow');
    expect(state('select abs(-2147483647::int4 - 1)')).toBe('22003 value 2147483648 is out of range for type integer');
  });
});
