/**
 * PostgreSQL's grouping rules in the executor (sql/exec/grouping-check.ts): ungrouped columns are
 * 42803, a table's columns are groupable once its primary key is grouped, SELECT DISTINCT may only
 * ORDER BY what it selects (42P10). Expectations checked against PostgreSQL 15.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../sql/sql-parser';
import type { LoadedRelation } from '../../sql/exec/select';
import type { Tuple } from '../../sql/exec/scope';
import { failure as failed, runSelect } from './sql-test-helpers';

const g: LoadedRelation = {
  columns: [{ rel: 'g', name: 'id', type: 'int4', key: true }, { rel: 'g', name: 'a', type: 'int4' }, { rel: 'g', name: 'b', type: 'text' }],
  rows: [[1n, 1n, 'x'], [2n, 1n, 'y'], [3n, 2n, 'x'], [4n, null, 'z']],
};
const h: LoadedRelation = { columns: [{ rel: 'h', name: 'k', type: 'int4' }, { rel: 'h', name: 'v', type: 'int4' }], rows: [[1n, 10n], [1n, 20n], [2n, 30n]] };

const query = (sql: string): Tuple[] => runSelect(sql, { g, h }).rows;
const failure = (sql: string): { state: string; message: string } | undefined => failed(() => query(sql));

beforeAll(async () => {
  await loadParser();
});

describe('sql grouping rules', () => {
  it('sql grouping: a column neither grouped nor aggregated is 42803, in the targets, HAVING and ORDER BY', () => {
    expect(failure('select a, b, count(*) from g group by a')).toEqual({ state: '42803', message: 'column "g.b" must appear in the GROUP BY clause or be used in an aggregate function' });
    expect(failure('select k, max(v) from h group by k having v > 1')?.state).toBe('42803');
    expect(failure('select k from h group by k order by v')?.state).toBe('42803');
    expect(failure('select count(*) from h order by k')?.state).toBe('42803');
    expect(failure('select * from h group by k')?.state).toBe('42803');
    expect(failure('select coalesce(a, 0), count(*) from g group by b')?.state).toBe('42803');
  });

  it('sql grouping: grouped columns, GROUP BY expressions, ordinals and aliases, aggregates and a grouped primary key are accepted', () => {
    expect(query('select a + 1 as x, count(*) from g group by x order by 1')).toEqual([[2n, 2n], [3n, 1n], [null, 1n]]);
    expect(query('select coalesce(a, 0), count(*) from g group by coalesce(a, 0) order by 1')).toEqual([[0n, 1n], [1n, 2n], [2n, 1n]]);
    expect(query('select upper(b), count(*) from g group by b order by 1')).toEqual([['X', 2n], ['Y', 1n], ['Z', 1n]]);
    expect(query('select k from h group by k order by max(v) desc')).toEqual([[2n], [1n]]);
    expect(query('select k, max(v) from h group by 1 having max(v) > 15 order by k')).toEqual([[1n, 20n], [2n, 30n]]);
    // id is g's primary key: its other columns depend on it.
    expect(query('select id, b, count(*) from g group by id order by id')).toEqual([[1n, 'x', 1n], [2n, 'y', 1n], [3n, 'x', 1n], [4n, 'z', 1n]]);
    expect(query('select g.*, count(*) from g group by g.id order by 1 limit 1')).toEqual([[1n, 1n, 'x', 1n]]);
    expect(query('select g.id, g.b, sum(h.v) from g join h on g.a = h.k group by g.id order by 1')).toEqual([[1n, 'x', 30n], [2n, 'y', 30n], [3n, 'x', 30n]]);
    // …but h has no primary key, so grouping by its k does not make g's columns groupable.
    expect(failure('select h.k, g.b, sum(h.v) from g join h on g.a = h.k group by h.k')?.state).toBe('42803');
  });

  it('sql grouping: SELECT DISTINCT orders only by selected expressions (42P10)', () => {
    expect(failure('select distinct a from g order by b')?.state).toBe('42P10');
    expect(query('select distinct a + 1 from g order by a + 1')).toEqual([[2n], [3n], [null]]);
    expect(query('select distinct a as x from g order by x desc')).toEqual([[null], [2n], [1n]]);
    expect(query('select distinct a, b from g order by b, a')).toEqual([[1n, 'x'], [2n, 'x'], [1n, 'y'], [null, 'z']]);
  });

  it('sql grouping: DISTINCT ON keeps the first row of each group in ORDER BY\'s order; ORDER BY must start with its expressions (42P10)', () => {
    expect(query('select distinct on (a) a, id, b from g order by a, id desc')).toEqual([[1n, 2n, 'y'], [2n, 3n, 'x'], [null, 4n, 'z']]);
    expect(query('select distinct on (b) b, id from g order by b, a nulls first, id')).toEqual([['x', 1n], ['y', 2n], ['z', 4n]]);
    expect(query('select distinct on (1) k, v from h order by 1, v desc')).toEqual([[1n, 20n], [2n, 30n]]);
    expect(query('select distinct on (k) k from h')).toEqual([[1n], [2n]]);
    expect(failure('select distinct on (a) a, id from g order by id')?.state).toBe('42P10');
    expect(failure('select distinct on (a) a, id from g order by id')?.message).toBe('SELECT DISTINCT ON expressions must match initial ORDER BY expressions');
  });

  it('sql grouping: ROLLUP, CUBE and GROUPING SETS aggregate once per set, NULL in the columns a set does not group by', () => {
    const t: LoadedRelation = {
      columns: [{ rel: 't', name: 'id', type: 'int4', key: true }, { rel: 't', name: 'a', type: 'text' }, { rel: 't', name: 'b', type: 'int4' }, { rel: 't', name: 'c', type: 'int4' }],
      rows: [[1n, 'x', 1n, 10n], [2n, 'x', 2n, 20n], [3n, 'y', 1n, 30n], [4n, 'y', 1n, 40n], [5n, null, 2n, 50n]],
    };
    const q = (sql: string): Tuple[] => runSelect(sql, { t }).rows;
    expect(q('select a, b, sum(c) from t group by rollup (a, b) order by a nulls last, b nulls last, 3'))
      .toEqual([['x', 1n, 10n], ['x', 2n, 20n], ['x', null, 30n], ['y', 1n, 70n], ['y', null, 70n], [null, 2n, 50n], [null, null, 50n], [null, null, 150n]]);
    expect(q('select a, b, count(*) from t group by cube (a, b) order by a nulls last, b nulls last, 3')).toHaveLength(10);
    expect(q('select a, b, sum(c) from t group by grouping sets ((a, b), a, ()) order by a nulls last, b nulls last, 3')).toHaveLength(8);
    expect(q('select a, b, sum(c) from t group by a, rollup (b) order by a nulls last, b nulls last, 3'))
      .toEqual([['x', 1n, 10n], ['x', 2n, 20n], ['x', null, 30n], ['y', 1n, 70n], ['y', null, 70n], [null, 2n, 50n], [null, null, 50n]]);
    expect(runSelect('select b, sum(c) from t where id > 100 group by rollup (b)', { t }).rows).toEqual([[null, null]]);
    expect(failed(() => q('select b, count(*) from t group by rollup (a)'))?.state).toBe('42803');
    expect(failed(() => q('select count(*) from t group by rollup (b + 1)'))?.state).toBe('0A000');
  });
});
