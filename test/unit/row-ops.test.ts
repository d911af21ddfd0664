/**
 * Atomic row operations at the tablet level (one replica on real RocksDB and the file WAL): a
 * model-based property test of increment / append / checkAndMutate / mutateRows against a plain
 * reference model, then the edge cases (types, limits, retryable copies).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { DocKey, Primitive } from '../../docdb/doc-db-api';
import { partitionHash } from '../../common/partition-hash';
import { CompareOp, evaluateRowMutations, readsRows, type CellMutation, type RowCondition, type RowMutation } from '../../tserver/tablet/row-ops';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { openTestPeer, PeerJanitor } from './tablet-peer-harness';
import { Flags } from '../../common/flags';
import { TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, WRITE_ANSWER_AT_COMMIT } from '../../tserver/tserver-flags';
import { parseRowMutations } from '../../tserver/row-service';
import type { RowMutationPB } from '../../rpc/row-methods';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

/** Columns: n int64 (1), s string (2), b bytes (3). */
function rowsMeta(): TabletMeta {
  return {
    tabletId: 'rows1',
    tableId: 'tbl',
    tableName: 'counters',
    schema: {
      columns: [
        { name: 'id', id: 0, type: 'int64', nullable: false },
        { name: 'n', id: 1, type: 'int64', nullable: true },
        { name: 's', id: 2, type: 'string', nullable: true },
        { name: 'b', id: 3, type: 'bytes', nullable: true },
      ],
      hashColumns: ['id'],
      rangeColumns: [],
    },
    partition: { start: 0, end: 65536 },
    peers: [{ uuid: 'ts1', rpcAddress: '127.0.0.1:1', memberType: 'VOTER' }],
    schemaVersion: 0,
  };
}

const key = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });
const CELL_MAX = 64;

async function open(flags?: Flags): Promise<TabletPeer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-rowops-'));
  janitor.dirs.push(dir);
  const p = await openTestPeer(dir, { meta: rowsMeta(), ...(flags ? { flags } : {}) });
  janitor.peers.push(p);
  return p;
}

/** What the RowService does with a parsed request: one computed write, then the new values. */
async function mutate(p: TabletPeer, rows: RowMutation[], request?: { clientId: string; requestId: number; minRunning: number }): Promise<{ applied: boolean; results: Array<Map<number, Primitive>> | undefined }> {
  let results: Array<Map<number, Primitive>> | undefined;
  const ht = await p.write({
    ops: [],
    computed: {
      keys: rows.map((r) => r.key),
      // As the RowService sends it: puts and deletes alone are written without reading the rows.
      readsRows: readsRows(rows),
      compute: (cur) => {
        const ev = evaluateRowMutations(rows, cur, CELL_MAX);
        results = ev.results;
        return ev.ops;
      },
    },
    heldLocks: rows.map((r) => r.lock),
    ...(request ? { request } : {}),
  });
  return { applied: ht !== 0n, results };
}

// ---- the reference model: rows as maps, every operation written out the obvious way -------------

type ModelRow = Map<number, Primitive>;
type Model = Map<number, ModelRow>;

function cmp(a: Primitive, b: Primitive): number | undefined {
  if (a === null || b === null || typeof a !== typeof b) return undefined;
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.compare(a, b);
  return (a as bigint | string) < (b as bigint | string) ? -1 : a === b || (typeof a === 'bigint' && a === b) ? 0 : 1;
}

function modelHolds(c: RowCondition, row: ModelRow | undefined): boolean {
  const v = row?.get(c.columnId) ?? null;
  if (c.op === 'EXISTS') return v !== null;
  if (c.op === 'ABSENT') return v === null;
  const x = cmp(v, c.value ?? null);
  if (x === undefined) return false;
  return c.op === 'EQ' ? x === 0 : c.op === 'NE' ? x !== 0 : c.op === 'LT' ? x < 0 : x > 0;
}

