/**
 * Read restarts on the uncertainty window (tserver/tablet/participant/uncertainty.ts), at the tablet and
 * the TabletService: a read whose leader picks the read time gets limit = readHt +
 * max_clock_skew_usec; a version in (readHt, limit] — written by a node whose clock runs ahead —
 * fails the read with READ_RESTART at that version's time, and the read at the restart time sees it.
 * Clocks are ManualClocks, one of them ahead by SKEW_MS (what TEST_clock_skew_ms does to a process).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../common/clock';
import { MAX_CLOCK_SKEW_USEC } from '../../common/common-flags';
import { DbError, ErrorCode, isDbError } from '../../common/errors';
import { Flags } from '../../common/flags';
import { HybridClock } from '../../common/hybrid-clock';
import { htAddMicros } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import type { DocKey, TxnMeta } from '../../docdb/doc-db-api';
import { partitionHash } from '../../docdb/encoding/doc-key';
import { keyToPb, TabletService } from '../../tserver/tablet-service';
import type { TabletManager } from '../../tserver/tablet-manager';
import { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { demoTabletMeta, PeerJanitor, testPeerDeps, untilLeaderReady } from './tablet-peer-harness';
import type { PeerTxnEnv, TxnStatusInfo } from '../../tserver/tablet/participant/txn-env';

const SKEW_MS = 300;
const MAX_SKEW_USEC = 500_000;

const janitor = new PeerJanitor();
const { dirs, peers } = janitor;
afterEach(() => janitor.cleanup());

const key = (i: number): DocKey => ({ hash: partitionHash([BigInt(i)]), hashed: [BigInt(i)], range: [] });
const upsert = (i: number, v: string) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: key(i), columns: [{ columnId: 1, value: v }] } });

function statusEnv(): PeerTxnEnv & { statuses: Map<string, TxnStatusInfo> } {
  const statuses = new Map<string, TxnStatusInfo>();
  return {
    statuses,
    getStatus: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
    abort: (id) => Promise.resolve(statuses.get(id) ?? { status: 'ABORTED', priority: 0 }),
  };
}

/** One single-replica tablet whose node's hybrid clock runs on `wall`. */
async function openTablet(tabletId: string, wall: ManualClock, flags: Flags, env?: PeerTxnEnv): Promise<TabletPeer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-read-restart-'));
  dirs.push(dir);
  const p = await TabletPeer.open(testPeerDeps(dir, { meta: demoTabletMeta(tabletId), flags, wall, seed: 3, ...(env ? { txnEnv: env } : {}) }));
  peers.push(p);
  await untilLeaderReady(p);
  return p;
}

function skewFlags(usec = MAX_SKEW_USEC): Flags {
  const f = new Flags();
  f.setAtRuntime(MAX_CLOCK_SKEW_USEC.name, String(usec), true);
  return f;
}

/** Two nodes: `slow` at the true time, `fast` SKEW_MS ahead. */
function clocks(): { slow: ManualClock; fast: ManualClock } {
  const base = 1_700_000_000_000_000;
  return { slow: new ManualClock(base), fast: new ManualClock(base + SKEW_MS * 1000) };
}

