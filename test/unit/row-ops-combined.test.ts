/**
 * Several callers' row operations in ONE Raft entry (tserver/tablet/combined-writes.ts, docs/rows.md),
 * on one replica with real RocksDB and the file WAL: each call is evaluated and answered on its own
 * (applied, condition failed, FENCED), calls on rows another call of the batch writes go alone, the
 * entry answers every request id it carries — a resent copy of any of them is answered, not applied
 * again, also after a restart replays the log.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { partitionHash } from '../../common/partition-hash';
import type { DocKey, Primitive, TxnMeta } from '../../docdb/doc-db-api';
import { CompareOp, evaluateRowMutations, INT64_MAX, readsRows, type RowMutation } from '../../tserver/tablet/row-ops';
import { decodeTabletOp, encodeTabletOp, type TabletOp } from '../../tserver/tablet/tablet-op';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { WriteRequest } from '../../tserver/tablet/tablet-types';
import { TxnId } from '../../common/ids';
import { demoTabletMeta, openTestPeer, PeerJanitor, untilLeaderReady } from './tablet-peer-harness';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

/** The demo table (id, v string) plus n int64 (column 2). */
function meta(): TabletMeta {
  const m = demoTabletMeta('combined1');
  return { ...m, schema: { ...m.schema, columns: [...m.schema.columns, { name: 'n', id: 2, type: 'int64', nullable: true }] } };
}

const key = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });
const tag = (n: number) => ({ clientId: 'client-a', requestId: n, minRunning: 1 });

function call(rows: RowMutation[], requestId: number): WriteRequest {
  return {
    ops: [],
    computed: { keys: rows.map((r) => r.key), readsRows: readsRows(rows), compute: (cur) => evaluateRowMutations(rows, cur, 1 << 20).ops },
    heldLocks: rows.map((r) => r.lock),
    request: tag(requestId),
  };
}

const inc = (i: number, by: bigint, requestId: number): WriteRequest => call([{ key: key(i), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 2, by }] }], requestId);

async function n(p: TabletPeer, i: number): Promise<Primitive | undefined> {
  return (await p.read([key(i)], {})).rows[0]?.columns.get(2);
}

async function outcome(x: Promise<bigint>): Promise<bigint | string> {
  try {
    return await x;
  } catch (e) {
    return (e as DbError).code;
  }
}

/** A tablet peer on a fresh directory, closed and removed after the test. */
async function freshPeer(name: string): Promise<Awaited<ReturnType<typeof openTestPeer>>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `tessera-combined-${name}-`));
  janitor.dirs.push(dir);
  const p = await openTestPeer(dir, { meta: meta() });
  janitor.peers.push(p);
  return p;
}

