/**
 * WHERE on the tablets (sql/exec/where-pushdown.ts): random rows in a DocDB on the in-memory engine,
 * random WHERE clauses mixing conjuncts a scan filter can express and conjuncts it cannot, and the
 * executor's answer over every row against its answer over the rows the tablet's filtered scan
 * returns. They must be the same rows: the filter may only shrink the executor's input; and when the
 * whole WHERE was pushed, the tablet's rows alone must be exactly the answer. Values
 * include NaN, -0, 0, NULL and text on both sides of U+D800..U+FFFF, where the tablet's and the
 * executor's orders could part.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { htFrom } from '../../common/hybrid-time';
import { DocDb } from '../../docdb/doc-db';
import type { DocKey, Primitive } from '../../docdb/doc-db-api';
import { compileFilter, type FilterSchema } from '../../docdb/filters';
import { MemoryEngine } from '../../docdb/memory-engine';
import type { SqlTableDef } from '../../sql/exec/catalog';
import type { CompileEnv } from '../../sql/exec/expr';
import type { EvalContext, Tuple } from '../../sql/exec/scope';
import { compileSelect } from '../../sql/exec/select';
import { tabletFilter } from '../../sql/exec/where-pushdown';
import { loadParser, parseSql } from '../../sql/sql-parser';

const COLS = [
  { name: 'id', id: 0, type: 'int64', sql: 'int8' },
  { name: 'v', id: 1, type: 'int64', sql: 'int4' },
  { name: 'f', id: 2, type: 'double', sql: 'float8' },
  { name: 's', id: 3, type: 'string', sql: 'text' },
  { name: 'b', id: 4, type: 'bool', sql: 'bool' },
] as const;

function defOf(hashed: boolean): SqlTableDef {
  return {
    name: 't', oid: 1, stored: true, hasPrimaryKey: true,
    columns: COLS.map((c) => ({ name: c.name, type: c.sql, typmod: -1, notNull: c.name === 'id' })),
    hash: hashed ? ['id'] : [], range: hashed ? [] : ['id'],
  };
}
function schemaOf(hashed: boolean): FilterSchema {
  return { columns: COLS.map((c) => ({ name: c.name, id: c.id, type: c.type })), hashColumns: hashed ? ['id'] : [], rangeColumns: hashed ? [] : ['id'] };
}
const docKey = (id: bigint, hashed: boolean): DocKey => (hashed ? { hash: Number(id * 7919n) & 0xffff, hashed: [id], range: [] } : { hash: 0, hashed: [], range: [id] });

const ctx: EvalContext = { params: ['3', 'b'], session: { user: 'u', database: 'd', now: new Date(0), pid: 1, settings: new Map(), extensions: new Set() }, outerRows: [], nextval: () => 1n };
const env: CompileEnv = { paramTypes: ['unknown', 'unknown'], subquery: () => { throw new Error('no subqueries here'); } };

/** Conjuncts: most a filter expresses, some it must leave to the executor. */
const ATOMS = [
  'v > 3', 'v <= 2', 'v = 0', 'v <> 1', '3 < v', 'v >= $1', "v = '2'", 'v > 2.5', 'v + 1 > 3',
  'f > 1.5', 'f < -1', 'f >= 0.25', 'f = 0', 'f <> 2.5', 'f <= 1e300',
  "s = 'é'", "s < 'b'", "s >= 'a'", "s > '\uFFFD'", "s < '\uFFFD'", "s < '\u{1F600}'", "s > '\u{1F600}'", "s <> 'ab'", 's = $2', "s like 'a%'", "upper(s) = 'A'",
  'b = true', 'b <> false', 'b', 'not b',
  'id > 5', 'id <= 3', 'id = 4', 'id <> 2', 't.id >= 7',
  'v is null', 'f is not null', '(v > 1 or s = \'a\')',
  'id between 3 and 8', 'v between 1 and 4', "s between 'a' and 'b'", 'v not between 1 and 4', 'id between 8 and 3',
];

const rowArb = fc.record({
  id: fc.integer({ min: 0, max: 12 }).map(BigInt),
  v: fc.oneof(fc.constant(null), fc.integer({ min: -2, max: 6 }).map(BigInt)),
  f: fc.oneof(fc.constant(null), fc.constantFrom(NaN, -0, 0, 0.25, 1.5, 2.5, -1, -3.5, Infinity, -Infinity)),
  s: fc.oneof(fc.constant(null), fc.constantFrom('', 'a', 'ab', 'b', 'é', 'A', '\uFFFD', '\uE000', '\u{1F600}', 'z')),
  b: fc.oneof(fc.constant(null), fc.boolean()),
});

