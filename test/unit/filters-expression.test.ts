/** The filter expression language (docs/filters.md): what each form parses to, and its errors. */
import { describe, expect, it } from 'vitest';
import { DbError } from '../../common/errors';
import { compileFilter, parseFilterExpression, parseFilterText, type FilterAst } from '../../docdb/filters';
import { filterSchema } from './filters-arbitraries';

function fails(src: string): DbError {
  try {
    parseFilterExpression(src);
  } catch (e) {
    expect(e).toBeInstanceOf(DbError);
    expect((e as DbError).code).toBe('INVALID_ARGUMENT');
    return e as DbError;
  }
  throw new Error(`parsed: ${src}`);
}

describe('filter expressions', () => {
  it('filter expression: the brief example parses to an AND of a prefix and a single-column-value filter', () => {
    expect(parseFilterExpression("PrefixFilter('user1') AND SingleColumnValueFilter('cf','age',>=,'binary:30',true)")).toEqual({
      type: 'list',
      op: 'AND',
      filters: [
        { type: 'prefix', prefix: 'user1' },
        { type: 'singleColumnValue', family: 'cf', column: 'age', op: '>=', comparator: { type: 'binary', value: '30' }, filterIfMissing: true },
      ],
    });
  });

  it('filter expression: AND binds tighter than OR, SKIP/WHILE tightest, parentheses group', () => {
    const a: FilterAst = { type: 'keyOnly' };
    const b: FilterAst = { type: 'firstKeyOnly' };
    const c: FilterAst = { type: 'page', rows: 3 };
    expect(parseFilterExpression('KeyOnlyFilter() OR FirstKeyOnlyFilter() AND PageFilter(3)')).toEqual({ type: 'list', op: 'OR', filters: [a, { type: 'list', op: 'AND', filters: [b, c] }] });
    expect(parseFilterExpression('(KeyOnlyFilter() OR FirstKeyOnlyFilter()) AND PageFilter(3)')).toEqual({ type: 'list', op: 'AND', filters: [{ type: 'list', op: 'OR', filters: [a, b] }, c] });
    expect(parseFilterExpression('SKIP KeyOnlyFilter() AND WHILE PageFilter(3)')).toEqual({ type: 'list', op: 'AND', filters: [{ type: 'skip', filter: a }, { type: 'while', filter: c }] });
  });

  it('filter expression: every filter form and comparator', () => {
    expect(parseFilterExpression("ValueFilter(=,'substring:foo')")).toEqual({ type: 'value', op: '=', comparator: { type: 'substring', value: 'foo' } });
    expect(parseFilterExpression("QualifierFilter(!=,'regexstring:^a.*')")).toEqual({ type: 'qualifier', op: '!=', comparator: { type: 'regex', pattern: '^a.*' } });
    expect(parseFilterExpression("ValueFilter(<,'binary:10')")).toEqual({ type: 'value', op: '<', comparator: { type: 'binary', value: '10' } });
    expect(parseFilterExpression("ValueFilter(=,'binaryprefix:it''s')")).toEqual({ type: 'value', op: '=', comparator: { type: 'binaryprefix', value: "it's" } });
    expect(parseFilterExpression("RowRangeFilter('a', true, 'm', false)")).toEqual({ type: 'rowRange', start: 'a', startInclusive: true, stop: 'm', stopInclusive: false });
    expect(parseFilterExpression('RowRangeFilter(10, false, 20, true)')).toEqual({ type: 'rowRange', start: { int: '10' }, startInclusive: false, stop: { int: '20' }, stopInclusive: true });
    expect(parseFilterExpression("MultiRowRangeFilter('a', true, 'b', false, 'x', true, '', false)")).toEqual({
      type: 'multiRowRange',
      ranges: [
        { start: 'a', startInclusive: true, stop: 'b', stopInclusive: false },
        { start: 'x', startInclusive: true, stopInclusive: false },
      ],
    });
    expect(parseFilterExpression("FuzzyRowFilter('ab??', '?x')")).toEqual({ type: 'fuzzyRow', patterns: ['ab??', '?x'] });
    expect(parseFilterExpression("MultipleColumnPrefixFilter('a', 'b')")).toEqual({ type: 'columnPrefix', prefixes: ['a', 'b'] });
    expect(parseFilterExpression("ColumnRangeFilter('a', true, 'c', false)")).toEqual({ type: 'columnRange', min: 'a', minInclusive: true, max: 'c', maxInclusive: false });
    expect(parseFilterExpression('ColumnPaginationFilter(2, 1)')).toEqual({ type: 'columnPagination', limit: 2, offset: 1 });
    expect(parseFilterExpression('TimestampsFilter(1700000000000000, 5)')).toEqual({ type: 'timestamps', timestamps: ['1700000000000000', '5'] });
    expect(parseFilterExpression("SingleColumnValueFilter('age', =, 'binary:3')")).toEqual({ type: 'singleColumnValue', column: 'age', op: '=', comparator: { type: 'binary', value: '3' }, filterIfMissing: false });
    expect(parseFilterExpression("InclusiveStopFilter('k9')")).toEqual({ type: 'rowRange', startInclusive: true, stop: 'k9', stopInclusive: true });
  });

  it('filter expression: errors name the position and the part', () => {
    expect(fails("PrefixFilter('a') AND").message).toMatch(/position 21 .*expected a filter/);
    expect(fails("PrefixFilter('a'").message).toMatch(/position 16 .*expected ',' or '\)'/);
    expect(fails("NoSuchFilter('a')").message).toMatch(/position 13 .*unknown filter NoSuchFilter/);
    expect(fails("ValueFilter(=, 'nope:1')").message).toMatch(/position 15 .*unknown comparator 'nope:1'/);
    expect(fails("ValueFilter(<, 'substring:x')").message).toMatch(/supports only = and !=/);
    expect(fails("ValueFilter(=, 'regexstring:(')").message).toMatch(/not a regular expression/);
    // Patterns that backtrack exponentially would stall the tablet server's event loop.
    expect(fails("ValueFilter(=, 'regexstring:^(a+)+$')").message).toMatch(/repeated group that itself repeats/);
    expect(fails("ValueFilter(=, 'regexstring:(x)\\1')").message).toMatch(/backreferences are not allowed/);
    expect(parseFilterExpression("ValueFilter(=, 'regexstring:^(ab|cd)+[0-9]*$')").type).toBe('value');
    expect(fails('PageFilter(-1)').message).toMatch(/PageFilter: argument 1 \(a row count\) must be an integer >= 0/);
    expect(fails('PageFilter(1, 2)').message).toMatch(/position 14 .*PageFilter takes 1 argument/);
    expect(fails("PrefixFilter('abc").message).toMatch(/position 13 .*unterminated string/);
    expect(fails("PrefixFilter('a') XOR PrefixFilter('b')").message).toMatch(/position 18 .*expected AND, OR or the end/);
    expect(fails("(PrefixFilter('a')").message).toMatch(/expected '\)'/);
    expect(fails('   ').message).toMatch(/empty filter expression/);
    expect(fails("PrefixFilter('a') # x").message).toMatch(/unexpected character "#"/);
    expect(fails('KeyOnlyFilter()'.repeat(1).padEnd(20_000, ' ')).message).toMatch(/longer than/);
  });

  it('filter JSON from any client: bad trees are INVALID_ARGUMENT naming the path', () => {
    const bad = (text: string, re: RegExp): void => {
      let err: unknown;
      try {
        parseFilterText(text);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DbError);
      expect((err as DbError).code).toBe('INVALID_ARGUMENT');
      expect((err as DbError).message).toMatch(re);
    };
    bad('{', /not JSON/);
    bad('[]', /bad filter at filter: must be an object/);
    bad('{"type":"list","op":"AND","filters":[{"type":"page","rows":-2}]}', /filter\.filters\[0\]\.rows: must be an integer/);
    bad('{"type":"list","op":"XOR","filters":[]}', /filter\.op: must be AND or OR/);
    bad('{"type":"value","op":"=","comparator":{"type":"binary","value":{"int":"99999999999999999999"}}}', /filter\.comparator\.value/);
    bad('{"type":"bogus"}', /unknown filter type "bogus"/);
    let deep: unknown = { type: 'keyOnly' };
    for (let i = 0; i < 40; i++) deep = { type: 'skip', filter: deep };
    bad(JSON.stringify(deep), /nested deeper than/);
  });

  it('compile: an unknown column, a key column or a bad key literal is INVALID_ARGUMENT naming it', () => {
    const compileErr = (src: string, hashed = false): string => {
      try {
        compileFilter(parseFilterExpression(src), filterSchema(hashed));
      } catch (e) {
        expect((e as DbError).code).toBe('INVALID_ARGUMENT');
        return (e as Error).message;
      }
      throw new Error(`compiled: ${src}`);
    };
    expect(compileErr("SingleColumnValueFilter('nosuch', =, 'binary:1')")).toMatch(/unknown column nosuch/);
    expect(compileErr("SingleColumnValueFilter('k', =, 'binary:1')")).toMatch(/k is a key column/);
    const intKeyed = { ...filterSchema(false), columns: [{ name: 'k', id: 0, type: 'int64' as const }, ...filterSchema(false).columns.slice(1)] };
    expect(() => compileFilter(parseFilterExpression("RowRangeFilter('abc', true, 5, false)"), intKeyed)).toThrow(/filter\.start: "abc" is not a int64 value of key column k/);
    expect(() => compileFilter(parseFilterExpression("FuzzyRowFilter('a?')"), intKeyed)).toThrow(/needs a string leading key column/);
    const withFamilies = { ...filterSchema(false), columns: filterSchema(false).columns.map((c) => ({ ...c, family: 'cf' })) };
    expect(() => compileFilter(parseFilterExpression("SingleColumnValueFilter('nofam', 'x', =, 'binary:1')"), withFamilies)).toThrow(/unknown column family nofam/);
    expect(() => compileFilter(parseFilterExpression("SingleColumnValueFilter('cf', 'x', =, 'binary:1')"), withFamilies)).not.toThrow();
  });
});
