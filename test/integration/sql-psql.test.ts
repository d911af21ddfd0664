/**
 * SQL over the PostgreSQL wire protocol on a real cluster (1 master, 3 tservers, RF 3), driven by the
 * real `psql` and `pgbench` (Debian postgresql-client) and the `pg` npm client: the YugabyteDB blog's
 * statements verbatim, \dt and \d demo, SQLSTATEs of the common errors (the session stays usable),
 * the extended protocol with parameters, garbage on the port, and a short pgbench run with no failures.
 * Without psql the psql/pgbench parts skip and say why, unless TESSERA_REQUIRE_PSQL=1 (CI sets it).
 */
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { ProcCluster, waitFor } from './cluster-harness';
import { TesseraClient } from '../../client/tessera-client';
import { tabletServerMethods } from '../../rpc';

const HOST_BASE = 120;
let cluster: ProcCluster | undefined;
let host = '';
let port = 0;

const havePsql = spawnSync('psql', ['--version']).status === 0;
const havePgbench = spawnSync('pgbench', ['--version']).status === 0;
if ((!havePsql || !havePgbench) && process.env['TESSERA_REQUIRE_PSQL'] === '1') throw new Error('psql or pgbench is not installed but TESSERA_REQUIRE_PSQL=1 (apt-get install postgresql-client postgresql)');
if (!havePsql) console.warn('SKIP psql/pgbench parts of test/integration/sql-psql: psql not installed (apt-get install postgresql-client)');
else if (!havePgbench) console.warn('SKIP the pgbench part of test/integration/sql-psql: pgbench not installed (Debian 12: apt-get install postgresql)');

function psql(sql: string, extra: string[] = []): { status: number; stdout: string; stderr: string } {
  const r = spawnSync('psql', ['-X', '-v', 'ON_ERROR_STOP=1', '-h', host, '-p', String(port), '-U', 'yugabyte', '-d', 'yugabyte', ...extra], { input: sql, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

async function connect(): Promise<Client> {
  const c = new Client({ host, port, user: 'yugabyte', database: 'yugabyte' });
  await c.connect();
  return c;
}

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: HOST_BASE, masters: 1, tservers: 3 });
  await cluster.startAll();
  const pg = cluster.tservers[0]!.pgAddress!;
  host = pg.slice(0, pg.lastIndexOf(':'));
  port = Number(pg.slice(pg.lastIndexOf(':') + 1));
  // The endpoint answers once its client reached the masters and the catalog tables exist.
  await waitFor('SQL endpoint answers', 60_000, async () => {
    try {
      const c = await connect();
      await c.query('select 1');
      await c.end();
      return true;
    } catch {
      return false;
    }
  }, 500);
}, 180_000);

afterAll(async () => {
  await cluster?.destroy();
});

