/**
 * The point-SELECT plan cache (sql/exec/plan-cache.ts, docs/sql.md "Plan cache") over a fake catalog
 * and a fake table: a kept plan reads the key of each text's own literal, gives what the planner
 * gives, and is not used after the table's definition changed (DDL) or for shapes it does not cover.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Row, Table } from '../../client';
import { loadParser, parseSql, type ParsedStatement } from '../../sql/sql-parser';
import { cachedPointPlan, makePointPlan, rememberPointPlan, runPointPlan } from '../../sql/exec/plan-cache';
import type { SqlTableDef } from '../../sql/exec/catalog';
import { compileSelect } from '../../sql/exec/select';
import { columnsOf } from '../../sql/exec/preload';
import type { EvalContext, Tuple } from '../../sql/exec/scope';

const accounts = (): SqlTableDef => ({
  name: 'acc', oid: 7, hash: ['aid'], range: [], stored: true, hasPrimaryKey: true,
  columns: [{ name: 'aid', type: 'int4', typmod: -1, notNull: true }, { name: 'bid', type: 'int4', typmod: -1, notNull: false }, { name: 'abalance', type: 'int4', typmod: -1, notNull: false }],
});

/** Rows by aid; records every key read and the columns asked for. */
function fakeTable(n: number): { table: Table; reads: Array<{ key: Row; columns?: string[] }>; tuples: Tuple[] } {
  const rows = new Map<bigint, Row>();
  for (let i = 1; i <= n; i++) rows.set(BigInt(i), { aid: BigInt(i), bid: 1n, abalance: BigInt(i * 10 - 1000) });
  const reads: Array<{ key: Row; columns?: string[] }> = [];
  const table = {
    get: async (key: Row, o: { columns?: string[] }) => {
      reads.push({ key, ...(o.columns ? { columns: o.columns } : {}) });
      return rows.get(key['aid'] as bigint);
    },
  } as unknown as Table;
  return { table, reads, tuples: [...rows.values()].map((r) => [r['aid']!, r['bid']!, r['abalance']!] as Tuple) };
}

function ctx(params: unknown[] = []): EvalContext {
  return { params: params as EvalContext['params'], session: { user: 'yugabyte', database: 'yugabyte', now: new Date(0), pid: 1, settings: new Map(), extensions: new Set() }, outerRows: [], nextval: () => 1n };
}

/** The planner's answer over every row (WHERE evaluated). */
function planned(ps: ParsedStatement, def: SqlTableDef, tuples: Tuple[]): { fields: unknown; rows: Tuple[] } {
  const rel = { columns: columnsOf(def, def.name), rows: tuples, tableOid: def.oid };
  const p = compileSelect((ps.stmt as { SelectStmt: never }).SelectStmt, { paramTypes: [], rowsMax: 1000, relation: () => rel });
  return { fields: p.fields, rows: p.run(ctx()) };
}

/** The second text of a template (the first makes it): a statement that carries its template. */
function templated(first: string, second: string): ParsedStatement {
  parseSql(first);
  const [ps] = parseSql(second);
  expect(ps!.template).toBeDefined();
  return ps!;
}

beforeAll(async () => {
  await loadParser();
});

