/**
 * Server-side scan filters on a real cluster (1 master, 1 tserver, processes on loopback), through
 * the CLI: `tessera scan T --filter EXPR --stats` returns the rows the filter selects and reports
 * how many cells the tablet read and skipped (a row prefix reads only its rows: the tablet seeks);
 * a hash-partitioned table filters too; a bad expression, an unknown column and filter JSON sent
 * straight over RPC get INVALID_ARGUMENT while the tserver stays up and keeps serving scans.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { DbError } from '../../common/errors';
import { tabletServerMethods } from '../../rpc/service-methods';
import { ProcCluster, waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const ROWS = 300;

let cluster: ProcCluster;
let c: TesseraClient;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 102, masters: 1, tservers: 1, tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
  c = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 20_000 });
  // Range partitioned by a string key: rows in key order, so row filters seek.
  await c.createTable({ name: 'users', columns: [{ name: 'k', type: 'string' }, { name: 'age', type: 'int64' }, { name: 'name', type: 'string' }, { name: 'note', type: 'string' }], primaryKey: { hash: [], range: ['k'] }, numTablets: 1, replicationFactor: 1 });
  await c.createTable({ name: 'hashed', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 1 });
  const rows = Array.from({ length: ROWS }, (_, i) => ({ k: `user${String(i).padStart(3, '0')}`, age: BigInt(i % 60), name: i % 7 === 0 ? `foo${i}` : `bar${i}`, ...(i % 2 === 0 ? { note: 'even' } : {}) }));
  await c.table('users').upsertMany(rows);
  await c.table('hashed').upsertMany(Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i), v: i % 10 === 3 ? 'hit' : 'miss' })));
}, 120_000);

afterAll(async () => {
  await c?.close().catch(() => undefined);
  await cluster?.destroy();
});

function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args, '--master_addresses', cluster.masterAddresses.join(',')], { timeout: 30_000 }, (e, stdout, stderr) =>
      resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    );
  });
}

function rowsOf<T = unknown>(out: string): T[] {
  return (JSON.parse(out) as { rows: T[] }).rows;
}

function statsOf(err: string): { rows: number; cellsRead: number; cellsSkipped: number; calls: number } {
  const line = err.split('\n').find((l) => l.startsWith('{'));
  expect(line, err).toBeDefined();
  return JSON.parse(line!) as { rows: number; cellsRead: number; cellsSkipped: number; calls: number };
}

describe('scan filters on a real cluster (CLI)', () => {
  it('scan --filter: a row prefix returns its rows and the tablet reads about only them (it seeks)', async () => {
    const r = await cli('scan', 'users', '--filter', "PrefixFilter('user12')", '--json', '--stats', '--limit', '1000');
    expect(r.code, r.err).toBe(0);
    const rows = rowsOf<{ k: string }>(r.out);
    expect(rows.map((x) => x.k)).toEqual(Array.from({ length: 10 }, (_, i) => `user12${i}`));
    const s = statsOf(r.err);
    const returnedCells = rows.length * 2 + rows.filter((_, i) => i % 2 === 0).length; // age, name, and note on even rows
    expect(s.rows).toBe(10);
    // The first row read (user000) makes it seek to the prefix; the row after the prefix ends the scan.
    expect(s.cellsRead).toBeLessThanOrEqual(returnedCells + 6);
    expect(s.cellsRead).toBeLessThan(ROWS);
  });

  it('scan --filter: AND of a prefix and a single-column value (the text table output and its counters)', async () => {
    const r = await cli('scan', 'users', '--filter', "PrefixFilter('user0') AND SingleColumnValueFilter('cf','age',>=,'binary:55',true)", '--stats', '--limit', '1000');
    expect(r.code, r.err).toBe(0);
    // user055..user059 (age 55..59) of the prefix user0 (user000..user099).
    for (const k of ['user055', 'user056', 'user059']) expect(r.out).toContain(k);
    expect(r.out).not.toContain('user054');
    expect(r.out).not.toContain('user060');
    expect(r.err).toMatch(/^5 rows; cells read \d+, skipped \d+, in \d+ scan calls$/m);
  });

  it('scan --filter: value, column and page filters; a hash-partitioned table filters without seeking', async () => {
    const v = await cli('scan', 'users', '--filter', "ValueFilter(=,'substring:FOO') AND ColumnPrefixFilter('na')", '--json', '--limit', '1000');
    expect(v.code, v.err).toBe(0);
    const vr = rowsOf<{ k: string; name: string | null; age: unknown }>(v.out);
    expect(vr.length).toBe(Math.ceil(ROWS / 7));
    expect(vr.every((x) => x.name?.startsWith('foo') && x.age === null)).toBe(true);
    const p = await cli('scan', 'users', '--filter', 'PageFilter(3)', '--json');
    expect(rowsOf(p.out).length).toBe(3);
    const h = await cli('scan', 'hashed', '--filter', "ValueFilter(=,'binary:hit')", '--json', '--stats');
    expect(h.code, h.err).toBe(0);
    expect(rowsOf<{ id: string }>(h.out).map((x) => Number(x.id)).sort((a, b) => a - b)).toEqual([3, 13, 23, 33, 43]);
    expect(statsOf(h.err)).toMatchObject({ rows: 5, cellsRead: 50, cellsSkipped: 45 });
  });

  it('scan --filter: a bad expression and an unknown column get INVALID_ARGUMENT naming the part; the tserver stays up', async () => {
    const bad = await cli('scan', 'users', '--filter', "PrefixFilter('a') AND ValueFilter(<,'nope:1')");
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/INVALID_ARGUMENT/);
    expect(bad.err).toMatch(/position 36 .*unknown comparator 'nope:1'/);
    const col = await cli('scan', 'users', '--filter', "SingleColumnValueFilter('agee', =, 'binary:1')");
    expect(col.code).not.toBe(0);
    expect(col.err).toMatch(/INVALID_ARGUMENT.*unknown column agee/);

    // Any client may send any JSON: straight to the tablet, past the client's checks.
    const loc = await c.tableLocations('users');
    const tabletId = loc.tablets[0]!.tabletId;
    const leader = await waitFor('the leader of users', 20_000, () => cluster.leaderOf(c.rpcClient(), tabletId));
    for (const filter of ['{not json', '{"type":"list","op":"AND","filters":[]}', '{"type":"value","op":"=","comparator":{"type":"regex","pattern":"("}}', JSON.stringify({ type: 'skip', filter: 'x'.repeat(100) })]) {
      let code = 'OK';
      try {
        await c.rpcClient().call(leader, tabletServerMethods().scan, { tabletId, limit: 10, filter }, { timeoutMs: 5_000 });
      } catch (e) {
        code = DbError.from(e).code;
      }
      expect(code, filter).toBe('INVALID_ARGUMENT');
    }
    expect(cluster.isRunning(cluster.tservers[0]!)).toBe(true);
    const after = await c.table('users').scan({ filter: "RowRangeFilter('user290', true, '', false)" });
    expect(after.map((x) => x['k'])).toEqual(Array.from({ length: 10 }, (_, i) => `user29${i}`));
  });
});
