/**
 * Plain (non-transactional) writes against transactions on real processes (1 master + 3 tservers):
 * a plain write never slips under a pending transaction's intent (it aborts that transaction), and
 * a transaction that read before a plain write committed cannot write over it (first committer
 * wins) — so no lost update either way. Also: the `transactions` system table rejects client
 * writes with NOT_SUPPORTED, through the client API and through the raw Write RPC on every replica;
 * an unknown isolation is refused with INVALID_ARGUMENT. And transactions started without
 * CreateTransaction (docs/transactions.md, "A status record without its own round trip"): their
 * intents are on the participant tablets while the status tablet holds no record of them (the client
 * heartbeats every 3 s there, so within a step nothing but the commit creates one); a conflicting
 * transaction or plain write meeting them must treat them as pending — the lower priority fails,
 * the higher one aborts the transaction for good (its commit then fails) — and no reader sees them.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import { TesseraClient } from '../../client/tessera-client';
import type { Transaction } from '../../client/transaction';
import { decodeLazyTxnId } from '../../common/lazy-txn-id';
import { masterMethods, tabletServerMethods, txnCoordinatorMethods } from '../../rpc/service-methods';
import type { ProcCluster } from './cluster-harness';
import { startTxnCluster, waitTableReady } from './txn-client-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;
let lazyClient: TesseraClient | undefined;

afterAll(async () => {
  await lazyClient?.close().catch(() => undefined);
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

const codeOf = (e: unknown): string => DbError.from(e).code;
const outcome = (p: Promise<unknown>): Promise<string> => p.then(() => 'ok', codeOf);

/** A transaction begun without CreateTransaction (the client learned it may from an earlier one). */
async function beginLazy(c: TesseraClient, priority: number): Promise<Transaction> {
  const t = await c.beginTransaction({ priority });
  expect(decodeLazyTxnId(t.txnId), `transaction ${t.txnId} was begun with CreateTransaction`).toBeDefined();
  return t;
}