describe('sql plan cache (point SELECT per template)', () => {
  it('sql plan cache: a kept plan reads each text\'s own key and answers as the planner does', async () => {
    let def = accounts();
    const catalog = { get: async () => def };
    const { table, reads, tuples } = fakeTable(50);
    const a = templated('SELECT abalance FROM acc WHERE aid = 3;', 'SELECT abalance FROM acc WHERE aid = 17;');
    await rememberPointPlan(a.template!, catalog, 1000);
    for (const text of ['SELECT abalance FROM acc WHERE aid = 17;', 'SELECT abalance FROM acc WHERE aid = 42;', 'SELECT abalance FROM acc WHERE aid = 999;']) {
      const [ps] = parseSql(text);
      const plan = await cachedPointPlan(ps!.template!, catalog, 1000);
      expect(plan).toBeDefined();
      const r = await runPointPlan(plan!, ps!.template!.values, () => table, ctx());
      expect(r!).toEqual(planned(ps!, def, tuples));
      expect(r!.rows.length).toBe(text.includes('999') ? 0 : 1);
    }
    expect(reads.map((x) => x.key)).toEqual([{ aid: 17n }, { aid: 42n }, { aid: 999n }]);
    expect(reads[0]!.columns).toEqual(['abalance']);
    // A negated literal and an alias-qualified column: the same template mechanics.
    const n = templated('select x.abalance as b from acc x where x.aid = -3', 'select x.abalance as b from acc x where x.aid = -4');
    await rememberPointPlan(n.template!, catalog, 1000);
    const np = await cachedPointPlan(n.template!, catalog, 1000);
    await runPointPlan(np!, n.template!.values, () => table, ctx());
    expect(reads.at(-1)!.key).toEqual({ aid: -4n });
    // DDL: the definition changed (a column added) — the plan is dropped, the statement planned again.
    def = { ...accounts(), columns: [...accounts().columns, { name: 'filler', type: 'text', typmod: -1, notNull: false }] };
    expect(await cachedPointPlan(a.template!, catalog, 1000)).toBeUndefined();
    // A reloaded definition equal to the old one (the catalog cache's refresh) keeps the plan.
    def = accounts();
    await rememberPointPlan(a.template!, catalog, 1000);
    def = accounts();
    expect(await cachedPointPlan(a.template!, catalog, 1000)).toBeDefined();
    // A different ysql_rows_in_memory_max: planned as always.
    expect(await cachedPointPlan(a.template!, catalog, 5)).toBeUndefined();
  });

  it('sql plan cache: a key given as $1 (extended protocol) keeps the WHERE, is typed by the Bind, and a NULL goes to the planner', async () => {
    const def = accounts();
    const catalog = { get: async () => def };
    const { table, reads, tuples } = fakeTable(50);
    const ps = templated('select abalance, aid from acc where aid = $1', 'select abalance, aid from acc where aid = $1');
    await rememberPointPlan(ps.template!, catalog, 1000, ['unknown']);
    const plan = await cachedPointPlan(ps.template!, catalog, 1000, ['unknown']);
    expect(plan).toBeDefined();
    for (const v of ['17', '23', '77']) {
      const r = await runPointPlan(plan!, ps.template!.values, () => table, ctx([v]));
      const rel = { columns: columnsOf(def, def.name), rows: tuples, tableOid: def.oid };
      const p = compileSelect((ps.stmt as { SelectStmt: never }).SelectStmt, { paramTypes: ['unknown'], rowsMax: 1000, relation: () => rel });
      expect(r).toEqual({ fields: p.fields, rows: p.run(ctx([v])) });
    }
    expect(reads.map((x) => x.key)).toEqual([{ aid: 17n }, { aid: 23n }, { aid: 77n }]);
    expect(await runPointPlan(plan!, ps.template!.values, () => table, ctx([null]))).toBeUndefined();
    // Other parameter types (another connection's Parse): not this plan.
    expect(await cachedPointPlan(ps.template!, catalog, 1000, ['int8'])).toBeUndefined();
    // Literals and parameters mixed: planned as always.
    const two: SqlTableDef = { ...def, hash: ['aid'], range: ['bid'] };
    expect(makePointPlan(templated('select abalance from acc where aid = $1 and bid = 4', 'select abalance from acc where aid = $1 and bid = 5').template!, two, 1000, ['unknown'])).toBeNull();
  });

  it('sql plan cache: shapes other than a point SELECT of plain columns get no plan', () => {
    const def = accounts();
    for (const [first, second] of [
      ['select abalance from acc where aid = 1 order by abalance', 'select abalance from acc where aid = 2 order by abalance'],
      ['select abalance from acc where aid = 1 limit 5', 'select abalance from acc where aid = 2 limit 6'],
      ['select abalance + 1 from acc where aid = 1', 'select abalance + 1 from acc where aid = 2'],
      ['select abalance from acc where bid = 1', 'select abalance from acc where bid = 2'],
      ['select abalance from acc where aid = 1 and bid = 3', 'select abalance from acc where aid = 2 and bid = 3'],
      ['select abalance from acc where aid > 1', 'select abalance from acc where aid > 2'],
      ['select abalance from acc where aid = 1 or aid = 2', 'select abalance from acc where aid = 3 or aid = 4'],
      ['select count(*) from acc where aid = 1', 'select count(*) from acc where aid = 2'],
      ['select abalance from acc where aid = 1 for update', 'select abalance from acc where aid = 2 for update'],
    ]) {
      const ps = templated(first!, second!);
      expect(makePointPlan(ps.template!, def, 1000), first).toBeNull();
    }
    // A text key column: its equality is not an integer's, planned as always.
    const textKey: SqlTableDef = { ...def, columns: def.columns.map((c) => (c.name === 'aid' ? { ...c, type: 'text' } : c)) };
    expect(makePointPlan(templated('select abalance from acc where aid = 5', 'select abalance from acc where aid = 6').template!, textKey, 1000)).toBeNull();
    expect(makePointPlan(templated('select abalance from acc where aid = 5', 'select abalance from acc where aid = 6').template!, def, 1000)).not.toBeNull();
  });
});
