/**
 * Join forms and comparisons of the executor beyond the basics (sql/exec/select.ts joinItem,
 * expr.ts): JOIN USING / NATURAL / FULL, `x op ALL (subquery)`, row comparisons, BETWEEN SYMMETRIC.
 * Expectations are PostgreSQL 15's answers for the same rows and statements.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser } from '../../sql/sql-parser';
import type { LoadedRelation } from '../../sql/exec/select';
import type { Tuple } from '../../sql/exec/scope';
// array_to_string and the other pg_catalog functions register themselves when the catalog module loads (as the server's does).
import '../../sql/exec/pg-catalog';
import { failure, runSelect } from './sql-test-helpers';

const a: LoadedRelation = { columns: [{ rel: 'a', name: 'id', type: 'int4', key: true }, { rel: 'a', name: 'k', type: 'int4' }, { rel: 'a', name: 'x', type: 'int4' }], rows: [[1n, 1n, 10n], [2n, 2n, 20n], [3n, null, null]] };
const b: LoadedRelation = { columns: [{ rel: 'b', name: 'id', type: 'int4', key: true }, { rel: 'b', name: 'k', type: 'int4' }, { rel: 'b', name: 'y', type: 'int4' }], rows: [[2n, 2n, 200n], [3n, 5n, 300n], [4n, 1n, 400n]] };
const query = (sql: string): { names: string[]; rows: Tuple[] } => runSelect(sql, { a, b });
const state = (sql: string): string | undefined => failure(() => query(sql))?.state;

beforeAll(async () => {
  await loadParser();
});

describe('sql joins and comparisons', () => {
  it('sql join: USING puts the joined column once in front; the sides stay reachable by table name; FULL keeps both sides', () => {
    const r = query('select * from a join b using (id) order by id');
    expect(r.names).toEqual(['id', 'k', 'x', 'k', 'y']);
    expect(r.rows).toEqual([[2n, 2n, 20n, 2n, 200n], [3n, null, null, 5n, 300n]]);
    expect(query('select id, a.id, b.id from a full join b using (id) order by 1').rows).toEqual([[1n, 1n, null], [2n, 2n, 2n], [3n, 3n, 3n], [4n, null, 4n]]);
    expect(query('select a.id, b.id from a full join b on a.k = b.k order by 1, 2').rows).toEqual([[1n, 4n], [2n, 2n], [3n, null], [null, 3n]]);
    expect(query('select * from a natural join b').rows).toEqual([[2n, 2n, 20n, 200n]]);
    expect(query('select x, y from a right join b using (k) order by y').rows).toEqual([[20n, 200n], [null, 300n], [10n, 400n]]);
    expect(state('select id from a join b using (nope)')).toBe('42703');
  });

  it('sql compare: x op ALL (subquery), (a, b) = (c, d), BETWEEN SYMMETRIC, with NULL logic', () => {
    expect(query('select id, x > all (select y / 30 from b) from a order by id').rows).toEqual([[1n, false], [2n, true], [3n, null]]);
    expect(query('select id from a where x > all (select y from b where y > 1000) order by id').rows).toEqual([[1n], [2n], [3n]]);
    expect(query('select (1, null) = (1, 2), (1, null) = (2, 2), (1, 2) <> (1, 2)').rows).toEqual([[null, false, false]]);
    expect(query('select id from a where (id, x) = (2, 20)').rows).toEqual([[2n]]);
    expect(query('select 2 between symmetric 3 and 1, 5 between symmetric null and 4, 2 not between symmetric 3 and 1').rows).toEqual([[true, null, false]]);
  });

  it('sql values: a boolean cast to text is true/false; smallint arithmetic overflows as smallint; inf; to_hex, sha256, array_to_string', () => {
    expect(query("select 'x' || true, false::text, 1.5::float8 < 'inf'::float8, to_hex(255), to_hex(-1), array_to_string('{a,NULL,b}'::text[], '+'), array_to_string('{a,NULL}'::text[], ',', '*')").rows)
      .toEqual([['xtrue', 'false', true, 'ff', 'ffffffff', 'a+b', 'a,*']]);
    expect(state('select 32767::smallint + 1::smallint')).toBe('22003');
    expect(Buffer.from(query("select sha256('abc'::bytea)").rows[0]![0] as Uint8Array).toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('sql joins: LATERAL subqueries and functions in FROM read the row of the items before them; LEFT JOIN LATERAL keeps rows without a match; RIGHT is refused', () => {
    expect(query('select a.id, s.y from a, lateral (select y from b where b.k = a.k order by y desc limit 1) s order by 1').rows).toEqual([[1n, 400n], [2n, 200n]]);
    expect(query('select a.id, s.y from a left join lateral (select y from b where b.k = a.k) s on true order by 1').rows).toEqual([[1n, 400n], [2n, 200n], [3n, null]]);
    expect(query('select a.id, g from a, generate_series(1, a.k) g order by 1, 2').rows).toEqual([[1n, 1n], [2n, 1n], [2n, 2n]]);
    expect(query('select a.id, z.ten from a cross join lateral (select a.x * 10 as ten) z order by 1').rows).toEqual([[1n, 100n], [2n, 200n], [3n, null]]);
    expect(state('select * from a right join lateral (select a.x) s on true')).toBe('42P10');
    expect(state('select * from a, (select a.x) s')).toBe('42703');
  });
});
