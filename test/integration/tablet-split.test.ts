/**
 * Range sharding and tablet splitting on a real cluster (1 master, 3 tservers, RF 3, processes on
 * loopback; docs/splitting.md): a range table created with split points routes rows to its key
 * ranges and scans them in key order; a manual split under a bounded write load loses no
 * acknowledged write and shows the clients no error; a client whose cached locations still name the
 * split parent gets TABLET_SPLIT underneath and is re-routed to the right child; the children's
 * replicas converge; the CLI splits a hash table's tablet.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from 'pg';
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { checkReplicaConvergence } from '../../lab/verify/replica-convergence';
import { tabletServerMethods } from '../../rpc/service-methods';
import { splitMethods } from '../../rpc/split-methods';
import { ProcCluster, waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
/** The write load during a split: writers and the writes each makes at most (bounded). */
const WRITERS = 3;
const WRITES_PER_WRITER_MAX = 1500;

let cluster: ProcCluster;
let c: TesseraClient;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 143, masters: 1, tservers: 3, masterFlags: ['--enable_load_balancing=false'], tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
  c = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 30_000 });
}, 120_000);

afterAll(async () => {
  await c?.close().catch(() => undefined);
  await cluster?.destroy();
});

function cli(...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args, '--master_addresses', cluster.masterAddresses.join(',')], { timeout: 60_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }));
  });
}

async function leadersOf(table: string): Promise<void> {
  await waitFor(`every tablet of ${table} to have a leader`, 30_000, async () => (await c.tableLocations(table)).tablets.every((t) => t.replicas.some((r) => r.role === 'LEADER')));
}