describe('plain writes and transactions on a real cluster', () => {
  it('txn: no lost update between a read-modify-write transaction and a concurrent plain write of the same row (either interleaving)', async () => {
    ({ cluster, client } = await startTxnCluster(66));
    const c = client;
    await c.createTable({ name: 'acct', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await waitTableReady(cluster, 'acct', 3);
    await c.table('acct').upsert({ id: 1n, v: 0n });
    for (let round = 0n; round < 3n; round++) {
      // The transaction reads x and writes x+1 (an intent); then a plain write of x arrives.
      const t = await c.beginTransaction({ priority: 0.999 });
      const v = (await t.get('acct', { id: 1n }))!['v'] as bigint;
      await t.update('acct', { id: 1n, v: v + 1n });
      await c.table('acct').upsert({ id: 1n, v: 100n + round });
      const outcome = await t.commit().then(
        () => 'ok',
        (e: unknown) => codeOf(e),
      );
      // The plain write aborted the transaction, which cannot commit over a write it never saw.
      expect([ErrorCode.TXN_ABORTED, ErrorCode.TXN_NOT_FOUND, ErrorCode.TXN_CONFLICT]).toContain(outcome);
      expect((await c.table('acct').get({ id: 1n }))!['v']).toBe(100n + round);
    }
    // The other interleaving: the plain write commits between the transaction's read and its write.
    const t = await c.beginTransaction();
    const v = (await t.get('acct', { id: 1n }))!['v'] as bigint;
    await c.table('acct').upsert({ id: 1n, v: 500n });
    await expect(t.update('acct', { id: 1n, v: v + 1n })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    await t.abort().catch(() => undefined);
    expect((await c.table('acct').get({ id: 1n }))!['v']).toBe(500n);
  }, 180_000);

  it('txn: the transactions system table rejects client writes with NOT_SUPPORTED (client API and raw Write RPC to each replica)', async () => {
    const c = client!;
    await expect(c.table('transactions').upsert({ id: 1n })).rejects.toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    const rpc = c.rpcClient();
    const loc = await rpc.call(cluster!.masterAddresses[0]!, masterMethods().getTableLocations, { name: 'transactions' }, { timeoutMs: 5000 });
    // --transaction_table_num_tablets defaults to one status tablet (txn-server.test.ts sets three).
    expect(loc.tablets?.length).toBe(1);
    const tablet = loc.tablets![0]!;
    for (const r of tablet.replicas ?? []) {
      const req = { tabletId: tablet.tabletId!, ops: [{ type: 'UPSERT', key: { hash: 0, hashed: [], range: [] }, columns: [] }] };
      const e = await rpc.call(r.rpcAddress!, tabletServerMethods().write, req, { timeoutMs: 5000 }).catch((x: unknown) => x);
      expect(e).toMatchObject({ code: ErrorCode.NOT_SUPPORTED });
    }
    // An unknown isolation is refused by the status tablet's leader (raw CreateTransaction).
    const leader = tablet.replicas!.map((r) => r.rpcAddress!);
    const raw = await Promise.all(
      leader.map((a) => rpc.call(a, txnCoordinatorMethods().createTransaction, { statusTablet: tablet.tabletId!, txnId: 'chaos00000000001', isolation: 'chaos', priority: 0.5 }, { timeoutMs: 5000 }).catch((x: unknown) => x)),
    );
    // The replica that leads the status tablet answers INVALID_ARGUMENT; the others point at it.
    expect(raw.map(codeOf)).toContain(ErrorCode.INVALID_ARGUMENT);
    for (const r of raw) expect([ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_THE_LEADER, ErrorCode.TABLET_NOT_FOUND, ErrorCode.LEADER_NOT_READY]).toContain(codeOf(r));
    // The status tablets still work: a transaction commits.
    const t = await c.beginTransaction();
    await t.upsert('acct', { id: 2n, v: 1n });
    await t.commit();
  }, 60_000);

  it('txn-lazy: intents of a transaction whose status record is not yet written are pending to everyone — a lower-priority writer fails, a higher one aborts it for good, a plain write aborts it, readers never see them', async () => {
    const c = client!;
    for (const id of [1n, 2n, 3n]) await c.table('acct').upsert({ id, v: 0n });
    // txn_lazy_status_record is runtime (off by default): on for every tserver.
    for (const ts of cluster!.tservers) await c.rpcClient().call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'txn_lazy_status_record', value: 'true', force: false }, { timeoutMs: 10_000 });
    lazyClient = await TesseraClient.connect({ masterAddresses: cluster!.masterAddresses, timeoutMs: 20_000, transactionHeartbeatUsec: 3_000_000 });
    const lc = lazyClient;
    // The first transaction asks CreateTransaction, whose answer allows the later ones to start lazily.
    const warm = await lc.beginTransaction();
    await warm.abort();

    // A lower-priority writer meets the intent: it fails; readers see the old value; the owner commits.
    const high = await beginLazy(lc, 0.9);
    await high.update('acct', { id: 1n, v: 10n });
    const low = await c.beginTransaction({ priority: 0.1 });
    expect(await outcome(low.update('acct', { id: 1n, v: 11n }))).toBe(ErrorCode.TXN_CONFLICT);
    expect((await c.table('acct').get({ id: 1n }))!['v']).toBe(0n);
    const reader = await c.beginTransaction({ priority: 0.01 });
    expect((await reader.get('acct', { id: 1n }))!['v']).toBe(0n);
    await reader.abort();
    expect(await outcome(high.commit())).toBe('ok');
    expect((await c.table('acct').get({ id: 1n }))!['v']).toBe(10n);

    // A higher-priority writer meets it: it aborts the transaction through the status tablet, which
    // records the abort before answering — the transaction's commit (which would create its record) fails.
    const victim = await beginLazy(lc, 0.2);
    await victim.update('acct', { id: 2n, v: 20n });
    const winner = await c.beginTransaction({ priority: 0.95 });
    await winner.update('acct', { id: 2n, v: 21n });
    expect(await outcome(winner.commit())).toBe('ok');
    expect(await outcome(victim.commit())).toBe(ErrorCode.TXN_ABORTED);
    expect((await c.table('acct').get({ id: 2n }))!['v']).toBe(21n);

    // A plain write meets it: the transaction is aborted, the plain write stays.
    const overwritten = await beginLazy(lc, 0.99);
    await overwritten.update('acct', { id: 3n, v: 30n });
    await c.table('acct').upsert({ id: 3n, v: 31n });
    expect(await outcome(overwritten.commit())).toBe(ErrorCode.TXN_ABORTED);
    expect((await c.table('acct').get({ id: 3n }))!['v']).toBe(31n);
  }, 180_000);
});
