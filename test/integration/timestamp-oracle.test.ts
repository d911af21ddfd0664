/**
 * The timestamp oracle across real master processes: three masters, the leader killed with -9, then
 * (the killed one restarted) the next leader killed too. Every timestamp asked after a failover is
 * above every timestamp answered before it; concurrent askers share RPCs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { getJson } from '../../lab/console-http';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function burst(c: TesseraClient, n: number): Promise<bigint[]> {
  const ts = await Promise.all(Array.from({ length: n }, () => c.oracle.getTimestamp()));
  expect(new Set(ts).size).toBe(n);
  return ts;
}

const max = (xs: bigint[]): bigint => xs.reduce((a, b) => (a > b ? a : b));
const min = (xs: bigint[]): bigint => xs.reduce((a, b) => (a < b ? a : b));

describe('timestamp oracle on 3 masters', () => {
  it('oracle: timestamps keep increasing across two kill -9 failovers and a master restart', async () => {
    cluster = await ProcCluster.create({ hostBase: 25, masters: 3, tservers: 0 });
    const cl = cluster;
    await cl.startAll();
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 30_000 });
    const c = client;
    const before = await burst(c, 300);
    // 300 concurrent askers, one RPC in flight at a time: far fewer RPCs than timestamps.
    expect(c.oracle.counters().rpcs).toBeLessThan(300);

    const killLeader = async (): Promise<string> => {
      const leader = await waitFor('a leader master', 20_000, async () => (await c.listMasters()).masters?.find((m) => m.role === 'LEADER'));
      const p = cl.masters.find((m) => m.rpcAddress === leader.rpcAddress)!;
      await cl.kill9(p);
      return leader.rpcAddress!;
    };
    const first = await killLeader();
    const afterFirst = await burst(c, 100);
    expect(min(afterFirst)).toBeGreaterThan(max(before));

    cl.start(cl.masters.find((m) => m.rpcAddress === first)!);
    await waitFor('the restarted master to answer', 30_000, async () => (await c.listMasters()).masters?.filter((m) => m.role !== 'UNREACHABLE').length === 3);
    const second = await killLeader();
    expect(second).not.toBe(first);
    const afterSecond = await burst(c, 100);
    expect(min(afterSecond)).toBeGreaterThan(max(afterFirst));

    // The leader's console shows the persisted high-water mark above everything handed out.
    const leader = (await c.listMasters()).masters!.find((m) => m.role === 'LEADER')!;
    const web = cl.masters.find((m) => m.rpcAddress === leader.rpcAddress)!.webAddress;
    const o = (await getJson(`http://${web}/api/v1/oracle`, 5000)) as { highWaterTs: string; servedSinceLeader: number; nextTs: string };
    expect(BigInt(o.highWaterTs)).toBeGreaterThan(max(afterSecond));
    expect(BigInt(o.nextTs)).toBeGreaterThan(max(afterSecond));
    expect(o.servedSinceLeader).toBeGreaterThanOrEqual(100);
  }, 180_000);
});
