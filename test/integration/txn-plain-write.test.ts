/**
 * Plain (non-transactional) writes against transactions on real processes (1 master + 3 tservers):
 * a plain write never slips under a pending transaction's intent (it aborts that transaction), and
 * a transaction that read before a plain write committed cannot write over it (first committer
 * wins) — so no lost update either way. Also: the `transactions` system table rejects client
 * writes with NOT_SUPPORTED, through the client API and through the raw Write RPC on every replica;
 * an unknown isolation is refused with INVALID_ARGUMENT.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { TesseraClient } from '../../client/tessera-client';
import { masterMethods, tabletServerMethods, txnCoordinatorMethods } from '../../rpc/service-methods';
import type { ProcCluster } from './cluster-harness';
import { startTxnCluster, waitTableReady } from './txn-client-harness';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

const codeOf = (e: unknown): string => DbError.from(e).code;

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
});