describe('read restart (uncertainty window)', () => {
  it('read-restart: a leader-picked read time gets limit = readHt + max_clock_skew_usec; an explicit read time has none; skew 0 disables it', async () => {
    const { slow } = clocks();
    const p = await openTablet('t', slow, skewFlags());
    const r = await p.read([key(1)], {});
    expect(r.globalLimitHt).toBe(htAddMicros(r.readHt, MAX_SKEW_USEC));
    const explicit = await p.read([key(1)], { readHt: r.readHt });
    expect(explicit.globalLimitHt).toBeUndefined();
    const kept = await p.read([key(1)], { readHt: r.readHt, globalLimitHt: r.globalLimitHt! });
    expect(kept.globalLimitHt).toBe(r.globalLimitHt);
    const q = await openTablet('u', slow, skewFlags(0));
    expect((await q.read([key(1)], {})).globalLimitHt).toBeUndefined();
  });

  it('read-restart: a write acknowledged by a node whose clock is ahead is not missed by a read that starts after it (read time picked on a slower node)', async () => {
    const { slow, fast } = clocks();
    const flags = skewFlags();
    const a = await openTablet('a', fast, flags);
    const b = await openTablet('b', slow, flags);
    // The write is acknowledged before the reader starts; its hybrid time comes from the fast clock.
    const writeHt = await a.write({ ops: [upsert(1, 'acked')] });
    // A scan over both tablets picks its read time at the first one, on the slow node ...
    const first = await b.scan({});
    expect(first.readHt).toBeLessThan(writeHt);
    // ... so without an uncertainty window the second tablet would answer "no row" — a stale read.
    expect((await a.read([key(1)], { readHt: first.readHt })).rows[0]).toBeUndefined();
    // With the window the read restarts at the write's time, keeping the limit ...
    const err = await a.read([key(1)], { readHt: first.readHt, globalLimitHt: first.globalLimitHt! }).catch((e: unknown) => e);
    expect(isDbError(err, ErrorCode.READ_RESTART)).toBe(true);
    const d = (err as DbError).details;
    expect(BigInt(d['restartHt'] as string)).toBe(writeHt);
    expect(BigInt(d['globalLimitHt'] as string)).toBe(first.globalLimitHt);
    // ... and the restarted read (every tablet at the restart time) sees the acknowledged write.
    const again = await a.read([key(1)], { readHt: writeHt, globalLimitHt: first.globalLimitHt! });
    expect(again.rows[0]?.columns.get(1)).toBe('acked');
    expect((await b.scan({ readHt: writeHt, globalLimitHt: first.globalLimitHt! })).rows).toEqual([]);
  });

  it('read-restart: a transaction committed by a status tablet whose clock is ahead is seen by a later read on a slower participant', async () => {
    const { slow, fast } = clocks();
    const env = statusEnv();
    const p = await openTablet('p', slow, skewFlags(), env);
    const statusClock = new HybridClock(fast);
    const txn: TxnMeta = { txnId: TxnId('t1'), statusTablet: 'st', isolation: 'snapshot', priority: 0.5, startHt: p.safeTime() };
    env.statuses.set('t1', { status: 'PENDING', priority: 0.5 });
    await p.writeIntents({ txn, readHt: txn.startHt, ops: [upsert(5, 'committed')] });
    // The status tablet commits (and the client is told) at its own, faster clock; APPLY has not
    // reached the participant yet, so the participant's clock has not seen the commit time.
    const commitHt = statusClock.now();
    env.statuses.set('t1', { status: 'COMMITTED', commitHt, priority: 0.5 });
    expect(p.safeTime()).toBeLessThan(commitHt);
    const err = await p.read([key(5)], {}).catch((e: unknown) => e);
    expect(isDbError(err, ErrorCode.READ_RESTART)).toBe(true);
    const d = (err as DbError).details;
    expect(BigInt(d['restartHt'] as string)).toBe(commitHt);
    const again = await p.read([key(5)], { readHt: BigInt(d['restartHt'] as string), globalLimitHt: BigInt(d['globalLimitHt'] as string) });
    expect(again.rows[0]?.columns.get(1)).toBe('committed');
    // The same read as an explicit snapshot (no window) misses the acknowledged commit: what the
    // window prevents.
    expect((await p.read([key(5)], { readHt: BigInt(d['readHt'] as string) })).rows[0]).toBeUndefined();
  });

  it('read-restart: TabletService answers the limit it used, passes restart details on the wire shape, and a transaction read uses the limit it carries', async () => {
    const { slow, fast } = clocks();
    const flags = skewFlags();
    const a = await openTablet('a', fast, flags);
    const b = await openTablet('b', slow, flags);
    const byId = new Map([
      ['a', a],
      ['b', b],
    ]);
    const manager = { get: (id: string) => byId.get(id)! } as unknown as TabletManager;
    const svc = new TabletService({ manager, flags, clock: new HybridClock(slow), selfUuid: 'ts1', reports: () => Promise.resolve([]) });
    const writeHt = await a.write({ ops: [upsert(2, 'x')] });
    const first = await svc.read({ tabletId: 'b', keys: [keyToPb(key(2))] });
    expect(first.globalLimitHt).toBe(htAddMicros(first.readHt!, MAX_SKEW_USEC));
    const err = await svc.read({ tabletId: 'a', keys: [keyToPb(key(2))], readHt: first.readHt, globalLimitHt: first.globalLimitHt }).catch((e: unknown) => e);
    expect(isDbError(err, ErrorCode.READ_RESTART)).toBe(true);
    // An explicit past snapshot (read_ht without a limit) does not restart.
    const snap = await svc.read({ tabletId: 'a', keys: [keyToPb(key(2))], readHt: first.readHt });
    expect(snap.found).toEqual([false]);
    expect(snap.globalLimitHt).toBe(0n);
    // A transaction's read carries its own (readHt, globalLimitHt): the same window on every tablet.
    const txnCtx = { txnId: 'r1', statusTablet: 'st', isolation: 'snapshot', priority: 0.1, startHt: first.readHt, readHt: first.readHt, globalLimitHt: first.globalLimitHt };
    const terr = await svc.read({ tabletId: 'a', keys: [keyToPb(key(2))], txn: txnCtx }).catch((e: unknown) => e);
    expect(BigInt(((terr as DbError).details['restartHt'] as string) ?? '0')).toBe(writeHt);
    const tok = await svc.read({ tabletId: 'a', keys: [keyToPb(key(2))], txn: { ...txnCtx, readHt: writeHt } });
    expect(tok.found).toEqual([true]);
    expect(tok.globalLimitHt).toBe(first.globalLimitHt);
  });
});
