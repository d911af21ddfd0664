/**
 * The defining experiment (docs/architecture.md §The defining experiment), small (20 rows of 64 KiB, an 8 s apply delay on node 0), on
 * real processes: before the commit every replica of every tablet holds the same provisional records;
 * after it nodes 1 and 2 apply at once while node 0 still holds only intents, yet reads already return
 * every committed row; after the delay every replica has applied, holds no intents, and the RegularDB
 * digests (/api/v1/tablet-checksum) of the three replicas of each tablet are equal. While node 0 holds
 * only intents, the replicas' RegularDB digests differ but the rows they show at one time are equal.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { getJson, postFlag } from '../../lab/console-http';
import type { TesseraClient } from '../../client/tessera-client';
import type { ProcCluster } from './cluster-harness';
import { waitFor } from './cluster-harness';
import { checkReplicaConvergence } from '../../lab/verify/replica-convergence';
import { startTxnCluster, tabletsOf, waitTableReady, type TabletJson } from './txn-client-harness';

const ROWS = 20;
const VALUE_BYTES = 64 * 1024;
const APPLY_DELAY_MS = 8000;

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

function value(i: number): string {
  return `${i}:`.padEnd(VALUE_BYTES, String.fromCharCode(97 + (i % 26)));
}

/** tabletId -> intent count, per node. */
async function intentCounts(cl: ProcCluster): Promise<Array<Map<string, number>>> {
  return Promise.all(cl.tservers.map(async (p) => new Map((await tabletsOf(p, 'demo')).map((t: TabletJson) => [t.tabletId, t.intentsdb.intentCount]))));
}

/** Node i's digest of its replica's RegularDB (keys, versions, values). */
async function digest(cl: ProcCluster, i: number, tabletId: string): Promise<{ sha256: string; entries: number }> {
  const body = (await getJson(`http://${cl.tservers[i]!.webAddress}/api/v1/tablet-checksum?id=${tabletId}`, 10_000)) as { regulardb: { sha256: string; entries: number } };
  return body.regulardb;
}

