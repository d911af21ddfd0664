/**
 * A replica stopped by a storage failure (FAILED; injected with TEST_fail_tablet_replica) on a live
 * tserver is replaced by the master: with no spare tserver, re-created in place — removed from Raft,
 * deleted on its host, created afresh and added back, catching up by remote bootstrap; with a spare,
 * moved there. The failed replica was the tablet's leader: it leaves Raft at once, so the others elect
 * a leader and writes go on. A replica that cannot open at start (corrupt files) is reported FAILED
 * and re-created in place too. Every replica ends with the same RegularDB digest; nothing acknowledged
 * is lost.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import type { Row } from '../../client/client-types';
import { getJson } from '../../lab/console-http';
import { tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster, waitFor, type Proc } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

interface TabletJson {
  tabletId: string;
  state: string;
  role: string;
  appliedIndex: number;
}

async function replicaOf(p: Proc, tabletId: string): Promise<TabletJson | undefined> {
  const body = (await getJson(`http://${p.webAddress}/api/v1/tablets`, 3000)) as { tablets: TabletJson[] };
  return body.tablets.find((t) => t.tabletId === tabletId);
}

async function digest(p: Proc, tabletId: string): Promise<string> {
  const body = (await getJson(`http://${p.webAddress}/api/v1/tablet-checksum?id=${tabletId}`, 10_000)) as { regulardb: { sha256: string; entries: number } };
  return `${body.regulardb.sha256}/${body.regulardb.entries}`;
}

describe('cluster: FAILED replicas', () => {
  it('failed replica: a FAILED leader leaves Raft, is re-created in place without a spare tserver, then moved to a spare; a replica that cannot open is FAILED and re-created; data complete and equal on every replica', async () => {
    cluster = await ProcCluster.create({ hostBase: 185, masters: 1, tservers: 4, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    const spare = cl.tservers[3]!;
    for (const p of [...cl.masters, ...cl.tservers.slice(0, 3)]) cl.start(p);
    await cl.waitTServersAlive(3, 60_000);
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 30_000 });
    const c = client;
    await c.createTable({ name: 'f', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1, replicationFactor: 3 });
    const rows: Row[] = Array.from({ length: 500 }, (_, i) => ({ id: BigInt(i), v: `v${i}` }));
    await c.table('f').upsertMany(rows);
    const rpc = c.rpcClient();
    const tabletId = (await c.tableLocations('f')).tablets[0]!.tabletId;
    const byAddress = (a: string): Proc => cl.tservers.find((t) => t.rpcAddress === a)!;
    const leaderProc = async (): Promise<Proc | undefined> => {
      for (const p of cl.tservers) {
        const r = await replicaOf(p, tabletId).catch(() => undefined);
        if (r?.role === 'LEADER' && r.state === 'RUNNING') return p;
      }
      return undefined;
    };
    let leader: Proc | undefined;
    await waitFor('a leader of the tablet', 30_000, async () => (leader = await leaderProc()) !== undefined, 100);
    const victim = leader!;

    // 1. The leader's replica fails at its next applied entry.
    await rpc.call(victim.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: tabletId }, { timeoutMs: 3000 });
    await c.table('f').upsert({ id: 1000n, v: 'while failing' }).catch(() => undefined);
    await waitFor('the victim replica FAILED', 30_000, async () => (await replicaOf(victim, tabletId))?.state === 'FAILED', 100);
    // The tablet page says why.
    const detail = (await getJson(`http://${victim.webAddress}/api/v1/tablet?id=${tabletId}`, 3000)) as { state: string; lastError: string };
    expect(detail.state).toBe('FAILED');
    expect(detail.lastError).toContain('TEST_fail_tablet_replica: simulated storage failure');
    await rpc.call(victim.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: '' }, { timeoutMs: 3000 });
    // Another replica leads; writes go on (acknowledged ones must survive everything below).
    await waitFor('a new leader elsewhere', 30_000, async () => ((await leaderProc()) ?? victim) !== victim, 100);
    await c.table('f').upsert({ id: 1001n, v: 'after the failure' });

    // 2. No spare tserver is up: the master re-creates the replica in place (a fresh RUNNING replica, a voter again).
    await waitFor('the replica re-created in place, RUNNING and caught up', 90_000, async () => {
      const r = await replicaOf(victim, tabletId).catch(() => undefined);
      const l = await leaderProc();
      const lr = l ? await replicaOf(l, tabletId) : undefined;
      const loc = await c.tableLocations('f');
      const voters = loc.tablets[0]!.replicas.map((x) => x.rpcAddress);
      return r?.state === 'RUNNING' && lr !== undefined && r.appliedIndex >= lr.appliedIndex && voters.includes(victim.rpcAddress);
    }, 250);
    await c.table('f').upsert({ id: 1002n, v: 'after re-creation' });
    const hosts = async (): Promise<Proc[]> => (await c.tableLocations('f')).tablets[0]!.replicas.map((x) => byAddress(x.rpcAddress));
    await waitFor('equal digests on the 3 replicas', 30_000, async () => new Set(await Promise.all((await hosts()).map((p) => digest(p, tabletId)))).size === 1, 250);

    // 3. With a spare tserver up, a FAILED replica moves there instead.
    cl.start(spare);
    await cl.waitTServersAlive(4, 60_000);
    // A follower (not the leader: a write in flight on a failing leader has an unknown outcome, SHUTTING_DOWN).
    let follower: Proc | undefined;
    await waitFor('a follower replica to fail', 30_000, async () => {
      for (const p of await hosts()) if (p !== spare && (await replicaOf(p, tabletId))?.role === 'FOLLOWER') follower = p;
      return follower !== undefined;
    }, 100);
    await rpc.call(follower!.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: tabletId }, { timeoutMs: 3000 });
    await c.table('f').upsert({ id: 1003n, v: 'fails the follower' });
    await waitFor('the follower replica FAILED', 30_000, async () => (await replicaOf(follower!, tabletId))?.state === 'FAILED', 100);
    await waitFor('the spare hosting the tablet instead of the failed follower, which deleted its replica', 90_000, async () => {
      const reps = (await hosts()).map((p) => p.rpcAddress);
      const gone = (await replicaOf(follower!, tabletId).catch(() => undefined)) === undefined;
      const onSpare = await replicaOf(spare, tabletId).catch(() => undefined);
      return gone && reps.includes(spare.rpcAddress) && !reps.includes(follower!.rpcAddress) && onSpare?.state === 'RUNNING';
    }, 250);
    await rpc.call(follower!.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: '' }, { timeoutMs: 3000 });
    await waitFor('equal digests on the 3 replicas after the move', 60_000, async () => new Set(await Promise.all((await hosts()).map((p) => digest(p, tabletId)))).size === 1, 250);

    // 4. A replica that cannot open at start (its IntentsDB corrupt; RegularDB opens first and is
    // closed again) is reported FAILED and re-created in place. The tserver left without a replica in
    // phase 3 stops first, so there is no spare.
    const idle = follower!;
    await cl.kill9(idle);
    await waitFor('the idle tserver dead in the master', 30_000, async () => (await cl.tabletServers()).find((t) => t.rpcAddress === idle.rpcAddress)?.alive === false, 200);
    let corruptHost: Proc | undefined;
    await waitFor('a follower to corrupt', 30_000, async () => {
      for (const p of await hosts()) if ((await replicaOf(p, tabletId))?.role === 'FOLLOWER') corruptHost = p;
      return corruptHost !== undefined;
    }, 100);
    const broken = corruptHost!;
    await cl.kill9(broken);
    fs.writeFileSync(path.join(broken.dataDir, 'tablets', tabletId, 'intents', 'CURRENT'), 'not-a-manifest\n');
    await c.table('f').upsert({ id: 1004n, v: 'while a replica is down' });
    cl.start(broken);
    await waitFor('the corrupt replica reported FAILED with the reason', 60_000, async () => {
      const r = (await replicaOf(broken, tabletId).catch(() => undefined)) as (TabletJson & { lastError?: string }) | undefined;
      return r?.state === 'FAILED' && (r.lastError ?? '').includes('CURRENT file corrupted');
    }, 100);
    await waitFor('the corrupt replica re-created in place, RUNNING and caught up', 90_000, async () => {
      const r = await replicaOf(broken, tabletId).catch(() => undefined);
      const l = await leaderProc();
      const lr = l ? await replicaOf(l, tabletId) : undefined;
      return r?.state === 'RUNNING' && lr !== undefined && r.appliedIndex >= lr.appliedIndex && (await hosts()).includes(broken);
    }, 250);
    await waitFor('equal digests on the 3 replicas after the re-creation', 60_000, async () => new Set(await Promise.all((await hosts()).map((p) => digest(p, tabletId)))).size === 1, 250);
    expect(fs.readFileSync(broken.logFile, 'utf8')).toContain('cannot open tablet replica; it is FAILED');

    const got = await c.table('f').scan({ timeoutMs: 30_000 });
    const ids = new Set(got.map((r) => r['id'] as bigint));
    for (const r of rows) expect(ids.has(r['id'] as bigint)).toBe(true);
    for (const id of [1001n, 1002n, 1003n, 1004n]) expect(ids.has(id)).toBe(true);
  }, 300_000);
});
