/**
 * HBase's cell model on real processes through the CLI (docs/cells.md): a table with a column family
 * `cf1` (VERSIONS=3, MIN_VERSIONS=1, KEEP_DELETED_CELLS=true), five timestamped puts, `get` with
 * --versions, --time_range, --as_of and --raw, a column delete that a time-range read before it sees
 * through, bad input refused with INVALID_ARGUMENT — and the same answers from the next leader after
 * the tablet's leadership moves (the family's rules travel in the schema every replica has).
 * Nodes on 127.0.0.85-88.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { getJson } from '../../lab/console-http';
import { tabletServerMethods } from '../../rpc';
import { ProcCluster, waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
let cluster: ProcCluster;
let client: TesseraClient;
/** Wall-clock ms of the five puts (a minute ago, one second apart). */
const base = Date.now() - 60_000;
const t = (i: number): number => base + i * 1000;

function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [CLI, ...args, `--master_addresses=${cluster.masterAddresses.join(',')}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

interface CellsJson {
  cells: Array<{ column: string; type: string; value?: string; timestamp: string }>;
}

async function cells(args: string[]): Promise<CellsJson['cells']> {
  const r = await cli(['get', 'hv', 'id=1', '--json', ...args]);
  expect(r.code, r.out).toBe(0);
  return (JSON.parse(r.out) as CellsJson).cells;
}
const values = (cs: CellsJson['cells']): string[] => cs.filter((c) => c.type === 'PUT').map((c) => c.value ?? '');

/** The same read through the client library (most checks: a CLI process per check would be slow). */
async function lib(o: Parameters<ReturnType<TesseraClient['table']>['getCells']>[1]): Promise<string[]> {
  const r = await client.table('hv').getCells({ id: 1n }, o);
  return (r?.cells ?? []).filter((c) => c.type === 'PUT').map((c) => String(c.value));
}

async function refused(args: string[], part: string): Promise<void> {
  const r = await cli(args);
  expect(r.code, r.out).not.toBe(0);
  expect(r.out).toContain('INVALID_ARGUMENT');
  expect(r.out.toUpperCase()).toContain(part);
}

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 85, masters: 1, tservers: 3, tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
  client = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
  const created = await cli(['create-table', 'hv', '--columns', 'id:int64,v:string:cf1,w:string', '--hash', 'id', '--tablets', '1', '--family', 'cf1:VERSIONS=3,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true']);
  expect(created.code, created.out).toBe(0);
  // One put through the CLI, the others through the client library.
  const p = await cli(['put-cells', 'hv', 'id=1', '--cell', `v=v1@${t(1)}`]);
  expect(p.code, p.out).toBe(0);
  for (let i = 2; i <= 5; i++) await client.table('hv').putCells({ id: 1n }, [{ column: 'v', value: `v${i}`, timestamp: t(i) }]);
}, 180_000);

afterAll(async () => {
  await client?.close();
  await cluster?.destroy();
});

describe('cells (CLI, real processes)', () => {
  it('cells: families in describe-table; versions, time range, as-of and raw reads; a column delete seen through by an earlier time range (KEEP_DELETED_CELLS)', async () => {
    const d = await cli(['describe-table', 'hv', '--json']);
    expect(d.code, d.out).toBe(0);
    const desc = JSON.parse(d.out) as { families: Array<{ name: string; versions: number; minVersions: number; keepDeletedCells: string }>; columns: Array<{ name: string; family: string }> };
    expect(desc.families.find((f) => f.name === 'cf1')).toMatchObject({ versions: 3, minVersions: 1, keepDeletedCells: 'true' });
    expect(desc.columns.find((c) => c.name === 'v')?.family).toBe('cf1');

    // VERSIONS=3 caps what is kept and returned, whatever the read asks for.
    expect(values(await cells(['--versions', '5', '--families', 'cf1']))).toEqual(['v5', 'v4', 'v3']);
    expect(await lib({ versions: 1 })).toEqual(['v5']);
    const scanned = await client.table('hv').scanCells({ versions: 2 });
    expect(scanned.map((r) => `${String(r.key['id'])}: ${r.cells.map((c) => String(c.value)).join(' ')}`)).toEqual(['1: v5 v4']);
    expect(await lib({ versions: 3, families: ['default'] })).toEqual([]);
    expect(values(await cells(['--versions', '3', '--time_range', `${t(3)},${t(5)}`]))).toEqual(['v4', 'v3']);
    // As of t4 the fifth put did not exist: the three newest then were v4, v3, v2.
    expect(values(await cells(['--versions', '3', '--as_of', String(t(4))]))).toEqual(['v4', 'v3', 'v2']);

    const del = await cli(['delete-cells', 'hv', 'id=1', '--column', 'v']);
    expect(del.code, del.out).toBe(0);
    expect(await lib({ versions: 3 })).toEqual([]);
    // KEEP_DELETED_CELLS: a time range ending before the delete still sees the values.
    expect(await lib({ versions: 3, timeRange: [t(1), t(5) + 1] })).toEqual(['v5', 'v4', 'v3']);
    const raw = await cells(['--raw']);
    expect(raw.map((c) => c.type)).toEqual(['DELETE_COLUMN', 'PUT', 'PUT', 'PUT', 'PUT', 'PUT']);
  }, 120_000);

  it('cells: bad input is INVALID_ARGUMENT naming the part, and the servers stay up', async () => {
    await refused(['get', 'hv', 'id=1', '--time_range', `${t(5)},${t(1)}`], 'TIME RANGE');
    await refused(['put-cells', 'hv', 'id=1', '--cell', `v=future@${Date.now() + 3_600_000}`], 'FUTURE');
    const code = async (f: () => Promise<unknown>): Promise<string> => f().then(() => 'OK', (e: unknown) => `${(e as { code?: string }).code}: ${(e as Error).message}`);
    const hv = client.table('hv');
    expect(await code(() => hv.getCells({ id: 1n }, { versions: 0 }))).toMatch(/^INVALID_ARGUMENT.*versions/);
    expect(await code(() => hv.getCells({ id: 1n }, { families: ['nope'] }))).toMatch(/^INVALID_ARGUMENT.*family nope/);
    expect(await code(() => hv.deleteCells({ id: 1n }, [{ type: 'family', family: 'nope' }]))).toMatch(/^INVALID_ARGUMENT.*family 'nope'/);
    expect(await code(() => client.createTable({ name: 'bad', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, families: [{ name: 'cf1', versions: 2, minVersions: 3, ttlSec: 0, keepDeletedCells: 'false' }] }))).toMatch(/^INVALID_ARGUMENT.*MIN_VERSIONS/);
    await refused(['alter-table', 'hv', '--family', 'cf1:KEEP_DELETED_CELLS=maybe'], 'KEEP_DELETED_CELLS');
    expect(await lib({ versions: 3, timeRange: [t(1), t(5) + 1] })).toEqual(['v5', 'v4', 'v3']);
  }, 120_000);

  it('cells: a row TTL (upsert --ttl_ms) and a cell TTL expire the row and the cell', async () => {
    const up = await cli(['upsert', 'hv', 'id=7', 'v=short-lived', 'w=also', '--ttl_ms', '1500']);
    expect(up.code, up.out).toBe(0);
    const hv = client.table('hv');
    await hv.putCells({ id: 8n }, [{ column: 'w', value: 'brief', ttlMs: 1500 }, { column: 'v', value: 'lasting' }]);
    // Raw reads ignore TTLs: they show what was stored, with its TTL (a timing-free check).
    expect((await hv.getCells({ id: 7n }, { raw: true }))?.cells.map((c) => `${c.column}=${String(c.value)}/${c.ttlMs}`)).toEqual(['v=short-lived/1500', 'w=also/1500']);
    expect((await hv.getCells({ id: 8n }, { raw: true }))?.cells.map((c) => `${c.column}=${String(c.value)}/${c.ttlMs ?? '-'}`)).toEqual(['v=lasting/-', 'w=brief/1500']);
    await waitFor('row 7 to expire', 30_000, async () => (await hv.get({ id: 7n })) === undefined);
    await waitFor('the cell w of row 8 to expire', 30_000, async () => (await hv.getCells({ id: 8n }, { columns: ['w'] })) === undefined);
    expect((await hv.getCells({ id: 8n }))?.cells.map((c) => c.value)).toEqual(['lasting']);
    // A family delete masks every column of the family, and only those.
    await hv.putCells({ id: 9n }, [{ column: 'v', value: 'in cf1' }, { column: 'w', value: 'in default' }]);
    await hv.deleteCells({ id: 9n }, [{ type: 'family', family: 'cf1' }]);
    expect((await hv.getCells({ id: 9n }))?.cells.map((c) => `${c.family}:${c.column}=${String(c.value)}`)).toEqual(['default:w=in default']);
    expect(await hv.getCells({ id: 9n }, { families: ['cf1'] })).toBeUndefined();
  }, 60_000);

  it('cells: after the leader moves, the new leader applies the same family rules (VERSIONS, KEEP_DELETED_CELLS); ALTER changes them on every replica', async () => {
    const loc = await client.tableLocations('hv');
    const tabletId = loc.tablets[0]!.tabletId;
    const rpc = client.rpcClient();
    const leader = await cluster.leaderAwayFrom(rpc, tabletId, '');
    const next = await cluster.leaderAwayFrom(rpc, tabletId, leader);
    expect(next).not.toBe(leader);
    expect(values(await cells(['--versions', '5', '--time_range', `${t(1)},${t(5) + 1}`]))).toEqual(['v5', 'v4', 'v3']);
    expect(await lib({ versions: 3 })).toEqual([]);

    const altered = await cli(['alter-table', 'hv', '--family', 'cf1:VERSIONS=2,MIN_VERSIONS=1,KEEP_DELETED_CELLS=true']);
    expect(altered.code, altered.out).toBe(0);
    expect(await lib({ versions: 5, timeRange: [t(1), t(5) + 1] })).toEqual(['v5', 'v4']);
    const third = await cluster.leaderAwayFrom(rpc, tabletId, next);
    expect(third).not.toBe(next);
    expect(await lib({ versions: 5, timeRange: [t(1), t(5) + 1] })).toEqual(['v5', 'v4']);
  }, 120_000);
  it('cells: a replica re-created by remote bootstrap (after a storage failure) keeps the family rules: as leader it answers the same cells', async () => {
    const loc = await client.tableLocations('hv');
    const tabletId = loc.tablets[0]!.tabletId;
    const rpc = client.rpcClient();
    const before = await lib({ versions: 5, timeRange: [t(1), t(5) + 1] });
    const replica = async (p: (typeof cluster.tservers)[number]): Promise<{ state: string; role: string } | undefined> =>
      ((await getJson(`http://${p.webAddress}/api/v1/tablets`, 3000)) as { tablets: Array<{ tabletId: string; state: string; role: string }> }).tablets.find((x) => x.tabletId === tabletId);
    const leader = await cluster.leaderAwayFrom(rpc, tabletId, '');
    const victim = cluster.tservers.find((p) => p.rpcAddress !== leader)!;
    // A storage failure on a follower: the master has it re-created in place, from the leader's snapshot.
    await rpc.call(victim.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: tabletId }, { timeoutMs: 3000 });
    await client.table('hv').upsert({ id: 99n, v: 'fails the follower' });
    await waitFor('the follower replica FAILED', 30_000, async () => (await replica(victim).catch(() => undefined))?.state === 'FAILED', 100);
    await rpc.call(victim.rpcAddress, tabletServerMethods().setFlag, { name: 'TEST_fail_tablet_replica', value: '' }, { timeoutMs: 3000 });
    await waitFor('the replica re-created and RUNNING', 90_000, async () => (await replica(victim).catch(() => undefined))?.state === 'RUNNING', 250);
    // Make the re-created replica the leader and read through it.
    await waitFor('the re-created replica to lead', 60_000, async () => {
      const l = await cluster.leaderOf(rpc, tabletId);
      if (l === victim.rpcAddress) return true;
      const uuid = (await cluster.tabletServers()).find((x) => x.rpcAddress === victim.rpcAddress)?.uuid;
      if (l && uuid) await rpc.call(l, tabletServerMethods().leaderStepdown, { tabletId, newLeaderUuid: uuid }, { timeoutMs: 5_000 }).catch(() => undefined);
      return false;
    }, 500);
    expect(await lib({ versions: 5, timeRange: [t(1), t(5) + 1] })).toEqual(before);
    expect(await lib({ versions: 3 })).toEqual([]);
  }, 240_000);
});
