/**
 * Distributed transactions, server side, on real processes (1 master + 3 tservers on 127.0.0.20-22):
 * the master creates the `transactions` system table; commit makes rows visible on every tablet at
 * once; abort leaves nothing; of two conflicting writers exactly one commits; a transaction without
 * heartbeats expires and its intents are removed; and with TEST_inject_sleep_before_applying_intents_ms
 * on one tserver, its replicas still hold intents after the commit while the others applied — yet
 * reads already return the rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbError } from '../../common/errors';
import { partitionHash } from '../../common/partition-hash';
import { TesseraClient } from '../../client/tessera-client';
import { masterMethods, tabletServerMethods, txnCoordinatorMethods, type TabletReportPB } from '../../rpc/service-methods';
import { ProcCluster, waitFor } from './cluster-harness';

let cluster: ProcCluster;
let client: TesseraClient;

beforeAll(async () => {
  cluster = await ProcCluster.create({
    hostBase: 20,
    masters: 1,
    tservers: 3,
    // Three status tablets (the default is one): the flag is honoured, and transactions span status tablets.
    masterFlags: ['--transaction_table_num_tablets=3'],
    tserverFlags: ['--heartbeat_interval_ms=200', '--transaction_max_missed_heartbeat_periods=4', '--transaction_resend_applying_interval_ms=300'],
  });
  await cluster.startAll();
  client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
  await client.createTable({ name: 'demo', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
  await waitFor('the transactions table to have leaders', 30_000, async () => {
    const loc = await client.rpcClient().call(cluster.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'transactions' }, { timeoutMs: 2000 }).catch(() => undefined);
    return loc && (loc.tablets ?? []).length === 3 && (loc.tablets ?? []).every((t) => (t.replicas ?? []).some((r) => r.role === 'LEADER'));
  }, 200);
}, 90_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function demoReports(only?: string): Promise<Map<string, TabletReportPB[]>> {
  const demo = await client.rpcClient().call(cluster.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'demo' }, { timeoutMs: 2000 });
  const ids = new Set((demo.tablets ?? []).map((t) => t.tabletId ?? ''));
  const out = new Map<string, TabletReportPB[]>();
  for (const ts of cluster.tservers) {
    if (only && ts.rpcAddress !== only) continue;
    const r = await client.rpcClient().call(ts.rpcAddress, tabletServerMethods().listTablets, {}, { timeoutMs: 3000 });
    out.set(ts.rpcAddress, (r.tablets ?? []).filter((t) => ids.has(t.tabletId ?? '')));
  }
  return out;
}

async function intentsOn(addr: string): Promise<bigint> {
  const r = (await demoReports(addr)).get(addr) ?? [];
  return r.reduce((n, t) => n + (t.intentCount ?? 0n), 0n);
}

async function rowsIn(lo: number, hi: number): Promise<Map<bigint, string>> {
  const rows = await client.table('demo').scan({ timeoutMs: 20_000 });
  const m = new Map<bigint, string>();
  for (const r of rows) {
    const id = r['id'] as bigint;
    if (id >= BigInt(lo) && id < BigInt(hi)) m.set(id, r['v'] as string);
  }
  return m;
}

describe('txn-server: distributed transactions on real processes', () => {
  it('txn-server: the master creates the transactions table hidden from ListTables; commit makes rows of every tablet visible at once', async () => {
    const listed = await client.rpcClient().call(cluster.masterAddresses[0]!, masterMethods().listTables, {}, { timeoutMs: 2000 });
    expect((listed.tables ?? []).map((t) => t.name)).not.toContain('transactions');
    const all = await client.rpcClient().call(cluster.masterAddresses[0]!, masterMethods().listTables, { includeSystem: true }, { timeoutMs: 2000 });
    expect((all.tables ?? []).map((t) => t.name)).toContain('transactions');

    const txn = await client.beginTransaction({ isolation: 'snapshot' });
    for (let i = 0; i < 30; i++) await txn.upsert('demo', { id: BigInt(i), v: `c${i}` });
    expect(new Set(txn.participants()).size).toBe(3);
    expect((await rowsIn(0, 30)).size).toBe(0);
    expect((await txn.get('demo', { id: 7n }))?.['v']).toBe('c7');
    await txn.commit();
    const after = await rowsIn(0, 30);
    expect(after.size).toBe(30);
    expect(after.get(29n)).toBe('c29');
    await waitFor('every replica to apply the intents', 20_000, async () => [...(await demoReports()).values()].flat().every((t) => (t.intentCount ?? 0n) === 0n), 200);
    // A figure for the report (never asserted): sequential small transactions, 3 rows on 3 tablets each.
    const t0 = performance.now();
    const N = 20;
    for (let k = 0; k < N; k++) {
      const t = await client.beginTransaction();
      for (let j = 0; j < 3; j++) await t.upsert('demo', { id: BigInt(3000 + k * 3 + j), v: `f${k}` });
      await t.commit();
    }
    console.log(`txn-server: ${N} sequential transactions (begin + 3 upserts + commit) took ${((performance.now() - t0) / N).toFixed(1)} ms each on average`);
  }, 60_000);

  it('txn-server: APPLYs of transactions committed together reach each participant in batched UpdateTransaction RPCs; every replica applies every row', async () => {
    const updateRpcs = async (): Promise<number> => {
      let n = 0;
      for (const ts of cluster.tservers) {
        const text = await (await fetch(`http://${ts.webAddress}/prometheus-metrics`)).text();
        const m = /^tserver_rpc_ops_total\{method="UpdateTransaction"[^}]*\} (\d+)/m.exec(text);
        n += m ? Number(m[1]) : 0;
      }
      return n;
    };
    const before = await updateRpcs();
    const N = 60;
    // Each transaction writes 2 rows (2 or 1 tablets); all commit at about the same time.
    const txns = await Promise.all(Array.from({ length: N }, () => client.beginTransaction()));
    await Promise.all(txns.map(async (t, i) => {
      await t.upsert('demo', { id: BigInt(500 + 2 * i), v: `b${i}` });
      await t.upsert('demo', { id: BigInt(501 + 2 * i), v: `b${i}` });
    }));
    await Promise.all(txns.map((t) => t.commit()));
    await waitFor('every replica to apply every intent', 20_000, async () => [...(await demoReports()).values()].flat().every((t) => (t.intentCount ?? 0n) === 0n), 100);
    const rows = await rowsIn(500, 500 + 2 * N);
    expect(rows.size).toBe(2 * N);
    const rpcs = (await updateRpcs()) - before;
    // At least one per participant tablet touched, fewer than one per (transaction, tablet): batched.
    expect(rpcs).toBeGreaterThanOrEqual(1);
    expect(rpcs).toBeLessThan(N);
  }, 60_000);

  it('txn-server: abort leaves nothing, and the aborted intents are removed from every replica', async () => {
    const txn = await client.beginTransaction();
    for (let i = 100; i < 120; i++) await txn.upsert('demo', { id: BigInt(i), v: `a${i}` });
    await txn.abort();
    expect((await rowsIn(100, 120)).size).toBe(0);
    await waitFor('aborted intents to be removed', 20_000, async () => [...(await demoReports()).values()].flat().every((t) => (t.intentCount ?? 0n) === 0n), 200);
    expect((await rowsIn(100, 120)).size).toBe(0);
  }, 60_000);

  it('txn-server: of two transactions writing the same key exactly one commits (first committer / priority wins)', async () => {
    const a = await client.beginTransaction();
    const b = await client.beginTransaction();
    const outcomes = await Promise.all(
      [a, b].map(async (t, i) => {
        try {
          await t.upsert('demo', { id: 500n, v: `w${i}` });
          await t.upsert('demo', { id: 501n, v: `w${i}` });
          await t.commit();
          return `w${i}`;
        } catch (e) {
          expect(e).toBeInstanceOf(DbError);
          expect(['TXN_CONFLICT', 'TXN_ABORTED']).toContain((e as DbError).code);
          await t.abort().catch(() => undefined);
          return '';
        }
      }),
    );
    const winners = outcomes.filter(Boolean);
    expect(winners).toHaveLength(1);
    const rows = await rowsIn(500, 502);
    expect(rows.get(500n)).toBe(winners[0]);
    expect(rows.get(501n)).toBe(winners[0]);
  }, 60_000);

  it('txn-server: a transaction without heartbeats expires, reads ABORTED, and its intents are removed', async () => {
    const rpc = client.rpcClient();
    const loc = await rpc.call(cluster.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'transactions' }, { timeoutMs: 2000 });
    const st = loc.tablets![0]!;
    // Leaders move (the master balances them): ask every replica, the leader answers.
    const atLeader = async <T>(f: (addr: string) => Promise<T>): Promise<T> => {
      let last: unknown;
      for (const r of st.replicas ?? []) {
        try {
          return await f(r.rpcAddress!);
        } catch (e) {
          last = e;
        }
      }
      throw last;
    };
    const txnId = 'expiring0000000000000000000000aa';
    const created = await atLeader((a) => rpc.call(a, txnCoordinatorMethods().createTransaction, { statusTablet: st.tabletId!, txnId, isolation: 'snapshot', priority: 0.5 }, { timeoutMs: 5000 }));
    const demo = await rpc.call(cluster.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'demo' }, { timeoutMs: 2000 });
    const id = 900n;
    const hash = partitionHash([id]);
    const tablet = demo.tablets!.find((t) => hash >= (t.partition?.start ?? 0) && hash < (t.partition?.end || 65536))!;
    const ops = [{ type: 'UPSERT', key: { hash, hashed: [{ int64Value: id }], range: [] }, columns: [{ columnId: 2, value: { stringValue: 'ghost' } }] }];
    const ctx = { txnId, statusTablet: st.tabletId!, isolation: 'snapshot', priority: 0.5, startHt: created.readHt!, readHt: created.readHt! };
    const write = (addr: string): Promise<unknown> => rpc.call(addr, tabletServerMethods().write, { tabletId: tablet.tabletId!, ops, txn: ctx }, { timeoutMs: 5000 });
    let written = false;
    for (const r of tablet.replicas ?? []) if (!written) written = await write(r.rpcAddress!).then(() => true, () => false);
    expect(written).toBe(true);
    expect([...(await demoReports()).values()].flat().some((t) => (t.intentCount ?? 0n) > 0n)).toBe(true);
    await waitFor('the coordinator to expire the transaction', 20_000, async () => {
      const r = await atLeader((a) => rpc.call(a, txnCoordinatorMethods().getTransactionStatus, { statusTablet: st.tabletId!, txnIds: [txnId] }, { timeoutMs: 2000 }));
      return r.statuses?.[0]?.status === 'ABORTED';
    }, 200);
    await waitFor('the participant sweep to remove the expired intents', 20_000, async () => [...(await demoReports()).values()].flat().every((t) => (t.intentCount ?? 0n) === 0n), 200);
    expect(await client.table('demo').get({ id })).toBeUndefined();
  }, 60_000);

  it('txn-server: with TEST_inject_sleep_before_applying_intents_ms on one tserver its replicas keep intents after commit while the others applied, and reads return the rows', async () => {
    const slow = cluster.tservers[0]!;
    const rpc = client.rpcClient();
    await rpc.call(slow.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_inject_sleep_before_applying_intents_ms', value: '5000' }, { timeoutMs: 2000 });
    try {
      const txn = await client.beginTransaction();
      for (let i = 1000; i < 1030; i++) await txn.upsert('demo', { id: BigInt(i), v: `s${i}` });
      await waitFor('every replica to hold the intents', 10_000, async () => [...(await demoReports()).values()].every((ts) => ts.length === 3 && ts.every((t) => (t.intentCount ?? 0n) > 0n)), 100);
      const commit = txn.commit();
      await waitFor('the fast tservers to apply', 10_000, async () => {
        const reps = await demoReports();
        return cluster.tservers.slice(1).every((ts) => (reps.get(ts.rpcAddress) ?? []).every((t) => (t.intentCount ?? 0n) === 0n)) ? reps : undefined;
      }, 100);
      // The slow tserver still holds every intent; reads from the leaders already see the rows.
      expect(await intentsOn(slow.rpcAddress)).toBeGreaterThan(0n);
      expect((await rowsIn(1000, 1030)).size).toBe(30);
      await commit;
      await waitFor('the slow tserver to apply after its sleep', 30_000, async () => (await intentsOn(slow.rpcAddress)) === 0n, 200);
      const reps = await demoReports();
      const regular = [...reps.values()].map((ts) => ts.map((t) => t.regularMemtableBytes ?? 0n).sort());
      expect(regular.every((r) => r.length === 3)).toBe(true);
    } finally {
      await rpc.call(slow.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_inject_sleep_before_applying_intents_ms', value: '0' }, { timeoutMs: 2000 });
    }
  }, 90_000);
  it('txn-server: after kill -9 of the status tablet leader the new leader re-drives APPLY of a committed txn; the restarted tserver applies too', async () => {
    const rpc = client.rpcClient();
    const setAll = (v: string): Promise<unknown> =>
      Promise.all(cluster.tservers.map((ts) => rpc.call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_disable_apply_committed_transactions', value: v }, { timeoutMs: 2000 }).catch(() => undefined)));
    await setAll('true');
    const txn = await client.beginTransaction();
    const statusTablet = txn.context().statusTablet!;
    for (let i = 2000; i < 2020; i++) await txn.upsert('demo', { id: BigInt(i), v: `k${i}` });
    await txn.commit();
    // Nobody was told to apply: every replica still holds intents, yet the rows are committed.
    for (const ts of cluster.tservers) expect(await intentsOn(ts.rpcAddress)).toBeGreaterThan(0n);
    expect((await rowsIn(2000, 2020)).size).toBe(20);
    const loc = await rpc.call(cluster.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'transactions' }, { timeoutMs: 2000 });
    const leaderAddr = loc.tablets!.find((t) => t.tabletId === statusTablet)!.replicas!.find((r) => r.role === 'LEADER')!.rpcAddress!;
    const victim = cluster.tservers.find((t) => t.rpcAddress === leaderAddr)!;
    await cluster.kill9(victim);
    const survivors = cluster.tservers.filter((t) => t !== victim);
    await Promise.all(survivors.map((ts) => rpc.call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_disable_apply_committed_transactions', value: 'false' }, { timeoutMs: 2000 })));
    await waitFor('the survivors to apply after the new status leader re-drove APPLY', 40_000, async () => {
      for (const ts of survivors) if ((await intentsOn(ts.rpcAddress).catch(() => 1n)) !== 0n) return false;
      return true;
    }, 300);
    expect((await rowsIn(2000, 2020)).get(2019n)).toBe('k2019');
    cluster.start(victim);
    await waitFor('the restarted tserver to apply from its Raft log', 40_000, async () => (await intentsOn(victim.rpcAddress).catch(() => 1n)) === 0n, 300);
  }, 120_000);
});