describe('the defining experiment (small)', () => {
  it('experiment: intents on every replica before commit; after commit nodes 1-2 applied, node 0 delayed, reads complete; then all replicas applied', async () => {
    ({ cluster, client } = await startTxnCluster(30));
    const cl = cluster;
    const c = client;
    await c.createTable({ name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'value', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3, replicationFactor: 3 });
    await waitTableReady(cl, 'demo', 3);
    await postFlag(`http://${cl.tservers[0]!.webAddress}`, 'TEST_inject_sleep_before_applying_intents_ms', String(APPLY_DELAY_MS), false);

    const txn = await c.beginTransaction({ isolation: 'snapshot', timeoutMs: 30_000 });
    await txn.table('demo').upsertMany(Array.from({ length: ROWS }, (_, i) => ({ id: BigInt(i), value: value(i) })), { timeoutMs: 30_000 });
    expect(txn.participants().length).toBe(3);

    // Before commit: every replica of every tablet holds the provisional records, the same count on all three.
    const before = await waitFor('equal, non-zero intent counts on all replicas', 20_000, async () => {
      const counts = await intentCounts(cl);
      for (const m of counts) if (m.size !== 3) return undefined;
      for (const [tabletId, n] of counts[0]!) if (!(n > 0) || counts[1]!.get(tabletId) !== n || counts[2]!.get(tabletId) !== n) return undefined;
      return counts;
    });
    // Nothing is readable outside the transaction yet.
    expect(await c.table('demo').scan({ timeoutMs: 20_000 })).toHaveLength(0);

    const { commitHt } = await txn.commit({ timeoutMs: 20_000 });
    expect(commitHt).toBeGreaterThan(0n);

    // Reads at the leaders already return every committed row (resolved through the status tablet).
    const rows = await c.table('demo').scan({ timeoutMs: 20_000 });
    expect(rows).toHaveLength(ROWS);
    for (const r of rows) expect(r['value']).toBe(value(Number(r['id'])));

    // Nodes 1 and 2 apply at once; node 0 still holds only intents.
    await waitFor('nodes 1 and 2 to apply', APPLY_DELAY_MS - 1000, async () => {
      const counts = await intentCounts(cl);
      return [...counts[1]!.values(), ...counts[2]!.values()].every((n) => n === 0);
    }, 100);
    const during = await intentCounts(cl);
    expect([...during[0]!.entries()]).toEqual([...before[0]!.entries()]);
    // RegularDB grew on node 1 but not (yet) on node 0, tablet by tablet.
    const t0 = new Map((await tabletsOf(cl.tservers[0]!, 'demo')).map((t) => [t.tabletId, t.regulardb.memtableBytes + t.regulardb.sstBytes]));
    const t1 = new Map((await tabletsOf(cl.tservers[1]!, 'demo')).map((t) => [t.tabletId, t.regulardb.memtableBytes + t.regulardb.sstBytes]));
    for (const [tabletId, bytes1] of t1) expect(t0.get(tabletId)!, `tablet ${tabletId}`).toBeLessThan(bytes1);
    // ...and so the digests differ now (the same check that must pass after the delay can fail).
    for (const tabletId of before[0]!.keys()) {
      const [d0, d1] = await Promise.all([0, 1].map((i) => digest(cl, i, tabletId)));
      expect(d0!.sha256, `tablet ${tabletId}: node 0 not applied yet`).not.toBe(d1!.sha256);
    }
    // ...yet every replica SHOWS the same rows at one hybrid time (the check `tessera verify` ends
    // with): node 0 resolves its intents through the status tablet.
    const conv = await checkReplicaConvergence({ tservers: cl.tservers.map((p) => ({ name: `ts${p.index}`, webUrl: `http://${p.webAddress}` })), replicationFactor: 3, timeoutMs: 3_000 });
    expect(conv.diverged).toEqual([]);
    expect(conv.unsettled).toEqual([]);
    expect(conv.converged).toBe(conv.tablets);
    expect(conv.rows).toBeGreaterThanOrEqual(ROWS);
    expect([...(await intentCounts(cl))[0]!.entries()], 'node 0 still holds only intents after the check').toEqual([...before[0]!.entries()]);
    // Reads still complete while node 0 has not applied.
    expect(await c.table('demo').get({ id: 7n })).toEqual({ id: 7n, value: value(7) });

    // After the delay node 0 applies too: every replica empty of intents.
    await waitFor('node 0 to apply after its delay', APPLY_DELAY_MS + 20_000, async () => {
      const counts = await intentCounts(cl);
      return counts.every((m) => [...m.values()].every((n) => n === 0));
    }, 200);
    // Each replica's own record of its applies (the console's Applies page): node 0 applied this
    // transaction after its injected delay, the others without it.
    const txnId = txn.txnId;
    const lags = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const body = (await getJson(`http://${cl.tservers[i]!.webAddress}/api/v1/txn-applies?since=0`, 10_000)) as { applies: Array<{ txnId: string; lagMs: number }> };
        return body.applies.filter((a) => a.txnId === txnId).map((a) => a.lagMs);
      }),
    );
    for (const [i, l] of lags.entries()) expect(l, `node ${i}: one apply per tablet replica`).toHaveLength(3);
    for (const lag of lags[0]!) expect(lag, 'node 0 applied after its delay').toBeGreaterThanOrEqual(APPLY_DELAY_MS - 5); // a timer may fire a millisecond early
    // Same RegularDB contents on every replica: equal digests of keys, versions and values.
    for (const tabletId of before[0]!.keys()) {
      const sums = await Promise.all([0, 1, 2].map((i) => digest(cl, i, tabletId)));
      expect(sums[0]!.entries, `tablet ${tabletId} RegularDB entries`).toBeGreaterThan(0);
      expect(sums.map((x) => x.sha256), `tablet ${tabletId} RegularDB digests`).toEqual([sums[0]!.sha256, sums[0]!.sha256, sums[0]!.sha256]);
    }
    expect(await c.table('demo').scan({ timeoutMs: 20_000 })).toHaveLength(ROWS);
  }, 180_000);
});
