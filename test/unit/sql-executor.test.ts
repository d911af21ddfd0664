/**
 * The SQL executor's pure parts over in-memory relations (no cluster): the real PostgreSQL parser,
 * YugabyteDB's key syntax, expressions, aggregates, ordering, joins, UNION, types and errors.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadParser, parseSql, rewriteYugabyteSyntax } from '../../sql/sql-parser';
import { compileSelect, type LoadedRelation } from '../../sql/exec/select';
import type { EvalContext, Tuple } from '../../sql/exec/scope';
import { SqlError } from '../../sql/exec/sql-error';
import { coerce } from '../../sql/exec/sql-types';
import { chooseAccess, describePath } from '../../sql/exec/access';
import type { SqlTableDef } from '../../sql/exec/catalog';
import { dbmsRandomString } from '../../sql/exec/functions';

const people: LoadedRelation = {
  columns: [{ rel: 'people', name: 'id', type: 'int8' }, { rel: 'people', name: 'name', type: 'text' }, { rel: 'people', name: 'team', type: 'int4' }],
  rows: [[1n, 'ann', 1n], [2n, 'bob', 2n], [3n, 'cid', 1n], [4n, 'dee', null]],
};
const teams: LoadedRelation = { columns: [{ rel: 'teams', name: 'id', type: 'int4' }, { rel: 'teams', name: 'title', type: 'text' }], rows: [[1n, 'red'], [2n, 'blue']] };

function ctx(params: unknown[] = [], extensions: string[] = []): EvalContext {
  return { params: params as EvalContext['params'], session: { user: 'yugabyte', database: 'yugabyte', now: new Date('2026-01-02T03:04:05Z'), pid: 1, settings: new Map(), extensions: new Set(extensions) }, outerRows: [], nextval: () => 1n };
}

function query(sql: string, params: unknown[] = [], extensions: string[] = []): { names: string[]; rows: Tuple[] } {
  const [ps] = parseSql(sql);
  if (!ps || !('SelectStmt' in ps.stmt)) throw new Error('not a select');
  const byName: Record<string, LoadedRelation> = { people, teams };
  const plan = compileSelect(ps.stmt.SelectStmt, { paramTypes: params.map(() => 'unknown'), rowsMax: 1000, relation: (rv) => byName[(rv as { relname: string }).relname]! });
  return { names: plan.fields.map((f) => f.name), rows: plan.run(ctx(params, extensions)) };
}

function sqlState(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return e instanceof SqlError ? e.sqlState : `not a SqlError: ${String(e)}`;
  }
  return undefined;
}

beforeAll(async () => {
  await loadParser();
});

describe('sql executor (in memory)', () => {
  it('sql exec: WHERE, ORDER BY DESC, LIMIT/OFFSET and output names', () => {
    const r = query('select id, upper(name) as big from people where team = 1 or team is null order by id desc limit 2 offset 1');
    expect(r.names).toEqual(['id', 'big']);
    expect(r.rows).toEqual([[3n, 'CID'], [1n, 'ANN']]);
  });

  it('sql exec: GROUP BY with count/sum/avg/min/max, HAVING and ordinal ORDER BY', () => {
    const r = query('select team, count(*), sum(id), avg(id), min(name), max(name) from people group by team having count(*) >= 1 order by 1 nulls first');
    // sum(bigint) is numeric in PostgreSQL, kept as its text.
    expect(r.rows).toEqual([[null, 1n, '4', '4.0000000000000000', 'dee', 'dee'], [1n, 2n, '4', '2.0000000000000000', 'ann', 'cid'], [2n, 1n, '2', '2.0000000000000000', 'bob', 'bob']]);
    expect(query('select count(*) from people where id > 100').rows).toEqual([[0n]]);
  });

  it('sql exec: avg() of integers is exact numeric at PostgreSQL\'s division scale; FILTER (WHERE …) and ORDER BY inside an aggregate', () => {
    // 1/3 in float is 0.333…31483; PostgreSQL's numeric division gives 20 digits here, rounded half away from zero.
    expect(query('select avg(x), avg(-x) from (values (1), (0), (0)) v(x)').rows).toEqual([['0.33333333333333333333', '-0.33333333333333333333']]);
    expect(query('select avg(x) from (values (299), (299), (0), (0), (0), (0)) v(x)').rows).toEqual([['99.6666666666666667']]);
    expect(query('select avg(x) from (values (123456789012), (1)) v(x)').rows).toEqual([['61728394506.50000000']]);
    expect(query('select sum(id) filter (where team = 1), count(*) filter (where name > \'b\'), count(*) from people').rows).toEqual([['4', 3n, 4n]]);
    expect(query("select string_agg(name, ',' order by id desc), string_agg(name, '-' order by team nulls first, name desc) from people").rows).toEqual([['dee,cid,bob,ann', 'dee-cid-ann-bob']]);
    expect(query("select team, string_agg(name, ',' order by name desc) filter (where id > 1) from people group by team order by 1").rows).toEqual([[1n, 'cid'], [2n, 'bob'], [null, 'dee']]);
  });

  it('sql exec: numeric to integer rounds halves away from zero, float to integer to even; round() likewise, exactly on numeric text; impossible dates refused (22008)', () => {
    // Each expectation was checked against PostgreSQL 15.
    expect(query("select 1.5::int, 2.5::int, -2.5::int, 0.5::int, -0.5::int, '1.5'::numeric::int, 2.5::float8::int, 3.5::float8::int, -2.5::float8::int").rows).toEqual([[2n, 3n, -3n, 1n, -1n, 2n, 2n, 4n, -2n]]);
    expect(sqlState(() => query("select '1.5'::int"))).toBe('22P02');
    expect(query('select round(2.5), round(-2.5), round(1.2345, 2), round(1.005, 2), round(-1.005, 2), round(99.95, 1)').rows).toEqual([['3', '-3', '1.23', '1.01', '-1.01', '100.0']]);
    expect(query('select round(2.5::float8), round(3.5::float8), round(-2.5::float8)').rows).toEqual([[2, 4, -2]]);
    expect(sqlState(() => query("select '2024-02-30'::date"))).toBe('22008');
    expect(sqlState(() => query("select '2023-02-29 10:00'::timestamp"))).toBe('22008');
    expect(query("select '2024-02-29'::date").rows).toEqual([['2024-02-29']]);
    // String functions as PostgreSQL 15 answers them (trim takes spaces only unless given characters).
    expect(query("select ltrim('xxa', 'x'), btrim('xyaxy', 'xy'), trim(both 'x' from 'xax'), trim(E'\\t a \\t'), position('b' in 'abc'), reverse('abc'), lpad('x', 5, 'ab'), rpad('7', 3, 'x'), lpad('hello', 3), concat_ws(',', 'a', null, 'b')").rows).toEqual([['a', 'a', 'a', '\t a \t', 2n, 'cba', 'ababx', '7xx', 'hel', 'a,b']]);
    // numeric arithmetic and sum/avg are exact (they went through doubles: 0.30000000000000004).
    expect(query('select 0.1 + 0.2, 3.5 * 2, sum(x), avg(x), 2 ^ 10 from (values (0.1), (0.2)) v(x)').rows).toEqual([['0.3', '7.0', '0.3', '0.15000000000000000000', 1024]]);
  });

  it('sql exec: WITH queries — several, in order, with column names, read twice, under UNION; WITH RECURSIVE; duplicate names refused', () => {
    expect(query('with a as (select id, team from people where id > 1), b(n) as (select count(*) from a) select * from b').rows).toEqual([[3n]]);
    expect(query('with a as (select id from people where team = 1) select p.name from people p join a on a.id = p.id order by 1').rows).toEqual([['ann'], ['cid']]);
    expect(query('with a as (select id from people where id < 3) select id from a union all select id from a order by 1').rows).toEqual([[1n], [1n], [2n], [2n]]);
    expect(query('with teams as (select 9 as id, \'x\' as title) select title from teams').rows).toEqual([['x']]);
    // WITH RECURSIVE: the step runs over the previous round's rows until it adds none; UNION drops repeats (it would loop forever with ALL).
    expect(query('with recursive r(n) as (select 1 union all select n + 1 from r where n < 3) select * from r').rows).toEqual([[1n], [2n], [3n]]);
    expect(query('with recursive c(x) as (select 1 union select x from c) select * from c').rows).toEqual([[1n]]);
    expect(query('with recursive f(a, b) as (select 0, 1 union all select b, a + b from f where b < 20) select a from f').rows).toEqual([[0n], [1n], [1n], [2n], [3n], [5n], [8n], [13n]]);
    expect(sqlState(() => query('with recursive r(n) as (select 1 union all select n + 1 from r) select * from r'))).toBe('54000');
    expect(sqlState(() => query('with recursive bad(n) as (select n from bad) select * from bad'))).toBe('42P19');
    expect(sqlState(() => query('with a as (select 1), a as (select 2) select * from a'))).toBe('42712');
  });

  it('sql exec: LEFT JOIN keeps unmatched rows; IN and EXISTS subqueries; UNION removes duplicates', () => {
    expect(query('select p.name, t.title from people p left join teams t on t.id = p.team order by p.id').rows).toEqual([['ann', 'red'], ['bob', 'blue'], ['cid', 'red'], ['dee', null]]);
    expect(query("select name from people where team in (select id from teams where title = 'red') order by name").rows).toEqual([['ann'], ['cid']]);
    expect(query('select title from teams t where exists (select 1 from people p where p.team = t.id and p.id > 2)').rows).toEqual([['red']]);
    expect(query('select team from people where team is not null union select id from teams order by 1').rows).toEqual([[1n], [2n]]);
    // ORDER BY … NULLS, OFFSET and LIMIT apply to the whole UNION (LIMIT was ignored); literals take the column's type.
    expect(query('select id from people union all select id from teams order by 1 desc limit 3 offset 1').rows).toEqual([[3n], [2n], [2n]]);
    expect(query('select team from people union select null order by 1 nulls first').rows).toEqual([[null], [1n], [2n]]);
    expect(query("select 1 union select '2' order by 1").rows).toEqual([[1n], [2n]]);
    expect(sqlState(() => query("select 1 union select 'a'"))).toBe('22P02');
    // jsonb compares equal whatever the key order (PostgreSQL's canonical text); length of bytea is its bytes.
    expect(query(`select '{"b": [1,2], "a": 1}'::jsonb = '{"a":1,"b":[1,2]}'::jsonb, '{"bb":1,"a":{"y":2,"x":"q\\",\\"z"}}'::jsonb::text, length('\\x00ff'::bytea)`).rows).toEqual([[true, '{"a": {"x": "q\\",\\"z", "y": 2}, "bb": 1}', 2n]]);
    // LIKE … ESCAPE (PostgreSQL's like_escape).
    expect(query("select 'a%b' like 'a#%b' escape '#', 'axb' like 'a#%b' escape '#', 'a\\b' like 'a\\b' escape ''").rows).toEqual([[true, false, true]]);
    expect(sqlState(() => query("select 'ab' like 'a#' escape '#'"))).toBe('22025');
  });

  it('sql exec: INTERSECT and EXCEPT, with and without ALL (by counts); unnest of an array in FROM', () => {
    // people.team: 1, 2, 1, NULL; teams.id: 1, 2 (checked against PostgreSQL 15).
    expect(query('select team from people intersect select id from teams order by 1').rows).toEqual([[1n], [2n]]);
    expect(query('select team from people intersect all select id from teams order by 1').rows).toEqual([[1n], [2n]]);
    expect(query('select team from people except select id from teams').rows).toEqual([[null]]);
    expect(query('select team from people except all select id from teams order by 1').rows).toEqual([[1n], [null]]);
    expect(query("select v from unnest('{a,NULL,\"b c\"}'::text[]) as t(v)").rows).toEqual([['a'], [null], ['b c']]);
  });

  it('sql exec: generate_series and unnest in the target list expand each row, shorter results padded with NULL (PostgreSQL 10+)', () => {
    expect(query('select generate_series(1, 3) + 1 as x').rows).toEqual([[2n], [3n], [4n]]);
    expect(query('select id, generate_series(1, team), generate_series(1, 2) from people where id < 3 order by 1, 2').rows).toEqual([[1n, 1n, 1n], [1n, null, 2n], [2n, 1n, 1n], [2n, 2n, 2n]]);
    expect(sqlState(() => query('select id from people where generate_series(1, 2) = 1'))).toBe('0A000');
  });

  it('sql exec: generate_series, parameters as unknown-typed text, casts, CASE, coalesce, string functions', () => {
    expect(query('select sum(x) from generate_series(1, $1) as g(x)', ['10']).rows).toEqual([[55n]]);
    expect(query("select '7'::int + 1, coalesce(null, 'z'), case when 1 > 2 then 'a' else 'b' end, length('héllo'), substr('abcdef', 2, 3), md5('a'), repeat('ab', 3)").rows).toEqual([
      [8n, 'z', 'b', 5n, 'bcd', '0cc175b9c0f1b6a831c399e269772661', 'ababab'],
    ]);
    expect(query("select now(), '2026-12-06 10:11:42.547+00'::timestamp").rows).toEqual([['2026-01-02 03:04:05+00', '2026-12-06 10:11:42.547']]);
  });

  it("sql exec: dbms_random.string needs CREATE EXTENSION orafce; then gives len characters of its class", () => {
    expect(sqlState(() => query("select dbms_random.string('U', 3)"))).toBe('42883');
    const [[s]] = query("select dbms_random.string('U', 64)", [], ['orafce']).rows as [[string]];
    expect(s).toMatch(/^[A-Z]{64}$/);
    expect(dbmsRandomString('p', 1000)).toMatch(/^[ -~]{1000}$/);
    for (const len of [0, 1, 2, 3, 5, 1025]) expect(dbmsRandomString('x', len)).toMatch(new RegExp(`^[A-Z0-9]{${len}}$`));
    // A MiB of 'P': every printable character, each near 1/95 of the string.
    const big = dbmsRandomString('P', 1 << 20);
    const counts = new Map<string, number>();
    for (const ch of big) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(95);
    for (const c of counts.values()) expect(Math.abs(c - (1 << 20) / 95)).toBeLessThan(0.08 * ((1 << 20) / 95));
    expect(dbmsRandomString('P', 4096)).not.toBe(dbmsRandomString('P', 4096));
  });

  it('sql exec: errors carry their SQLSTATE (syntax with position, unknown column, bad input, division by zero, unsupported)', () => {
    try {
      parseSql('select * frm people');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(SqlError);
      expect((e as SqlError).sqlState).toBe('42601');
      expect((e as SqlError).extra.position).toBe(10);
    }
    expect(sqlState(() => query('select nope from people'))).toBe('42703');
    expect(sqlState(() => query("select 'x'::bigint"))).toBe('22P02');
    expect(sqlState(() => query('select 1 / 0'))).toBe('22012');
    expect(sqlState(() => query('select * from people tablesample system (10)'))).toBe('0A000');
    expect(sqlState(() => coerce(40000n, 'int2'))).toBe('22003');
    // More rows than ysql_rows_in_memory_max (1000 here) in one statement: 54000, not an out-of-memory crash.
    expect(sqlState(() => query('select count(*) from generate_series(1, 5000)'))).toBe('54000');
  });
});

describe('sql parser and access paths', () => {
  it("sql parser: YugabyteDB's PRIMARY KEY ((a) HASH, b ASC) and SPLIT INTO N TABLETS become options of a PostgreSQL CREATE TABLE", () => {
    const rw = rewriteYugabyteSyntax('create table t (a int, b int, c text, primary key ((a) hash, b asc)) split into 3 tablets');
    expect(rw.options).toEqual([{ primaryKey: { hash: ['a'], range: [{ name: 'b', desc: false }] }, splitTablets: 3 }]);
    const [ps] = parseSql('create table t (a int, b int, c text, primary key ((a) hash, b asc)) split into 3 tablets');
    expect(ps!.yb).toEqual(rw.options[0]);
    expect('CreateStmt' in ps!.stmt).toBe(true);
    expect(rewriteYugabyteSyntax('create table t (a int primary key)').options).toEqual([]);
  });

  it('sql access: key equality is a point read, hash equality a range scan, anything else a full scan', () => {
    const def: SqlTableDef = { name: 't', oid: 1, columns: [{ name: 'h', type: 'int8', typmod: -1, notNull: true }, { name: 'r', type: 'int8', typmod: -1, notNull: true }, { name: 'v', type: 'text', typmod: -1, notNull: false }], hash: ['h'], range: ['r'], stored: true, hasPrimaryKey: true };
    const where = (sql: string): unknown => {
      const [ps] = parseSql(`select * from t where ${sql}`);
      return (ps!.stmt as { SelectStmt: { whereClause: unknown } }).SelectStmt.whereClause;
    };
    const env = { paramTypes: [], subquery: () => { throw new Error('no'); } };
    expect(chooseAccess(def, 't', where('h = 1 and r = 2') as never, env, ctx())).toEqual({ type: 'point', key: { h: 1n, r: 2n } });
    expect(chooseAccess(def, 't', where('h = 1 and r >= 5 and r < 9') as never, env, ctx())).toEqual({ type: 'hashScan', hashKey: { h: 1n }, rangeStart: { r: 5n }, rangeEnd: { r: 9n } });
    expect(chooseAccess(def, 't', where("v = 'x'") as never, env, ctx())).toEqual({ type: 'full' });
    // BETWEEN bounds a range scan as its two comparisons do.
    const between = chooseAccess(def, 't', where('h = 1 and r between 5 and 8') as never, env, ctx());
    expect(between).toEqual(chooseAccess(def, 't', where('h = 1 and r >= 5 and r <= 8') as never, env, ctx()));
    expect(between).toMatchObject({ type: 'hashScan', rangeStart: { r: 5n } });
    // A range table keyed by text first: equality and comparisons on it bound the scan.
    const tdef: SqlTableDef = { name: 't', oid: 2, columns: [{ name: 'a', type: 'text', typmod: -1, notNull: true }, { name: 'b', type: 'int8', typmod: -1, notNull: true }], hash: [], range: ['a', 'b'], stored: true, hasPrimaryKey: true };
    expect(chooseAccess(tdef, 't', where("a = 'p'") as never, env, ctx())).toEqual({ type: 'hashScan', hashKey: {}, rangeStart: { a: 'p' }, rangeEnd: { a: 'p\u0000' } });
    expect(chooseAccess(tdef, 't', where("a > 'f' and a <= 'h' and b = 3") as never, env, ctx())).toEqual({ type: 'hashScan', hashKey: {}, rangeStart: { a: 'f\u0000' }, rangeEnd: { a: 'h\u0000' } });
    expect(chooseAccess(tdef, 't', where("a = 'p' and b = 3") as never, env, ctx())).toEqual({ type: 'point', key: { a: 'p', b: 3n } });
    // A bound with a character at or above U+D800 orders differently as UTF-8 and UTF-16: no bound.
    expect(chooseAccess(tdef, 't', where("a >= '\u{1F600}'") as never, env, ctx())).toEqual({ type: 'full' });
    expect(describePath(tdef, chooseAccess(tdef, 't', where("a > 'f' and a <= 'it''s'") as never, env, ctx()))).toBe("Range scan on t (range-partitioned; after a = 'f'; through a = 'it''s')");
  });
});
