/**
 * Row locks with leases and fencing tokens at the tablet level (one replica on real RocksDB and the
 * file WAL): ROW_LOCKED for others, FENCED for a stale lock, lease expiry in hybrid time, waiting
 * writers, and the lock table surviving a restart (from the log, and from the image a log GC saves).
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
import type { HeldLock } from '../../tserver/tablet/row-locks';
import { decodeTabletOp, encodeTabletOp, RowLockAction, type TabletOp } from '../../tserver/tablet/tablet-op';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { demoTabletMeta, openTestPeer, PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';

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

  it('row locks: others get ROW_LOCKED, the holder writes with its lock, a wrong id cannot unlock, unlocking frees the row; tokens are Raft indexes and grow', async () => {
    const { p } = await open();
    janitor.peers.push(p);
    const ops = p.rowLockOps();
    const a = await ops.lock(key(1), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    expect(a.token).toBe(p.raftGroup().appliedOpId().index);
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
    expect(b.token).toBeGreaterThan(a.token);
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

  it('row locks: the lock table survives a restart — replayed from the log, and from the image a log GC saved', async () => {
    const { p, dir } = await open();
    const ops = p.rowLockOps();
    const a = await ops.lock(key(6), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    await put(p, 7, 'x');
    await p.stop();
    const p2 = await TabletPeer.open(testPeerDeps(dir, { meta: lockMeta() }));
    janitor.peers.push(p2);
    await untilLeaderReady(p2);
    expect(await code(put(p2, 6, 'other'))).toBe(ErrorCode.ROW_LOCKED);
    const b = await p2.rowLockOps().lock(key(8), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    for (let i = 0; i < 5; i++) await put(p2, 9, `v${i}`);
    // Compact the whole log: the locks now live only in the image.
    await p2.gcLog(0);
    expect(p2.logFirstIndex()).toBeGreaterThan(b.token);
    await p2.stop();
    janitor.peers.pop();
    const p3 = await TabletPeer.open(testPeerDeps(dir, { meta: lockMeta() }));
    janitor.peers.push(p3);
    await untilLeaderReady(p3);
    expect(await code(put(p3, 6, 'other'))).toBe(ErrorCode.ROW_LOCKED);
    expect(await code(put(p3, 8, 'other'))).toBe(ErrorCode.ROW_LOCKED);
    expect(await code(put(p3, 6, 'holder', { lockId: a.lockId, token: a.token }))).toBe('OK');
    expect(p3.rowLocks.list(p3.hybridNow()).map((l) => l.token)).toEqual([a.token, b.token]);
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

  it('row locks: a write with unlockAfter releases its lock behind it (write entry, then UNLOCK); a stale lock with unlockAfter is FENCED and releases nothing; a restart keeps the outcome', async () => {
    const { p, dir } = await open();
    const ops = p.rowLockOps();
    const a = await ops.lock(key(5), { leaseMs: 60_000, holder: 'A', wait: false, deadlineMonoMs: far() });
    const before = p.raftGroup().appliedOpId().index;
    expect(await code(put(p, 5, 'and unlock', { lockId: a.lockId, token: a.token }, undefined, true))).toBe('OK');
    // Two entries, the write first: when the write is answered the row is free already.
    expect(p.raftGroup().appliedOpId().index).toBe(before + 2);
    expect(p.rowLocks.size()).toBe(0);
    expect(await code(put(p, 5, 'anyone'))).toBe('OK');
    expect(await code(put(p, 5, 'late', { lockId: a.lockId, token: a.token }, undefined, true))).toBe(ErrorCode.FENCED);
    // Someone else's lock on the row: a stale holder's unlockAfter neither writes nor unlocks it.
    const b = await ops.lock(key(5), { leaseMs: 60_000, holder: 'B', wait: false, deadlineMonoMs: far() });
    expect(await code(put(p, 5, 'stale', { lockId: a.lockId, token: a.token }, undefined, true))).toBe(ErrorCode.FENCED);
    expect(p.rowLocks.list(p.hybridNow()).map((l) => l.lockId)).toEqual([b.lockId]);
    expect(p.rowLocks.metrics).toMatchObject({ released: 1, unlocksAfterWrite: 1, unlocksAfterWriteLost: 0 });
    expect(await value(p, 5)).toBe('anyone');
    await p.stop();
    const again = await open(dir);
    janitor.peers.push(again.p);
    await untilLeaderReady(again.p);
    expect(again.p.rowLocks.list(again.p.hybridNow()).map((l) => l.lockId)).toEqual([b.lockId]);
    expect(await value(again.p, 5)).toBe('anyone');
  }, 30_000);
});