describe('tablet splitting', () => {
  it('range table: split points make key-range tablets; rows route by key and scan in key order across tablets (CLI --split_at)', async () => {
    const r = await cli('create-table', 'r', '--columns', 'k:int64,v:string', '--range', 'k', '--split_at', '100,200');
    expect(r).toMatchObject({ code: 0 });
    const loc = await c.tableLocations('r');
    expect(loc.tablets).toHaveLength(3);
    await leadersOf('r');
    const t = c.table('r');
    await t.upsertMany(Array.from({ length: 300 }, (_, i) => ({ k: BigInt(299 - i), v: `v${299 - i}` })));
    const rows = await t.scan();
    expect(rows.map((x) => x.k)).toEqual(Array.from({ length: 300 }, (_, i) => BigInt(i)));
    expect((await t.scan({ rangeStart: { k: 150n }, rangeEnd: { k: 250n } })).map((x) => Number(x.k))).toEqual(Array.from({ length: 100 }, (_, i) => 150 + i));
    expect(await t.get({ k: 200n })).toEqual({ k: 200n, v: 'v200' });
    // Each tablet holds exactly its key range (asked directly, one tablet at a time).
    const counts = await Promise.all(loc.tablets.map(async (tb) => {
      const leader = await waitFor('a leader', 20_000, () => cluster.leaderOf(c.rpcClient(), tb.tabletId));
      const s = await c.rpcClient().call(leader, tabletServerMethods().scan, { tabletId: tb.tabletId, limit: 1000, readHt: 0n }, { timeoutMs: 10_000 });
      return (s.rows ?? []).length;
    }));
    expect(counts).toEqual([100, 100, 100]);
    const bad = await cli('create-table', 'r_bad', '--columns', 'k:int64', '--range', 'k', '--split_at', '200,100');
    expect(bad.code).not.toBe(0);
    expect(bad.out).toContain('ascending');
  }, 90_000);

  it('manual split under a bounded write load: no error reaches the writers, no acknowledged write is lost, a stale client is re-routed, the children converge', async () => {
    await c.createTable({ name: 'w', columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { range: ['k'] } });
    await leadersOf('w');
    const t = c.table('w');
    await t.upsertMany(Array.from({ length: 400 }, (_, i) => ({ k: BigInt(i * 10), v: 'seed' })));
    // A second client loads the one tablet's location now and keeps it through the split.
    const stale = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 30_000 });
    try {
      expect(await stale.table('w').get({ k: 10n })).toEqual({ k: 10n, v: 'seed' });
      const [parent] = (await c.tableLocations('w')).tablets;
      let stop = false;
      const acked: bigint[] = [];
      const errors: string[] = [];
      const writer = async (w: number): Promise<void> => {
        for (let i = 0; i < WRITES_PER_WRITER_MAX && !stop; i++) {
          const k = BigInt(i * 10 + w + 1);
          try {
            await t.upsert({ k, v: `w${w}` });
            acked.push(k);
          } catch (e) {
            errors.push(DbError.from(e).code);
          }
        }
      };
      const load = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
      await waitFor('some writes before the split', 20_000, () => acked.length >= 100, 20);
      const { children } = await c.splitTablet(parent!.tabletId);
      expect(children).toHaveLength(2);
      await waitFor('some writes after the split', 20_000, () => acked.length >= 400, 20);
      stop = true;
      await load;
      expect(errors).toEqual([]);
      const loc = await c.tableLocations('w');
      expect(loc.tablets.map((x) => x.tabletId)).toEqual(children);
      // The parent (kept a while for lagging replicas) answers TABLET_SPLIT, naming its children.
      const old = await c.rpcClient().call(parent!.replicas[0]!.rpcAddress, tabletServerMethods().read, { tabletId: parent!.tabletId, keys: [], readHt: 0n }, { timeoutMs: 5_000 }).then(() => undefined, (e: unknown) => DbError.from(e));
      expect(old?.code).toBe('TABLET_SPLIT');
      expect((old!.details['children'] as Array<{ tabletId: string }>).map((x) => x.tabletId)).toEqual(children);
      // The stale client's cache names the parent: its reads and writes still succeed.
      expect(await stale.table('w').get({ k: 3990n })).toEqual({ k: 3990n, v: 'seed' });
      await stale.table('w').upsert({ k: 5n, v: 'stale' });
      const rows = new Map((await t.scan()).map((x) => [x.k as bigint, x.v]));
      for (const k of acked) expect(rows.has(k)).toBe(true);
      expect(rows.get(5n)).toBe('stale');
      for (let i = 0; i < 400; i++) expect(rows.has(BigInt(i * 10))).toBe(true);
      const tservers = cluster.tservers.map((p) => ({ name: `ts${p.index}`, webUrl: `http://${p.webAddress}` }));
      const conv = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 60_000, tablets: new Set(children) });
      expect(conv.diverged).toEqual([]);
      expect(conv.converged).toBe(2);
    } finally {
      await stale.close();
    }
  }, 120_000);

  it('SQL range table (SPLIT AT VALUES): rows route to key ranges; aggregates, BETWEEN and ORDER BY across tablets; a split at --at keeps every query right', async () => {
    const pgAddr = cluster.tservers[0]!.pgAddress!;
    const pg = (): Client => new Client({ host: pgAddr.slice(0, pgAddr.lastIndexOf(':')), port: Number(pgAddr.slice(pgAddr.lastIndexOf(':') + 1)), user: 'yugabyte', database: 'yugabyte' });
    const sql = await waitFor('SQL endpoint answers', 60_000, async () => {
      const x = pg();
      try {
        await x.connect();
        await x.query('select 1');
        return x;
      } catch {
        await x.end().catch(() => undefined);
        return undefined;
      }
    }, 500);
    try {
      await sql.query('create table sr (k bigint, v text, primary key (k asc)) split at values ((100), (200))');
      const loc = await c.tableLocations('sr');
      expect(loc.tablets).toHaveLength(3);
      await leadersOf('sr');
      await sql.query("insert into sr select g, 'v' || g from generate_series(1, 300) g");
      const q = async (text: string): Promise<Record<string, unknown>[]> => (await sql.query(text)).rows;
      const check = async (): Promise<void> => {
        expect(await q('select count(*) as n, min(k) as lo, max(k) as hi, sum(k) as s from sr')).toEqual([{ n: '300', lo: '1', hi: '300', s: '45150' }]);
        // A range over the split points: in key order, from three tablets.
        expect((await q('select k from sr where k between 98 and 203')).map((r) => Number(r['k']))).toEqual(Array.from({ length: 106 }, (_, i) => 98 + i));
        expect((await q('select k from sr order by k desc limit 3')).map((r) => Number(r['k']))).toEqual([300, 299, 298]);
        expect(await q("select count(*) as n from sr where v like 'v1%'")).toEqual([{ n: '111' }]);
      };
      await check();
      const plan = (await q('explain select * from sr where k between 98 and 203')).map((r) => String(Object.values(r)[0])).join('\n');
      expect(plan).toMatch(/Range scan/i);
      expect(plan).toContain('k >= 98 AND k <= 203');
      // Each tablet holds its key range only (asked directly).
      const counts = await Promise.all(loc.tablets.map(async (tb) => {
        const leader = await waitFor('a leader', 20_000, () => cluster.leaderOf(c.rpcClient(), tb.tabletId));
        const s = await c.rpcClient().call(leader, tabletServerMethods().scan, { tabletId: tb.tabletId, limit: 1000, readHt: 0n }, { timeoutMs: 10_000 });
        return (s.rows ?? []).length;
      }));
      expect(counts).toEqual([99, 100, 101]);
      // Split the middle tablet at k = 150: the same answers from four tablets.
      const r = await cli('admin', 'split_tablet', loc.tablets[1]!.tabletId, '--at', '150');
      expect(r).toMatchObject({ code: 0 });
      await waitFor('sr has 4 tablets', 30_000, async () => (await c.tableLocations('sr')).tablets.length === 4);
      await leadersOf('sr');
      await check();
      expect((await sql.query('update sr set v = v || \'!\' where k between 140 and 160')).rowCount).toBe(21);
      expect((await sql.query('delete from sr where k >= 290')).rowCount).toBe(11);
      expect(await q("select count(*) as n from sr where v like '%!'")).toEqual([{ n: '21' }]);
      expect(await q('select count(*) as n, max(k) as hi from sr')).toEqual([{ n: '289', hi: '289' }]);
      // TRUNCATE makes the table again with the same four key ranges.
      await sql.query('truncate sr');
      expect(await q('select count(*) as n from sr')).toEqual([{ n: '0' }]);
      expect((await c.tableLocations('sr')).tablets).toHaveLength(4);
      await sql.query('insert into sr values (5, \'a\'), (150, \'b\'), (250, \'c\')');
      expect((await q('select k from sr where k >= 100')).map((r) => Number(r['k']))).toEqual([150, 250]);
    } finally {
      await sql.end().catch(() => undefined);
    }
  }, 120_000);

  it('hash table: admin split_tablet splits a tablet at its middle hash; every row stays readable', async () => {
    await c.createTable({ name: 'h', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1 });
    await leadersOf('h');
    await c.table('h').upsertMany(Array.from({ length: 200 }, (_, i) => ({ id: BigInt(i), v: `v${i}` })));
    const [tablet] = (await c.tableLocations('h')).tablets;
    // A transaction with intents on the tablet: its leader refuses to split (TRY_AGAIN, nothing done)
    // until the transaction is over — intents are never carried into the children.
    const txn = await c.beginTransaction({ timeoutMs: 20_000 });
    await txn.table('h').upsert({ id: 7n, v: 'txn' });
    const leader = await waitFor('a leader', 20_000, () => cluster.leaderOf(c.rpcClient(), tablet!.tabletId));
    const peers = tablet!.replicas.map((x) => ({ uuid: x.uuid, rpcAddress: x.rpcAddress, memberType: 'VOTER' }));
    const children = [{ tabletId: 'x1', partition: { start: 0, end: 100 } }, { tabletId: 'x2', partition: { start: 100, end: 65536 } }];
    const refused = await c.rpcClient().call(leader, splitMethods().tabletSplit, { tabletId: tablet!.tabletId, children, peers }, { timeoutMs: 10_000 }).then(() => 'OK', (e: unknown) => DbError.from(e).code);
    expect(refused).toBe('TRY_AGAIN');
    await txn.commit({ timeoutMs: 20_000 });
    const r = await cli('admin', 'split_tablet', tablet!.tabletId);
    expect(r).toMatchObject({ code: 0 });
    expect(r.out).toContain(`tablet ${tablet!.tabletId} split into`);
    const loc = await c.tableLocations('h');
    expect(loc.tablets).toHaveLength(2);
    expect(loc.tablets[0]!.end).toBe(loc.tablets[1]!.start);
    const rows = await c.table('h').scan();
    expect(rows).toHaveLength(200);
    expect(await c.table('h').get({ id: 7n })).toEqual({ id: 7n, v: 'txn' });
    for (let i = 8; i < 200; i += 17) expect(await c.table('h').get({ id: BigInt(i) })).toEqual({ id: BigInt(i), v: `v${i}` });
  }, 90_000);
});