/** Applies the call to the model; answers applied, or the error code it must fail with. */
function modelApply(m: Model, ids: number[], rows: RowMutation[]): { applied: boolean } | { code: string } {
  if (!rows.every((r, i) => r.conditions.every((c) => modelHolds(c, m.get(ids[i]!))))) return { applied: false };
  const next: Model = new Map([...m].map(([k, v]) => [k, new Map(v)]));
  for (let i = 0; i < rows.length; i++) {
    let row = next.get(ids[i]!);
    for (const mu of rows[i]!.mutations) {
      if (mu.type === 'DELETE_ROW') {
        next.delete(ids[i]!);
        row = undefined;
        continue;
      }
      if (!row) next.set(ids[i]!, (row = new Map()));
      const cur = row.get(mu.columnId) ?? null;
      if (mu.type === 'PUT') row.set(mu.columnId, mu.value);
      else if (mu.type === 'INCREMENT') {
        const v = ((cur as bigint | null) ?? 0n) + mu.by;
        if (v >= 1n << 63n || v < -(1n << 63n)) return { code: ErrorCode.INVALID_ARGUMENT };
        row.set(mu.columnId, v);
      } else {
        const v = typeof mu.value === 'string' ? ((cur as string | null) ?? '') + mu.value : Buffer.concat([(cur as Uint8Array | null) ?? new Uint8Array(0), mu.value]);
        if ((typeof v === 'string' ? Buffer.byteLength(v) : v.byteLength) > CELL_MAX) return { code: ErrorCode.VALUE_TOO_LARGE };
        row.set(mu.columnId, v);
      }
    }
  }
  m.clear();
  for (const [k, v] of next) m.set(k, v);
  return { applied: true };
}

/** A model row as the tablet shows it: null cells absent, a row with no cell and no liveness... kept (an upsert makes it live). */
function modelCells(row: ModelRow | undefined): Record<number, string> {
  const out: Record<number, string> = {};
  for (const [c, v] of row ?? []) if (v !== null) out[c] = show(v);
  return out;
}

function show(v: Primitive): string {
  return v instanceof Uint8Array ? `b:${Buffer.from(v).toString('hex')}` : `${typeof v}:${String(v)}`;
}

// ---- generators -------------------------------------------------------------------------------------

const KEYS = 4;
const bigBy = fc.oneof(fc.bigInt({ min: -5n, max: 5n }), fc.constant((1n << 62n) + 1n));
const str = fc.string({ maxLength: 20 });
const bytes = fc.uint8Array({ maxLength: 20 });
const cond: fc.Arbitrary<RowCondition> = fc.oneof(
  fc.record({ columnId: fc.constant(1), op: fc.constantFrom<CompareOp>('EQ', 'NE', 'LT', 'GT'), value: fc.bigInt({ min: -3n, max: 3n }) }),
  fc.record({ columnId: fc.constant(2), op: fc.constantFrom<CompareOp>('EQ', 'NE', 'LT', 'GT'), value: str }),
  fc.record({ columnId: fc.constantFrom(1, 2, 3), op: fc.constantFrom<CompareOp>('EXISTS', 'ABSENT') }),
);
const mutation: fc.Arbitrary<CellMutation> = fc.oneof(
  fc.record({ type: fc.constant('INCREMENT' as const), columnId: fc.constant(1), by: bigBy }),
  fc.record({ type: fc.constant('APPEND' as const), columnId: fc.constant(2), value: str }),
  fc.record({ type: fc.constant('APPEND' as const), columnId: fc.constant(3), value: bytes }),
  fc.record({ type: fc.constant('PUT' as const), columnId: fc.constant(1), value: fc.option(fc.bigInt({ min: -3n, max: 3n }), { nil: null }) }),
  fc.record({ type: fc.constant('PUT' as const), columnId: fc.constant(2), value: fc.option(str, { nil: null }) }),
  fc.constant<CellMutation>({ type: 'DELETE_ROW' }),
);
const call = fc.uniqueArray(fc.record({ id: fc.integer({ min: 0, max: KEYS - 1 }), conditions: fc.array(cond, { maxLength: 2 }), mutations: fc.array(mutation, { maxLength: 4 }) }), { minLength: 1, maxLength: 3, selector: (r) => r.id });

