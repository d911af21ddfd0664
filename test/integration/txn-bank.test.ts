/**
 * The bank workload on real processes (1 master + 3 tservers): 8 accounts, concurrent transfers and
 * whole-table reads, each inside a transaction, for ~15 s, with one tserver killed -9 and restarted
 * in the middle. Checked with lab/verify's bank checker: every read sums to the initial total and no
 * balance is ever negative.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { checkBank } from '../../lab/verify/bank-checker';
import { HistoryRecorder } from '../../lab/verify/history';
import type { TesseraClient } from '../../client/tessera-client';
import type { ProcCluster } from './cluster-harness';
import { runTxn, startTxnCluster, waitTableReady } from './txn-client-harness';

const ACCOUNTS = 8;
const INITIAL = 100;
const RUN_MS = 15_000;
/** Past RUN_MS the load goes on only until it has made progress (a loaded machine commits slowly), at most this long. */
const RUN_MS_MAX = 90_000;
/** Completed transfers and reads the run must show. */
const PROGRESS_MIN = 6;

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('bank workload', () => {
  it('bank: every transactional read sums to the total and no balance goes negative across a tserver kill -9 and restart', async () => {
    ({ cluster, client } = await startTxnCluster(36));
    const cl = cluster;
    const c = client;
    await c.createTable({ name: 'bank', columns: [{ name: 'id', type: 'int64' }, { name: 'balance', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await waitTableReady(cl, 'bank', 3);
    await c.table('bank').upsertMany(Array.from({ length: ACCOUNTS }, (_, i) => ({ id: BigInt(i), balance: BigInt(INITIAL) })));
    const accounts = Array.from({ length: ACCOUNTS }, (_, i) => String(i));
    const h = new HistoryRecorder();
    const started = performance.now();
    const ok = (f: string): number => h.ops.filter((o) => o.f === f && o.type === 'ok').length;
    const going = (): boolean => {
      const ms = performance.now() - started;
      return ms < RUN_MS || (ms < RUN_MS_MAX && (ok('transfer') < PROGRESS_MIN || ok('read') < PROGRESS_MIN));
    };
    let rng = 12345;
    const rand = (n: number): number => {
      rng = (rng * 1103515245 + 12345) % 2147483648;
      return rng % n;
    };

    const transfers = async (pid: number): Promise<void> => {
      // Bounded by time and by count.
      for (let i = 0; i < 10_000 && going(); i++) {
        const from = rand(ACCOUNTS);
        const to = (from + 1 + rand(ACCOUNTS - 1)) % ACCOUNTS;
        const amount = 1 + rand(20);
        const inv = h.invoke(pid, 'transfer', { from, to, amount });
        const out = await runTxn(c, async (t) => {
          const a = (await t.get('bank', { id: BigInt(from) }))!['balance'] as bigint;
          const b = (await t.get('bank', { id: BigInt(to) }))!['balance'] as bigint;
          if (a < BigInt(amount)) return false;
          await t.update('bank', { id: BigInt(from), balance: a - BigInt(amount) });
          await t.update('bank', { id: BigInt(to), balance: b + BigInt(amount) });
          return true;
        });
        if (out.type === 'ok') h.complete(inv, 'ok', { ...(inv.value as object), applied: out.value });
        else h.complete(inv, out.type, inv.value, out.code);
      }
    };
    const reads = async (pid: number): Promise<void> => {
      for (let i = 0; i < 10_000 && going(); i++) {
        const inv = h.invoke(pid, 'read', null);
        const out = await runTxn(c, async (t) => {
          const rows = await t.scan('bank');
          return Object.fromEntries(rows.map((r) => [String(r['id']), Number(r['balance'])]));
        });
        if (out.type === 'ok') h.complete(inv, 'ok', out.value);
        else h.complete(inv, out.type, null, out.code);
      }
    };
    const nemesis = async (): Promise<void> => {
      const victim = cl.tservers[1]!;
      // The schedule is the scenario: transfers run a while, the victim stays down a while.
      await new Promise((r) => setTimeout(r, RUN_MS / 3));
      await cl.kill9(victim);
      await new Promise((r) => setTimeout(r, RUN_MS / 4));
      cl.start(victim);
    };
    await Promise.all([transfers(1), transfers(2), transfers(3), reads(4), nemesis()]);
    await cl.waitTServersAlive(3, 60_000);

    const result = checkBank(h.ops, { total: ACCOUNTS * INITIAL, accounts });
    const byType = (f: string, type: string): number => h.ops.filter((o) => o.f === f && o.type === type).length;
    const codes: Record<string, number> = {};
    for (const o of h.ops) if (o.error) codes[`${o.f}:${o.error}`] = (codes[`${o.f}:${o.error}`] ?? 0) + 1;
    console.log(`bank: transfers ok ${byType('transfer', 'ok')} fail ${byType('transfer', 'fail')} info ${byType('transfer', 'info')}; reads ok ${byType('read', 'ok')} fail ${byType('read', 'fail')}; errors ${JSON.stringify(codes)}`);
    expect(result.wrongTotal.slice(0, 3)).toEqual([]);
    expect(result.negative.slice(0, 3)).toEqual([]);
    expect(result.missingAccounts.slice(0, 3)).toEqual([]);
    expect(result.valid).toBe(true);
    // The run made progress: transfers committed and reads completed.
    expect(result.transfersOk).toBeGreaterThanOrEqual(PROGRESS_MIN);
    expect(result.reads).toBeGreaterThanOrEqual(PROGRESS_MIN);
    // A final read after the run agrees too.
    const final = await c.table('bank').scan({ timeoutMs: 30_000 });
    expect(final.reduce((s, r) => s + Number(r['balance']), 0)).toBe(ACCOUNTS * INITIAL);
  }, 240_000);
});
