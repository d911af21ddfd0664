/**
 * The cluster end to end with real processes: 1 master + 3 tservers, a 3-tablet table, 10,000 rows
 * through the batch API, kill -9 of the tserver leading most tablets (writes resume, nothing
 * acknowledged is lost), its restart and catch-up, then kill -9 of everything and a restart.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import type { Row } from '../../client/client-types';
import { tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster, waitFor } from './cluster-harness';

const ROWS = 10_000;
let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function scanAll(c: TesseraClient): Promise<Map<bigint, string>> {
  const rows = await c.table('kv').scan({ timeoutMs: 30_000 });
  return new Map(rows.map((r) => [r['id'] as bigint, r['v'] as string]));
}

describe('cluster: 1 master + 3 tservers', () => {
  it('cluster: 10,000 rows survive a leader kill -9, a restart with catch-up, and a kill -9 of every process', async () => {
    cluster = await ProcCluster.create({ hostBase: 51, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
    const cl = cluster;
    await cl.startAll();
    client = await TesseraClient.connect({ masterAddresses: cl.masterAddresses, timeoutMs: 20_000 });
    await client.createTable({ name: 'kv', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    const acked = new Map<bigint, string>();
    const rows: Row[] = [];
    for (let i = 0; i < ROWS; i++) rows.push({ id: BigInt(i), v: `value-${i}` });
    await client.table('kv').upsertMany(rows, { concurrency: 8, timeoutMs: 60_000 });
    for (const r of rows) acked.set(r['id'] as bigint, r['v'] as string);
    expect((await scanAll(client)).size).toBe(ROWS);
    expect(await client.table('kv').get({ id: 1234n })).toEqual({ id: 1234n, v: 'value-1234' });

    // Kill -9 the tserver holding the most leaders.
    const leaders = await waitFor('every tablet to have a leader', 20_000, async () => {
      const ts = await cl.tabletServers();
      return ts.reduce((n, t) => n + t.leaders, 0) >= 3 ? ts : undefined;
    });
    const victimInfo = [...leaders].sort((a, b) => b.leaders - a.leaders)[0]!;
    expect(victimInfo.leaders).toBeGreaterThan(0);
    const victim = cl.tservers.find((t) => t.rpcAddress === victimInfo.rpcAddress)!;
    await cl.kill9(victim);
    const killedAt = performance.now();
    // Writes resume: a batch touching every tablet succeeds once the victim's tablets elected new leaders.
    const batch: Row[] = Array.from({ length: 100 }, (_, i) => ({ id: BigInt(100_000 + i), v: `after-kill-${i}` }));
    await client.table('kv').upsertMany(batch, { timeoutMs: 30_000 });
    for (const r of batch) acked.set(r['id'] as bigint, r['v'] as string);
    const resumeMs = performance.now() - killedAt;
    for (let i = 0; i < 300; i++) {
      const id = BigInt(200_000 + i);
      await client.table('kv').upsert({ id, v: `during-${i}` });
      acked.set(id, `during-${i}`);
    }
    console.log(`writes resumed ${Math.round(resumeMs)} ms after kill -9 of ${victim.rpcAddress} (${victimInfo.leaders} leaders)`);
    const afterKill = await scanAll(client);
    for (const [k, v] of acked) expect(afterKill.get(k), `row ${k}`).toBe(v);

    // Restart it: its replicas catch up to the leaders' applied index.
    cl.start(victim);
    await cl.waitTServersAlive(3, 30_000);
    const rpc = client.rpcClient();
    // Only this table's tablets: every tserver also hosts replicas of the system table `transactions`.
    const kvTablets = new Set((await client.tableLocations('kv')).tablets.map((t) => t.tabletId));
    await waitFor('restarted replicas to match their leaders', 60_000, async () => {
      const mine = await rpc.call(victim.rpcAddress, tabletServerMethods().listTablets, {}, { timeoutMs: 3000 });
      const others = await Promise.all(cl.tservers.filter((t) => t !== victim).map((t) => rpc.call(t.rpcAddress, tabletServerMethods().listTablets, {}, { timeoutMs: 3000 })));
      const leaderApplied = new Map<string, bigint>();
      for (const o of others) for (const t of o.tablets ?? []) if (t.role === 'LEADER') leaderApplied.set(t.tabletId ?? '', t.appliedIndex ?? 0n);
      const tablets = (mine.tablets ?? []).filter((t) => kvTablets.has(t.tabletId ?? ''));
      return tablets.length === 3 && tablets.every((t) => t.role === 'LEADER' || leaderApplied.get(t.tabletId ?? '') === t.appliedIndex);
    }, 250);

    // Kill -9 everything, restart: every acknowledged row is back.
    await Promise.all([...cl.masters, ...cl.tservers].map((p) => cl.kill9(p)));
    await cl.startAll();
    const afterRestart = await waitFor('a full scan after the restart', 60_000, async () => scanAll(client!));
    expect(afterRestart.size).toBe(acked.size);
    for (const [k, v] of acked) expect(afterRestart.get(k), `row ${k}`).toBe(v);
  }, 300_000);
});
