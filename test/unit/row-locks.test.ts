/**
 * Row locks with leases and fencing tokens at the tablet level (one replica on real RocksDB and the
 * file WAL): ROW_LOCKED for others, FENCED for a stale lock, lease expiry in hybrid time, waiting
 * writers; locks are the leader's alone — no Raft entry — and a restart (a new term) ends them all,
 * with tokens of the new epoch above the old; the lock table's epochs across leaders and splits.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { DocKey, Primitive, RowOp, TxnMeta } from '../../docdb/doc-db-api';
import { TxnId } from '../../common/ids';
import { partitionHash } from '../../common/partition-hash';
import { evaluateRowMutations, type RowMutation } from '../../tserver/tablet/row-ops';
import { parseRowLockImage, RowLockTable, TOKEN_EPOCH_FACTOR, type HeldLock } from '../../tserver/tablet/row-locks';
import { decodeTabletOp, docKeyString, encodeTabletOp, RowLockAction, type TabletOp } from '../../tserver/tablet/tablet-op';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { demoTabletMeta, openTestPeer, PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';
import { parseTabletMeta, type TabletMeta } from '../../tserver/tablet/tablet-meta';

const janitor = new PeerJanitor();
afterEach(() => janitor.cleanup());

/** The demo table (id, v string) plus n int64 (column 2). */
function lockMeta(): TabletMeta {
  const m = demoTabletMeta('locks1');
  return { ...m, schema: { ...m.schema, columns: [...m.schema.columns, { name: 'n', id: 2, type: 'int64', nullable: true }] } };
}

const key = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });

async function open(dir?: string): Promise<{ p: TabletPeer; dir: string }> {
  const d = dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-rowlocks-'));
  if (!dir) janitor.dirs.push(d);
  const p = await openTestPeer(d, { meta: lockMeta() });
  return { p, dir: d };
}

/** Put column 1 (string) of row i, carrying `lock` when given (and releasing it with the write: `unlockAfter`). */
function put(p: TabletPeer, i: number, v: string, lock?: HeldLock, waitMs?: number, unlockAfter?: boolean): Promise<bigint> {
  const rows: RowMutation[] = [{ key: key(i), conditions: [], mutations: [{ type: 'PUT', columnId: 1, value: v }] }];
  return p.write({
    ops: [],
    computed: { keys: [key(i)], compute: (cur) => evaluateRowMutations(rows, cur, 1 << 20).ops },
    heldLocks: [lock],
    ...(unlockAfter ? { unlockAfter: [true] } : {}),
    ...(waitMs !== undefined ? { waitForLocks: true, deadlineMonoMs: performance.now() + waitMs } : {}),
  });
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return (e as DbError).code;
  }
}

async function value(p: TabletPeer, i: number): Promise<Primitive | undefined> {
  return (await p.read([key(i)], {})).rows[0]?.columns.get(1);
}

const far = (): number => performance.now() + 5000;

