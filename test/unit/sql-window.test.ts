/**
 * Window functions in the executor (sql/exec/window.ts): partitions, ORDER BY with peers, frames,
 * ranking and offset functions, aggregates over frames and over grouped rows, named windows.
 * Expectations are what PostgreSQL 15 answers for the same rows and statements.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../sql/sql-parser';
import type { LoadedRelation } from '../../sql/exec/select';
import type { Tuple } from '../../sql/exec/scope';
import { failure, runSelect } from './sql-test-helpers';

const e: LoadedRelation = {
  columns: [{ rel: 'e', name: 'id', type: 'int4', key: true }, { rel: 'e', name: 'dept', type: 'text' }, { rel: 'e', name: 'sal', type: 'int4' }],
  rows: [[1n, 'a', 100n], [2n, 'a', 200n], [3n, 'a', 200n], [4n, 'b', 50n], [5n, 'b', 70n], [6n, 'c', null], [7n, 'a', 300n]],
};

const query = (sql: string): Tuple[] => runSelect(sql, { e }).rows;

beforeAll(async () => {
  await loadParser();
});

describe('sql window functions', () => {
  it('sql window: rank and dense_rank share peers; a running sum includes the current row\'s peers (the default RANGE frame)', () => {
    expect(query('select id, rank() over (partition by dept order by sal desc), dense_rank() over (partition by dept order by sal desc), sum(sal) over (partition by dept order by sal) from e order by id'))
      .toEqual([[1n, 4n, 3n, 100n], [2n, 2n, 2n, 500n], [3n, 2n, 2n, 500n], [4n, 2n, 2n, 50n], [5n, 1n, 1n, 120n], [6n, 1n, 1n, null], [7n, 1n, 1n, 800n]]);
  });

  it('sql window: ROWS frames, lag and lead with offset and default, last_value up to the current row', () => {
    expect(query('select id, sum(sal) over (order by id rows between 1 preceding and 1 following), lag(sal) over (order by id), lead(sal, 2, -1) over (order by id), last_value(sal) over (partition by dept order by id) from e order by id'))
      .toEqual([[1n, 300n, null, 200n, 100n], [2n, 500n, 100n, 50n, 200n], [3n, 450n, 200n, 70n, 200n], [4n, 320n, 200n, null, 50n], [5n, 120n, 50n, 300n, 70n], [6n, 370n, 70n, -1n, null], [7n, 300n, null, -1n, 300n]]);
  });

  it('sql window: over grouped rows (rank of sum, NULLS FIRST when descending), named windows, ntile and cume_dist', () => {
    expect(query('select dept, sum(sal), rank() over (order by sum(sal) desc) from e group by dept order by dept')).toEqual([['a', 800n, 2n], ['b', 120n, 3n], ['c', null, 1n]]);
    const r = query('select id, ntile(3) over w, cume_dist() over (order by sal) from e window w as (order by id) order by id');
    expect(r.map((x) => x[1])).toEqual([1n, 1n, 1n, 2n, 2n, 3n, 3n]);
    expect(r.map((x) => Number(x[2]).toFixed(4))).toEqual(['0.4286', '0.7143', '0.7143', '0.1429', '0.2857', '1.0000', '0.8571']);
  });

  it('sql window: not allowed in WHERE (42P20); an unknown window name is 42704', () => {
    const state = (sql: string): string | undefined => failure(() => query(sql))?.state;
    expect(state('select id from e where row_number() over () > 1')).toBe('42P20');
    expect(state('select id, sum(sal) over nowhere from e')).toBe('42704');
  });
});
