/**
 * Atomic row operations and row locks on a real cluster (1 master, 3 tservers, RF 3, processes on
 * loopback): concurrent increments from several clients sum exactly and each answers a distinct new
 * value; a resent increment (same request id) is applied once, also after a leader change;
 * checkAndMutate; mutateRows across tablets refused; row locks — ROW_LOCKED for others, a waiting
 * writer, wrong-id unlock, lease expiry, FENCED stale token, /locks, and every lock ended by a
 * leader stepdown (locks are the leader's alone).
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import type { Table } from '../../client/table';
import { DbError, ErrorCode } from '../../common/errors';
import { partitionHash } from '../../common/partition-hash';
import { rowMethods, type MutateRowsRequestPB } from '../../rpc/row-methods';
import { tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster, waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const CLIENTS = 4;
const INCREMENTS_PER_CLIENT = 50;

let cluster: ProcCluster;
const clients: TesseraClient[] = [];
let c: TesseraClient;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 150, masters: 1, tservers: 3, masterFlags: ['--enable_load_balancing=false'], tserverFlags: ['--heartbeat_interval_ms=200', '--row_cell_bytes_max=1024'] });
  await cluster.startAll();
  for (let i = 0; i < CLIENTS; i++) clients.push(await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 }));
  c = clients[0]!;
  await c.createTable({ name: 'ctr', columns: [{ name: 'id', type: 'int64' }, { name: 'n', type: 'int64' }, { name: 's', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
}, 120_000);

afterAll(async () => {
  for (const x of clients) await x.close().catch(() => undefined);
  await cluster?.destroy();
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    return DbError.from(e).code;
  }
}

/** The tablet of row `id` and its leader's RPC address. */
async function tabletOf(id: bigint): Promise<{ tabletId: string; leader: string }> {
  const loc = await c.tableLocations('ctr');
  const h = partitionHash([id]);
  const tabletId = loc.tablets.find((t) => h >= t.start && h < t.end)!.tabletId;
  const leader = await waitFor(`a leader of ${tabletId}`, 20_000, () => cluster.leaderOf(c.rpcClient(), tabletId));
  return { tabletId, leader };
}

/** Step the tablet's leader down and wait for another replica to lead. */
async function stepDown(tabletId: string, from: string): Promise<string> {
  await c.rpcClient().call(from, tabletServerMethods().leaderStepdown, { tabletId, newLeaderUuid: '' }, { timeoutMs: 5_000 });
  return waitFor(`a new leader of ${tabletId}`, 20_000, async () => {
    const l = await cluster.leaderOf(c.rpcClient(), tabletId);
    return l && l !== from ? l : undefined;
  });
}

