/**
 * More scalar and set-returning functions and operators (sql/exec/functions-extra.ts, operators.ts):
 * regular expressions, SIMILAR TO, format() and quoting, integer functions, bitwise and prefix
 * operators, pg_typeof, pg_sleep. Expectations are what PostgreSQL 15 answers for the same statements.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../sql/sql-parser';
import type { Tuple } from '../../sql/exec/scope';
import type { LoadedRelation } from '../../sql/exec/select';
import { evalContext, failure, runSelect } from './sql-test-helpers';

const query = (sql: string): Tuple[] => runSelect(sql, {}).rows;
const one = (sql: string): Tuple => query(sql)[0]!;
const state = (sql: string): string | undefined => failure(() => query(sql))?.state;

beforeAll(async () => {
  await loadParser();
});

describe('sql functions', () => {
  it('sql functions: regexp_match, regexp_matches (g), regexp_split_to_table, string_to_table, substring FROM pattern', () => {
    expect(one("select regexp_match('foo123bar', '\\d+'), regexp_match('abc', 'B', 'i'), regexp_match('abc', 'z'), regexp_match('a1', '(\\w)(\\d)')")).toEqual(['{123}', '{b}', null, '{a,1}']);
    expect(query("select regexp_matches('a1b22c333', '\\d+', 'g')")).toEqual([['{1}'], ['{22}'], ['{333}']]);
    expect(query("select regexp_matches('a1b22', '\\d+')")).toEqual([['{1}']]);
    expect(query("select regexp_split_to_table('a, b,c', ',\\s*')")).toEqual([['a'], ['b'], ['c']]);
    expect(query("select regexp_split_to_table('abc', '')")).toEqual([['a'], ['b'], ['c']]);
    expect(query("select string_to_table('a|b||c', '|', '')")).toEqual([['a'], ['b'], [null], ['c']]);
    expect(query("select w from regexp_split_to_table('x y', ' ') as t(w)")).toEqual([['x'], ['y']]);
    expect(one("select substring('foobar' from 'o+'), substring('foobar' from 'o(b)'), substring('foobar' from 'z'), substring('hello' from 2 for 3)")).toEqual(['oo', 'b', null, 'ell']);
    expect(state("select 'a' ~ '('")).toBe('2201B');
    expect(state("select regexp_match('abc', 'b', 'g')")).toBe('22023');
  });

  it('sql functions: SIMILAR TO is anchored; % _ | () [] are its metacharacters, . is literal; ESCAPE', () => {
    expect(one("select 'abc' similar to 'a%', 'abc' similar to '(a|b)%', 'abc' not similar to 'a_c', 'a.c' similar to 'a.c', 'abc' similar to 'a.c', 'xabc' similar to 'a%'")).toEqual([true, true, false, true, false, false]);
    expect(one("select 'ab' similar to 'a[bc]', 'ad' similar to 'a[bc]', 'a%b' similar to 'a#%b' escape '#', 'axb' similar to 'a#%b' escape '#'")).toEqual([true, false, true, false]);
  });

  it('sql functions: format() with %s %I %L, positions, widths and %%; quote_ident, quote_literal, quote_nullable', () => {
    expect(one("select format('%s-%s', 'a', 1), format('%I.%L', 'my col', 'it''s'), format('%5s|%-5s|', 'x', 'y'), format('%2$s %1$s', 'a', 'b'), format('%s|%L', null, null), format('100%%')"))
      .toEqual(['a-1', '"my col".\'it\'\'s\'', '    x|y    |', 'b a', '|NULL', '100%']);
    expect(state("select format('%s %s', 'a')")).toBe('22023');
    expect(state("select format('%x', 1)")).toBe('22023');
    expect(state("select format('%I', null)")).toBe('22004');
    expect(one("select quote_ident('a b'), quote_ident('abc'), quote_ident('Abc'), quote_literal('it''s'), quote_literal('a\\b'), quote_nullable(null)"))
      .toEqual(['"a b"', 'abc', '"Abc"', "'it''s'", "E'a\\\\b'", 'NULL']);
  });

  it('sql functions: div, gcd, lcm, factorial, width_bucket, bit_length, overlay; sqrt of a negative is 2201F', () => {
    expect(one('select div(7, 2), div(-7, 2), div(7.5, 2), gcd(-12, 18), lcm(-4, 6), gcd(0, 0), factorial(0), factorial(20)')).toEqual(['3', '-3', '3', 6n, 12n, 0n, '1', '2432902008176640000']);
    expect(one('select width_bucket(5, 0, 10, 4), width_bucket(-1, 0, 10, 5), width_bucket(10, 0, 10, 5), width_bucket(5, 10, 0, 5)')).toEqual([3n, 0n, 6n, 3n]);
    expect(state('select width_bucket(5.5, 0, 10, 0)')).toBe('2201G');
    expect(state('select factorial(-1)')).toBe('22003');
    expect(one("select bit_length('héllo'), overlay('hello' placing 'XX' from 2 for 3), overlay('abcdef' placing 'Z' from 3), overlay('abc' placing 'xyz' from 2 for 0)")).toEqual([48n, 'hXXo', 'abZdef', 'axyzbc']);
    expect(state('select sqrt(-1)')).toBe('2201F');
    expect(state('select |/ -1')).toBe('2201F');
  });

  it('sql functions: bitwise & | # ~ << >> on integers (shifts wrap within the type), prefix |/ ||/ @', () => {
    expect(one('select 7 & 3, 7 | 8, 5 # 1, ~5, 1 << 4, 256 >> 2, 1 << 31, 1::bigint << 40, -8 >> 1')).toEqual([3n, 15n, 4n, -6n, 16n, 64n, -2147483648n, 1099511627776n, -4n]);
    expect(one('select |/ 16, @ -5, @ -2.5')).toEqual([4, 5n, '2.5']);
    expect(state('select 1.5 & 1')).toBe('42883');
  });

  it('sql functions: pg_typeof names the argument\'s type; pg_sleep adds to the statement\'s wait', () => {
    expect(one("select pg_typeof(1), pg_typeof(1.5), pg_typeof('a'::text), pg_typeof(1::bigint), pg_typeof(1 + 1.0), pg_typeof(true), pg_typeof('a')"))
      .toEqual(['integer', 'numeric', 'text', 'bigint', 'numeric', 'boolean', 'unknown']);
    const ctx = { ...evalContext(), sleep: { ms: 0 } };
    expect(runSelect('select pg_sleep(0.25), pg_sleep(0.5)', {}, ctx).rows).toEqual([['', '']]);
    expect(ctx.sleep.ms).toBe(750);
    expect(state('select pg_sleep(1)')).toBe('0A000');
  });

  it('sql functions: jsonb -> ->> #> #>> (keys, indexes from either end, paths), ? ?| ?&, @> <@, || and -', () => {
    const docs: LoadedRelation = { columns: [{ rel: 't', name: 'id', type: 'int4' }, { rel: 't', name: 'j', type: 'jsonb' }], rows: [[1n, '{"s": "str", "x": 1, "y": [1, 2]}'], [4n, '{"y": {"z": "q"}}'], [5n, '[1, "a", {"b": 2}]']] };
    const q = (sql: string): Tuple[] => runSelect(sql, { t: docs }).rows;
    expect(q("select j->'x', j->>'x', j->'y'->-1, j->>'s', j->'s', j ? 'x', j @> '{\"x\": 1}' from t where id = 1")).toEqual([['1', '1', '2', 'str', '"str"', true, true]]);
    expect(q("select j#>'{y,z}', j#>>'{y,z}', j->'nope' from t where id = 4")).toEqual([['"q"', 'q', null]]);
    expect(q("select j->0, j->>1, j->2->'b', j->5 from t where id = 5")).toEqual([['1', 'a', '2', null]]);
    expect(q("select id from t where j ? 'y' order by id")).toEqual([[1n], [4n]]);
    expect(one(`select '{"a":1}'::jsonb || '{"b":2}'::jsonb, '{"a":1,"b":2}'::jsonb - 'a', '[1,2,3]'::jsonb - 1, '["a","b"]'::jsonb - 'a', '[1]'::jsonb || '2'::jsonb`))
      .toEqual(['{"a": 1, "b": 2}', '{"b": 2}', '[1, 3]', '["b"]', '[1, 2]']);
    expect(one(`select '{"a":1, "b":{"c":2}}'::jsonb @> '{"b":{}}', '[1,2,[3]]'::jsonb @> '[[3]]', '[1,2]'::jsonb @> '1', '{"a":1}'::jsonb <@ '{"a":1,"b":2}', '{"a":1,"b":2}'::jsonb ?| '{b,c}', '{"a":1,"b":2}'::jsonb ?& '{b,c}'`))
      .toEqual([true, true, true, true, true, false]);
    expect(state(`select '{"a":1}'::jsonb - 0`)).toBe('22023');
  });

  it('sql functions: jsonb_build_object/array and to_jsonb by the arguments\' types; jsonb_typeof, array length, object keys and elements', () => {
    expect(one("select jsonb_build_object('a', 1, 'b', 'x', 'c', 1.5, 'd', true, 'e', null), jsonb_build_array(1, 'a', null, 2.50), to_jsonb('x'::text), to_jsonb(1)"))
      .toEqual(['{"a": 1, "b": "x", "c": 1.5, "d": true, "e": null}', '[1, "a", null, 2.5]', '"x"', '1']);
    expect(one(`select jsonb_typeof('[1]'), jsonb_typeof('{"a":null}'::jsonb->'a'), jsonb_array_length('[1, [2, 3]]'), jsonb_extract_path_text('{"y": {"z": "q"}}', 'y', 'z')`)).toEqual(['array', 'null', 2n, 'q']);
    expect(state(`select jsonb_array_length('{"a":1}')`)).toBe('22023');
    expect(state("select jsonb_build_object('a')")).toBe('22023');
    expect(query(`select jsonb_object_keys('{"bb": 1, "a": 2}')`)).toEqual([['a'], ['bb']]);
    expect(query(`select * from jsonb_array_elements('[1, "a", {"b": 2}]')`)).toEqual([['1'], ['"a"'], ['{"b": 2}']]);
    expect(query(`select jsonb_array_elements_text('[1, "a", null]')`)).toEqual([['1'], ['a'], [null]]);
  });

  it('sql functions: ARRAY[…] (nested, NULLs, quoting), = ANY / <> ALL over it, subscripts and unnest with the element type, cardinality', () => {
    expect(one("select array[1, 2, 3], array['a', 'b c', null], array[array[1, 2], array[3, 4]]")).toEqual(['{1,2,3}', '{a,"b c",NULL}', '{{1,2},{3,4}}']);
    expect(one('select 2 = any(array[1, 2]), 2 <> all(array[1, 2]), (array[10, 20, 30])[2] + 1, (\'{4,5}\'::int[])[1] * 2, cardinality(array[1, 2, 3])')).toEqual([true, false, 21n, 8n, 3n]);
    expect(query('select unnest(array[5, 6]) + 1')).toEqual([[6n], [7n]]);
    expect(query("select * from unnest('{1,NULL,3}'::int[]) as t(v)")).toEqual([[1n], [null], [3n]]);
    expect(one("select string_to_array('a,,c', ',', ''), string_to_array('abc', null), array_position(array['a', 'b'], 'b'), array_append(array[1, 2], 3), array_prepend(0, array[1]), array_cat(array[1], array[2, 3]), array_remove(array[1, 2, 1], 1)"))
      .toEqual(['{a,NULL,c}', '{a,b,c}', 2n, '{1,2,3}', '{0,1}', '{1,2,3}', '{2}']);
  });
});
