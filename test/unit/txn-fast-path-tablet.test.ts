/**
 * The single-tablet fast path on one tablet replica (tserver/tablet/fast-path.ts, real RocksDB in a
 * temp dir, a fake status tablet): a fast-path write meets committed versions after its read time and
 * other transactions' intents exactly as that transaction's intents would, and writes no intents.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import { Flags } from '../../common/flags';
import { TxnId } from '../../common/ids';
import type { DocKey, TxnMeta } from '../../docdb/doc-db-api';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import type { PeerTxnEnv, TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';
import { PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: (i * 7919) % 65536, hashed: [BigInt(i)], range: [] });
const upsert = (i: number, v: string) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: v }] } });
const txn = (id: string, priority: number, startHt: bigint, isolation: 'snapshot' | 'serializable' = 'snapshot'): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation, priority, startHt });

function fakeEnv(): PeerTxnEnv & { statuses: Map<string, TxnStatusInfo>; aborts: string[] } {
  const statuses = new Map<string, TxnStatusInfo>();
  const aborts: string[] = [];
  return {
    statuses,
    aborts,
    getStatus: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
    known: (id) => {
      const st = statuses.get(id);
      return st && st.status !== 'PENDING' ? st : undefined;
    },
    abort: (id) => {
      aborts.push(id);
      const s = statuses.get(id);
      if (s?.status === 'PENDING') statuses.set(id, { status: 'ABORTED', priority: s.priority });
      return Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 });
    },
  };
}

async function open(env: PeerTxnEnv): Promise<TabletPeer> {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-fast-path-'));
  janitor.dirs.push(d);
  const p = await TabletPeer.open(testPeerDeps(d, { flags: new Flags(), txnEnv: env }));
  janitor.peers.push(p);
  await untilLeaderReady(p);
  return p;
}

const valueOf = async (p: TabletPeer, i: number): Promise<unknown> => (await p.read([key(i)], {})).rows[0]?.columns.get(1);

describe('fast path on a tablet replica', () => {
  it('fast path: the rows go into RegularDB in one write at a time above the read time, with no intents', async () => {
    const p = await open(fakeEnv());
    const readHt = p.safeTime();
    const ht = await p.write({ ops: [upsert(1, 'a'), upsert(2, 'b')], fastPathTxn: { txn: txn('f-1', 0.5, readHt), readHt } });
    expect(ht).toBeGreaterThan(readHt);
    expect([await valueOf(p, 1), await valueOf(p, 2)]).toEqual(['a', 'b']);
    expect((await p.sizes()).intentsdb.intentCount).toBe(0);
    expect(await p.transactions()).toEqual([]);
  });

  it('fast path: a version committed after the read time fails it with TXN_CONFLICT, nothing written (first committer wins)', async () => {
    const p = await open(fakeEnv());
    const readHt = p.safeTime();
    await p.write({ ops: [upsert(3, 'plain')] });
    await expect(p.write({ ops: [upsert(3, 'fast'), upsert(4, 'fast')], fastPathTxn: { txn: txn('f-2', 0.9, readHt), readHt } })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect([await valueOf(p, 3), await valueOf(p, 4)]).toEqual(['plain', undefined]);
    // Read after that commit: no conflict.
    const later = p.safeTime();
    await p.write({ ops: [upsert(3, 'fast')], fastPathTxn: { txn: txn('f-3', 0.1, later), readHt: later } });
    expect(await valueOf(p, 3)).toBe('fast');
  });

  it('fast path: pending intents are settled by priority, and a transaction committed after the read time wins', async () => {
    const env = fakeEnv();
    const p = await open(env);
    // A pending transaction of higher priority holds row 5: the fast path loses.
    env.statuses.set('hi', { status: 'PENDING', priority: 0.9 });
    await p.writeIntents({ txn: txn('hi', 0.9, p.safeTime()), readHt: p.safeTime(), ops: [upsert(5, 'hi')] });
    const r1 = p.safeTime();
    await expect(p.write({ ops: [upsert(5, 'lo')], fastPathTxn: { txn: txn('lo', 0.1, r1), readHt: r1 } })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect(env.aborts).not.toContain('hi');
    // Of lower priority: the fast path aborts it and writes.
    env.statuses.set('lo2', { status: 'PENDING', priority: 0.1 });
    await p.writeIntents({ txn: txn('lo2', 0.1, p.safeTime()), readHt: p.safeTime(), ops: [upsert(6, 'lo2')] });
    const r2 = p.safeTime();
    await p.write({ ops: [upsert(6, 'fast')], fastPathTxn: { txn: txn('f-4', 0.9, r2), readHt: r2 } });
    expect(env.aborts).toContain('lo2');
    expect(await valueOf(p, 6)).toBe('fast');
    // 'hi' commits after r3 was taken: a fast path reading at r3 must not write over it.
    const r3 = p.safeTime();
    const commitHt = p.safeTime() + 1000n;
    env.statuses.set('hi', { status: 'COMMITTED', commitHt, priority: 0.9 });
    await expect(p.write({ ops: [upsert(5, 'late')], fastPathTxn: { txn: txn('f-5', 0.99, r3), readHt: r3 } })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
  });

  it('fast path without a read time (no status record): the tablet picks it, orders after committed transactions and still loses to a pending one of higher priority', async () => {
    const env = fakeEnv();
    const p = await open(env);
    // A committed-but-not-applied transaction whose commit time is ahead of this tablet's clock
    // (another status tablet's clock): a transaction that never read orders after it, no conflict.
    env.statuses.set('c1', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn: txn('c1', 0.5, p.safeTime()), readHt: p.safeTime(), ops: [upsert(7, 'c1')] });
    const commitHt = p.safeTime() + 5_000_000n;
    env.statuses.set('c1', { status: 'COMMITTED', commitHt, priority: 0.5 });
    const ht = await p.write({ ops: [upsert(7, 'blind'), upsert(8, 'blind')], fastPathTxn: { txn: { ...txn('nr-1', 0.1, 0n), statusTablet: '' } } });
    expect(ht).toBeGreaterThan(commitHt);
    expect([await valueOf(p, 7), await valueOf(p, 8)]).toEqual(['blind', 'blind']);
    // A pending transaction of higher priority on the row: the record-less transaction fails, nothing written.
    env.statuses.set('hi2', { status: 'PENDING', priority: 0.9 });
    await p.writeIntents({ txn: txn('hi2', 0.9, p.safeTime()), readHt: p.safeTime(), ops: [upsert(9, 'hi2')] });
    await expect(p.write({ ops: [upsert(9, 'blind'), upsert(10, 'blind')], fastPathTxn: { txn: { ...txn('nr-2', 0.2, 0n), statusTablet: '' } } })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect(await valueOf(p, 10)).toBeUndefined();
    expect((await p.sizes()).intentsdb.intentCount).toBeGreaterThan(0);
  });
});

describe('coalesced fast-path commits on a tablet replica (tserver/tablet/fast-path-batch.ts)', () => {
  const tag = (requestId: number) => ({ clientId: 'c-batch', requestId, minRunning: 1 });
  const commit = (id: string, rows: number[], requestId: number, readHt?: bigint) => ({
    ops: rows.map((i) => upsert(i, id)),
    fastPathTxn: readHt === undefined ? { txn: txn(id, 0.5, 0n) } : { txn: txn(id, 0.5, readHt), readHt },
    request: tag(requestId),
  });

  it('several commits share ONE Raft entry; one that conflicts fails alone; a copy is answered, not applied again', async () => {
    const p = await open(fakeEnv());
    const readHt = p.safeTime();
    await p.write({ ops: [upsert(23, 'plain')] });
    const before = p.status().appliedIndex;
    const [a, b, c, dup] = await Promise.allSettled(
      p.writeCombined([
        commit('b-1', [20, 21], 1),
        commit('b-2', [22], 2),
        // A version of row 23 committed after this transaction's read time: first committer wins.
        commit('b-3', [23, 24], 3, readHt),
        // Row 20 is b-1's: this one takes the lone path (its own entry), after b-1's latches.
        commit('b-4', [20], 4),
      ]),
    );
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('fulfilled');
    expect(c).toMatchObject({ status: 'rejected', reason: { code: ErrorCode.TXN_CONFLICT } });
    expect(dup.status).toBe('fulfilled');
    const ht1 = (a as PromiseFulfilledResult<bigint>).value;
    // b-1 and b-2: one entry, one time; b-4: an entry of its own.
    expect((b as PromiseFulfilledResult<bigint>).value).toBe(ht1);
    expect((dup as PromiseFulfilledResult<bigint>).value).not.toBe(ht1);
    expect(p.status().appliedIndex - before).toBe(2);
    expect([await valueOf(p, 21), await valueOf(p, 22), await valueOf(p, 23), await valueOf(p, 24)]).toEqual(['b-1', 'b-2', 'plain', undefined]);
    // A resent copy of b-2 is answered with its time and writes nothing again.
    const again = await p.write(commit('b-2', [22], 2));
    expect(again).toBe(ht1);
    expect(p.status().appliedIndex - before).toBe(2);
    expect((await p.sizes()).intentsdb.intentCount).toBe(0);
  });
});
