/**
 * Random tables, data and filters for the filter tests: a table keyed by one string column, range
 * partitioned (rows in key order: row filters seek) or hash partitioned (they cannot), four value
 * columns, and data written as committed versions, row deletes, null columns, and transactions'
 * intents (committed but not applied, pending, aborted) so the scan's merge of both databases seeks.
 */
import fc from 'fast-check';
import { htFrom, type HybridTime } from '../../common/hybrid-time';
import type { DocDb } from '../../docdb/doc-db';
import type { DocKey, Primitive, RowOp } from '../../docdb/doc-db-api';
import type { Comparator, CompareOp, FilterAst, FilterLiteral, FilterSchema } from '../../docdb/filters';
import { op, Statuses, txnMeta } from './docdb-helpers';

export const COLS = [
  { name: 'x', id: 1, type: 'int64' },
  { name: 'y', id: 2, type: 'string' },
  { name: 'z', id: 3, type: 'double' },
  { name: 'yy', id: 4, type: 'string' },
] as const;

export function filterSchema(hashed: boolean): FilterSchema {
  return {
    columns: [{ name: 'k', id: 0, type: 'string' }, ...COLS],
    hashColumns: hashed ? ['k'] : [],
    rangeColumns: hashed ? [] : ['k'],
  };
}

export function docKey(k: string, hashed: boolean): DocKey {
  if (!hashed) return { hash: 0, hashed: [], range: [k] };
  let h = 7;
  for (const ch of Buffer.from(k)) h = (h * 31 + ch) & 0xffff;
  return { hash: h, hashed: [k], range: [] };
}

const ALPHABET = ['a', 'b', 'é'];
export const keyArb = fc.array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 3 }).map((a) => a.join(''));
const shortText = fc.array(fc.constantFrom(...ALPHABET), { minLength: 0, maxLength: 2 }).map((a) => a.join(''));

const valueFor = (id: number): fc.Arbitrary<Primitive> => {
  if (id === 1) return fc.oneof(fc.constant(null), fc.integer({ min: -3, max: 40 }).map(BigInt));
  if (id === 3) return fc.oneof(fc.constant(null), fc.constantFrom(-1.5, 0, 2.25, 30, 31.5));
  return fc.oneof(fc.constant(null), keyArb, fc.constantFrom('foo', 'xFOOy', 'bar'));
};

export type Write = { kind: 'row' | 'txnCommitted' | 'txnPending' | 'txnAborted'; t: number; op: RowOp };

export function writesArb(hashed: boolean): fc.Arbitrary<Write[]> {
  const one = fc.record({
    kind: fc.constantFrom('row', 'row', 'row', 'row', 'txnCommitted', 'txnPending', 'txnAborted') as fc.Arbitrary<Write['kind']>,
    k: keyArb,
    del: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    cols: fc.subarray([1, 2, 3, 4], { minLength: 1 }).chain((ids) => fc.tuple(...ids.map((id) => valueFor(id).map((v) => ({ columnId: id, value: v }))))),
  });
  return fc.array(one, { minLength: 1, maxLength: 40 }).map((ws) =>
    ws.map((w, i) => ({
      kind: w.kind,
      t: 10 + i,
      op: w.del ? { type: 'delete' as const, key: docKey(w.k, hashed) } : { type: 'upsert' as const, key: docKey(w.k, hashed), columns: w.cols },
    })),
  );
}

export const T0_SEC = 1_700_000_000;
export const htOf = (t: number): HybridTime => htFrom(BigInt(T0_SEC + t) * 1_000_000n);

export async function applyWrites(db: DocDb, ws: readonly Write[], statuses: Statuses): Promise<void> {
  let n = 1;
  for (const w of ws) {
    if (w.kind === 'row') {
      await db.writeRegular([w.op], htOf(w.t), op(n++));
      continue;
    }
    const id = `t${n}`;
    await db.writeIntents(txnMeta(id, htOf(w.t)), [w.op], htOf(w.t), op(n++));
    if (w.kind === 'txnCommitted') statuses.commit(id, htOf(w.t));
    if (w.kind === 'txnAborted') statuses.abort(id);
  }
}

