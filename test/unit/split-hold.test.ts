/**
 * Writes during a split (docs/splitting.md): a write reaching the parent's leader while its SPLIT
 * is in flight is held until the SPLIT applies and answered TABLET_SPLIT naming the children
 * (partitions, replicas, leaders); the client installs them from that answer and goes to the
 * child without asking the master.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bytesOfHex } from '../../common/key-bounds';
import { DbError, ErrorCode } from '../../common/errors';
import type { DocKey } from '../../docdb';
import type { TabletManager } from '../../tserver/tablet-manager';
import { testTabletManager, untilTabletLeader } from './tablet-manager-harness';
import { SplitService } from '../../tserver/split-service';
import { childPartitions } from '../../tserver/split-apply';
import type { TabletMeta } from '../../tserver/tablet/tablet-meta';
import type { TabletPeer } from '../../tserver/tablet/tablet-peer';
import { MetaCache, tabletForHash } from '../../client/meta-cache';
import type { MasterProxy } from '../../client/master-proxy';
import { TabletInvoker } from '../../client/tablet-invoker';
import { Deadline } from '../../client/retry-policy';
import { encodeDocKeyBytes } from '../../common/partition-hash';
import type { MethodDef, RpcClient } from '../../rpc/types';
import type { TxnContextPB } from '../../rpc';
import { TxnWriteCoalescer } from '../../client/txn-write-coalescer';
import { TxnId } from '../../common/ids';
import type { TxnMeta } from '../../docdb';

const dirs: string[] = [];
const managers: TabletManager[] = [];
afterEach(async () => {
  for (const m of managers.splice(0)) await m.stop();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const SELF = '127.0.0.1:1';
const SCHEMA = { columns: [{ name: 'k', id: 0, type: 'int64' as const, nullable: false }, { name: 'v', id: 1, type: 'string' as const, nullable: true }], hashColumns: [], rangeColumns: ['k'] };

function rangeKey(i: number): DocKey {
  return { hash: 0, hashed: [], range: [BigInt(i)] };
}

function manager(dir: string): TabletManager {
  const m = testTabletManager(dir, { selfAddress: SELF, seed: 5, splitCleanupDelayMs: 0, engines: new Map() });
  managers.push(m);
  return m;
}

const untilLeader = untilTabletLeader;

/** A one-replica range tablet with 100 rows, and the SplitTablet request that splits it at its middle. */
async function splittable(): Promise<{ m: TabletManager; parent: TabletPeer; svc: SplitService; req: Parameters<SplitService['split']>[0] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-split-hold-'));
  dirs.push(dir);
  const m = manager(dir);
  const meta: TabletMeta = { tabletId: 'parent', tableId: 'tbl', tableName: 'demo', schema: SCHEMA, partition: { start: 0, end: 65536 }, peers: [{ uuid: 'ts1', rpcAddress: SELF, memberType: 'VOTER' }], schemaVersion: 0 };
  await m.createTablet(meta);
  const parent = await untilLeader(m, 'parent');
  await parent.write({ ops: Array.from({ length: 100 }, (_, i) => ({ kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: rangeKey(i), columns: [{ columnId: 1, value: `v${i}` }] } })) });
  const svc = new SplitService({ manager: () => m });
  const { splitPoint } = await svc.split({ tabletId: 'parent' });
  const [left, right] = childPartitions(parent.meta, { key: new Uint8Array(splitPoint!.key!) });
  const children = [{ tabletId: 'left', partition: left }, { tabletId: 'right', partition: right }].map((c) => ({ tabletId: c.tabletId, partition: { start: c.partition.start, end: c.partition.end, keyStart: bytesOfHex(c.partition.keyStart), keyEnd: bytesOfHex(c.partition.keyEnd) } }));
  return { m, parent, svc, req: { tabletId: 'parent', children, peers: [{ uuid: 'ts1', rpcAddress: SELF, memberType: 'VOTER' }] } };
}

