/**
 * The single-tablet fast path on real processes (1 master + 3 tservers; docs/transactions.md): a
 * transaction begun with `deferWrites` whose writes all fall in one tablet commits there as one plain
 * write, and still follows the distributed path's rules against distributed transactions, plain writes
 * and other fast-path transactions — first committer wins after the read time, pending intents are
 * settled by priority — in both directions. Writes kept back are seen by the transaction's own reads;
 * several tablets, a read lock, or enable_txn_fast_path=false send them as intents and commit through
 * the status tablet. An autocommit SQL UPDATE or DELETE of rows in one tablet takes the fast path too.
 */
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DbError, ErrorCode } from '../../common/errors';
import type { TesseraClient } from '../../client/tessera-client';
import { partitionHash } from '../../docdb';
import { tabletServerMethods } from '../../rpc/service-methods';
import { httpRequest } from '../../lab/console-http';
import { waitFor, type ProcCluster } from './cluster-harness';
import { startTxnCluster, tabletsOf, waitTableReady } from './txn-client-harness';

let cluster: ProcCluster;
let client: TesseraClient;

const codeOf = (e: unknown): string => DbError.from(e).code;
const cols = [{ name: 'id', type: 'int64' as const }, { name: 'v', type: 'int64' as const }];

beforeAll(async () => {
  ({ cluster, client } = await startTxnCluster(189));
  await client.createTable({ name: 'one', columns: cols, primaryKey: { hash: ['id'] }, numTablets: 1 });
  await client.createTable({ name: 'three', columns: cols, primaryKey: { hash: ['id'] }, numTablets: 3 });
  await waitTableReady(cluster, 'one', 1);
  await waitTableReady(cluster, 'three', 3);
}, 180_000);

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function value(table: string, id: bigint): Promise<bigint | undefined> {
  return (await client.table(table).get({ id }))?.['v'] as bigint | undefined;
}

/** Calls of the tserver RPC `method` served so far, summed over the tservers. */
async function rpcOps(method: string): Promise<number> {
  let n = 0;
  for (const ts of cluster.tservers) {
    const r = await httpRequest(`http://${ts.webAddress}/prometheus-metrics`, { timeoutMs: 5000 });
    for (const line of r.body.split('\n')) {
      const m = /^tserver_rpc_ops_total\{[^}]*method="([A-Za-z]+)"[^}]*\}\s+(\S+)$/.exec(line);
      if (m && m[1] === method) n += Number(m[2]);
    }
  }
  return n;
}

async function setFastPath(on: boolean): Promise<void> {
  const rpc = client.rpcClient();
  for (const ts of cluster.tservers) await rpc.call(ts.rpcAddress, tabletServerMethods().setFlag, { name: 'enable_txn_fast_path', value: String(on) }, { timeoutMs: 3000 });
}