describe('row locks (tablet)', () => {
  it('row locks: the ROW_LOCK entry round-trips through the op codec', () => {
    const op: TabletOp = { type: 'ROW_LOCK', action: RowLockAction.RENEW, ht: 123456789n, key: { hash: 7, hashed: [5n, 'a'], range: [-3n, true] }, lockId: 'abc', holder: 'client-1', leaseMs: 60_000 };
    expect(decodeTabletOp(encodeTabletOp(op))).toEqual(op);
  });

  it('row locks: others get ROW_LOCKED, the holder writes with its lock, a wrong id cannot unlock, unlocking frees the row; no Raft entry; tokens are term × 2^32 + n and grow', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const entries = p.raftGroup().appliedOpId().index;
    const a = await ops.lock(key(1), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    expect(a.token).toBe(p.currentTerm() * TOKEN_EPOCH_FACTOR + 1);
    expect(p.raftGroup().appliedOpId().index).toBe(entries);
    expect(await code(put(p, 1, 'other'))).toBe(ErrorCode.ROW_LOCKED);
    expect(await code(p.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: key(1), columns: [{ columnId: 1, value: 'plain' }] } }] }))).toBe(ErrorCode.ROW_LOCKED);
    expect(await code(ops.lock(key(1), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() }))).toBe(ErrorCode.ROW_LOCKED);
    expect(await code(put(p, 2, 'free row'))).toBe('OK');
    expect(await code(put(p, 1, 'holder', { lockId: a.lockId, token: a.token }))).toBe('OK');
    expect(await code(put(p, 1, 'wrong token', { lockId: a.lockId, token: a.token - 1 }))).toBe(ErrorCode.FENCED);
    expect(await code(ops.unlock(key(1), 'not-the-id'))).toBe(ErrorCode.ROW_LOCK_NOT_HELD);
    // A resent lockRow of the same lock id answers the same lock.
    expect((await ops.lock(key(1), { leaseMs: 60_000, holder: 'A', lockId: a.lockId, wait: false, deadlineMonoMs: far() })).token).toBe(a.token);
    await ops.unlock(key(1), a.lockId);
    expect(await code(put(p, 1, 'after'))).toBe('OK');
    expect(await code(put(p, 1, 'late holder', { lockId: a.lockId, token: a.token }))).toBe(ErrorCode.FENCED);
    const b = await ops.lock(key(1), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    expect(b.token).toBe(a.token + 1);
    expect(await value(p, 1)).toBe('after');
    expect(p.rowLocks.metrics).toMatchObject({ granted: 2, released: 1 });
  }, 30_000);

  it('row locks: a lease that runs out frees the row and fences its holder; renewing keeps it', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const a = await ops.lock(key(3), { leaseMs: 300, holder: 'A', wait: false, deadlineMonoMs: far() });
    const renewed = await ops.renew(key(3), a.lockId, 400);
    expect(renewed.token).toBe(a.token);
    // Wait on the condition (bounded): the row frees itself once the lease ran out.
    let freed = false;
    for (let i = 0; i < 200 && !freed; i++) {
      freed = (await code(put(p, 3, 'after expiry'))) === 'OK';
      if (!freed) await new Promise((r) => setTimeout(r, 20));
    }
    expect(freed).toBe(true);
    expect(await code(put(p, 3, 'paused holder', { lockId: a.lockId, token: a.token }))).toBe(ErrorCode.FENCED);
    expect(await code(ops.renew(key(3), a.lockId, 1000))).toBe(ErrorCode.ROW_LOCK_NOT_HELD);
    expect(await value(p, 3)).toBe('after expiry');
  }, 30_000);

  it('row locks: a writer asked to wait waits for the unlock (holding no lock), a waiter past its deadline fails ROW_LOCKED', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const a = await ops.lock(key(4), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    expect(await code(put(p, 4, 'short wait', undefined, 150))).toBe(ErrorCode.ROW_LOCKED);
    const waiting = put(p, 4, 'waited', undefined, 10_000);
    for (let i = 0; i < 200 && p.rowLocks.waitingNow() === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(p.rowLocks.waitingNow()).toBe(1);
    expect(await code(put(p, 4, 'holder', { lockId: a.lockId, token: a.token }))).toBe('OK');
    await ops.unlock(key(4), a.lockId);
    expect(await code(waiting)).toBe('OK');
    expect(await value(p, 4)).toBe('waited');
  }, 30_000);

  it('row locks: concurrent increments of one row sum exactly (each read-modify-write under the row lock)', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const rows: RowMutation[] = [{ key: key(5), conditions: [], mutations: [{ type: 'INCREMENT', columnId: 2, by: 1n }] }];
    const one = (): Promise<bigint> => p.write({ ops: [], computed: { keys: [key(5)], compute: (cur) => evaluateRowMutations(rows, cur, 1 << 20).ops } });
    await Promise.all(Array.from({ length: 50 }, one));
    expect((await p.read([key(5)], {})).rows[0]?.columns.get(2)).toBe(50n);
  }, 30_000);

  it('row locks: a restart ends every lock (a new term, a new epoch): writes carrying one are FENCED, the rows are free, new tokens are above the old; a log GC image keeps the epoch base', async () => {
    const { p, dir } = await open();
    const ops = p.rowLockOps();
    const a = await ops.lock(key(6), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    await put(p, 7, 'x');
    await p.stop();
    const meta = { ...lockMeta(), rowLockEpochBase: 7 };
    const p2 = await TabletPeer.open(testPeerDeps(dir, { meta }));
    janitor.peers.push(p2);
    await untilLeaderReady(p2);
    expect(p2.rowLocks.list(p2.hybridNow())).toEqual([]);
    expect(await code(put(p2, 6, 'late holder', { lockId: a.lockId, token: a.token }))).toBe(ErrorCode.FENCED);
    expect(await code(put(p2, 6, 'other'))).toBe('OK');
    const b = await p2.rowLockOps().lock(key(6), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    expect(b.token).toBe((7 + p2.currentTerm()) * TOKEN_EPOCH_FACTOR + 1);
    expect(b.token).toBeGreaterThan(a.token);
    await p2.gcLog(0);
    expect(parseRowLockImage(JSON.parse(fs.readFileSync(path.join(dir, 'row-locks.json'), 'utf8')))).toMatchObject({ locks: [], epochBase: 7 });
    expect(await value(p2, 6)).toBe('other');
  }, 30_000);

  it('row locks: the lock table ends its locks when the term changes or leadership goes, tokens grow across terms, a split child starts above its parent, images carry the base', () => {
    let term: number | undefined = 3;
    const parent = new RowLockTable();
    parent.bindEpoch({ metaBase: () => 10, readyLeaderTerm: () => term });
    const at = (ms: number): bigint => BigInt(ms) * 1000n * 4096n;
    const lockOf = (t: RowLockTable, i: number, id: string): number => t.grant(key(i), docKeyString(key(i)), { lockId: id, holder: id, ht: at(1), leaseMs: 60_000 }, 't').token;
    const t1 = lockOf(parent, 1, 'a');
    expect(t1).toBe(13 * TOKEN_EPOCH_FACTOR + 1);
    expect(() => parent.check('t', [key(1)], [undefined], at(2))).toThrow(/locked/);
    term = undefined; // a follower now: nothing held, nothing granted
    expect(parent.list(at(2))).toEqual([]);
    expect(() => lockOf(parent, 2, 'b')).toThrow(expect.objectContaining({ code: ErrorCode.LEADER_NOT_READY }));
    term = 5;
    expect(() => parent.check('t', [key(1)], [{ lockId: 'a', token: t1 }], at(2))).toThrow(expect.objectContaining({ code: ErrorCode.FENCED }));
    const t2 = lockOf(parent, 1, 'c');
    expect(t2).toBe(15 * TOKEN_EPOCH_FACTOR + 1);
    expect(parent.metrics.endedByLeaderChange).toBe(1);
    // SPLIT applied in term 5: the child's epochs (base 15 + its terms from 1) are above every parent epoch.
    parent.noteSplit(5);
    const child = new RowLockTable();
    child.bindEpoch({ metaBase: () => parent.childEpochBase(), readyLeaderTerm: () => 1 });
    expect(lockOf(child, 1, 'd')).toBeGreaterThan(t2);
    // A replica made by remote bootstrap whose meta lacks the base takes it from the image.
    const copy = new RowLockTable();
    copy.restore(parseRowLockImage(JSON.parse(JSON.stringify(child.image()))));
    copy.bindEpoch({ metaBase: () => 0, readyLeaderTerm: () => 2 });
    expect(lockOf(copy, 1, 'e')).toBe(17 * TOKEN_EPOCH_FACTOR + 1);
    // An image of the replicated lock table (before) still reads; its locks are gone.
    expect(parseRowLockImage({ index: 9, locks: [{ op: 'AA==', token: 5, expiresHt: '1' }] })).toEqual({ index: 9, locks: [] });
    expect(() => parseRowLockImage({ index: 9, locks: [], epochBase: -1 })).toThrow(/epoch base/);
    // The tablet meta keeps the base (a split child's meta.json), and refuses a bad one.
    expect(parseTabletMeta(JSON.parse(JSON.stringify({ ...lockMeta(), rowLockEpochBase: 15 }))).rowLockEpochBase).toBe(15);
    expect(parseTabletMeta(JSON.parse(JSON.stringify(lockMeta()))).rowLockEpochBase).toBeUndefined();
    expect(() => parseTabletMeta({ ...lockMeta(), rowLockEpochBase: 1.5 })).toThrow(/rowLockEpochBase/);
  });

  it('row locks: coalesced calls with unlockAfter share ONE entry and each releases its own lock once it committed; a stale one is FENCED alone', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const a = await ops.lock(key(20), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    const b = await ops.lock(key(21), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    const c = await ops.lock(key(22), { leaseMs: 60_000, holder: 'C', wait: false, deadlineMonoMs: far() });
    const call = (i: number, lock: HeldLock, requestId: number) => {
      const rows: RowMutation[] = [{ key: key(i), conditions: [], mutations: [{ type: 'PUT', columnId: 1, value: `v${i}` }], lock }];
      return { ops: [], computed: { keys: [key(i)], compute: (cur: Parameters<typeof evaluateRowMutations>[1]) => evaluateRowMutations(rows, cur, 1 << 20).ops }, heldLocks: [lock], unlockAfter: [true], request: { clientId: 'c1', requestId, minRunning: 1 } };
    };
    const before = p.raftGroup().appliedOpId().index;
    const got = await Promise.all(p.writeCombined([call(20, a, 1), call(21, b, 2), call(22, { lockId: c.lockId, token: c.token + 1 }, 3)]).map((x) => code(x)));
    expect(got).toEqual(['OK', 'OK', ErrorCode.FENCED]);
    expect(p.raftGroup().appliedOpId().index).toBe(before + 1);
    expect(p.rowLocks.list(p.hybridNow()).map((l) => l.lockId)).toEqual([c.lockId]);
    expect(p.rowLocks.metrics.unlocksAfterWrite).toBe(2);
    expect([await value(p, 20), await value(p, 21), await value(p, 22)]).toEqual(['v20', 'v21', undefined]);
  }, 30_000);

  it('row locks: a transaction cannot write a locked row (ROW_LOCKED), and lockRow does not take a row holding a pending transaction\'s provisional records', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const a = await ops.lock(key(10), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    const txn = (id: string): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation: 'snapshot', priority: 0.5, startHt: p.safeTime() });
    const upsert = (i: number): { kind: 'UPSERT'; op: RowOp } => ({ kind: 'UPSERT', op: { type: 'upsert', key: key(i), columns: [{ columnId: 1, value: 'txn' }] } });
    expect(await code(p.writeIntents({ txn: txn('t-1'), readHt: p.safeTime(), ops: [upsert(10)] }))).toBe(ErrorCode.ROW_LOCKED);
    await ops.unlock(key(10), a.lockId);
    // A pending transaction (no status tablet here to settle it) holds row 11: the lock is refused, nothing granted.
    await p.writeIntents({ txn: txn('t-2'), readHt: p.safeTime(), ops: [upsert(11)] });
    expect(await code(ops.lock(key(11), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() }))).toBe(ErrorCode.TXN_CONFLICT);
    expect(p.rowLocks.list(p.hybridNow())).toEqual([]);
  }, 30_000);

  it('row locks: a write with unlockAfter releases its lock once committed (one entry); a stale lock with unlockAfter is FENCED and releases nothing; a restart keeps the write and ends the lock', async () => {
    const { p, dir } = await open();
    const ops = p.rowLockOps();
    const a = await ops.lock(key(5), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    const before = p.raftGroup().appliedOpId().index;
    expect(await code(put(p, 5, 'and unlock', { lockId: a.lockId, token: a.token }, undefined, true))).toBe('OK');
    // One entry, the write's: when the write is answered the row is free already.
    expect(p.rowLocks.size()).toBe(0);
    expect(await value(p, 5)).toBe('and unlock'); // the read waits for the write's apply (answered at commit)
    expect(p.raftGroup().appliedOpId().index).toBe(before + 1);
    expect(await code(put(p, 5, 'anyone'))).toBe('OK');
    expect(await code(put(p, 5, 'late', { lockId: a.lockId, token: a.token }, undefined, true))).toBe(ErrorCode.FENCED);
    // Someone else's lock on the row: a stale holder's unlockAfter neither writes nor unlocks it.
    const b = await ops.lock(key(5), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    expect(await code(put(p, 5, 'stale', { lockId: a.lockId, token: a.token }, undefined, true))).toBe(ErrorCode.FENCED);
    expect(p.rowLocks.list(p.hybridNow()).map((l) => l.lockId)).toEqual([b.lockId]);
    expect(p.rowLocks.metrics).toMatchObject({ released: 1, unlocksAfterWrite: 1 });
    expect(await value(p, 5)).toBe('anyone');
    await p.stop();
    const again = await open(dir);
    janitor.peers.push(again.p);
    await untilLeaderReady(again.p);
    expect(again.p.rowLocks.list(again.p.hybridNow())).toEqual([]);
    expect(await code(put(again.p, 5, 'b after restart', { lockId: b.lockId, token: b.token }))).toBe(ErrorCode.FENCED);
    expect(await value(again.p, 5)).toBe('anyone');
  }, 30_000);
});