describe('split: writes held at the parent, routed from the answer', () => {
  it('a write arriving while the SPLIT is in flight waits for it and is answered TABLET_SPLIT with the children, their replicas and leaders', async () => {
    const { m, parent, svc, req } = await splittable();
    const splitting = svc.split(req);
    // SplitTablet proposed SPLIT synchronously: the parent refuses other requests meanwhile.
    expect(() => parent.checkLeader()).toThrow(/being split/);
    const write = parent.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: rangeKey(7), columns: [{ columnId: 1, value: 'during' }] } }] });
    const outcome = await write.then(() => undefined, (e: unknown) => e);
    await splitting;
    expect(outcome).toBeInstanceOf(DbError);
    const err = outcome as DbError;
    expect(err.code).toBe(ErrorCode.TABLET_SPLIT);
    const children = err.details['children'] as Array<Record<string, unknown>>;
    expect(children.map((c) => c['tabletId'])).toEqual(['left', 'right']);
    for (const c of children) {
      expect(c['replicas']).toEqual([{ uuid: 'ts1', rpcAddress: SELF }]);
      // The parent's leader waited for the children it campaigns for: they lead here.
      expect(c['leaderHint']).toBe(SELF);
    }
    // Nothing was written to the parent; the write goes to the left child and lands there.
    const left = await untilLeader(m, 'left');
    await left.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: rangeKey(7), columns: [{ columnId: 1, value: 'after' }] } }] });
    const r = await left.read([rangeKey(7)], {});
    expect(r.rows[0]?.columns.get(1)).toBe('after');
  }, 30_000);

  it('the client installs the children from TABLET_SPLIT and writes to the child without asking the master again', async () => {
    const { svc, req, parent } = await splittable();
    const splitting = svc.split(req);
    const answer = await parent.write({ ops: [{ kind: 'UPSERT', op: { type: 'upsert', key: rangeKey(80), columns: [] } }] }).then(() => undefined, (e: unknown) => DbError.from(e));
    await splitting;
    expect(answer?.code).toBe(ErrorCode.TABLET_SPLIT);
    const wire = DbError.fromWire(JSON.parse(JSON.stringify(answer!.toWire())));
    // The master still lists the parent (it records the split once the children lead).
    let masterCalls = 0;
    const master = {
      call: async () => {
        masterCalls++;
        return { table: { id: 'tbl', name: 'demo', schema: SCHEMA, version: 0 }, tablets: [{ tabletId: 'parent', partition: { start: 0, end: 65536 }, replicas: [{ tserverUuid: 'ts1', rpcAddress: SELF, role: 'LEADER' }] }] };
      },
    } as unknown as MasterProxy;
    const cache = new MetaCache(master);
    const sent: string[] = [];
    const rpc = {
      call: async (_addr: string, _m: MethodDef<unknown, unknown>, r: { tabletId: string }) => {
        sent.push(r.tabletId);
        if (r.tabletId === 'parent') throw wire;
        return { writeHt: 1n, propagatedHt: 1n };
      },
    } as unknown as RpcClient;
    const invoker = new TabletInvoker(rpc, cache);
    const key = encodeDocKeyBytes(0, [], [80n]);
    await invoker.callWrite('demo', { hash: 0, key }, (t) => ({ tabletId: t.tabletId, ops: [] }), new Deadline(10_000));
    expect(sent).toEqual(['parent', 'right']);
    expect(masterCalls).toBe(1);
    // A later load from the master, which still lists the parent, keeps the children in its place.
    cache.invalidate('demo');
    const loc = await cache.get('demo', new Deadline(10_000));
    expect(masterCalls).toBe(2);
    expect(loc.tablets.map((t) => t.tabletId)).toEqual(['left', 'right']);
    expect(tabletForHash(loc, 0, encodeDocKeyBytes(0, [], [3n])).tabletId).toBe('left');
    expect(cache.leaderOf('right')).toBe(SELF);
  }, 30_000);
});