function executorIds(rows: Tuple[], where: string): bigint[] {
  const [ps] = parseSql(`select id from t where ${where} order by id`);
  const sel = (ps!.stmt as { SelectStmt: Parameters<typeof compileSelect>[0] }).SelectStmt;
  const rel = { columns: COLS.map((c) => ({ rel: 't', name: c.name, type: c.sql })), rows };
  const plan = compileSelect(sel, { paramTypes: env.paramTypes, rowsMax: 10_000, relation: () => rel });
  return plan.run(ctx).map((r) => r[0] as bigint);
}

function whereNode(where: string): Parameters<typeof tabletFilter>[2] {
  const [ps] = parseSql(`select id from t where ${where}`);
  return (ps!.stmt as { SelectStmt: { whereClause: Parameters<typeof tabletFilter>[2] } }).SelectStmt.whereClause;
}

async function scanTuples(db: DocDb, hashed: boolean, filterWhere?: string): Promise<Tuple[]> {
  const f = filterWhere ? tabletFilter(defOf(hashed), 't', whereNode(filterWhere), env, ctx) : undefined;
  const r = await db.scan({ readHt: htFrom(10_000_000_000n), resolveStatus: () => Promise.resolve({ status: 'ABORTED' }), ...(f ? { filter: compileFilter(f.ast, schemaOf(hashed)) } : {}) });
  return r.rows.map((row) => COLS.map((c) => (c.id === 0 ? (hashed ? row.key.hashed[0]! : row.key.range[0]!) : (row.columns.get(c.id) ?? null)) as Tuple[number]));
}

beforeAll(async () => {
  await loadParser();
});

describe('sql WHERE on the tablets', () => {
  it('sql where pushdown: comparisons of value columns become column-value filters, of the leading key row ranges; the rest stays in the executor', () => {
    const f = tabletFilter(defOf(false), 't', whereNode("v > 3 and s = 'x' and upper(s) = 'X' and id <= 9 and v > 2.5"), env, ctx)!;
    expect(f.pushed).toEqual(['v > 3', "s = 'x'", 'id <= 9']);
    expect(f.residual).toBe(2);
    expect(f.ast).toEqual({
      type: 'list', op: 'AND', filters: [
        { type: 'singleColumnValue', column: 'v', op: '>', comparator: { type: 'binary', value: { int: '3' } }, filterIfMissing: true },
        { type: 'singleColumnValue', column: 's', op: '=', comparator: { type: 'binary', value: 'x' }, filterIfMissing: true },
        { type: 'rowRange', startInclusive: true, stop: { int: '9' }, stopInclusive: true },
      ],
    });
    // Nothing expressible: no filter at all; an OR is one conjunct the executor keeps.
    expect(tabletFilter(defOf(false), 't', whereNode("v > 1 or s = 'a'"), env, ctx)).toBeUndefined();
    // A parameter sent as text takes the column's type, as the executor's comparison does.
    expect(tabletFilter(defOf(false), 't', whereNode('v >= $1'), env, ctx)!.pushed).toEqual(['v >= 3']);
    // BETWEEN is its two bounds; NOT BETWEEN stays in the executor.
    expect(tabletFilter(defOf(false), 't', whereNode('id between 2 and 7 and v not between 1 and 2'), env, ctx)).toMatchObject({ pushed: ['id >= 2', 'id <= 7'], residual: 1 });
  });

  for (const hashed of [false, true]) {
    it(`sql where pushdown: the executor returns the same rows with and without the tablet filter (random data and WHERE, ${hashed ? 'hash' : 'range'} key)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(rowArb, { minLength: 0, maxLength: 25 }), fc.array(fc.constantFrom(...ATOMS), { minLength: 1, maxLength: 3 }), async (rows, atoms) => {
          const db = await DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
          try {
            let n = 1;
            for (const r of rows) {
              const columns = COLS.slice(1).filter((c) => r[c.name] !== null).map((c) => ({ columnId: c.id, value: r[c.name] as Primitive }));
              await db.writeRegular([{ type: 'upsert', key: docKey(r.id, hashed), columns }], htFrom(BigInt(1_000_000 + n) * 1000n), { term: 1, index: n });
              n++;
            }
            const where = atoms.join(' and ');
            const all = executorIds(await scanTuples(db, hashed), where);
            const tuples = await scanTuples(db, hashed, where);
            expect(executorIds(tuples, where), where).toEqual(all);
            // A WHERE pushed whole (aggregates on the tablets rely on it): the tablet alone selects exactly those rows.
            const f = tabletFilter(defOf(hashed), 't', whereNode(where), env, ctx);
            if (f && f.residual === 0) expect(tuples.map((t) => t[0] as bigint).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)), `${where} (tablet only)`).toEqual(all);
          } finally {
            await db.close();
          }
        }),
        { numRuns: 300 },
      );
    });
  }
});