describe('row ops combined into one entry', () => {
  it('combined: a WRITE entry carrying several request ids round-trips through the op codec', () => {
    const op: TabletOp = { type: 'WRITE', ht: 77n, ops: [{ type: 'delete', key: key(1) }], request: tag(1), moreRequests: [tag(2), { clientId: 'client-b', requestId: 9, minRunning: 3 }] };
    expect(decodeTabletOp(encodeTabletOp(op))).toEqual(op);
    expect(() => encodeTabletOp({ type: 'WRITE', ht: 1n, ops: [], moreRequests: [tag(2)] })).toThrow(DbError);
  });

  it('combined: calls share one entry and are answered one by one; overlapping rows go alone; copies are answered, not applied again, also after a restart', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-combined-'));
    janitor.dirs.push(dir);
    const p = await openTestPeer(dir, { meta: meta() });
    const before = p.raftGroup().appliedOpId().index;
    const reqs = [
      inc(1, 2n, 1),
      inc(2, 3n, 2),
      call([{ key: key(3), conditions: [{ columnId: 2, op: CompareOp.EXISTS }], mutations: [{ type: 'PUT', columnId: 1, value: 'never' }] }], 3),
      inc(1, 10n, 4), // row 1 again: its own entry
      inc(5, 1n, 5),
      call([{ key: key(6), conditions: [], mutations: [{ type: 'PUT', columnId: 1, value: 'x' }], lock: { lockId: 'nobody', token: 1 } }], 6),
    ];
    const got = await Promise.all(p.writeCombined(reqs).map(outcome));
    const [h1, h2, h3, h4, h5, h6] = got;
    expect(typeof h1).toBe('bigint');
    expect(h2).toBe(h1);
    expect(h5).toBe(h1);
    expect(h3).toBe(0n);
    expect(h6).toBe(ErrorCode.FENCED);
    expect(typeof h4 === 'bigint' && h4 !== h1).toBe(true); // its own entry (concurrent with the shared one)
    expect(p.raftGroup().appliedOpId().index).toBe(before + 2);
    expect([await n(p, 1), await n(p, 2), await n(p, 5)]).toEqual([12n, 3n, 1n]);
    expect((await p.read([key(3)], {})).rows[0]).toBeUndefined();
    // Copies of calls that rode along: answered with the shared entry's time, nothing applied twice.
    const again = await Promise.all(p.writeCombined([inc(2, 3n, 2), inc(5, 1n, 5)]).map(outcome));
    expect(again).toEqual([h1, h1]);
    expect(p.raftGroup().appliedOpId().index).toBe(before + 2);
    await p.stop();
    // After a restart the log replay (or its image) knows every request id of the entry.
    const q = await openTestPeer(dir, { meta: meta() });
    janitor.peers.push(q);
    await untilLeaderReady(q);
    expect(await outcome(q.write(inc(5, 1n, 5)))).toBe(h1);
    expect([await n(q, 1), await n(q, 2), await n(q, 5)]).toEqual([12n, 3n, 1n]);
  }, 30_000);

  it('combined: model-based — batches of calls on distinct rows (increments, conditional puts, an increment past int64, failing alone) answer and write exactly what the calls applied one by one would', async () => {
    const p = await freshPeer('model');
        const spec = fc.oneof(
      fc.record({ kind: fc.constant('inc' as const), by: fc.integer({ min: -3, max: 5 }) }),
      fc.record({ kind: fc.constant('putIf' as const), eq: fc.oneof(fc.integer({ min: 0, max: 4 }), fc.constant('absent' as const)), v: fc.constantFrom('a', 'b') }),
      fc.constant({ kind: 'bad' as const }),
    );
    // A batch: up to 6 calls, each on its own row of 8 (calls of one batch never share a row).
    const batch = fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 7 }), spec), { minLength: 1, maxLength: 6, selector: (x) => x[0] });
    let run = 0;
    let requestId = 1000;
    await fc.assert(
      fc.asyncProperty(fc.array(batch, { minLength: 1, maxLength: 4 }), async (batches) => {
        const base = 100 * run++;
        const model = new Map<number, { n?: bigint; v?: string }>();
        for (const b of batches) {
          const reqs = b.map(([r, x]) => {
            const k = key(base + r);
            const m: RowMutation =
              x.kind === 'inc'
                ? { key: k, conditions: [], mutations: [{ type: 'INCREMENT', columnId: 2, by: BigInt(x.by) }] }
                : x.kind === 'bad' // twice int64's max: past int64 whatever the cell holds
                  ? { key: k, conditions: [], mutations: [{ type: 'INCREMENT', columnId: 2, by: INT64_MAX }, { type: 'INCREMENT', columnId: 2, by: INT64_MAX }] }
                  : { key: k, conditions: [x.eq === 'absent' ? { columnId: 2, op: CompareOp.ABSENT } : { columnId: 2, op: CompareOp.EQ, value: BigInt(x.eq) }], mutations: [{ type: 'PUT', columnId: 1, value: x.v }] };
            return call([m], requestId++);
          });
          const got = await Promise.all(p.writeCombined(reqs).map(outcome));
          const want = b.map(([r, x]): 'applied' | bigint | string => {
            const row = model.get(r) ?? {};
            if (x.kind === 'inc') {
              model.set(r, { ...row, n: (row.n ?? 0n) + BigInt(x.by) });
              return 'applied';
            }
            if (x.kind === 'bad') return ErrorCode.INVALID_ARGUMENT;
            const holds = x.eq === 'absent' ? row.n === undefined : row.n === BigInt(x.eq);
            if (!holds) return 0n;
            model.set(r, { ...row, v: x.v });
            return 'applied';
          });
          const applied = got.filter((g) => typeof g === 'bigint' && g > 0n);
          // Every applied call of the batch rode the same entry.
          expect(new Set(applied).size).toBeLessThanOrEqual(1);
          got.forEach((g, i) => {
            const w = want[i]!;
            if (w === 'applied') expect(typeof g === 'bigint' && g > 0n).toBe(true);
            else expect(g).toBe(w);
          });
        }
        for (let r = 0; r < 8; r++) {
          const row = (await p.read([key(base + r)], {})).rows[0];
          const m = model.get(r);
          expect(row?.columns.get(2) ?? undefined).toBe(m?.n);
          expect(row?.columns.get(1) ?? undefined).toBe(m?.v);
        }
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it('combined: a call on a row holding a pending transaction\'s provisional records fails alone (TXN_CONFLICT: the joint pass fails, each call then settles its own rows); the other calls apply in one entry', async () => {
    const p = await freshPeer('intents');
    // A pending transaction (no status tablet here to settle it) holds row 3.
    const txn: TxnMeta = { txnId: TxnId('t-pending'), statusTablet: 'st1', isolation: 'snapshot', priority: 0.5, startHt: p.safeTime() };
    await p.writeIntents({ txn, readHt: p.safeTime(), ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(3), columns: [{ columnId: 1, value: 'txn' }] } }] });
    const before = p.raftGroup().appliedOpId().index;
    const got = await Promise.all(p.writeCombined([inc(1, 2n, 1), inc(3, 5n, 2), inc(4, 7n, 3)]).map(outcome));
    expect(got[1]).toBe(ErrorCode.TXN_CONFLICT);
    expect(typeof got[0]).toBe('bigint');
    expect(got[2]).toBe(got[0]);
    expect(p.raftGroup().appliedOpId().index).toBe(before + 1);
    expect([await n(p, 1), await n(p, 4)]).toEqual([2n, 7n]);
  }, 30_000);
});

