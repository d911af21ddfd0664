/**
 * The parse cache (sql/parse-cache.ts): a text that differs from an earlier one only in integer
 * literals gets the tree PostgreSQL's parser gives it — values, locations and statement texts — from
 * the earlier one's template, and texts the cache cannot be sure about are parsed every time.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import * as pg from 'libpg-query';
import { loadParser, parseCache, parseSql } from '../../sql/sql-parser';
import { scanLiterals } from '../../sql/parse-cache';
import { SqlError } from '../../sql/exec/sql-error';

beforeAll(async () => {
  await loadParser();
});

/** What parseSql returns when it parses `sql` itself (the parser's statements and their texts). */
function fresh(sql: string): Array<{ stmt: unknown; sql: string }> {
  return (pg.parseSync(sql).stmts ?? []).map((s) => {
    const start = s.stmt_location ?? 0;
    return { stmt: s.stmt, sql: (s.stmt_len ? sql.slice(start, start + s.stmt_len) : sql.slice(start)).trim() };
  });
}

/** parseSql's statements without the plan cache's template reference (the tree and text are what is compared). */
function parsed(sql: string, useCache = true): Array<{ stmt: unknown; sql: string }> {
  return parseSql(sql, useCache).map((p) => ({ stmt: p.stmt, sql: p.sql }));
}

/** Parse `first` then `second`; the second's statements must be the parser's own. Returns the hits it took. */
function hitsOf(first: string, second: string): number {
  parseSql(first);
  const before = parseCache.hits;
  const got = parsed(second);
  expect(got).toEqual(fresh(second));
  return parseCache.hits - before;
}

