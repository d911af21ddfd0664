/**
 * What each filter selects, on a small table written by hand (keys in the table's key order, four
 * value columns x:int64 y:string z:double yy:string), and the scan's counters: a row filter seeks
 * instead of reading the rows it skips.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { DocDb } from '../../docdb/doc-db';
import type { Primitive } from '../../docdb/doc-db-api';
import { compileFilter, fuzzyMatches, fuzzyNext, parseFilterExpression, type FuzzyPattern } from '../../docdb/filters';
import { filteredScan } from '../../docdb/filters/filtered-scan';
import { IntentAwareReader } from '../../docdb/intent-aware-reader';
import { memoryDocDb, Statuses } from './docdb-helpers';
import { applyWrites, docKey, filterSchema, htOf, T0_SEC, type Write } from './filters-arbitraries';

const DATA: Array<[string, Record<number, Primitive>]> = [
  ['a1', { 1: 5n, 2: 'foo' }],
  ['a2', { 1: 30n, 2: 'Food', 3: 2.5 }],
  ['ab', { 1: 31n, 4: 'bar' }],
  ['b1', { 2: 'xfooy', 3: -1 }],
  ['b2', { 1: 40n, 2: 'zzz', 3: 1, 4: 'q' }],
  ['c1', { 4: 'only-yy' }],
];

let db: DocDb;
const statuses = new Statuses();
beforeAll(async () => {
  db = await memoryDocDb();
  const ws: Write[] = DATA.map(([k, cols], i) => ({ kind: 'row', t: 10 + i, op: { type: 'upsert', key: docKey(k, false), columns: Object.entries(cols).map(([id, value]) => ({ columnId: Number(id), value })) } }));
  await applyWrites(db, ws, statuses);
});

async function run(expr: string, limit?: number) {
  const r = await db.scan({ readHt: htOf(500), resolveStatus: statuses.resolve, filter: compileFilter(parseFilterExpression(expr), filterSchema(false)), ...(limit ? { limit } : {}) });
  const rows = r.rows.map((row) => `${String(row.key.range[0])}:${[...row.columns.keys()].sort().join('')}`);
  return { rows, cellsRead: r.cellsRead, cellsSkipped: r.cellsSkipped, seeks: r.seeks, resume: r.resumeKey !== undefined };
}
const keys = async (expr: string): Promise<string[]> => (await run(expr)).rows.map((s) => s.split(':')[0]!);

describe('filters: what each selects', () => {
  it('row prefix: seeks to the prefix and stops after it (reads only the returned rows and the one past them)', async () => {
    const r = await run("PrefixFilter('b')");
    expect(r.rows).toEqual(['b1:23', 'b2:1234']);
    // a1, a2, ab never read: the first row (a1) is read, then the scan seeks to 'b'; c1 ends it.
    expect(r).toMatchObject({ cellsRead: 2 + 2 + 4 + 1, cellsSkipped: 2 + 1, seeks: 1 });
  });

  it('row range, inclusive stop, multi-row ranges and fuzzy rows', async () => {
    expect(await keys("RowRangeFilter('a2', true, 'b2', false)")).toEqual(['a2', 'ab', 'b1']);
    expect(await keys("RowRangeFilter('a2', false, 'b2', true)")).toEqual(['ab', 'b1', 'b2']);
    expect(await keys("InclusiveStopFilter('ab')")).toEqual(['a1', 'a2', 'ab']);
    expect(await keys("MultiRowRangeFilter('c', true, '', false, 'a1', true, 'a1', true)")).toEqual(['a1', 'c1']);
    expect(await keys("FuzzyRowFilter('?1')")).toEqual(['a1', 'b1', 'c1']);
    expect(await keys("FuzzyRowFilter('b?', 'a2')")).toEqual(['a2', 'b1', 'b2']);
  });

  it('column prefix, column range and qualifier comparisons pick cells by column name', async () => {
    expect((await run("ColumnPrefixFilter('y')")).rows).toEqual(['a1:2', 'a2:2', 'ab:4', 'b1:2', 'b2:24', 'c1:4']);
    expect((await run("ColumnRangeFilter('x', false, 'yy', true)")).rows).toEqual(['a1:2', 'a2:2', 'ab:4', 'b1:2', 'b2:24', 'c1:4']);
    expect((await run("QualifierFilter(=, 'binary:z')")).rows).toEqual(['a2:3', 'b1:3', 'b2:3']);
    expect((await run("QualifierFilter(>, 'binary:y')")).rows).toEqual(['a2:3', 'ab:4', 'b1:3', 'b2:34', 'c1:4']);
  });

  it('value comparisons: typed binary, substring (any case), regex, prefix', async () => {
    // The literal is taken as each column's type: '30' is a string for y and yy (and 'foo' >= '30').
    expect((await run("ValueFilter(>=, 'binary:30')")).rows).toEqual(['a1:2', 'a2:12', 'ab:14', 'b1:2', 'b2:124', 'c1:4']);
    expect((await run("ValueFilter(>=, 'binary:30') AND ColumnPrefixFilter('x')")).rows).toEqual(['a2:1', 'ab:1', 'b2:1']);
    expect((await run("ValueFilter(!=, 'binary:abc') AND ColumnPrefixFilter('x')")).rows).toEqual(['a1:1', 'a2:1', 'ab:1', 'b2:1']);
    expect((await run("ValueFilter(=, 'substring:FOO')")).rows).toEqual(['a1:2', 'a2:2', 'b1:2']);
    expect((await run("ValueFilter(=, 'regexstring:^z+$')")).rows).toEqual(['b2:2']);
    expect((await run("ValueFilter(!=, 'binaryprefix:f')")).rows.length).toBe(6);
    expect((await run("ValueFilter(<, 'binary:0')")).rows).toEqual(['b1:3']);
  });

  it('single column value: rows by one column, filterIfMissing drops rows without it', async () => {
    expect(await keys("SingleColumnValueFilter('x', >=, 'binary:30')")).toEqual(['a2', 'ab', 'b1', 'b2', 'c1']);
    expect(await keys("SingleColumnValueFilter('cf', 'x', >=, 'binary:30', true)")).toEqual(['a2', 'ab', 'b2']);
    expect((await run("SingleColumnValueFilter('x', =, 'binary:5', true)")).rows).toEqual(['a1:12']);
  });

  it('key-only, first-key-only, page, column pagination and timestamps', async () => {
    expect((await run("KeyOnlyFilter() AND PrefixFilter('b')")).rows).toEqual(['b1:', 'b2:']);
    expect((await run('FirstKeyOnlyFilter()')).rows).toEqual(['a1:1', 'a2:1', 'ab:1', 'b1:2', 'b2:1', 'c1:4']);
    const page = await run('PageFilter(2)');
    expect(page.rows.map((s) => s.split(':')[0])).toEqual(['a1', 'a2']);
    expect(page.resume).toBe(false);
    expect((await run('ColumnPaginationFilter(2, 1)')).rows).toEqual(['a1:2', 'a2:23', 'ab:4', 'b1:3', 'b2:23']);
    const t = (i: number): string => String(BigInt(T0_SEC + 10 + i) * 1_000_000n);
    expect(await keys(`TimestampsFilter(${t(1)}, ${t(4)})`)).toEqual(['a2', 'b2']);
  });

  it('AND / OR lists, SKIP and WHILE', async () => {
    expect((await run("PrefixFilter('a') AND ValueFilter(=, 'substring:foo')")).rows).toEqual(['a1:2', 'a2:2']);
    expect((await run("PrefixFilter('c') OR ValueFilter(=, 'binary:40')")).rows).toEqual(['b2:1', 'c1:4']);
    // SKIP: a row passes only if every cell does.
    expect(await keys("SKIP ValueFilter(!=, 'binary:zzz')")).toEqual(['a1', 'a2', 'ab', 'b1', 'c1']);
    // WHILE: the scan ends at the first row that fails.
    const w = await run("WHILE RowRangeFilter('', true, 'ab', true)");
    expect(w.rows.map((s) => s.split(':')[0])).toEqual(['a1', 'a2', 'ab']);
    expect(w.resume).toBe(false);
  });

  it('a scan limit pages a filtered scan with a resume key', async () => {
    const r = await run("ValueFilter(=, 'substring:foo')", 2);
    expect(r.rows.map((s) => s.split(':')[0])).toEqual(['a1', 'a2']);
    expect(r.resume).toBe(true);
  });
});

describe('filtered scan work bound', () => {
  it('a filter that rejects everything still answers after the examined-rows bound, with a resume key', async () => {
    const regular = db.regularDb.db.engine;
    const intents = db.intentsDb.db.engine;
    const reader = new IntentAwareReader(regular, intents, { readHt: htOf(500), resolveStatus: statuses.resolve }, false);
    const seen: number[] = [];
    let startKey: Uint8Array | undefined;
    for (let calls = 0; calls < 10; calls++) {
      const filter = compileFilter(parseFilterExpression("ValueFilter(=, 'binary:nothing')"), filterSchema(false));
      const r = await filteredScan({ regular, intents, readIntents: false, reader }, { range: { ...(startKey ? { start: startKey } : {}) }, filter, seekHints: true, rowsExaminedMax: 4 });
      expect(r.rows).toEqual([]);
      seen.push(r.cellsRead);
      if (!r.resumeKey) break;
      startKey = r.resumeKey;
    }
    // 6 rows, 4 per call: two calls, every cell read once.
    expect(seen).toEqual([2 + 3 + 2 + 2, 4 + 1]);
  });
});

describe('fuzzy row next candidate', () => {
  const pat = (s: string): FuzzyPattern => ({ bytes: Buffer.from(s.replace(/\?/g, '\0'), 'latin1'), any: [...s].map((c) => c === '?') });
  const next = (k: string, p: string): string | undefined => fuzzyNext(Buffer.from(k, 'latin1'), pat(p))?.toString('latin1');
  it('fuzzy row: the next candidate is the smallest matching key above the row (wildcards never 0x00)', () => {
    expect(next('aa', '?b')).toBe('ab');
    expect(next('ac', '?b')).toBe('bb');
    expect(next('a', '?b')).toBe('ab');
    expect(next('', 'x?y')).toBe('x\x01y');
    expect(next('xzz', 'x?y')).toBe('x{y');
    expect(next('x\0a', 'x?y')).toBe('x\x01y');
    expect(next('z', 'b?')).toBeUndefined();
    expect(next('\xff\xffc', '??b')).toBeUndefined();
    expect(fuzzyMatches(Buffer.from('abc'), pat('?b'))).toBe(true);
    expect(fuzzyMatches(Buffer.from('a'), pat('?b'))).toBe(false);
    expect(fuzzyMatches(Buffer.from('a\0', 'latin1'), pat('a?'))).toBe(false);
  });
});