describe('single-tablet fast path', () => {
  it('fast path: a 2-row transaction on one tablet commits as one plain write (no intents, no status record), both rows visible at its commit time', async () => {
    const statusRpcs = async (): Promise<number> => (await rpcOps('CreateTransaction')) + (await rpcOps('AbortTransaction'));
    const rpcsBefore = await statusRpcs();
    const t = await client.beginTransaction({ deferWrites: true });
    await t.upsert('one', { id: 1n, v: 10n });
    await t.upsert('one', { id: 2n, v: 20n });
    const { commitHt } = await t.commit();
    expect(t.commitPath).toBe('single-tablet');
    expect(t.participants()).toEqual([]);
    // Blind writes only: no status record was ever created (no CreateTransaction, no AbortTransaction).
    expect(t.hasStatusRecord).toBe(false);
    expect(t.statusTablet).toBeUndefined();
    expect(commitHt).toBeGreaterThan(0n);
    expect(await statusRpcs()).toBe(rpcsBefore);
    expect(await value('one', 1n)).toBe(10n);
    expect(await value('one', 2n)).toBe(20n);
    // Nothing went through IntentsDB on any replica (no intents were ever written there).
    const reps = (await Promise.all(cluster.tservers.map((p) => tabletsOf(p, 'one')))).flat();
    expect(reps.length).toBe(3);
    for (const r of reps) expect(r.intentsdb.intentCount).toBe(0);
    // Concurrent fast-path commits to one tablet share Write RPCs (the client's coalescer): each still
    // commits on its own, with a commit time of its own (one Raft entry each: txn_fast_path_one_entry
    // is off by default), and every row lands.
    const many = await Promise.all(Array.from({ length: 12 }, () => client.beginTransaction({ deferWrites: true })));
    await Promise.all(many.map((m, i) => m.upsert('one', { id: 100n + BigInt(i), v: BigInt(i) })));
    const times = await Promise.all(many.map((m) => m.commit().then((c) => c.commitHt)));
    expect(many.every((m) => m.commitPath === 'single-tablet')).toBe(true);
    expect(new Set(times).size).toBe(times.length);
    for (let i = 0; i < 12; i++) expect(await value('one', 100n + BigInt(i))).toBe(BigInt(i));
    // txn_fast_path_one_entry on (runtime): the commits of one RPC share one Raft entry, so one time.
    const oneEntry = (v: string): Promise<unknown[]> => Promise.all(cluster.tservers.map((p) => client.rpcClient().call(p.rpcAddress, tabletServerMethods().setFlag, { name: 'txn_fast_path_one_entry', value: v }, { timeoutMs: 5_000 })));
    await oneEntry('true');
    try {
      const shared = await Promise.all(Array.from({ length: 12 }, () => client.beginTransaction({ deferWrites: true })));
      await Promise.all(shared.map((m, i) => m.upsert('one', { id: 200n + BigInt(i), v: BigInt(i) })));
      const sharedTimes = await Promise.all(shared.map((m) => m.commit().then((c) => c.commitHt)));
      expect(shared.every((m) => m.commitPath === 'single-tablet')).toBe(true);
      expect(new Set(sharedTimes).size).toBeLessThan(sharedTimes.length);
      for (let i = 0; i < 12; i++) expect(await value('one', 200n + BigInt(i))).toBe(BigInt(i));
    } finally {
      await oneEntry('false');
    }
    expect(client.txnWrites!.stats.requests).toBeLessThan(client.txnWrites!.stats.writes);
    // A delete kept back commits the same way.
    const d = await client.beginTransaction({ deferWrites: true });
    await d.delete('one', { id: 2n });
    await d.commit();
    expect(d.commitPath).toBe('single-tablet');
    expect(await value('one', 2n)).toBeUndefined();
  }, 60_000);

  it('fast path: first committer wins after the read time — a distributed, a fast-path or a plain write committed after it fails the fast-path commit', async () => {
    await client.table('one').upsert({ id: 5n, v: 0n });
    const writers: Array<[string, (v: bigint) => Promise<void>]> = [
      ['distributed', async (v) => {
        const o = await client.beginTransaction();
        await o.upsert('one', { id: 5n, v });
        await o.commit();
        expect(o.commitPath).toBe('distributed');
      }],
      ['fast path', async (v) => {
        const o = await client.beginTransaction({ deferWrites: true });
        await o.upsert('one', { id: 5n, v });
        await o.commit();
        expect(o.commitPath).toBe('single-tablet');
      }],
      ['plain', (v) => client.table('one').upsert({ id: 5n, v })],
    ];
    let n = 100n;
    for (const [, write] of writers) {
      const t = await client.beginTransaction({ deferWrites: true });
      const seen = (await t.get('one', { id: 5n }))!['v'] as bigint;
      await write(++n);
      await t.upsert('one', { id: 5n, v: seen + 1n });
      await expect(t.commit()).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
      expect(await value('one', 5n)).toBe(n);
    }
  }, 60_000);

  it('fast path vs a pending distributed transaction: the lower priority loses, either way round, and no update is lost', async () => {
    await client.table('one').upsert({ id: 7n, v: 0n });
    // The distributed one outranks: the fast-path commit fails, the distributed one commits.
    const hi = await client.beginTransaction({ priority: 0.99 });
    await hi.upsert('one', { id: 7n, v: 1n });
    const lo = await client.beginTransaction({ deferWrites: true, priority: 0.01 });
    await lo.upsert('one', { id: 7n, v: 2n });
    await expect(lo.commit()).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    await hi.commit();
    expect(await value('one', 7n)).toBe(1n);
    // The fast-path one outranks: it aborts the pending one, whose commit then fails.
    const lo2 = await client.beginTransaction({ priority: 0.01 });
    await lo2.upsert('one', { id: 7n, v: 3n });
    const hi2 = await client.beginTransaction({ deferWrites: true, priority: 0.99 });
    await hi2.upsert('one', { id: 7n, v: 4n });
    await hi2.commit();
    expect(hi2.commitPath).toBe('single-tablet');
    const outcome = await lo2.commit().then(() => 'ok', codeOf);
    expect([ErrorCode.TXN_ABORTED, ErrorCode.TXN_CONFLICT, ErrorCode.TXN_NOT_FOUND]).toContain(outcome);
    expect(await value('one', 7n)).toBe(4n);
    // A distributed transaction that read before a fast-path commit cannot write over it.
    const late = await client.beginTransaction();
    await late.get('one', { id: 7n });
    const fast = await client.beginTransaction({ deferWrites: true });
    await fast.upsert('one', { id: 7n, v: 5n });
    await fast.commit();
    await expect(late.upsert('one', { id: 7n, v: 6n })).rejects.toMatchObject({ code: ErrorCode.TXN_CONFLICT });
    expect(await value('one', 7n)).toBe(5n);
  }, 60_000);

  it('deferred writes: own reads see them; several tablets, a serializable read or enable_txn_fast_path=false commit through the status tablet', async () => {
    // Read your own deferred write: it is sent (as an intent) first, and the commit is distributed.
    const r = await client.beginTransaction({ deferWrites: true });
    await r.upsert('one', { id: 9n, v: 9n });
    expect((await r.get('one', { id: 9n }))?.['v']).toBe(9n);
    await r.commit();
    expect(r.commitPath).toBe('distributed');
    // Two tablets of a 3-tablet table: distributed, atomic.
    const tabletOf = (k: bigint): number => Math.floor((partitionHash([k]) * 3) / 0x10000);
    let b = 2n;
    while (tabletOf(b) === tabletOf(1n)) b++;
    const x = await client.beginTransaction({ deferWrites: true });
    await x.upsert('three', { id: 1n, v: 1n });
    await x.upsert('three', { id: b, v: 1n });
    await x.commit();
    expect(x.commitPath).toBe('distributed');
    expect(x.participants().length).toBe(2);
    expect([await value('three', 1n), await value('three', b)]).toEqual([1n, 1n]);
    // Serializable: blind writes take the fast path; after a read (a read lock) they do not.
    const s1 = await client.beginTransaction({ isolation: 'serializable', deferWrites: true });
    await s1.upsert('one', { id: 11n, v: 1n });
    await s1.commit();
    expect(s1.commitPath).toBe('single-tablet');
    const s2 = await client.beginTransaction({ isolation: 'serializable', deferWrites: true });
    await s2.get('one', { id: 11n });
    await s2.upsert('one', { id: 11n, v: 2n });
    await s2.commit();
    expect(s2.commitPath).toBe('distributed');
    expect(await value('one', 11n)).toBe(2n);
    // The A/B switch: the tablet refuses, the client falls back and the transaction still commits.
    await setFastPath(false);
    try {
      const f = await client.beginTransaction({ deferWrites: true });
      await f.upsert('one', { id: 12n, v: 12n });
      await f.commit();
      expect(f.commitPath).toBe('distributed');
      expect(await value('one', 12n)).toBe(12n);
    } finally {
      await setFastPath(true);
    }
  }, 90_000);

  it('fast path: autocommit SQL UPDATE and DELETE of one row commit without CommitTransaction; a multi-tablet UPDATE goes through the status tablet', async () => {
    const pgAddr = cluster.tservers[0]!.pgAddress!;
    const pg = (): Client => new Client({ host: pgAddr.slice(0, pgAddr.lastIndexOf(':')), port: Number(pgAddr.slice(pgAddr.lastIndexOf(':') + 1)), user: 'yugabyte', database: 'yugabyte' });
    let c: Client | undefined;
    await waitFor('SQL endpoint answers', 60_000, async () => {
      const x = pg();
      try {
        await x.connect();
        await x.query('select 1');
        c = x;
        return true;
      } catch {
        await x.end().catch(() => undefined);
        return false;
      }
    }, 500);
    const sql = c!;
    try {
      await sql.query('create table fp (k bigint primary key, v bigint) split into 3 tablets');
      await sql.query(`insert into fp values ${Array.from({ length: 12 }, (_, i) => `(${i + 1}, 0)`).join(', ')}`);
      const commits = (): Promise<number> => rpcOps('CommitTransaction');
      const before = await commits();
      for (let i = 1; i <= 3; i++) expect((await sql.query('update fp set v = v + 1 where k = 1')).rowCount).toBe(1);
      expect((await sql.query('delete from fp where k = 2')).rowCount).toBe(1);
      expect(await commits()).toBe(before);
      expect((await sql.query('select v from fp where k = 1')).rows[0]).toEqual({ v: '3' });
      expect((await sql.query('select count(*) as n from fp where k = 2')).rows[0]).toEqual({ n: '0' });
      // All rows: several tablets, so the statement's writes go as intents and commit through the status tablet.
      expect((await sql.query('update fp set v = 7')).rowCount).toBe(11);
      expect(await commits()).toBeGreaterThan(before);
      expect((await sql.query('select count(*) as n from fp where v = 7')).rows[0]).toEqual({ n: '11' });
    } finally {
      await sql.end().catch(() => undefined);
    }
  }, 120_000);
});