describe('sql parse cache', () => {
  it('sql: a text differing in integer literals takes the template, with its own values and locations', () => {
    expect(hitsOf('SELECT abalance FROM pgbench_accounts WHERE aid = 7;', 'SELECT abalance FROM pgbench_accounts WHERE aid = 123456;')).toBe(1);
    expect(hitsOf('select a, b from t where a = 5 and b < 10 and c = $1 order by 1 limit 3', 'select a, b from t where a = 55555 and b < 1 and c = $1 order by 2 limit 30')).toBe(1);
    expect(hitsOf("insert into t values (1, 'a''b 12', 2), (3, 'x', 4) returning k", "insert into t values (100, 'a''b 12', 2000000000), (3, 'x', 42) returning k")).toBe(1);
    expect(hitsOf("update t set s = 'x 12', n = n + 3 where k = 5", "update t set s = 'x 12', n = n + 3333 where k = 6")).toBe(1);
    expect(hitsOf('delete from t where k between 1 and 9; select 22 from u where x = 333', 'delete from t where k between 10 and 99999; select 2 from u where x = 3')).toBe(1);
  });

  it('sql: transaction statements (pgbench -N\'s BEGIN; and END;) take their template, equal to the parser\'s tree', () => {
    for (const t of ['BEGIN;', 'END;', 'commit', 'begin isolation level serializable', 'START TRANSACTION ISOLATION LEVEL REPEATABLE READ', 'savepoint s1', 'rollback to savepoint s1', 'ROLLBACK']) {
      expect(hitsOf(t, t)).toBe(1);
    }
  });

  it('sql: random literal values of a few templates give exactly the parser\'s trees', () => {
    const templates = [
      (a: number) => `SELECT abalance FROM pgbench_accounts WHERE aid = ${a};`,
      (a: number, b: number) => `select x::varchar(${a}), y from t where y in (${a}, ${b}, 3) and z > ${b} offset ${a}`,
      (a: number, b: number) => `UPDATE pgbench_accounts SET abalance = abalance + ${a} WHERE aid = ${b};`,
    ];
    let seed = 7;
    const rnd = (): number => 1 + ((seed = (seed * 1103515245 + 12345) % 2147483648) % 2147483646);
    for (let i = 0; i < 60; i++) {
      const t = templates[i % templates.length]!;
      const sql = t(rnd() % (10 ** (1 + (i % 9))) + 1, rnd());
      expect(parsed(sql)).toEqual(fresh(sql));
    }
  });

  it('sql: a minus right before a literal — folded into a negative constant, or a binary minus — gives the parser\'s tree', () => {
    expect(hitsOf('select -5 from t', 'select -66 from t')).toBe(1);
    expect(hitsOf('UPDATE pgbench_accounts SET abalance = abalance + -4242 WHERE aid = 9;', 'UPDATE pgbench_accounts SET abalance = abalance + -7 WHERE aid = 99999;')).toBe(1);
    expect(hitsOf('select x - -5, (-3), f(-2, 4) from t where k=-1', 'select x - -55, (-333), f(-22, 44) from t where k=-11')).toBe(1);
    // A binary minus stays a plain literal after a minus operator.
    expect(hitsOf('select 3 -5 from t', 'select 30 -50 from t')).toBe(1);
    expect(hitsOf('select k-5 from t', 'select k-500 from t')).toBe(1);
    // A positive text and a negative one have different keys (the minus is part of the key).
    expect(scanLiterals('select -5')!.key).not.toBe(scanLiterals('select 5')!.key);
    // pgbench -N's statements with random signs, against the parser every time.
    let seed = 11;
    const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    for (let i = 0; i < 80; i++) {
      const d = rnd(10001) - 5000 || 1;
      const sql = i % 2 === 0 ? `UPDATE pgbench_accounts SET abalance = abalance + ${d} WHERE aid = ${1 + rnd(100000)};` : `INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (${1 + rnd(10)}, 1, ${1 + rnd(100000)}, ${d}, CURRENT_TIMESTAMP);`;
      expect(parsed(sql)).toEqual(fresh(sql));
    }
  });

  it('sql: a location after a changed literal is shifted (the error caret lands on the new text)', () => {
    parseSql('select 1 from t where k = 5 and nosuch = 1');
    const [s] = parseSql('select 1 from t where k = 5555 and nosuch = 1');
    const where = (s!.stmt as { SelectStmt: { whereClause: { BoolExpr: { args: Array<{ A_Expr: { lexpr: { ColumnRef: { location: number } } } }> } } } }).SelectStmt.whereClause;
    expect(where.BoolExpr.args[1]!.A_Expr.lexpr.ColumnRef.location).toBe('select 1 from t where k = 5555 and '.length);
  });

  it('sql: texts the cache is not sure about are parsed every time', () => {
    // 0 and 2^31 stay in the key.
    expect(scanLiterals('select 0, 2147483648, 1.5, 1e3, t1.c2 from t1')!.literals).toEqual([]);
    expect(hitsOf('select 0, 2147483648 from t where k = 1', 'select 0, 2147483648 from t where k = 2')).toBe(1);
    expect(hitsOf('select 0 from t where k = 1', 'select 3000000000 from t where k = 1')).toBe(0);
    expect(scanLiterals('select 1 -- 2')).toBeUndefined();
    expect(scanLiterals('select 1 /* 2 */')).toBeUndefined();
    expect(scanLiterals("select E'\\n', 1")).toBeUndefined();
    expect(scanLiterals('select $$a$$, 1')).toBeUndefined();
    expect(scanLiterals('select \u0001')).toBeUndefined();
    expect(scanLiterals(`select ${'1, '.repeat(2000)}1`)).toBeUndefined();
    // DDL: parsed every time (CREATE TABLE also carries YugabyteDB's options beside the tree).
    expect(hitsOf('create table p (a varchar(10) primary key)', 'create table p (a varchar(20) primary key)')).toBe(0);
    parseSql('create table q (a int, primary key (a hash)) split into 3 tablets');
    const before = parseCache.hits;
    expect(parseSql('create table q (a int, primary key (a hash)) split into 4 tablets')[0]!.yb?.splitTablets).toBe(4);
    expect(parseCache.hits).toBe(before);
  });

  it('sql: with the cache off (--ysql_parse_cache=false) every text is parsed', () => {
    parseSql('select 1 from t where k = 5');
    const before = parseCache.hits;
    expect(parsed('select 1 from t where k = 6', false)).toEqual(fresh('select 1 from t where k = 6'));
    expect(parseCache.hits).toBe(before);
  });

  it('sql: a syntax error is still 42601 with its position, cached key or not', () => {
    parseSql('select 1 from t where k = 5');
    for (const sql of ['select 1 from t where k = 5 5', 'select 1 from t where k = 555 555']) {
      let err: unknown;
      try {
        parseSql(sql);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SqlError);
      expect((err as SqlError).sqlState).toBe('42601');
      expect((err as SqlError).extra.position).toBe(sql.lastIndexOf(' ') + 2);
    }
  });
});