describe('row operations (tablet)', () => {
  it('row ops: checkAndMutate / mutateRows / increment / append on a tablet agree with a reference model (model-based)', async () => {
    const p = await open();
    let base = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 12 }), async (calls) => {
        // Each run uses rows of its own (the tablet is shared across runs).
        base += KEYS;
        const model: Model = new Map();
        for (const c of calls) {
          const ids = c.map((r) => base + r.id);
          const rows: RowMutation[] = c.map((r, i) => ({ key: key(ids[i]!), conditions: r.conditions, mutations: r.mutations }));
          const want = modelApply(model, ids, rows);
          let got: { applied: boolean } | { code: string };
          try {
            got = { applied: (await mutate(p, rows)).applied };
          } catch (e) {
            got = { code: (e as DbError).code };
          }
          expect(got).toEqual(want);
        }
        const read = await p.read(
          Array.from({ length: KEYS }, (_, i) => key(base + i)),
          {},
        );
        for (let i = 0; i < KEYS; i++) {
          const r = read.rows[i];
          const cells: Record<number, string> = {};
          for (const [c, v] of r?.columns ?? []) if (v !== null) cells[c] = show(v);
          expect(cells).toEqual(modelCells(model.get(base + i)));
        }
      }),
      { numRuns: 60, seed: 5501 },
    );
  }, 120_000);

  it('row ops: increments answer the new values; absent counts as 0; several columns at once are one entry', async () => {
    const p = await open();
    const r1 = await mutate(p, [{ key: key(1), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 5n }, { type: 'APPEND', columnId: 2, value: 'ab' }] }]);
    expect(r1.results?.[0]).toEqual(new Map<number, Primitive>([[1, 5n], [2, 'ab']]));
    const before = p.raftGroup().appliedOpId().index;
    const r2 = await mutate(p, [{ key: key(1), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: -7n }, { type: 'APPEND', columnId: 2, value: 'c' }] }]);
    expect(r2.results?.[0]).toEqual(new Map<number, Primitive>([[1, -2n], [2, 'abc']]));
    expect(p.raftGroup().appliedOpId().index).toBe(before + 1);
  }, 30_000);

  it('row ops: a resent increment (same request id) is applied once and answers the same hybrid time', async () => {
    const p = await open();
    const rows: RowMutation[] = [{ key: key(9), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 1, by: 3n }] }];
    const tag = { clientId: 'c1', requestId: 1, minRunning: 1 };
    const a = mutate(p, rows, tag);
    const b = mutate(p, rows, tag); // a copy while the first runs: joins it
    const [x, y] = await Promise.all([a, b]);
    expect(x.applied && y.applied).toBe(true);
    const z = await mutate(p, rows, tag); // a copy after: answered from the retryable requests (results read back by the service)
    expect(z.applied).toBe(true);
    expect(z.results).toBeUndefined();
    const read = await p.read([key(9)], {});
    expect(read.rows[0]?.columns.get(1)).toBe(3n);
  }, 30_000);

  it('row ops: a checkAndMutate that timed out keeps its row locked until its entry settles; the next one sees it (no lost update)', async () => {
    const flags = new Flags();
    const p = await open(flags);
    // Every write batch waits before it is applied: the first write's caller gives up first (its
    // answer waits for the apply; at commit it would come before the 20 ms deadline).
    flags.set(WRITE_ANSWER_AT_COMMIT, false);
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, 300);
    const cas = (value: bigint, deadlineMs?: number): Promise<bigint> =>
      p.write({
        ops: [],
        computed: { keys: [key(4)], readsRows: true, compute: (cur) => evaluateRowMutations([{ key: key(4), conditions: [{ columnId: 1, op: CompareOp.ABSENT }], mutations: [{ type: 'PUT', columnId: 1, value }] }], cur, CELL_MAX).ops },
        ...(deadlineMs !== undefined ? { deadlineMs } : {}),
      });
    const first = await cas(1n, 20).then(() => 'applied', (e: unknown) => (e instanceof DbError ? e.code : String(e)));
    expect(first).toBe(ErrorCode.TIMED_OUT);
    // Same condition (the cell is absent): it must be judged after the first write is applied.
    const second = await cas(2n);
    flags.set(TEST_INJECT_SLEEP_BEFORE_APPLYING_WRITE_BATCH_MS, 0);
    expect(second).toBe(0n); // not applied: the first one took the cell
    const read = await p.read([key(4)], {});
    expect(read.rows[0]?.columns.get(1)).toBe(1n);
  }, 30_000);

  it('row ops: increment of a non-integer cell and append past the cell limit fail with stable codes, nothing written', async () => {
    const p = await open();
    await p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(3), columns: [{ columnId: 2, value: 'x'.repeat(60) }] } }] });
    const tooBig = await mutate(p, [{ key: key(3), conditions: [], mutations: [{ type: 'APPEND', columnId: 2, value: 'y'.repeat(10) }] }]).catch((e: unknown) => e as DbError);
    expect((tooBig as DbError).code).toBe(ErrorCode.VALUE_TOO_LARGE);
    const wrongType = await mutate(p, [{ key: key(3), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 2, by: 1n }] }]).catch((e: unknown) => e as DbError);
    expect((wrongType as DbError).code).toBe(ErrorCode.INVALID_ARGUMENT);
    const read = await p.read([key(3)], {});
    expect(read.rows[0]?.columns.get(2)).toBe('x'.repeat(60));
  }, 30_000);

  it('row ops: the service refuses malformed rows with INVALID_ARGUMENT (types, key columns, unknown ops, a row twice)', () => {
    const meta = rowsMeta();
    const k = { hash: partitionHash([1n]), hashed: [{ int64Value: 1n }], range: [] };
    const bad = (rows: RowMutationPB[]): string => {
      try {
        parseRowMutations(meta, rows);
        return 'OK';
      } catch (e) {
        return `${(e as DbError).code}: ${(e as DbError).message}`;
      }
    };
    expect(bad([{ key: k, mutations: [{ type: 'INCREMENT', columnId: 2, by: 1n }] }])).toMatch(/^INVALID_ARGUMENT: increment: column s is string, not int64/);
    expect(bad([{ key: k, mutations: [{ type: 'APPEND', columnId: 1, value: { stringValue: 'x' } }] }])).toMatch(/^INVALID_ARGUMENT: append: column n is int64/);
    expect(bad([{ key: k, mutations: [{ type: 'APPEND', columnId: 3, value: { stringValue: 'x' } }] }])).toMatch(/^INVALID_ARGUMENT: column b has type bytes/);
    expect(bad([{ key: k, mutations: [{ type: 'PUT', columnId: 0, value: { int64Value: 2n } }] }])).toMatch(/^INVALID_ARGUMENT: column id is part of the primary key/);
    expect(bad([{ key: k, mutations: [{ type: 'SWAP', columnId: 1 }] }])).toMatch(/^INVALID_ARGUMENT: unknown mutation 'SWAP'/);
    expect(bad([{ key: k, conditions: [{ columnId: 1, op: 'LIKE' }] }])).toMatch(/^INVALID_ARGUMENT: unknown condition 'LIKE'/);
    expect(bad([{ key: k, conditions: [{ columnId: 1, op: 'EQ' }] }])).toMatch(/^INVALID_ARGUMENT: condition EQ on n needs a value/);
    expect(bad([{ key: k, conditions: [{ columnId: 1, op: 'EQ', value: { stringValue: '1' } }] }])).toMatch(/^INVALID_ARGUMENT: column n has type int64/);
    expect(bad([{ key: k }, { key: k }])).toMatch(/^INVALID_ARGUMENT: mutate_rows names a row twice/);
    expect(bad([])).toMatch(/^INVALID_ARGUMENT: mutate_rows has no rows/);
    expect(parseRowMutations(meta, [{ key: k, conditions: [{ columnId: 1, op: 'ABSENT' }], mutations: [{ type: 'INCREMENT', columnId: 1, by: -2n }], lockId: 'L', lockToken: 12n }])).toEqual([
      { key: { hash: k.hash, hashed: [1n], range: [] }, conditions: [{ columnId: 1, op: 'ABSENT' }], mutations: [{ type: 'INCREMENT', columnId: 1, by: -2n }], lock: { lockId: 'L', token: 12 } },
    ]);
  });
});