describe('split: transactional writes held and routed like plain ones', () => {
  it('a transactional write arriving while the SPLIT is in flight waits for it, is answered TABLET_SPLIT (nothing written), and writes its intents on the child', async () => {
    const { m, parent, svc, req } = await splittable();
    const txn = (id: string): TxnMeta => ({ txnId: TxnId(id), statusTablet: 'st1', isolation: 'snapshot', priority: 0.5, startHt: parent.safeTime() });
    const upsert = { kind: 'UPSERT' as const, op: { type: 'upsert' as const, key: rangeKey(7), columns: [{ columnId: 1, value: 'txn' }] } };
    const splitting = svc.split(req);
    const outcome = await parent.writeIntents({ txn: txn('t-1'), readHt: parent.safeTime(), ops: [upsert] }).then(() => undefined, (e: unknown) => e);
    await splitting;
    expect(outcome).toBeInstanceOf(DbError);
    expect((outcome as DbError).code).toBe(ErrorCode.TABLET_SPLIT);
    expect(((outcome as DbError).details['children'] as Array<Record<string, unknown>>).map((c) => c['leaderHint'])).toEqual([SELF, SELF]);
    expect(parent.txnsWithIntentsCount()).toBe(0);
    const left = await untilLeader(m, 'left');
    await left.writeIntents({ txn: txn('t-1'), readHt: left.safeTime(), ops: [upsert] });
    expect(left.txnsWithIntentsCount()).toBe(1);
  }, 30_000);

  it('coalesced transactional writes answered TABLET_SPLIT as a request are each sent again alone (routed to their row\'s child), not failed', async () => {
    const wire = DbError.fromWire(JSON.parse(JSON.stringify(new DbError(ErrorCode.TABLET_SPLIT, 'tablet parent was split', { tabletId: 'parent', children: [] }).toWire())));
    const sent: string[] = [];
    const rpc = {
      call: async (_addr: string, _m: MethodDef<unknown, unknown>, r: { tabletId: string }) => {
        sent.push(r.tabletId);
        throw wire;
      },
    } as unknown as RpcClient;
    const master = { call: async () => ({ table: { id: 'tbl', name: 'demo', schema: SCHEMA, version: 0 }, tablets: [{ tabletId: 'parent', partition: { start: 0, end: 65536 }, replicas: [{ tserverUuid: 'ts1', rpcAddress: SELF, role: 'LEADER' }] }] }) } as unknown as MasterProxy;
    const invoker = new TabletInvoker(rpc, new MetaCache(master));
    const coalescer = new TxnWriteCoalescer(invoker);
    const alone: number[] = [];
    const ctx = { txnId: 't-1' } as TxnContextPB;
    const writes = [1, 2].map((i) => coalescer.write('demo', 'parent', 0, [], ctx, new Deadline(10_000), async () => void alone.push(i)));
    await Promise.all(writes);
    expect(sent).toEqual(['parent']);
    expect(alone).toEqual([1, 2]);
  }, 30_000);
});

import { settlingSplitChildren, SPLIT_CHILD_SETTLE_MS } from '../../master/split-catalog';
import type { CatalogState } from '../../master/catalog-types';

describe('split: the leader balancer leaves fresh children alone', () => {
  it('children of a split in progress or completed within SPLIT_CHILD_SETTLE_MS are settling; older ones and other tablets are not', () => {
    const now = 1_000_000;
    const tablet = (id: string, parentId?: string) => [id, { id, tableId: 't', partition: { start: 0, end: 65536 }, replicas: [], ...(parentId ? { parentId } : {}) }] as const;
    const state = {
      tables: new Map([['t', { id: 't', splitHistory: [
        { parentId: 'old', children: ['o1', 'o2'], at: '', atMs: now - SPLIT_CHILD_SETTLE_MS - 1 },
        { parentId: 'recent', children: ['r1', 'r2'], at: '', atMs: now - 1000 },
      ] }]]),
      tablets: new Map([tablet('o1', 'old'), tablet('r1', 'recent'), tablet('p'), tablet('c1', 'p'), tablet('c2', 'p'), tablet('plain')]),
    } as unknown as CatalogState;
    expect([...settlingSplitChildren(state, now)].sort()).toEqual(['c1', 'c2', 'r1', 'r2']);
  });
});

import { recentSplitOf, SPLIT_PARENT_RETENTION_MS } from '../../master/split-manager';

describe('split: a resent split request of a split just completed', () => {
  it('is answered with the children it made, within SPLIT_PARENT_RETENTION_MS; later, or for another tablet, nothing', () => {
    const now = 5_000_000;
    const state = {
      tables: new Map([
        ['r', { id: 'r', schema: { hashColumns: [] }, splitHistory: [{ parentId: 'p', children: ['a', 'b'], at: '4980', atMs: now - 1000 }] }],
        ['h', { id: 'h', schema: { hashColumns: ['k'] }, splitHistory: [{ parentId: 'q', children: ['c', 'd'], at: '32768', atMs: now - SPLIT_PARENT_RETENTION_MS - 1 }] }],
      ]),
      tablets: new Map(),
    } as unknown as CatalogState;
    const r = recentSplitOf(state, 'p', now);
    expect(r?.children).toEqual(['a', 'b']);
    expect(Buffer.from(r!.splitPoint!.key!).toString('hex')).toBe('4980');
    expect(recentSplitOf(state, 'q', now)).toBeUndefined();
    expect(recentSplitOf(state, 'x', now)).toBeUndefined();
  });
});
