/**
 * Transactions across a tablet split on a real cluster (1 master, 3 tservers, RF 3, processes on
 * loopback; docs/splitting.md): a transaction whose write meets the split parent (its client's
 * cached locations are stale) is re-routed to the right child and commits — a single-row write and
 * a batch spanning both children; `admin split_tablet` refused with TRY_AGAIN while a transaction
 * holds intents on the tablet tries again by itself and splits once the transaction committed.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { ProcCluster, waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');

let cluster: ProcCluster;
let c: TesseraClient;

beforeAll(async () => {
  cluster = await ProcCluster.create({ hostBase: 146, masters: 1, tservers: 3, masterFlags: ['--enable_load_balancing=false'], tserverFlags: ['--heartbeat_interval_ms=200'] });
  await cluster.startAll();
  c = await TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 30_000 });
}, 120_000);

afterAll(async () => {
  await c?.close().catch(() => undefined);
  await cluster?.destroy();
});

async function rangeTable(name: string, rows: number): Promise<string> {
  await c.createTable({ name, columns: [{ name: 'k', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { range: ['k'] } });
  await waitFor(`a leader for ${name}`, 30_000, async () => (await c.tableLocations(name)).tablets.every((t) => t.replicas.some((r) => r.role === 'LEADER')));
  await c.table(name).upsertMany(Array.from({ length: rows }, (_, i) => ({ k: BigInt(i), v: 'seed' })));
  const [tablet] = (await c.tableLocations(name)).tablets;
  return tablet!.tabletId;
}

describe('transactions across a split', () => {
  it('a transaction whose writes meet the split parent is re-routed to the children and commits (one row, and a batch over both children)', async () => {
    const parent = await rangeTable('tx', 200);
    // Two clients that cached the one tablet's location before the split.
    const stale = await Promise.all([0, 1].map(() => TesseraClient.connect({ masterAddresses: cluster.masterAddresses, timeoutMs: 30_000 })));
    try {
      for (const s of stale) expect(await s.table('tx').get({ k: 1n })).toEqual({ k: 1n, v: 'seed' });
      const t1 = await stale[0]!.beginTransaction({ timeoutMs: 30_000 });
      const t2 = await stale[1]!.beginTransaction({ timeoutMs: 30_000 });
      const split = await c.splitTablet(parent, { timeoutMs: 60_000 });
      expect(split.children).toHaveLength(2);
      await t1.table('tx').upsert({ k: 5n, v: 't1' });
      await t2.table('tx').upsertMany([{ k: 3n, v: 't2' }, { k: 150n, v: 't2' }, { k: 199n, v: 't2' }]);
      await t1.commit({ timeoutMs: 30_000 });
      await t2.commit({ timeoutMs: 30_000 });
    } finally {
      for (const s of stale) await s.close().catch(() => undefined);
    }
    const loc = await c.tableLocations('tx');
    expect(loc.tablets.map((t) => t.tabletId)).not.toContain(parent);
    expect(loc.tablets).toHaveLength(2);
    const t = c.table('tx');
    expect(await t.get({ k: 5n })).toEqual({ k: 5n, v: 't1' });
    for (const k of [3n, 150n, 199n]) expect(await t.get({ k })).toEqual({ k, v: 't2' });
    expect(await t.scan()).toHaveLength(200);
  }, 120_000);

  it('admin split_tablet answered TRY_AGAIN (a transaction holds intents on the tablet) tries again by itself and splits once it committed', async () => {
    const tablet = await rangeTable('held', 100);
    const txn = await c.beginTransaction({ timeoutMs: 60_000 });
    await txn.table('held').upsert({ k: 7n, v: 'held' });
    const proc = spawn(process.execPath, [CLI, 'admin', 'split_tablet', tablet, '--retry_seconds', '60', '--master_addresses', cluster.masterAddresses.join(',')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (b: Buffer) => (out += b.toString()));
    proc.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = new Promise<number>((resolve) => proc.on('exit', (code) => resolve(code ?? 1)));
    try {
      await waitFor('the CLI to report a TRY_AGAIN attempt', 60_000, () => out.includes('TRY_AGAIN'));
      await txn.commit({ timeoutMs: 30_000 });
      expect({ code: await exited, out }).toMatchObject({ code: 0 });
    } finally {
      if (proc.exitCode === null) proc.kill('SIGKILL');
    }
    expect(out).toContain(`tablet ${tablet} split into`);
    expect((await c.tableLocations('held')).tablets).toHaveLength(2);
    expect(await c.table('held').get({ k: 7n })).toEqual({ k: 7n, v: 'held' });
  }, 120_000);
});
