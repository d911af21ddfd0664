/**
 * Transactions on real processes (1 master + 3 tservers): snapshot isolation's write-write rule
 * (exactly one of two concurrent writers of a row commits; no lost update), and atomicity across
 * tablets while the tserver leading most tablets is killed -9 in the middle of commits.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCode } from '../../common/errors';
import type { TesseraClient } from '../../client/tessera-client';
import type { ProcCluster } from './cluster-harness';
import { waitFor } from './cluster-harness';
import { runTxn, startTxnCluster, waitTableReady, type Outcome } from './txn-client-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('transactions on a real cluster', () => {
  it('txn: snapshot isolation — of two concurrent read-modify-write transactions on one row exactly one commits (no lost update)', async () => {
    ({ cluster, client } = await startTxnCluster(33));
    const c = client;
    await c.createTable({ name: 'counter', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await waitTableReady(cluster, 'counter', 3);
    await c.table('counter').upsert({ id: 1n, v: 0n });
    for (let round = 0; round < 3; round++) {
      const before = (await c.table('counter').get({ id: 1n }))!['v'] as bigint;
      const t1 = await c.beginTransaction();
      const t2 = await c.beginTransaction();
      // Both read the same snapshot before either writes: the classic lost-update interleaving.
      const v1 = (await t1.get('counter', { id: 1n }))!['v'] as bigint;
      const v2 = (await t2.get('counter', { id: 1n }))!['v'] as bigint;
      expect([v1, v2]).toEqual([before, before]);
      const attempt = async (t: typeof t1, v: bigint): Promise<'ok' | string> => {
        try {
          await t.update('counter', { id: 1n, v: v + 1n });
          await t.commit();
          return 'ok';
        } catch (e) {
          await t.abort().catch(() => undefined);
          return (e as { code: string }).code;
        }
      };
      const [r1, r2] = await Promise.all([attempt(t1, v1), attempt(t2, v2)]);
      const oks = [r1, r2].filter((r) => r === 'ok').length;
      expect(oks, `round ${round}: outcomes ${r1} / ${r2}`).toBe(1);
      for (const r of [r1, r2]) if (r !== 'ok') expect([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED]).toContain(r);
      expect((await c.table('counter').get({ id: 1n }))!['v']).toBe(before + 1n);
    }
  }, 180_000);

  it('txn: concurrent transactions\' writes to one tablet share Write requests, and each is written (or fails) on its own', async () => {
    const c = client!;
    await c.createTable({ name: 'coalesce', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 1 });
    await waitTableReady(cluster!, 'coalesce', 1);
    const stats = c.txnWrites!.stats;
    const before = { ...stats };
    const txns = await Promise.all(Array.from({ length: 24 }, () => c.beginTransaction()));
    // Issued in one turn: rows 0..23, plus rows 100 and 101 written by two transactions each.
    const writes = txns.map((t, i) => t.upsert('coalesce', { id: BigInt(i), v: BigInt(i) }));
    const contested = [0, 1, 2, 3].map((i) => txns[i]!.upsert('coalesce', { id: BigInt(100 + (i % 2)), v: BigInt(i) }));
    const settled = await Promise.allSettled([...writes, ...contested]);
    const requests = stats.requests - before.requests;
    const carried = stats.writes - before.writes;
    expect(carried).toBeGreaterThanOrEqual(28);
    expect(requests, `${carried} writes in ${requests} requests`).toBeLessThan(carried / 2);
    // Of each contested row's two writers at most one wrote it (snapshot isolation, per write).
    const failedCodes = settled.filter((r) => r.status === 'rejected').map((r) => ((r as PromiseRejectedResult).reason as { code: string }).code);
    for (const code of failedCodes) expect([ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED]).toContain(code);
    expect(failedCodes.length).toBeLessThanOrEqual(4);
    const outcomes = await Promise.all(
      txns.map(async (t) => {
        try {
          await t.commit();
          return 'ok';
        } catch (e) {
          await t.abort().catch(() => undefined);
          return (e as { code: string }).code;
        }
      }),
    );
    // Every committed transaction's own row is there with its value; every failed one's is absent.
    for (let i = 0; i < txns.length; i++) {
      const row = await c.table('coalesce').get({ id: BigInt(i) });
      if (outcomes[i] === 'ok') expect(row?.['v']).toBe(BigInt(i));
      else expect(row, `txn ${i}: ${outcomes[i]}`).toBeUndefined();
    }
    for (const id of [100n, 101n]) {
      const writers = [0, 1, 2, 3].filter((i) => 100 + (i % 2) === Number(id) && outcomes[i] === 'ok');
      const row = await c.table('coalesce').get({ id });
      expect(writers.length, `row ${id}: committed writers ${writers.join(',')}`).toBeLessThanOrEqual(1);
      if (writers.length === 1) expect(row?.['v']).toBe(BigInt(writers[0]!));
    }
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThanOrEqual(20);
  }, 120_000);

  it('txn: snapshot isolation allows write skew (documented): disjoint writes after overlapping reads both commit', async () => {
    const c = client!;
    await c.table('counter').upsert({ id: 10n, v: 1n });
    await c.table('counter').upsert({ id: 11n, v: 1n });
    const t1 = await c.beginTransaction();
    const t2 = await c.beginTransaction();
    // Invariant the application wants: v(10) + v(11) >= 1. Each sees 2 and zeroes a different row.
    for (const t of [t1, t2]) {
      const a = (await t.get('counter', { id: 10n }))!['v'] as bigint;
      const b = (await t.get('counter', { id: 11n }))!['v'] as bigint;
      expect(a + b).toBe(2n);
    }
    await t1.update('counter', { id: 10n, v: 0n });
    await t2.update('counter', { id: 11n, v: 0n });
    await t1.commit();
    await t2.commit();
    const after = await c.table('counter').scan();
    expect(after.filter((r) => r['id'] === 10n || r['id'] === 11n).map((r) => r['v'])).toEqual([0n, 0n]);
  }, 60_000);

  it('txn: a heartbeating transaction outlives the expiry period; one that stopped heartbeating expires and frees its row', async () => {
    const c = client!;
    // Expiry: transaction_max_missed_heartbeat_periods (10) x transaction_heartbeat_usec (500 ms) = 5 s.
    const EXPIRY_MS = 5000;
    const alive = await c.beginTransaction();
    await alive.upsert('counter', { id: 20n, v: 1n });
    const dead = await c.beginTransaction();
    await dead.upsert('counter', { id: 21n, v: 1n });
    dead.close(); // stops heartbeats without telling the coordinator: a client that vanished
    await new Promise((r) => setTimeout(r, EXPIRY_MS + 2000)); // the scenario: the expiry period passes
    expect(alive.state).toBe('pending');
    await alive.commit();
    expect((await c.table('counter').get({ id: 20n }))!['v']).toBe(1n);
    // The vanished transaction's intent no longer blocks anyone, and it never became visible.
    expect(await c.table('counter').get({ id: 21n })).toBeUndefined();
    const next = await waitFor('a writer of the expired transaction\'s row to commit', 20_000, async () => {
      const t = await c.beginTransaction();
      try {
        await t.upsert('counter', { id: 21n, v: 2n });
        await t.commit();
        return true;
      } catch {
        await t.abort().catch(() => undefined);
        return false;
      }
    }, 300);
    expect(next).toBe(true);
    expect((await c.table('counter').get({ id: 21n }))!['v']).toBe(2n);
  }, 90_000);

  it('txn: atomicity — each multi-tablet transaction is all visible or none across a leader kill -9 during commits', async () => {
    const cl = cluster!;
    const c = client!;
    const GROUP = 6;
    await c.createTable({ name: 'atom', columns: [{ name: 'id', type: 'int64' }, { name: 'g', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await waitTableReady(cl, 'atom', 3);
    const outcomes = new Map<number, Outcome<void>['type']>();
    let next = 0;
    let stop = false;
    const worker = async (): Promise<void> => {
      // Bounded: at most 400 transactions per worker.
      for (let i = 0; i < 400 && !stop; i++) {
        const g = next++;
        const out = await runTxn(c, async (t) => {
          // GROUP rows with spread ids: their hashes land on every tablet.
          for (let k = 0; k < GROUP; k++) await t.upsert('atom', { id: BigInt(g * 1000 + k), g: BigInt(g) });
        });
        outcomes.set(g, out.type);
      }
    };
    const workers = [worker(), worker()];
    await waitFor('20 committed transactions before the kill', 60_000, () => [...outcomes.values()].filter((t) => t === 'ok').length >= 20);
    const ts = await cl.tabletServers();
    const victimInfo = [...ts].sort((a, b) => b.leaders - a.leaders)[0]!;
    const victim = cl.tservers.find((t) => t.rpcAddress === victimInfo.rpcAddress)!;
    await cl.kill9(victim);
    const okAtKill = [...outcomes.values()].filter((t) => t === 'ok').length;
    await waitFor('20 more committed transactions after the kill', 90_000, () => [...outcomes.values()].filter((t) => t === 'ok').length >= okAtKill + 20, 200);
    cl.start(victim);
    await cl.waitTServersAlive(3, 60_000);
    stop = true;
    await Promise.all(workers);

    const rows = await c.table('atom').scan({ timeoutMs: 30_000 });
    const perGroup = new Map<number, number>();
    for (const r of rows) perGroup.set(Number(r['g']), (perGroup.get(Number(r['g'])) ?? 0) + 1);
    const torn = [...perGroup].filter(([, n]) => n !== GROUP);
    expect(torn, 'groups with some but not all rows').toEqual([]);
    for (const [g, type] of outcomes) {
      if (type === 'ok') expect(perGroup.get(g), `committed group ${g}`).toBe(GROUP);
      if (type === 'fail') expect(perGroup.get(g), `failed group ${g}`).toBeUndefined();
    }
    const counts = { ok: 0, fail: 0, info: 0 };
    for (const t of outcomes.values()) counts[t]++;
    console.log(`atomicity: ${outcomes.size} transactions (${JSON.stringify(counts)}), ${perGroup.size} groups visible, victim ${victim.rpcAddress}`);
  }, 240_000);
});