const opArb: fc.Arbitrary<CompareOp> = fc.constantFrom('=', '!=', '<', '<=', '>', '>=');
const eqArb: fc.Arbitrary<CompareOp> = fc.constantFrom('=', '!=');
const literalArb: fc.Arbitrary<FilterLiteral> = fc.oneof(fc.integer({ min: -2, max: 40 }), keyArb, fc.constantFrom('foo', 2.25, '30'));

const comparatorArb: fc.Arbitrary<{ op: CompareOp; comparator: Comparator }> = fc.oneof(
  fc.record({ op: opArb, comparator: literalArb.map((value) => ({ type: 'binary' as const, value })) }),
  fc.record({ op: eqArb, comparator: fc.constantFrom('foo', 'a', 'é').map((value) => ({ type: 'substring' as const, value })) }),
  fc.record({ op: eqArb, comparator: shortText.map((value) => ({ type: 'binaryprefix' as const, value })) }),
  fc.record({ op: eqArb, comparator: fc.constantFrom('^a', 'b$', 'F.O', '^[ab]+$').map((pattern) => ({ type: 'regex' as const, pattern })) }),
);

const rangeArb = fc.record({
  start: fc.option(keyArb, { nil: undefined }),
  startInclusive: fc.boolean(),
  stop: fc.option(keyArb, { nil: undefined }),
  stopInclusive: fc.boolean(),
}).map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as { startInclusive: boolean; stopInclusive: boolean; start?: string; stop?: string });

const colName = fc.constantFrom(...COLS.map((c) => c.name));

/** A filter without lists (the leaves). */
export function leafArb(times: readonly number[]): fc.Arbitrary<FilterAst> {
  return fc.oneof(
    shortText.map((prefix) => ({ type: 'prefix' as const, prefix })),
    rangeArb.map((r) => ({ type: 'rowRange' as const, ...r })),
    fc.array(rangeArb, { minLength: 1, maxLength: 3 }).map((ranges) => ({ type: 'multiRowRange' as const, ranges })),
    fc.array(fc.array(fc.constantFrom('a', 'b', '?'), { minLength: 1, maxLength: 3 }).map((a) => a.join('')), { minLength: 1, maxLength: 2 }).map((patterns) => ({ type: 'fuzzyRow' as const, patterns })),
    fc.array(fc.constantFrom('y', 'x', 'yy', 'z', 'q'), { minLength: 1, maxLength: 2 }).map((prefixes) => ({ type: 'columnPrefix' as const, prefixes })),
    fc.record({ min: fc.option(colName, { nil: undefined }), minInclusive: fc.boolean(), max: fc.option(colName, { nil: undefined }), maxInclusive: fc.boolean() }).map((r) => ({
      type: 'columnRange' as const,
      minInclusive: r.minInclusive,
      maxInclusive: r.maxInclusive,
      ...(r.min !== undefined ? { min: r.min } : {}),
      ...(r.max !== undefined ? { max: r.max } : {}),
    })),
    comparatorArb.map((c) => ({ type: 'qualifier' as const, ...c })),
    comparatorArb.map((c) => ({ type: 'value' as const, ...c })),
    fc.record({ column: colName, c: comparatorArb, filterIfMissing: fc.boolean() }).map((r) => ({ type: 'singleColumnValue' as const, column: r.column, ...r.c, filterIfMissing: r.filterIfMissing })),
    fc.constant({ type: 'keyOnly' as const }),
    fc.constant({ type: 'firstKeyOnly' as const }),
    fc.integer({ min: 0, max: 5 }).map((rows) => ({ type: 'page' as const, rows })),
    fc.record({ limit: fc.integer({ min: 0, max: 3 }), offset: fc.integer({ min: 0, max: 3 }) }).map((r) => ({ type: 'columnPagination' as const, ...r })),
    fc.subarray([...times, 5]).map((ts) => ({ type: 'timestamps' as const, timestamps: ts.map((t) => String(BigInt(T0_SEC + t) * 1_000_000n)) })),
  );
}

export function filterArb(times: readonly number[]): fc.Arbitrary<FilterAst> {
  const { tree } = fc.letrec<{ tree: FilterAst }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leafArb(times),
      fc.record({ op: fc.constantFrom('AND' as const, 'OR' as const), filters: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }) }).map((l) => ({ type: 'list' as const, ...l })),
      tie('tree').map((filter) => ({ type: 'skip' as const, filter })),
      tie('tree').map((filter) => ({ type: 'while' as const, filter })),
    ),
  }));
  return tree;
}
