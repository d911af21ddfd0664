/**
 * Serializable transactions on real processes (1 master + 3 tservers, table of 3 tablets): reads take
 * read locks (strong read intents replicated to every replica) until the transaction ends, so the
 * anomalies snapshot isolation allows are refused — write skew, a phantom under a scan, two inserts
 * of one new key — while reads see the newest committed data (no snapshot), a read-only transaction
 * commits, an abort frees the locks, and a plain write still wins over a reader's lock.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { TesseraClient } from '../../client/tessera-client';
import type { Transaction } from '../../client/transaction';
import type { ProcCluster } from './cluster-harness';
import { waitFor } from './cluster-harness';
import { startTxnCluster, tabletsOf, waitTableReady } from './txn-client-harness';
import { tabletServerMethods } from '../../rpc/service-methods';
import { getJson } from '../../lab/console-http';

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

const T = 'ser';
const codeOf = (e: unknown): string => DbError.from(e).code;
const settle = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => 'ok',
    (e: unknown) => codeOf(e),
  );
const FAILED = [ErrorCode.TXN_CONFLICT, ErrorCode.TXN_ABORTED];

async function begin(priority: number): Promise<Transaction> {
  return client!.beginTransaction({ isolation: 'serializable', priority });
}

async function value(id: bigint): Promise<string | undefined> {
  return (await client!.table(T).get({ id }))?.['v'] as string | undefined;
}

describe('serializable transactions on a real cluster', () => {
  it('txn serializable: write skew refused (exactly one of two commits); read locks on every replica; the locks go once the transactions end', async () => {
    ({ cluster, client } = await startTxnCluster(175));
    const c = client;
    await c.createTable({ name: T, columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await waitTableReady(cluster, T, 3);
    await c.table(T).upsertMany([{ id: 1n, v: 'on' }, { id: 2n, v: 'on' }]);
    const [a, b] = [await begin(0.8), await begin(0.2)];
    for (const t of [a, b]) for (const id of [1n, 2n]) expect((await t.get(T, { id }))?.['v']).toBe('on');
    // Four row locks (two readers × two rows) as strong intents, on all 3 replicas of their tablets.
    const intents = async (): Promise<number> => (await Promise.all(cluster!.tservers.map((p) => tabletsOf(p, T)))).flat().reduce((n, t) => n + t.intentsdb.intentCount, 0);
    // (Followers apply the lock entries on their own schedule: wait for all three replicas.)
    await waitFor('the read locks on every replica', 20_000, async () => (await intents()) === 4 * 3);
    expect(await intents()).toBe(4 * 3);
    const [oa, ob] = await Promise.all([
      settle((async () => {
        await a.update(T, { id: 1n, v: 'off' });
        await a.commit();
      })()),
      settle((async () => {
        await b.update(T, { id: 2n, v: 'off' });
        await b.commit();
      })()),
    ]);
    expect([oa, ob].filter((o) => o === 'ok')).toHaveLength(1);
    expect(FAILED).toContain(oa === 'ok' ? ob : oa);
    expect([await value(1n), await value(2n)].filter((v) => v === 'on')).toHaveLength(1);
    await b.abort().catch(() => undefined);
    // Applies and aborts remove the read locks from every replica.
    await waitFor('no read locks left on any replica', 20_000, async () => (await intents()) === 0);
  }, 180_000);

  it('txn serializable: reads see the newest committed data (no snapshot); a read-only transaction commits; two inserts of one new key: exactly one commits', async () => {
    const c = client!;
    await c.table(T).upsert({ id: 3n, v: 'before' });
    const t = await begin(0.5);
    expect((await t.get(T, { id: 3n }))?.['v']).toBe('before');
    await c.table(T).upsert({ id: 4n, v: 'later' });
    // A row written after the transaction began: read now, under a lock (a snapshot transaction
    // would read its snapshot, without the row).
    expect((await t.get(T, { id: 4n }))?.['v']).toBe('later');
    await t.commit();

    const [i1, i2] = [await begin(0.7), await begin(0.3)];
    const o = await Promise.all([settle(i1.insert(T, { id: 50n, v: 'i1' }).then(() => i1.commit())), settle(i2.insert(T, { id: 50n, v: 'i2' }).then(() => i2.commit()))]);
    expect(o.filter((x) => x === 'ok')).toHaveLength(1);
    expect([...FAILED, ErrorCode.ALREADY_EXISTS]).toContain(o[0] === 'ok' ? o[1] : o[0]);
    expect(await value(50n)).toBe(o[0] === 'ok' ? 'i1' : 'i2');
  }, 120_000);

  it('txn serializable: a scan locks the scanned tablets — a concurrent insert (phantom) conflicts by priority; after the scanner ends, writes go through', async () => {
    const scanner = await begin(0.9);
    const seen = (await scanner.scan(T)).length;
    expect(seen).toBeGreaterThanOrEqual(4);
    const inserter = await begin(0.1);
    expect(await settle(inserter.insert(T, { id: 60n, v: 'phantom' }))).toBe(ErrorCode.TXN_CONFLICT);
    await inserter.abort().catch(() => undefined);
    await scanner.upsert(T, { id: 61n, v: `count ${seen}` });
    await scanner.commit();
    expect(await value(61n)).toBe(`count ${seen}`);
    expect(await value(60n)).toBeUndefined();
    // A scanner of lower priority loses to the writer instead; once it is gone, writes pass.
    const lowScanner = await begin(0.05);
    await lowScanner.scan(T);
    const writer = await begin(0.95);
    await writer.upsert(T, { id: 62n, v: 'w' });
    await writer.commit();
    expect(await settle(lowScanner.commit())).toBe(ErrorCode.TXN_ABORTED);
    expect(await value(62n)).toBe('w');
  }, 120_000);

  it('txn serializable: a scan of one hash key (table with range columns) locks that hash key only — an insert under it conflicts, inserts under other hash keys of the same tablet commit', async () => {
    const c = client!;
    await c.createTable({ name: 'ser_range', columns: [{ name: 'h', type: 'int64' }, { name: 'r', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['h'], range: ['r'] }, numTablets: 1 });
    await waitTableReady(cluster!, 'ser_range', 1);
    await c.table('ser_range').upsertMany([{ h: 1n, r: 1n, v: 'a' }, { h: 1n, r: 2n, v: 'b' }, { h: 2n, r: 1n, v: 'c' }]);
    const scanner = await begin(0.9);
    expect((await scanner.scan('ser_range', { hashKey: { h: 1n } })).map((x) => x['r'])).toEqual([1n, 2n]);
    // Another hash key of the same (only) tablet: not locked.
    const other = await begin(0.1);
    await other.insert('ser_range', { h: 2n, r: 5n, v: 'other hash key' });
    await other.commit();
    // A row under the scanned hash key (a phantom): refused while the scanner runs.
    const phantom = await begin(0.1);
    expect(await settle(phantom.insert('ser_range', { h: 1n, r: 3n, v: 'phantom' }))).toBe(ErrorCode.TXN_CONFLICT);
    await phantom.abort().catch(() => undefined);
    await scanner.upsert('ser_range', { h: 1n, r: 9n, v: 'count 2' });
    await scanner.commit();
    const rows = await c.table('ser_range').scan({ hashKey: { h: 1n } });
    expect(rows.map((x) => x['v'])).toEqual(['a', 'b', 'count 2']);
    expect((await c.table('ser_range').get({ h: 2n, r: 5n }))?.['v']).toBe('other hash key');
  }, 120_000);

  it('txn serializable: a plain write of a row a transaction read aborts that transaction (the plain write wins)', async () => {
    const c = client!;
    const t = await begin(0.99);
    await t.get(T, { id: 3n });
    await c.table(T).upsert({ id: 3n, v: 'plain' });
    // The transaction may learn of its abort at this write (a heartbeat) or at the commit.
    const o = await settle(t.upsert(T, { id: 70n, v: 'depends on row 3' }).then(() => t.commit()));
    expect(FAILED).toContain(o);
    expect(await value(3n)).toBe('plain');
    expect(await value(70n)).toBeUndefined();
  }, 120_000);

  it('txn serializable: with enable_wait_queues a lower-priority read-modify-write waits for the pending writer and commits after it, instead of failing', async () => {
    const c = client!;
    const setAll = async (v: string): Promise<void> => {
      for (const p of cluster!.tservers) await c.rpcClient().call(p.rpcAddress, tabletServerMethods().setFlag, { name: 'enable_wait_queues', value: v }, { timeoutMs: 3000 });
    };
    await setAll('true');
    try {
      const high = await begin(0.9);
      await high.upsert(T, { id: 80n, v: 'high' });
      // A read-modify-write of lower priority: its read lock meets the pending write and waits.
      const low = await begin(0.1);
      let lowEnded = false;
      const lowDone = settle(
        (async () => {
          const cur = (await low.get(T, { id: 80n }))?.['v'] as string | undefined;
          await low.upsert(T, { id: 80n, v: `${String(cur)}+low` });
          await low.commit();
        })(),
      ).finally(() => (lowEnded = true));
      // The low one is in a tablet's wait queue (the pages show it waiting), not done.
      await waitFor('the low-priority read to wait in a tablet wait queue', 20_000, async () => {
        for (const p of cluster!.tservers) {
          for (const t of await tabletsOf(p, T)) {
            const d = (await getJson(`http://${p.webAddress}/api/v1/tablet?id=${t.tabletId}`, 3000)) as { waitQueue: { waiting: number } };
            if (d.waitQueue.waiting > 0) return true;
          }
        }
        return lowEnded;
      });
      expect(lowEnded).toBe(false);
      await high.commit();
      expect(await lowDone).toBe('ok');
      // It read the holder's committed value and wrote after it.
      expect(await value(80n)).toBe('high+low');
      // The tablet pages count the wait.
      const waits = await Promise.all(
        cluster!.tservers.map(async (p) => {
          const ts = await tabletsOf(p, T);
          const ds = await Promise.all(ts.map((t) => getJson(`http://${p.webAddress}/api/v1/tablet?id=${t.tabletId}`, 3000) as Promise<{ waitQueue: { waits: number } }>));
          return ds.reduce((n, d) => n + d.waitQueue.waits, 0);
        }),
      );
      expect(waits.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
    } finally {
      await setAll('false');
    }
  }, 120_000);
});
