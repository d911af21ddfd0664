/**
 * Three masters: the catalog is a Raft group, so killing the leader master (kill -9) leaves a
 * cluster whose DDL and data path keep working, and the catalog written before the kill is intact.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { getJson, httpRequest } from '../../lab/console-http';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

const cols = [
  { name: 'k', type: 'string' as const },
  { name: 'n', type: 'int64' as const },
];

describe('cluster: 3 masters', () => {
  it('masters: kill -9 of the leader master keeps DDL and data working, the catalog intact', async () => {
    cluster = await ProcCluster.create({ hostBase: 61, masters: 3, tservers: 1, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    await cl.startAll();
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 30_000 });
    await client.createTable({ name: 'before', columns: cols, primaryKey: { hash: ['k'] }, numTablets: 2, replicationFactor: 1 });
    await client.table('before').upsert({ k: 'a', n: 1 });

    const masters = (await client.listMasters()).masters ?? [];
    expect(masters).toHaveLength(3);
    const leader = masters.find((m) => m.role === 'LEADER');
    expect(leader).toBeDefined();
    // A follower's console sends scripts to the leader: NOT_THE_LEADER with the leader's address.
    const follower = cl.masters.find((m) => m.rpcAddress !== leader!.rpcAddress)!;
    await expect(getJson(`http://${follower.webAddress}/api/v1/tables`, 2000)).rejects.toThrow(/NOT_THE_LEADER|not the leader/);
    // ... and its pages redirect a person to the leader's console.
    const leaderWeb = cl.masters.find((m) => m.rpcAddress === leader!.rpcAddress)!.webAddress;
    const page = await httpRequest(`http://${follower.webAddress}/tables`);
    expect(page.body).toContain(`http-equiv="refresh" content="0; url=http://${leaderWeb}/tables"`);

    await cl.kill9(cl.masters.find((m) => m.rpcAddress === leader!.rpcAddress)!);
    // DDL through the surviving masters (the client follows the new leader).
    await client.createTable({ name: 'after', columns: cols, primaryKey: { hash: ['k'] }, numTablets: 2, replicationFactor: 1 });
    await client.table('after').upsert({ k: 'b', n: 2n });
    expect(await client.table('after').get({ k: 'b' })).toEqual({ k: 'b', n: 2n });
    expect(await client.table('before').get({ k: 'a' })).toEqual({ k: 'a', n: 1n });
    expect((await client.listTables()).map((t) => t.name).sort()).toEqual(['after', 'before']);
    await client.dropTable('before');
    expect((await client.listTables()).map((t) => t.name)).toEqual(['after']);
    const newLeader = await waitFor('a new leader master', 10_000, async () => (await client!.listMasters()).masters?.find((m) => m.role === 'LEADER'));
    expect(newLeader.rpcAddress).not.toBe(leader!.rpcAddress);
  }, 180_000);
});