describe('SQL over the PostgreSQL protocol', () => {
  it.skipIf(!havePsql)(`sql: the blog statements verbatim in psql, then \\dt and \\d demo${havePsql ? '' : ' (skipped: psql is not installed)'}`, () => {
    const blog = [
      'create extension orafce;',
      'create table demo (id bigserial primary key, value text);',
      'begin transaction;',
      "insert into demo(value) select dbms_random.string('P',1024*1024) from generate_series(1,100);",
      'commit;',
      'select count(*) from demo;',
    ].join('\n');
    const r = psql(blog);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/CREATE EXTENSION\nCREATE TABLE\nBEGIN\nINSERT 0 100\nCOMMIT\n count \n-------\n   100\n/);
    const dt = psql('\\dt');
    expect(dt.status).toBe(0);
    expect(dt.stdout).toMatch(/public \| demo +\| table \| yugabyte/);
    const d = psql('\\d demo');
    expect(d.status).toBe(0);
    expect(d.stdout).toContain('Table "public.demo"');
    expect(d.stdout).toMatch(/ id +\| bigint +\| +\| not null \| nextval\('demo_id_seq'::regclass\)/);
    expect(d.stdout).toMatch(/ value +\| text/);
    expect(d.stdout).toContain('"demo_pkey" PRIMARY KEY, lsm (id HASH)');
    const len = psql('select min(length(value)), max(length(value)), count(distinct id) from demo;', ['-At']);
    expect(len.stdout.trim()).toBe('1048576|1048576|100');
  }, 240_000);

  it('sql: SQLSTATEs of common errors, and the session stays usable after each', async () => {
    const c = await connect();
    try {
      const code = async (sql: string): Promise<string | undefined> => c.query(sql).then(() => undefined, (e: { code?: string }) => e.code);
      await c.query('create table kv (k bigint primary key, v text not null)');
      await c.query("insert into kv values (1, 'one')");
      expect(await code('selec 1')).toBe('42601');
      expect(await code('select * from no_such_table')).toBe('42P01');
      expect(await code('select no_such_column from kv')).toBe('42703');
      expect(await code('create table kv (k int primary key)')).toBe('42P07');
      expect(await code("insert into kv values (1, 'again')")).toBe('23505');
      expect(await code('insert into kv values (2, null)')).toBe('23502');
      expect(await code("select 'abc'::int")).toBe('22P02');
      expect(await code('select * from kv tablesample system (10)')).toBe('0A000');
      expect(await code('select k, count(*) from kv group by v')).toBe('42803');
      expect(await code('select * from kv where v = 1')).toBe('42883');
      // A literal that cannot take its column's type fails when planned, also with no row to update.
      expect(await code("update kv set k = 'x' where k = 99")).toBe('22P02');
      expect(await code("select 'notadate'::date")).toBe('22007');
      expect(await code('select abs(-2147483648)')).toBe('22003');
      await c.query('begin');
      expect(await code('select * from no_such_table')).toBe('42P01');
      expect(await code('select 1')).toBe('25P02');
      await c.query('rollback');
      const r = await c.query('select k, v from kv where k = $1', [1]);
      expect(r.rows).toEqual([{ k: '1', v: 'one' }]);
    } finally {
      await c.end();
    }
  });

  it('sql: extended protocol with parameters, RETURNING, transactions and a rollback', async () => {
    const c = await connect();
    try {
      await c.query('create table acct (id int primary key, balance bigint not null default 0)');
      const ins = await c.query('insert into acct (id, balance) values ($1, $2), ($3, $4) returning id, balance', [1, 100, 2, 50]);
      expect(ins.rows).toEqual([{ id: 1, balance: '100' }, { id: 2, balance: '50' }]);
      await c.query('begin');
      await c.query('update acct set balance = balance - $1 where id = $2', [30, 1]);
      await c.query('update acct set balance = balance + $1 where id = $2', [30, 2]);
      await c.query('commit');
      await c.query('begin');
      await c.query('delete from acct where id = $1', [1]);
      await c.query('rollback');
      const rows = await c.query({ text: 'select id, balance from acct where id >= $1 order by id', values: [1] });
      expect(rows.rows).toEqual([{ id: 1, balance: '70' }, { id: 2, balance: '80' }]);
      const agg = await c.query('select count(*) as n, sum(balance) as total from acct');
      expect(agg.rows).toEqual([{ n: '2', total: '150' }]);
    } finally {
      await c.end();
    }
  });

  it('sql: INSERT … ON CONFLICT (key) DO UPDATE inserts new keys, updates existing ones from excluded, honours WHERE and RETURNING; bad targets get their SQLSTATE', async () => {
    const c = await connect();
    try {
      const code = async (sql: string): Promise<string | undefined> => c.query(sql).then(() => undefined, (e: { code?: string }) => e.code);
      await c.query('create table hits (page text primary key, n bigint not null, note text)');
      await c.query("insert into hits values ('a', 1, 'first')");
      const r = await c.query("insert into hits as h values ('a', 5, 'x'), ('b', 2, 'y') on conflict (page) do update set n = h.n + excluded.n returning page, n, note");
      expect(r.rowCount).toBe(2);
      expect(r.rows).toEqual([{ page: 'a', n: '6', note: 'first' }, { page: 'b', n: '2', note: 'y' }]);
      // WHERE of DO UPDATE: a row it rejects is neither updated nor counted.
      const w = await c.query("insert into hits values ('a', 100, null), ('c', 3, null) on conflict (page) do update set n = excluded.n where hits.n > 1000");
      expect(w.rowCount).toBe(1);
      const all = await c.query('select page, n, note from hits order by page');
      expect(all.rows).toEqual([{ page: 'a', n: '6', note: 'first' }, { page: 'b', n: '2', note: 'y' }, { page: 'c', n: '3', note: null }]);
      await c.query("insert into hits values ('c', 0, 'set') on conflict on constraint hits_pkey do update set note = excluded.note");
      expect((await c.query("select note from hits where page = 'c'")).rows).toEqual([{ note: 'set' }]);
      expect(await code("insert into hits values ('a', 1) on conflict do update set n = 0")).toBe('42601');
      expect(await code("insert into hits values ('a', 1) on conflict (n) do update set n = 0")).toBe('42P10');
      expect(await code("insert into hits values ('d', 1), ('d', 2) on conflict (page) do update set n = excluded.n")).toBe('21000');
      expect(await code("insert into hits values ('e', 1), ('f')")).toBe('42601');
      expect(await code("insert into hits values ('a', 1) on conflict (page) do update set n = null")).toBe('23502');
      expect((await c.query("select n from hits where page = 'a'")).rows).toEqual([{ n: '6' }]);
    } finally {
      await c.end();
    }
  });

  /** A CancelRequest on a fresh connection: length 16, code 80877102, the backend key of `c`. */
  async function sendCancel(c: Client): Promise<void> {
    const key = c as unknown as { processID: number; secretKey: number };
    const req = Buffer.alloc(16);
    req.writeInt32BE(16, 0);
    req.writeInt32BE(80877102, 4);
    req.writeInt32BE(key.processID, 8);
    req.writeInt32BE(key.secretKey, 12);
    await new Promise<void>((resolve) => {
      const s = net.connect(port, host, () => s.end(req));
      s.on('close', () => resolve());
      s.on('error', () => resolve());
    });
  }

  it('sql: a CancelRequest stops a running INSERT, and a pg_sleep, with 57014; none of the INSERT\'s rows commit; the session goes on', async () => {
    const a = await connect();
    const b = await connect();
    try {
      await a.query('create table big (id bigserial primary key, v text)');
      let answered = false;
      const running = a.query("insert into big(v) select repeat('x', 1000000) from generate_series(1, 60)").then(
        () => 'done',
        (e: { code?: string }) => e.code ?? 'no code',
      ).finally(() => (answered = true));
      // Cancel once the statement is running on the server (its connection is active, not yet answered).
      await waitFor('insert running', 30_000, async () => (await b.query("select 1 as one")).rows.length === 1 && !answered);
      await sendCancel(a);
      expect(await running).toBe('57014');
      expect((await a.query('select count(*)::int as n from big')).rows).toEqual([{ n: 0 }]);
      // pg_sleep waits in the statement and a CancelRequest ends the wait (600 s: the test ends only by the cancel).
      answered = false;
      const sleeping = a.query('select pg_sleep(600)').then(() => 'done', (e: { code?: string }) => e.code ?? 'no code').finally(() => (answered = true));
      await waitFor('pg_sleep running', 30_000, async () => (await b.query('select 1 as one')).rows.length === 1 && !answered);
      await sendCancel(a);
      expect(await sleeping).toBe('57014');
      expect((await a.query("select pg_sleep(0.01) as s, 1 as one")).rows).toEqual([{ s: '', one: 1 }]);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('sql: PREPARE / EXECUTE / DEALLOCATE; CREATE TABLE AS [WITH NO DATA]; WITH before UPDATE, INSERT and DELETE; RESET goes back to the default; SHOW ALL', async () => {
    const c = await connect();
    try {
      await c.query('create table pe (id int primary key, s text)');
      await c.query("insert into pe values (1, 'a'), (2, 'b'), (3, 'c')");
      await c.query('prepare pq (int) as select s from pe where id = $1');
      expect((await c.query('execute pq(2)')).rows).toEqual([{ s: 'b' }]);
      await c.query("prepare pu (text, int) as update pe set s = $1 where id = $2");
      expect((await c.query("execute pu('z', 3)")).rowCount).toBe(1);
      expect((await c.query('execute pq(3)')).rows).toEqual([{ s: 'z' }]);
      expect(await c.query('prepare pq as select 1').catch((e: { code?: string }) => e.code)).toBe('42P05');
      expect(await c.query('execute pq(1, 2)').catch((e: { code?: string }) => e.code)).toBe('42601');
      await c.query('deallocate pq');
      expect(await c.query('execute pq(1)').catch((e: { code?: string }) => e.code)).toBe('26000');
      const ctas = await c.query('create table pe2 as select id, upper(s) as u from pe where id < 3');
      expect(ctas.command).toBe('SELECT');
      expect(ctas.rowCount).toBe(2);
      expect((await c.query('select * from pe2 order by id')).rows).toEqual([{ id: 1, u: 'A' }, { id: 2, u: 'B' }]);
      await c.query('create table pe3 (k, v) as select id, s from pe with no data');
      expect((await c.query('select count(*)::int as n from pe3')).rows).toEqual([{ n: 0 }]);
      expect((await c.query("select column_name from information_schema.columns where table_name = 'pe3' order by ordinal_position")).rows.map((r: { column_name: string }) => r.column_name)).toEqual(['k', 'v']);
      // WITH (SELECT) queries before UPDATE, DELETE and INSERT.
      await c.query('with x as (select id from pe where id < 3) update pe set s = upper(s) where id in (select id from x)');
      expect((await c.query('select s from pe order by id')).rows.map((r: { s: string }) => r.s)).toEqual(['A', 'B', 'z']);
      await c.query('with src as (select id + 10 as id, s from pe) insert into pe select * from src where id = 11');
      expect((await c.query('with d as (select id from pe where id > 10) delete from pe where id in (select id from d) returning id')).rows).toEqual([{ id: 11 }]);
      await c.query('set application_name = x');
      await c.query('reset application_name');
      expect((await c.query('show application_name')).rows).toEqual([{ application_name: '' }]);
      await c.query('reset timezone');
      expect((await c.query('show timezone')).rows).toEqual([{ timezone: 'UTC' }]);
      const all = await c.query('show all');
      expect(all.fields.map((f) => f.name)).toEqual(['name', 'setting', 'description']);
      expect(all.rows.find((r: { name: string }) => r.name === 'yb_read_time')?.setting).toBe('0');
    } finally {
      await c.end();
    }
  });

  it('sql: CREATE SEQUENCE [START], nextval in SELECT and in a column DEFAULT, currval, lastval, setval [is_called false], DROP SEQUENCE', async () => {
    const c = await connect();
    try {
      await c.query('create sequence sq1 start 5');
      expect((await c.query("select nextval('sq1') as a, nextval('sq1') as b")).rows).toEqual([{ a: '5', b: '6' }]);
      expect((await c.query("select currval('sq1') as c, lastval() as l")).rows).toEqual([{ c: '6', l: '6' }]);
      await c.query("select setval('sq1', 100)");
      expect((await c.query("select nextval('sq1') as n")).rows).toEqual([{ n: '101' }]);
      await c.query("select setval('sq1', 200, false)");
      expect((await c.query("select nextval('sq1') as n")).rows).toEqual([{ n: '200' }]);
      expect(await c.query('create sequence sq1').catch((e: { code?: string }) => e.code)).toBe('42P07');
      expect(await c.query("select nextval('nope')").catch((e: { code?: string }) => e.code)).toBe('42P01');
      await c.query('create sequence sq2');
      expect(await c.query("select currval('sq2')").catch((e: { code?: string }) => e.code)).toBe('55000');
      await c.query("create table sqt (id int primary key default nextval('sq2'), v text)");
      await c.query("insert into sqt (v) values ('a'), ('b')");
      await c.query("insert into sqt (v) values ('c')");
      expect((await c.query('select id, v from sqt order by id')).rows).toEqual([{ id: 1, v: 'a' }, { id: 2, v: 'b' }, { id: 3, v: 'c' }]);
      await c.query('drop sequence sq1');
      expect(await c.query("select nextval('sq1')").catch((e: { code?: string }) => e.code)).toBe('42P01');
      expect(await c.query('drop sequence sq1').catch((e: { code?: string }) => e.code)).toBe('42P01');
      await c.query('drop sequence if exists sq1');
    } finally {
      await c.end();
    }
  });

  it('sql: SELECT … FOR UPDATE in a block holds the rows it read — write skew through locked rows is refused (at most one of two crossing blocks commits); SKIP LOCKED is 0A000; EXPLAIN ANALYZE runs the statement', async () => {
    const a = await connect();
    const b = await connect();
    const step = (c: Client, sql: string): Promise<string> => c.query(sql).then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code');
    try {
      await a.query('create table fu (id int primary key, bal int)');
      await a.query('insert into fu values (1, 100), (2, 50)');
      // Each block locks one row and writes the other: under snapshot isolation without the locks both
      // commit (write skew: no row is written twice). With them the second write meets the other's lock.
      await a.query('begin');
      await b.query('begin');
      expect((await a.query('select bal from fu where id = 1 for update')).rows).toEqual([{ bal: 100 }]);
      expect((await b.query('select bal from fu where id = 2 for update')).rows).toEqual([{ bal: 50 }]);
      const aWrite = await step(a, 'update fu set bal = bal + 1 where id = 2');
      const bWrite = await step(b, 'update fu set bal = bal + 1 where id = 1');
      const aCommit = await a.query('commit').then((r) => (r.command === 'COMMIT' ? 'ok' : r.command), () => 'failed');
      const bCommit = await b.query('commit').then((r) => (r.command === 'COMMIT' ? 'ok' : r.command), () => 'failed');
      const committed = [aWrite === 'ok' && aCommit === 'ok', bWrite === 'ok' && bCommit === 'ok'].filter(Boolean).length;
      expect(committed).toBeLessThanOrEqual(1);
      const rows = (await a.query('select id, bal from fu order by id')).rows;
      expect(rows).toEqual(committed === 0 ? [{ id: 1, bal: 100 }, { id: 2, bal: 50 }] : aWrite === 'ok' && aCommit === 'ok' ? [{ id: 1, bal: 100 }, { id: 2, bal: 51 }] : [{ id: 1, bal: 101 }, { id: 2, bal: 50 }]);
      expect(await step(a, 'select * from fu for update skip locked')).toBe('0A000');
      // Only the FROM list's tables are locked: a table a subquery reads stays free for writers.
      await a.query('create table fu2 (id int primary key, m int)');
      await a.query('insert into fu2 values (1, 0)');
      await a.query('begin');
      expect((await a.query('select id from fu where bal > (select m from fu2 where id = 1) and id = 1 for update')).rows.length).toBeLessThanOrEqual(1);
      expect(await step(b, 'update fu2 set m = 5 where id = 1')).toBe('ok');
      expect(await step(a, 'commit')).toBe('ok');
      // Outside a block it reads (nothing is held after the statement, as in PostgreSQL).
      expect((await a.query('select id from fu where id = 2 for share')).rows).toEqual([{ id: 2 }]);
      // EXPLAIN ANALYZE runs the statement (an UPDATE changes the row, as in PostgreSQL) and says what it did.
      const plan = (await a.query('explain analyze update fu set bal = 7 where id = 2')).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']);
      expect(plan[0]).toMatch(/^Update on fu via Point read/);
      expect(plan).toContain('Actual rows: 1');
      expect(plan.some((l: string) => /^Execution Time: [\d.]+ ms$/.test(l))).toBe(true);
      expect((await a.query('select bal from fu where id = 2')).rows).toEqual([{ bal: 7 }]);
      expect((await a.query('explain (analyze false) select * from fu')).rows.some((r: { 'QUERY PLAN': string }) => r['QUERY PLAN'].startsWith('Actual rows'))).toBe(false);
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('sql: CREATE [OR REPLACE] VIEW (column names, views over views, joins), DROP VIEW; writing to a view is 0A000; a bad view is refused when created', async () => {
    const c = await connect();
    const code = (sql: string): Promise<string | undefined> => c.query(sql).then(() => undefined, (e: { code?: string }) => e.code);
    try {
      await c.query('create table vt (id int primary key, g int, s text)');
      await c.query("insert into vt select i, i % 3, 'x' || i from generate_series(1, 10) i");
      await c.query('create view vv as select id, s from vt where g = 1');
      expect((await c.query('select id from vv order by id')).rows.map((r: { id: number }) => r.id)).toEqual([1, 4, 7, 10]);
      expect((await c.query('select vv.s, vt.g from vv join vt on vt.id = vv.id where vv.id = 4')).rows).toEqual([{ s: 'x4', g: 1 }]);
      await c.query('create view vv2 (k, label) as select id, upper(s) from vv where id > 3');
      expect((await c.query('select label from vv2 where k = 7')).rows).toEqual([{ label: 'X7' }]);
      expect(await code('create view vv as select 1')).toBe('42P07');
      expect(await code('create view vt as select 1')).toBe('42P07');
      await c.query('create or replace view vv as select id, s from vt where g = 2');
      expect((await c.query('select count(*)::int as n from vv2')).rows).toEqual([{ n: 2 }]);
      expect(await code("update vv set s = 'y'")).toBe('0A000');
      expect(await code('create view bad as select nope from vt')).toBe('42703');
      expect(await code('drop view vt')).toBe('42809');
      expect(await code('drop view nope')).toBe('42P01');
      await c.query('drop view if exists nope');
      if (havePsql) {
        // psql lists it as a view, with its columns' types and its definition.
        const d = psql('\\dv\n\\d+ vv2\n');
        expect(d.status).toBe(0);
        expect(d.stdout).toMatch(/vv2\s+\|\s+view/);
        expect(d.stdout).toContain('View "public.vv2"');
        expect(d.stdout).toMatch(/label\s+\|\s+text/);
        expect(d.stdout).toContain('View definition:');
      }
      await c.query('drop view vv2');
      expect(await code('select * from vv2')).toBe('42P01');
    } finally {
      await c.end();
    }
  });

  it('sql: garbage on the port closes that connection only', async () => {
    const c = await connect();
    try {
      const answer = await new Promise<string>((resolve) => {
        const s = net.connect(port, host, () => s.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')));
        let got = '';
        s.on('data', (d) => (got += d.toString('latin1')));
        s.on('close', () => resolve(got));
        s.on('error', () => resolve(got));
      });
      expect(answer).toContain('08P01');
      expect((await c.query('select 41 + 1 as x')).rows).toEqual([{ x: 42 }]);
    } finally {
      await c.end();
    }
  });

  it('sql: CREATE [UNIQUE] INDEX — backfilled, used by the planner for = and ranges, kept with every write in its transaction; 23505 names the index; concurrent inserts of one value: one wins', async () => {
    const c = await connect();
    const code = async (sql: string): Promise<string> => c.query(sql).then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code');
    try {
      await c.query('create table people (id bigint primary key, email text, age int)');
      await c.query("insert into people values (1, 'a@x', 31), (2, 'b@x', 42), (3, null, 35), (4, 'c@x', 35)");
      expect(await code('create unique index people_email on people (email)')).toBe('ok');
      expect(await code('create index on people (age)')).toBe('ok');
      const plan = (await c.query("explain select * from people where email = 'b@x'")).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('Index scan using people_email on people');
      expect((await c.query("select id from people where email = 'b@x'")).rows).toEqual([{ id: '2' }]);
      const agePlan = (await c.query('explain select id from people where age >= 32 and age < 40')).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(agePlan).toContain('Index scan using people_age_idx');
      expect((await c.query('select id from people where age >= 32 and age < 40 order by id')).rows).toEqual([{ id: '3' }, { id: '4' }]);
      // UNIQUE: a second 'a@x' is refused with the index's name; NULLs are never equal.
      const dup = await c.query("insert into people values (5, 'a@x', 20)").then(() => undefined, (e: { code?: string; message?: string }) => e);
      expect(dup?.code).toBe('23505');
      expect(dup?.message).toContain('people_email');
      expect(await code('insert into people values (6, null, 20)')).toBe('ok');
      // Update and delete move and remove entries.
      await c.query("update people set email = 'a2@x', age = 50 where id = 1");
      expect((await c.query("select id from people where email = 'a@x'")).rows).toEqual([]);
      expect((await c.query("select id from people where email = 'a2@x'")).rows).toEqual([{ id: '1' }]);
      expect((await c.query('select id from people where age = 50')).rows).toEqual([{ id: '1' }]);
      await c.query('delete from people where id = 2');
      expect((await c.query("select id from people where email = 'b@x'")).rows).toEqual([]);
      expect(await code("insert into people values (7, 'b@x', 1)")).toBe('ok');
      // A rolled-back insert leaves no entry behind.
      await c.query('begin');
      await c.query("insert into people values (8, 'z@x', 1)");
      expect((await c.query("select id from people where email = 'z@x'")).rows).toEqual([{ id: '8' }]);
      await c.query('rollback');
      expect((await c.query("select id from people where email = 'z@x'")).rows).toEqual([]);
      expect(await code("insert into people values (9, 'z@x', 1)")).toBe('ok');
      // Concurrent inserts of one new value from several sessions: exactly one commits.
      const others = await Promise.all(Array.from({ length: 6 }, () => connect()));
      try {
        const outcomes = await Promise.all(others.map((o, i) => o.query(`insert into people values (${100 + i}, 'race@x', 1)`).then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code')));
        expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
        for (const o of outcomes) expect(['ok', '23505', '40001']).toContain(o);
      } finally {
        await Promise.all(others.map((o) => o.end()));
      }
      expect((await c.query("select count(*)::int as n from people where email = 'race@x'")).rows).toEqual([{ n: 1 }]);
      // A unique index over duplicates is refused and leaves nothing behind; DROP INDEX goes back to a full scan.
      expect(await code('create unique index people_age_key on people (age)')).toBe('23505');
      expect(await code('drop index people_email')).toBe('ok');
      expect(await code('drop index people_email')).toBe('42704');
      expect(await code('drop index if exists people_email')).toBe('ok');
      const after = (await c.query("explain select * from people where email = 'b@x'")).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(after).toContain('Full scan on people');
      const tables = (await c.query("select table_name from information_schema.tables where table_name like 'sql_index%'")).rows;
      expect(tables).toEqual([]);
      await c.query('drop table people');
    } finally {
      await c.end();
    }
  });

  it('sql: SAVEPOINT, ROLLBACK TO SAVEPOINT and RELEASE undo exactly the writes since the savepoint (rows and index entries), recover a block after an error, and name their errors', async () => {
    const c = await connect();
    const code = async (sql: string): Promise<string> => c.query(sql).then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code');
    const rows = async (): Promise<unknown[]> => (await c.query('select id, v from sp order by id')).rows;
    try {
      await c.query('create table sp (id int primary key, v text)');
      await c.query('create unique index sp_v on sp (v)');
      await c.query('begin');
      await c.query("insert into sp values (1, 'a')");
      await c.query('savepoint s1');
      await c.query("insert into sp values (2, 'b')");
      await c.query("update sp set v = 'a2' where id = 1");
      expect(await rows()).toEqual([{ id: 1, v: 'a2' }, { id: 2, v: 'b' }]);
      await c.query('rollback to savepoint s1');
      expect(await rows()).toEqual([{ id: 1, v: 'a' }]);
      await c.query("insert into sp values (3, 'c')");
      await c.query('savepoint s2');
      await c.query('delete from sp where id = 1');
      await c.query('release savepoint s2');
      expect(await rows()).toEqual([{ id: 3, v: 'c' }]);
      await c.query('rollback to s1');
      expect(await rows()).toEqual([{ id: 1, v: 'a' }]);
      // The index entries went back too: 'b' and 'c' are free again, 'a' is taken.
      expect(await code("insert into sp values (4, 'b')")).toBe('ok');
      await c.query('savepoint s3');
      expect(await code("insert into sp values (5, 'a')")).toBe('23505');
      expect(await code('select 1')).toBe('25P02');
      expect(await code('rollback to savepoint s3')).toBe('ok');
      expect(await rows()).toEqual([{ id: 1, v: 'a' }, { id: 4, v: 'b' }]);
      await c.query('commit');
      expect(await rows()).toEqual([{ id: 1, v: 'a' }, { id: 4, v: 'b' }]);
      expect((await c.query("select id from sp where v = 'c'")).rows).toEqual([]);
      // Errors: outside a block, and an unknown name.
      expect(await code('savepoint x')).toBe('25P01');
      expect(await code('rollback to savepoint x')).toBe('25P01');
      await c.query('begin');
      expect(await code('rollback to savepoint nope')).toBe('3B001');
      await c.query('rollback');
      await c.query('drop table sp');
    } finally {
      await c.end();
    }
  });

  it('sql: SET yb_read_time reads every table as of a past time (point, index and full reads), refuses writes with 25006 and bad values with 22023', async () => {
    const c = await connect();
    const code = async (sql: string): Promise<string> => c.query(sql).then(() => 'ok', (e: { code?: string }) => e.code ?? 'no code');
    try {
      await c.query('create table asof (id int primary key, v text)');
      await c.query('create index asof_v on asof (v)');
      await c.query("insert into asof values (1, 'old')");
      const t1 = BigInt(Date.now()) * 1000n;
      // The next writes must land at a later wall time than t1.
      await waitFor('the wall clock to move past t1', 10_000, () => Promise.resolve(BigInt(Date.now()) * 1000n > t1 + 2000n), 1);
      await c.query("update asof set v = 'new' where id = 1");
      await c.query("insert into asof values (2, 'two')");
      await c.query(`set yb_read_time to ${t1}`);
      expect((await c.query('show yb_read_time')).rows).toEqual([{ yb_read_time: String(t1) }]);
      expect((await c.query('select id, v from asof order by id')).rows).toEqual([{ id: 1, v: 'old' }]);
      expect((await c.query('select v from asof where id = 1')).rows).toEqual([{ v: 'old' }]);
      expect((await c.query('select v from asof where id = 2')).rows).toEqual([]);
      expect((await c.query("select id from asof where v = 'old'")).rows).toEqual([{ id: 1 }]);
      expect(await code("insert into asof values (3, 'x')")).toBe('25006');
      expect(await code("update asof set v = 'x' where id = 1")).toBe('25006');
      await c.query('set yb_read_time to 0');
      expect((await c.query('select id, v from asof order by id')).rows).toEqual([{ id: 1, v: 'new' }, { id: 2, v: 'two' }]);
      expect(await code("set yb_read_time to 'yesterday'")).toBe('22023');
      // Before the first row was written: the table is empty as of then.
      await c.query(`set yb_read_time to ${t1 - 3_600_000_000n}`);
      expect((await c.query('select count(*)::int as n from asof')).rows).toEqual([{ n: 0 }]);
      await c.query('set yb_read_time to 0');
      await c.query('drop table asof');
    } finally {
      await c.end();
    }
  });

  it('sql: count / sum / min / max of a whole table are computed on its tablets (EXPLAIN says so) and equal the rows\' own figures, in and out of a transaction', async () => {
    const c = await connect();
    try {
      await c.query('create table agg (id int primary key, n bigint, i int, f double precision, s text) split into 3 tablets');
      const rows = Array.from({ length: 60 }, (_, k) => ({ id: k, n: k % 7 === 0 ? null : BigInt(k * 1000 - 7), i: k - 30, f: k / 4, s: k % 5 === 0 ? null : `s${(k * 37) % 100}` }));
      await c.query(`insert into agg values ${rows.map((r) => `(${r.id}, ${r.n ?? 'null'}, ${r.i}, ${r.f}, ${r.s === null ? 'null' : `'${r.s}'`})`).join(', ')}`);
      const plan = (await c.query('explain select count(*), sum(n) from agg')).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('Aggregate on the tablets of agg (count(*), sum(n)');
      const ns = rows.flatMap((r) => (r.n === null ? [] : [r.n]));
      const ss = rows.flatMap((r) => (r.s === null ? [] : [r.s])).sort();
      const got = (await c.query('select count(*), count(n), sum(n), min(n), max(n), sum(i), min(i), sum(f), max(s), min(s), count(*)::int as c2 from agg')).rows[0];
      expect(got).toEqual({
        // PostgreSQL names every one of them by its function; the driver keeps the last of each name.
        count: String(rows.filter((r) => r.n !== null).length),
        sum: rows.reduce((a, r) => a + r.f, 0),
        min: ss[0],
        max: ss[ss.length - 1],
        c2: 60,
      });
      const named = (await c.query('select count(n) as cn, sum(n) as sn, min(n) as mn, max(n) as xn, sum(i) as si, min(i) as mi from agg')).rows[0];
      expect(named).toEqual({ cn: String(ns.length), sn: String(ns.reduce((a, b) => a + b, 0n)), mn: String(ns.reduce((a, b) => (b < a ? b : a))), xn: String(ns.reduce((a, b) => (b > a ? b : a))), si: String(rows.reduce((a, r) => a + r.i, 0)), mi: -30 });
      // The primary key column too: its values live in the rows' keys on the tablets (it was NULL).
      expect((await c.query('select min(id) as lo, max(id) as hi, sum(id) as s from agg')).rows).toEqual([{ lo: 0, hi: 59, s: String((59 * 60) / 2) }]);
      // Inside a transaction the tablets count its own writes.
      await c.query('begin');
      await c.query("insert into agg values (100, 1, 1, 1, 'zz')");
      expect((await c.query('select count(*)::int as n, max(s) as m from agg')).rows).toEqual([{ n: 61, m: 'zz' }]);
      await c.query('rollback');
      expect((await c.query('select count(*)::int as n from agg')).rows).toEqual([{ n: 60 }]);
      await c.query('delete from agg');
      expect((await c.query('select count(*)::int as n, sum(n) as s, min(s) as m from agg')).rows).toEqual([{ n: 0, s: null, m: null }]);
      await c.query('drop table agg');
    } finally {
      await c.end();
    }
  });

  it('sql: CHECK constraints are enforced on INSERT, UPDATE, ON CONFLICT and COPY (23514 naming the constraint; NULL passes) and listed by \\d; RETURNING * of UPDATE and DELETE; WITH, FILTER and ORDER BY inside aggregates over a table', async () => {
    const c = await connect();
    const state = (q: string): Promise<string | undefined> => c.query(q).then(() => undefined, (e: { code?: string; message?: string }) => `${e.code} ${e.message}`);
    try {
      await c.query('create table ck (id int primary key, x int check (x > 0), lo int, hi int, check (lo <= hi), constraint small check (x < 100)) split into 2 tablets');
      await c.query('insert into ck values (1, 5, 1, 2), (2, null, null, 3)');
      expect(await state('insert into ck values (3, 0, 1, 2)')).toBe('23514 new row for relation "ck" violates check constraint "ck_x_check"');
      expect(await state('insert into ck values (3, 5, 3, 2)')).toBe('23514 new row for relation "ck" violates check constraint "ck_check"');
      expect(await state('update ck set x = 200 where id = 1')).toBe('23514 new row for relation "ck" violates check constraint "small"');
      expect(await state('insert into ck values (1, 5, 1, 2) on conflict (id) do update set lo = 9')).toMatch(/^23514 .*"ck_check"$/);
      expect(await state('create table ck2 (id int primary key, x int check (nope > 0))')).toMatch(/^42703 /);
      expect((await c.query('update ck set x = x + 1 where id = 1 returning *')).rows).toEqual([{ id: 1, x: 6, lo: 1, hi: 2 }]);
      expect((await c.query('select * from ck order by id')).rows).toEqual([{ id: 1, x: 6, lo: 1, hi: 2 }, { id: 2, x: null, lo: null, hi: 3 }]);
      await c.query('insert into ck values (3, 7, 0, 0), (4, 8, 0, 0), (5, 9, 1, 1)');
      expect((await c.query('with big as (select id, x from ck where x > 6) select count(*)::int as n, string_agg(id::text, \',\' order by x desc) as ids from big')).rows).toEqual([{ n: 3, ids: '5,4,3' }]);
      expect((await c.query('select count(*) filter (where x > 7) as f, avg(id) as a from ck')).rows).toEqual([{ f: '2', a: '3.0000000000000000' }]);
      expect((await c.query('delete from ck where id = 5 returning *')).rows).toEqual([{ id: 5, x: 9, lo: 1, hi: 1 }]);
      // A subquery in SET (it failed with XX000 'unreachable').
      expect((await c.query('update ck set hi = (select max(hi) from ck) where id = 3 returning hi')).rows).toEqual([{ hi: 3 }]);
      if (havePsql) {
        const d = psql('\\d ck');
        expect(d.stdout).toContain('Check constraints:');
        expect(d.stdout).toContain('"small" CHECK ((x < 100))');
        const copy = psql(['copy ck from stdin;', '6\t-1\t0\t0', '\\.'].join('\n'));
        expect(copy.stderr).toContain('violates check constraint "ck_x_check"');
        expect((await c.query('select count(*)::int as n from ck where id = 6')).rows).toEqual([{ n: 0 }]);
      }
      await c.query('drop table ck');
      // numeric(p, s) columns round to their scale and refuse what does not fit (22003); an integer column takes a numeric SET rounded.
      await c.query('create table money (id int primary key, amount numeric(6,2), n int)');
      await c.query('insert into money values (1, 12.345, 10)');
      expect(await state('insert into money values (2, 12345.6, 1)')).toBe('22003 numeric field overflow');
      await c.query('update money set n = n * 1.25 where id = 1');
      expect((await c.query('select amount, n from money')).rows).toEqual([{ amount: '12.35', n: 13 }]);
      if (havePsql) expect(psql('\\d money').stdout).toContain('numeric(6,2)');
      await c.query('drop table money');
    } finally {
      await c.end();
    }
  });

  it('sql: UPDATE of primary key columns moves the rows with their index entries; a taken key is 23505; a rolled-back move leaves the rows', async () => {
    const c = await connect();
    const state = (q: string): Promise<string | undefined> => c.query(q).then(() => undefined, (e: { code?: string }) => e.code);
    try {
      await c.query('create table mv (id int primary key, v int, w text) split into 2 tablets');
      await c.query('create unique index mv_w on mv (w)');
      await c.query("insert into mv values (1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c')");
      const moved = (await c.query('update mv set id = id + 100, v = v + 1 where id >= 2 returning id, v')).rows as Array<{ id: number }>;
      expect(moved.sort((a, b) => a.id - b.id)).toEqual([{ id: 102, v: 21 }, { id: 103, v: 31 }]);
      expect(await state('update mv set id = 102 where id = 1')).toBe('23505');
      expect(await state('update mv set id = 7')).toBe('23505');
      await c.query('begin');
      await c.query('update mv set id = 9 where id = 1');
      await c.query('rollback');
      expect((await c.query('select id, v, w from mv order by id')).rows).toEqual([{ id: 1, v: 10, w: 'a' }, { id: 102, v: 21, w: 'b' }, { id: 103, v: 31, w: 'c' }]);
      expect((await c.query("select id from mv where w = 'c'")).rows).toEqual([{ id: 103 }]);
      // SET (a, b) = (…) and = (SELECT …): several columns at once.
      await c.query("update mv set (v, w) = (v + 1, 'm') where id = 1");
      await c.query('update mv set (v, w) = (select max(v), min(w) from mv) where id = 102');
      expect((await c.query('select id, v, w from mv where id in (1, 102) order by id')).rows).toEqual([{ id: 1, v: 11, w: 'm' }, { id: 102, v: 31, w: 'b' }]);
      // UPDATE … FROM and DELETE … USING join another table.
      await c.query('create table mvsrc (k int primary key, nv int)');
      await c.query('insert into mvsrc values (1, 7), (103, 9)');
      await c.query('update mv set v = mvsrc.nv from mvsrc where mvsrc.k = mv.id');
      await c.query('delete from mv using mvsrc where mvsrc.k = mv.id and mvsrc.nv = 9');
      expect((await c.query('select id, v from mv order by id')).rows).toEqual([{ id: 1, v: 7 }, { id: 102, v: 31 }]);
      await c.query('drop table mvsrc');
      await c.query('drop table mv');
    } finally {
      await c.end();
    }
  });

  it('sql: ALTER TABLE ADD COLUMN (DEFAULT fills existing rows; NOT NULL without one is 23502 and leaves no column), DROP COLUMN (its index and CHECK go too), RENAME COLUMN (index still used), RENAME TO, SET/DROP DEFAULT and NOT NULL', async () => {
    const c = await connect();
    const state = (q: string): Promise<string | undefined> => c.query(q).then(() => undefined, (e: { code?: string }) => e.code);
    try {
      await c.query("create table alt (id int primary key, v int, s text check (s <> 'bad')) split into 2 tablets");
      await c.query('create index alt_v on alt (v)');
      await c.query("insert into alt values (1, 10, 'x'), (2, 20, 'y'), (3, null, 'z')");
      await c.query("alter table alt add column w text default 'dflt'");
      expect(await state('alter table alt add column n int not null')).toBe('23502');
      expect(await state('alter table alt add column w int')).toBe('42701');
      await c.query('alter table alt rename column v to vv');
      expect((await c.query('select id, w from alt where vv = 20')).rows).toEqual([{ id: 2, w: 'dflt' }]);
      expect((await c.query('explain select id from alt where vv = 20')).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')).toContain('alt_v');
      await c.query('alter table alt drop column s');
      await c.query("insert into alt (id, vv) values (4, 40)");
      await c.query("alter table alt alter column w set default 'new'");
      await c.query('insert into alt (id) values (5)');
      await c.query('alter table alt rename to alt2');
      expect((await c.query('select id, vv, w from alt2 order by id')).rows).toEqual([
        { id: 1, vv: 10, w: 'dflt' }, { id: 2, vv: 20, w: 'dflt' }, { id: 3, vv: null, w: 'dflt' }, { id: 4, vv: 40, w: 'dflt' }, { id: 5, vv: null, w: 'new' },
      ]);
      expect(await state('select * from alt')).toBe('42P01');
      expect(await state('alter table alt2 alter column vv set not null')).toBe('23502');
      if (havePsql) {
        const d = psql('\\d alt2').stdout;
        expect(d).toContain('vv');
        expect(d).not.toContain('check');
      }
      await c.query('drop table alt2');
    } finally {
      await c.end();
    }
  });

  it('sql: WHERE on the tablets — pushed comparisons (EXPLAIN shows them) give the same rows, counts and updates as the executor alone; aggregates with such a WHERE are computed on the tablets', async () => {
    const c = await connect();
    const plan = async (sql: string): Promise<string> => (await c.query(`explain ${sql}`)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
    try {
      await c.query('create table wp (id int primary key, v int, f double precision, s text, b boolean, n numeric) split into 3 tablets');
      const vals = Array.from({ length: 90 }, (_, k) => `(${k}, ${k % 9 === 0 ? 'null' : k % 13}, ${k % 4 === 0 ? "'NaN'" : k % 11 === 0 ? 'null' : (k - 40) / 8}, ${k % 6 === 0 ? 'null' : `'${['a', 'b', 'x', 'é', 'ab'][k % 5]}'`}, ${k % 7 === 0 ? 'null' : k % 2 === 0}, ${k / 2})`);
      await c.query(`insert into wp values ${vals.join(', ')}`);
      const queries = [
        'select id from wp where v > 5 order by id',
        "select id, v from wp where v <= 3 and s = 'x' order by id",
        "select id from wp where s >= 'b' and b = true and id < 70 order by id",
        'select id from wp where f > 1.5 and v <> 4 order by id',
        "select id from wp where (v > 10 or s = 'a') and f < 2 order by id",
        'select id from wp where n > 20 and v > 1 order by id',
        'select count(*) as c, sum(v) as s, max(f) as m from wp where v > 2 and f >= -1',
        "select count(*) as c from wp where s = 'ab'",
        'select v, count(*) as c from wp where b <> false group by v order by v',
      ];
      const on = [];
      for (const q of queries) on.push((await c.query(q)).rows);
      expect(on[0]!.length).toBeGreaterThan(10);
      expect(await plan('select id from wp where v > 5 and upper(s) = \'X\'')).toContain("Full scan on wp (every tablet); filter on the tablets: v > 5; the other 1 condition of WHERE in the executor");
      expect(await plan("select count(*), sum(v) from wp where v > 2 and s = 'x'")).toContain("Aggregate on the tablets of wp (count(*), sum(v); filter on the tablets: v > 2 AND s = 'x'");
      expect(await plan('select count(*) from wp where n > 20')).not.toContain('Aggregate on the tablets');
      expect(await plan('update wp set v = v + 100 where f > 3')).toContain('filter on the tablets: f > 3');
      await c.query('set yb_enable_expression_pushdown = off');
      expect(await plan('select id from wp where v > 5')).not.toContain('filter on the tablets');
      for (const [i, q] of queries.entries()) expect((await c.query(q)).rows, q).toEqual(on[i]);
      await c.query('reset yb_enable_expression_pushdown');
      // A block's own writes pass through the tablet's filter too; UPDATE and DELETE find their rows through it.
      await c.query('begin');
      await c.query("insert into wp values (500, 77, 1, 'zz', true, 1)");
      expect((await c.query('select id from wp where v > 70')).rows).toEqual([{ id: 500 }]);
      expect((await c.query('select count(*)::int as n from wp where v > 70')).rows).toEqual([{ n: 1 }]);
      await c.query('rollback');
      const before = (await c.query('select id from wp where f > 3 order by id')).rows;
      expect((await c.query('update wp set v = 1000 where f > 3')).rowCount).toBe(before.length);
      expect((await c.query('select id from wp where v >= 1000 order by id')).rows).toEqual(before);
      expect((await c.query('delete from wp where v >= 1000')).rowCount).toBe(before.length);
      await c.query('drop table wp');
    } finally {
      await c.end();
    }
  });

  it('sql: CREATE INDEX online — rows inserted, moved and deleted by 4 sessions during the build are all found through the index afterwards (EXPLAIN uses it); progress in pg_stat_progress_create_index; \\d and \\di list indexes; UNIQUE over duplicates fails with 23505 and leaves no index', async () => {
    const c = await connect();
    const writers = await Promise.all(Array.from({ length: 4 }, () => connect()));
    const watcher = await connect();
    try {
      await c.query('create table ob (id int primary key, k int, note text) split into 3 tablets');
      await c.query(`insert into ob select g, g % 50, 'n' || g from generate_series(1, 300) g`);
      let building = true;
      let writes = 0;
      const work = writers.map(async (w, wi) => {
        for (let i = 0; building && i < 3000; i++) {
          const id = 1000 + wi * 10_000 + i;
          const op = i % 4 === 3 ? `update ob set k = k + 100 where id = ${1 + ((i * 7 + wi) % 300)}` : i % 4 === 2 ? `delete from ob where id = ${id - 2}` : `insert into ob values (${id}, ${i % 60}, 'w')`;
          // Conflicts with the backfill's batches are 40001, retryable as for any writer.
          const ok = await w.query(op).then(() => true, (e: { code?: string }) => { if (e.code !== '40001') throw e; return false; });
          if (ok) writes++;
        }
      });
      const build = c.query('create index ob_k on ob (k)');
      await waitFor('the build shows in pg_stat_progress_create_index', 60_000, async () => (await watcher.query("select phase from pg_stat_progress_create_index where command = 'CREATE INDEX'")).rows.length > 0, 50);
      await build;
      building = false;
      await Promise.all(work);
      expect(writes).toBeGreaterThan(20);
      console.log(`sql online index build: ${writes} writes committed by 4 sessions during the build`);
      expect((await watcher.query('select * from pg_stat_progress_create_index')).rows).toEqual([]);
      const all = (await c.query('select id, k from ob')).rows as Array<{ id: number; k: number }>;
      const ks = [...new Set(all.map((r) => r.k))];
      expect((await c.query(`explain select id from ob where k = ${ks[0]}`)).rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')).toContain('Index scan using ob_k on ob');
      let found = 0;
      for (const k of ks) {
        const ids = ((await c.query('select id from ob where k = $1', [k])).rows as Array<{ id: number }>).map((r) => r.id).sort((a, b) => a - b);
        expect(ids, `k = ${k}`).toEqual(all.filter((r) => r.k === k).map((r) => r.id).sort((a, b) => a - b));
        found += ids.length;
      }
      expect(found).toBe(all.length);
      // No entry outlives its row: the index table holds exactly one entry per row.
      const client = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, timeoutMs: 30_000 });
      try {
        expect(await client.table('sql_index__ob_k').aggregate([{ fn: 'count' }])).toEqual([BigInt(all.length)]);
      } finally {
        await client.close();
      }
      if (havePsql) {
        const d = psql('\\d ob');
        expect(d.status).toBe(0);
        expect(d.stdout).toMatch(/Indexes:\n +"ob_pkey" PRIMARY KEY, lsm \(id HASH\)\n +"ob_k" lsm \(k ASC\)\n/);
        const di = psql('\\di');
        expect(di.stdout).toMatch(/ob_k +\| index \| yugabyte \| ob/);
      }
      const dup = await c.query('create unique index ob_note on ob (note)').then(() => undefined, (e: { code?: string; message?: string }) => e);
      expect(dup?.code).toBe('23505');
      expect(dup?.message).toContain('could not create unique index "ob_note"');
      expect((await c.query("select relname from pg_class where relname = 'ob_note'")).rows).toEqual([]);
      await c.query('create unique index ob_id_k on ob (id, k)');
      if (havePsql) expect(psql('\\d ob').stdout).toContain('"ob_id_k" UNIQUE, lsm (id ASC, k ASC)');
      await c.query('drop table ob');
    } finally {
      await Promise.all([...writers, watcher].map((w) => w.end()));
      await c.end();
    }
  }, 240_000);

  it('sql: a bank of transfers (BEGIN … UPDATE … UPDATE … COMMIT) from 4 sessions keeps its total while a tserver is killed -9 and restarted', async () => {
    const setup = await connect();
    await setup.query('create table bank (id int primary key, balance bigint) split into 3 tablets');
    await setup.query(`insert into bank values ${Array.from({ length: 8 }, (_, i) => `(${i}, 100)`).join(', ')}`);
    const sessions = await Promise.all(Array.from({ length: 4 }, () => connect()));
    for (const s of sessions) s.on('error', () => undefined);
    const totals: number[] = [];
    let committed = 0;
    let failed = 0;
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const transfers = async (s: Client, rounds: number): Promise<void> => {
      for (let i = 0; i < rounds; i++) {
        const from = rand(8);
        const to = (from + 1 + rand(7)) % 8;
        try {
          await s.query('begin');
          await s.query('update bank set balance = balance - 1 where id = $1', [from]);
          await s.query('update bank set balance = balance + 1 where id = $1', [to]);
          await s.query('commit');
          committed++;
        } catch {
          failed++;
          await s.query('rollback').catch(() => undefined);
        }
        if (i % 5 === 0) {
          try {
            totals.push((await s.query('select sum(balance)::int as t from bank')).rows[0].t as number);
          } catch {
            failed++;
          }
        }
      }
    };
    const victim = cluster!.tservers[2]!;
    let atKill = 0;
    try {
      let done = false;
      const load = Promise.all(sessions.map((s) => transfers(s, 40))).finally(() => (done = true));
      await waitFor('some transfers before the kill', 120_000, () => Promise.resolve(committed >= 10 || done), 50);
      await cluster!.kill9(victim);
      atKill = committed;
      await waitFor('transfers while a tserver is down', 120_000, () => Promise.resolve(committed >= atKill + 5 || done), 50);
      cluster!.start(victim);
      await load;
      await cluster!.waitTServersAlive(3, 60_000);
    } finally {
      if (!cluster!.isRunning(victim)) cluster!.start(victim);
      await Promise.all(sessions.map((s) => s.end().catch(() => undefined)));
    }
    const final = (await setup.query('select sum(balance)::int as t, count(*)::int as n from bank')).rows[0] as { t: number; n: number };
    await setup.query('drop table bank');
    await setup.end();
    expect(final).toEqual({ t: 800, n: 8 });
    expect(totals.length).toBeGreaterThan(0);
    expect(new Set(totals)).toEqual(new Set([800]));
    // Transfers went on after the kill (the two other replicas of every tablet serve).
    expect(atKill).toBeGreaterThanOrEqual(10);
    expect(committed).toBeGreaterThan(atKill);
    console.log(`sql bank under kill -9: ${committed} transfers committed (${committed - atKill} after the kill), ${failed} failed (retryable), ${totals.length} totals read, all 800`);
  }, 240_000);

  it('sql: ysql_connections_per_ip_max refuses a connection past it with 53300 (counted before authentication); ysql_authentication_timeout_ms closes a silent one with 57014', async () => {
    const client = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, timeoutMs: 30_000 });
    const ts = cluster!.tservers[0]!;
    const setFlag = (name: string, value: string): Promise<unknown> => client.rpcClient().call(ts.rpcAddress, tabletServerMethods().setFlag, { name, value }, { timeoutMs: 5_000 });
    /** A raw socket, and what the server sends on it until it closes. */
    const raw = (send?: Buffer): { socket: net.Socket; closed: Promise<string> } => {
      const socket = net.connect(port, host, () => send && socket.write(send));
      let got = '';
      socket.on('data', (d) => (got += d.toString('latin1')));
      const closed = new Promise<string>((resolve) => {
        socket.on('close', () => resolve(got));
        socket.on('error', () => resolve(got));
      });
      return { socket, closed };
    };
    const held: net.Socket[] = [];
    try {
      await setFlag('ysql_connections_per_ip_max', '2');
      // Two silent sockets (never authenticated) hold the address's two places.
      for (let i = 0; i < 2; i++) {
        const r = raw();
        await new Promise<void>((ok) => r.socket.once('connect', () => ok()));
        held.push(r.socket);
      }
      const third = await raw().closed;
      expect(third).toContain('53300');
      expect(third).toContain('ysql_connections_per_ip_max');
      for (const s of held.splice(0)) s.destroy();
      await waitFor('a place is free again', 30_000, async () => {
        try {
          const c = await connect();
          await c.end();
          return true;
        } catch {
          return false;
        }
      }, 100);
      await setFlag('ysql_connections_per_ip_max', '256');
      await setFlag('ysql_authentication_timeout_ms', '300');
      const silent = await raw().closed;
      expect(silent).toContain('57014');
      expect(silent).toContain('canceling authentication due to timeout');
      await setFlag('ysql_authentication_timeout_ms', '60000');
      const c = await connect();
      expect((await c.query('select 1 as x')).rows).toEqual([{ x: 1 }]);
      await c.end();
    } finally {
      for (const s of held) s.destroy();
      await setFlag('ysql_connections_per_ip_max', '256').catch(() => undefined);
      await setFlag('ysql_authentication_timeout_ms', '60000').catch(() => undefined);
      await client.close();
    }
  });

  it.skipIf(!havePsql)(`sql: COPY FROM in a block into a table the block truncated leaves nothing when the block rolls back, and stays when it commits${havePsql ? '' : ' (skipped: psql is not installed)'}`, () => {
    const script = [
      'create table bl (k int primary key, v text);',
      'create table bl2 (k int, v text);',
      "insert into bl values (1, 'before');",
      'begin;', 'truncate bl;', 'copy bl from stdin;', '2\ta', '3\tb', '\\.', 'rollback;',
      'select count(*) from bl;',
      // Not emptied in the block: COPY writes outside the block's transaction, a ROLLBACK keeps it.
      'begin;', 'copy bl2 from stdin;', '7\tx', '\\.', 'rollback;',
      'select count(*) from bl2;',
      'begin;', 'truncate bl;', 'copy bl from stdin;', '4\tc', '5\td', '\\.', 'commit;',
      'select v from bl order by k;',
    ].join('\n');
    const r = psql(script, ['-At']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n').filter((l) => /^[0-9a-z]+$/.test(l))).toEqual(['0', '1', 'c', 'd']);
  }, 120_000);

  it.skipIf(!havePsql || !havePgbench)(`sql: pgbench -i -s 1, then -S and -N runs with no failed transaction${havePsql && havePgbench ? '' : ' (skipped: psql or pgbench is not installed)'}`, () => {
    const args = ['-h', host, '-p', String(port), '-U', 'yugabyte'];
    const initOnce = (): ReturnType<typeof spawnSync> => spawnSync('pgbench', ['-i', '-s', '1', ...args, 'yugabyte'], { encoding: 'utf8', timeout: 400_000 });
    let init = initOnce();
    // pgbench -i has no --max-tries: its one transaction (TRUNCATE + COPY of 100,000 rows) answered
    // SQLSTATE 40001 — the retryable serialization failure PostgreSQL clients run again — is run
    // again once, said here; -S and -N below must have no failed transaction at all.
    if (init.status !== 0 && String(init.stderr).includes('could not serialize access')) {
      process.stdout.write(`sql-psql: pgbench -i answered 40001, run again once: ${String(init.stderr).split('\n').filter((l) => l.includes('error')).join(' | ')}\n`);
      init = initOnce();
    }
    expect(init.stderr).toContain('done in');
    expect(init.status).toBe(0);
    for (const mode of ['-S', '-N']) {
      const run = spawnSync('pgbench', [mode, '-T', '5', '-c', '2', '--max-tries=20', ...args, 'yugabyte'], { encoding: 'utf8', timeout: 120_000 });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/number of failed transactions: 0 \(0\.000%\)/);
      expect(Number(/number of transactions actually processed: (\d+)/.exec(run.stdout)?.[1] ?? '0')).toBeGreaterThan(0);
    }
  }, 600_000);
});