describe('row operations and row locks (real processes)', () => {
  it('rows: concurrent increments from several clients sum exactly, each answering a distinct new value', async () => {
    const answers: bigint[] = [];
    await Promise.all(
      clients.map(async (cl) => {
        for (let i = 0; i < INCREMENTS_PER_CLIENT; i++) answers.push((await cl.table('ctr').increment({ id: 1n }, { n: 1 }))['n'] as bigint);
      }),
    );
    const total = CLIENTS * INCREMENTS_PER_CLIENT;
    expect((await c.table('ctr').get({ id: 1n }))?.['n']).toBe(BigInt(total));
    // Linearizable increments: the answers are exactly 1..total, each once.
    expect([...answers].sort((a, b) => (a < b ? -1 : 1))).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
  }, 120_000);

  it('rows: a resent increment (same request id) is applied once and answers the same value, also from a new leader', async () => {
    const id = 2n;
    const loc = await c.tableLocations('ctr');
    const { tabletId, leader } = await tabletOf(id);
    const req: MutateRowsRequestPB = {
      tabletId,
      schemaVersion: loc.schema.version,
      clientId: 'resend-test-client',
      requestId: 1n,
      minRunningRequestId: 1n,
      rows: [{ key: loc.schema.keyPb(loc.schema.key({ id })), mutations: [{ type: 'INCREMENT', columnId: loc.schema.byName.get('n')!.id, by: 7n }] }],
    };
    const rpc = c.rpcClient();
    const first = await rpc.call(leader, rowMethods().mutateRows, req, { timeoutMs: 10_000 });
    const again = await rpc.call(leader, rowMethods().mutateRows, req, { timeoutMs: 10_000 });
    expect(first.writeHt).toBe(again.writeHt);
    expect(again.results?.[0]?.columns?.[0]?.value?.int64Value).toBe(7n);
    const next = await stepDown(tabletId, leader);
    const fromNew = await waitFor('the new leader to answer the copy', 20_000, () => rpc.call(next, rowMethods().mutateRows, req, { timeoutMs: 10_000 }).catch(() => undefined));
    expect(fromNew.writeHt).toBe(first.writeHt);
    expect(fromNew.results?.[0]?.columns?.[0]?.value?.int64Value).toBe(7n);
    expect((await c.table('ctr').get({ id }))?.['n']).toBe(7n);
  }, 60_000);

  it('rows: calls to one tablet issued together travel coalesced; each keeps its own outcome (ROW_LOCKED with its details), increments stay exact, a resent coalesced request does nothing twice', async () => {
    const t = clients[3]!.table('ctr');
    const id = 20n;
    const locked = 21n;
    const lock = await c.table('ctr').lockRow({ id: locked }, { leaseMs: 60_000, holder: 'coalesce-test' });
    // One turn: 40 increments of one row and 3 of a row someone else locked.
    const calls = Array.from({ length: 40 }, () => t.increment({ id }, { n: 1 }));
    const refused = Array.from({ length: 3 }, () => t.increment({ id: locked }, { n: 1 }).catch((e: unknown) => DbError.from(e)));
    const answers = (await Promise.all(calls)).map((r) => r['n'] as bigint);
    expect([...answers].sort((a, b) => (a < b ? -1 : 1))).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i + 1)));
    for (const e of await Promise.all(refused)) {
      expect(e).toBeInstanceOf(DbError);
      expect((e as DbError).code).toBe(ErrorCode.ROW_LOCKED);
      expect((e as DbError).details['token']).toBe(Number(lock.token));
    }
    const stats = t.rowCallStats()!;
    expect(stats.calls).toBeGreaterThanOrEqual(43);
    expect(stats.requests).toBeLessThan(stats.calls);
    await c.table('ctr').unlockRow(lock);

    // On the wire: one request, three calls; a malformed call fails alone; the copy does nothing twice.
    const loc = await c.tableLocations('ctr');
    const { tabletId, leader } = await tabletOf(id);
    const n = loc.schema.byName.get('n')!.id;
    const row = (by: bigint, columnId = n): MutateRowsRequestPB['rows'] => [{ key: loc.schema.keyPb(loc.schema.key({ id })), mutations: [{ type: 'INCREMENT', columnId, by }] }];
    const req: MutateRowsRequestPB = { tabletId, schemaVersion: loc.schema.version, clientId: 'coalesce-test-client', requestId: 1n, minRunningRequestId: 1n, rows: row(3n), more: [{ rows: row(1n, 9999), requestId: 2n }, { rows: row(4n), requestId: 3n }] };
    const first = await c.rpcClient().call(leader, rowMethods().mutateRows, req, { timeoutMs: 10_000 });
    const again = await c.rpcClient().call(leader, rowMethods().mutateRows, req, { timeoutMs: 10_000 });
    expect(first.items?.map((i) => i.code ?? '')).toEqual(['', ErrorCode.INVALID_ARGUMENT, '']);
    expect(again.items?.map((i) => i.writeHt)).toEqual(first.items?.map((i) => i.writeHt));
    expect(again.items?.[2]?.results?.[0]?.columns?.[0]?.value?.int64Value).toBe(first.items?.[2]?.results?.[0]?.columns?.[0]?.value?.int64Value);
    expect((await c.table('ctr').get({ id }))?.['n']).toBe(47n);

    // Lock calls coalesce too: 30 lockRows in one turn (one of a row already locked), then 30 unlocks
    // (one with a wrong id). Lock calls of one turn to one tablet share a request (per turn, as row
    // operations): 30 over the 3 tablets go in far fewer requests.
    const before = t.rowCallStats()!;
    const held = await c.table('ctr').lockRow({ id: 30n }, { leaseMs: 60_000 });
    const ids = Array.from({ length: 29 }, (_, i) => BigInt(31 + i));
    const tries = await Promise.all([...ids, 30n].map((x) => t.lockRow({ id: x }, { leaseMs: 60_000 }).catch((e: unknown) => DbError.from(e))));
    const got = tries.slice(0, 29) as Array<Awaited<ReturnType<Table['lockRow']>>>;
    expect((tries[29] as DbError).code).toBe(ErrorCode.ROW_LOCKED);
    expect((tries[29] as DbError).details['token']).toBe(Number(held.token));
    for (const l of got) expect(l.token).toBeGreaterThan(0n);
    expect(await codeOf(c.table('ctr').increment({ id: 31n }, { n: 1 }))).toBe(ErrorCode.ROW_LOCKED);
    const unlocks = await Promise.all([...got.map((l) => codeOf(t.unlockRow(l))), codeOf(t.unlockRow({ ...held, lockId: 'not-the-lock' }))]);
    expect(unlocks).toEqual([...got.map(() => 'OK'), ErrorCode.ROW_LOCK_NOT_HELD]);
    expect(await codeOf(c.table('ctr').increment({ id: 31n }, { n: 1 }))).toBe('OK');
    await c.table('ctr').unlockRow(held);
    const after = t.rowCallStats()!;
    expect(after.calls - before.calls).toBe(60);
    expect(after.requests - before.requests).toBeLessThan(60);
  }, 60_000);

  it('rows: checkAndMutate, append, mutateRow; wrong types and oversized cells fail with stable codes', async () => {
    const t = c.table('ctr');
    expect(await t.checkAndMutate({ id: 3n }, { column: 'n', op: 'ABSENT' }, { put: { n: 10n, s: 'a' } })).toBe(true);
    expect(await t.checkAndMutate({ id: 3n }, { column: 'n', op: 'ABSENT' }, { put: { n: 99n } })).toBe(false);
    expect(await t.checkAndMutate({ id: 3n }, [{ column: 'n', op: 'GT', value: 5n }, { column: 's', op: 'EQ', value: 'a' }], { increment: { n: 1 }, append: { s: 'b' } })).toBe(true);
    expect(await t.get({ id: 3n })).toEqual({ id: 3n, n: 11n, s: 'ab' });
    expect(await t.append({ id: 3n }, { s: 'c' })).toEqual({ s: 'abc' });
    const r = await t.mutateRow({ id: 3n }, { deleteColumns: ['s'], increment: { n: -11 } });
    expect(r.results[0]).toEqual({ n: 0n });
    expect(await t.get({ id: 3n })).toEqual({ id: 3n, n: 0n, s: null });
    expect(await codeOf(t.increment({ id: 3n }, { s: 1 }))).toBe(ErrorCode.INVALID_ARGUMENT);
    expect(await codeOf(t.append({ id: 3n }, { s: 'x'.repeat(2000) }))).toBe(ErrorCode.VALUE_TOO_LARGE);
    expect(await t.get({ id: 3n })).toEqual({ id: 3n, n: 0n, s: null });
  }, 60_000);

  it('rows: mutateRows is atomic inside one tablet and refuses rows of several tablets with CROSS_TABLET_MUTATION', async () => {
    const loc = await c.tableLocations('ctr');
    const tabletOfId = (id: bigint): string => {
      const h = partitionHash([id]);
      return loc.tablets.find((t) => h >= t.start && h < t.end)!.tabletId;
    };
    const ids = Array.from({ length: 200 }, (_, i) => BigInt(1000 + i));
    const same = ids.filter((i) => tabletOfId(i) === tabletOfId(ids[0]!)).slice(0, 10);
    const other = ids.find((i) => tabletOfId(i) !== tabletOfId(ids[0]!))!;
    expect(same.length).toBe(10);
    const t = c.table('ctr');
    const cross = await t.mutateRows([{ key: { id: same[0]! }, put: { n: 1n } }, { key: { id: other }, put: { n: 1n } }]).catch((e: unknown) => e as DbError);
    expect((cross as DbError).code).toBe(ErrorCode.CROSS_TABLET_MUTATION);
    expect(new Set((cross as DbError).details['tablets'] as string[])).toEqual(new Set([tabletOfId(same[0]!), tabletOfId(other)]));
    expect(await t.get({ id: same[0]! })).toBeUndefined();
    const all = await t.mutateRows(same.map((id) => ({ key: { id }, put: { s: 'x' }, increment: { n: 1 } })));
    expect(all.applied).toBe(true);
    // A failing check on one row: no row changes.
    const none = await t.mutateRows(same.map((id, i) => ({ key: { id }, increment: { n: 1 }, ...(i === 9 ? { if: [{ column: 'n', op: 'EQ' as const, value: 5n }] } : {}) })));
    expect(none.applied).toBe(false);
    for (const id of same) expect((await t.get({ id }))?.['n']).toBe(1n);
  }, 60_000);

  it('rows: row locks — ROW_LOCKED for others, a waiting writer, wrong-id unlock, /locks, ended by a leader stepdown, lease expiry and FENCED stale token', async () => {
    const a: Table = clients[1]!.table('ctr');
    const b: Table = clients[2]!.table('ctr');
    const id = 5n;
    const lock = await a.lockRow({ id }, { leaseMs: 60_000, holder: 'client-a' });
    expect(await codeOf(b.increment({ id }, { n: 1 }))).toBe(ErrorCode.ROW_LOCKED);
    expect(await codeOf(b.upsert({ id, s: 'plain write' }))).toBe(ErrorCode.ROW_LOCKED);
    expect(await codeOf(b.lockRow({ id }))).toBe(ErrorCode.ROW_LOCKED);
    expect((await a.increment({ id }, { n: 1 }, { lock }))['n']).toBe(1n);
    expect(await codeOf(b.unlockRow({ ...lock, lockId: 'not-the-lock' }))).toBe(ErrorCode.ROW_LOCK_NOT_HELD);

    // The console of the leader lists it.
    const { tabletId, leader } = await tabletOf(id);
    const web = cluster.tservers.find((t) => t.rpcAddress === leader)!.webAddress;
    const listed = (await (await fetch(`http://${web}/api/v1/locks`)).json()) as { locks: Array<{ tabletId: string; holder: string; token: number; leaseLeftMs: number; leader: boolean }> };
    expect(listed.locks.find((l) => l.tabletId === tabletId && l.leader)).toMatchObject({ holder: 'client-a', token: Number(lock.token) });

    // A leader change ends every lock of the tablet (they were the old leader's): the holder's write
    // is FENCED, the row is free, and a lock of the new leader has a higher token.
    await stepDown(tabletId, leader);
    expect(await codeOf(a.increment({ id }, { n: 1 }, { lock }))).toBe(ErrorCode.FENCED);
    expect((await b.increment({ id }, { n: 1 }))['n']).toBe(2n);
    const lock2 = await a.lockRow({ id }, { leaseMs: 60_000, holder: 'client-a' });
    expect(lock2.token).toBeGreaterThan(lock.token);

    // A writer that waits gets the row once the holder unlocks.
    const waiting = b.increment({ id }, { n: 10 }, { waitForLocks: true, timeoutMs: 15_000 });
    await a.unlockRow(lock2);
    expect((await waiting)['n']).toBe(12n);
    expect(await codeOf(a.increment({ id }, { n: 1 }, { lock: lock2 }))).toBe(ErrorCode.FENCED);

    // Lease expiry: a short lease ends by itself; the paused holder's late write is fenced, and a new lock's token is higher.
    const short = await a.lockRow({ id }, { leaseMs: 500 });
    expect(short.token).toBeGreaterThan(lock2.token);
    await waitFor('the short lease to run out', 20_000, async () => (await codeOf(b.increment({ id }, { n: 100 }))) === 'OK', 50);
    const next = await b.lockRow({ id }, { leaseMs: 60_000 });
    expect(next.token).toBeGreaterThan(short.token);
    expect(await codeOf(a.increment({ id }, { n: 1000 }, { lock: short }))).toBe(ErrorCode.FENCED);
    await b.unlockRow(next);
    expect((await c.table('ctr').get({ id }))?.['n']).toBe(112n);
  }, 120_000);

  it('rows: the CLI — increment, append, check-and-put (applied and not), lock-row and unlock-row — as docs/rows.md writes them', async () => {
    const cli = async (...args: string[]): Promise<{ code: number; out: string }> =>
      new Promise((resolve) => {
        execFile(process.execPath, [CLI, ...args, '--master_addresses', cluster.masterAddresses.join(',')], { timeout: 30_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }));
      });
    expect(await cli('increment', 'ctr', 'id=9', '--column', 'n', '--by', '5')).toEqual({ code: 0, out: 'n = 5\n' });
    expect(await cli('append', 'ctr', 'id=9', '--column', 's', '--value', 'x')).toEqual({ code: 0, out: 's = x\n' });
    expect((await cli('check-and-put', 'ctr', 'id=9', '--if', 'n=5', '--if', 's:exists', '--set', 'n=6,s=six')).out).toBe('applied\n');
    expect((await cli('check-and-put', 'ctr', 'id=9', '--if', 'n<6', '--set', 'n=0')).out).toBe('not applied (a condition did not hold)\n');
    expect(await c.table('ctr').get({ id: 9n })).toEqual({ id: 9n, n: 6n, s: 'six' });
    const locked = await cli('lock-row', 'ctr', 'id=9', '--lease_ms', '30000', '--json');
    const lock = JSON.parse(locked.out) as { lockId: string; token: string };
    expect((await cli('increment', 'ctr', 'id=9', '--column', 'n')).out).toContain('ROW_LOCKED');
    expect((await cli('increment', 'ctr', 'id=9', '--column', 'n', '--lock_id', lock.lockId, '--lock_token', String(lock.token))).out).toBe('n = 7\n');
    expect((await cli('unlock-row', 'ctr', 'id=9', '--lock_id', 'wrong')).out).toContain('ROW_LOCK_NOT_HELD');
    expect((await cli('unlock-row', 'ctr', 'id=9', '--lock_id', lock.lockId)).out).toBe('unlocked\n');
    expect((await cli('increment', 'ctr', 'id=9', '--column', 's')).out).toContain('INVALID_ARGUMENT');
  }, 120_000);

  it('rows: row operations on a missing table fail TABLE_NOT_FOUND', async () => {
    expect(await codeOf(c.table('no_such_table').lockRow({ id: 1n }))).toBe(ErrorCode.TABLE_NOT_FOUND);
    expect(await codeOf(c.table('no_such_table').increment({ id: 1n }, { n: 1 }))).toBe(ErrorCode.TABLE_NOT_FOUND);
  }, 30_000);
});
