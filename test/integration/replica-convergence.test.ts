/**
 * The replica convergence check of `tessera verify` (lab/verify/replica-convergence.ts) on real
 * processes: after writes and transactions every replica of every tablet (the table's and the
 * transaction status tablets) shows the same rows at one hybrid time; then one replica's RegularDB is
 * changed behind Raft's back (the tserver killed, one row rewritten offline with another value, the
 * tserver started again), and the check names exactly that tablet as diverged — in the library and
 * as `tessera admin check_replicas`. And a follower that stores a wrong provisional record of an open
 * transaction (TEST_corrupt_tablet_replica) is named before anything commits, by its intents digest.
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { TesseraClient } from '../../client/tessera-client';
import { htFrom } from '../../common/hybrid-time';
import { DocDb, RocksDbEngine } from '../../docdb';
import { RegularDb } from '../../docdb/regular-db';
import { checkReplicaConvergence } from '../../lab/verify/replica-convergence';
import { getJson, postFlag } from '../../lab/console-http';
import type { ProcCluster } from './cluster-harness';
import { waitFor } from './cluster-harness';
import { startTxnCluster, tabletsOf, waitTableReady } from './txn-client-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

let cluster: ProcCluster | undefined;
let client: TesseraClient | undefined;

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('verify: replica convergence', () => {
  it('convergence: replicas show the same rows after writes and transactions; a row changed offline on one replica is reported as that tablet diverging', async () => {
    ({ cluster, client } = await startTxnCluster(235));
    const cl = cluster;
    const c = client;
    await c.createTable({ name: 'conv', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 2, replicationFactor: 3 });
    await waitTableReady(cl, 'conv', 2);
    await c.table('conv').upsertMany(Array.from({ length: 200 }, (_, i) => ({ id: BigInt(i), v: `v${i}` })));
    for (let k = 0; k < 10; k++) {
      const txn = await c.beginTransaction({ timeoutMs: 20_000 });
      await txn.table('conv').upsertMany([{ id: BigInt(k), v: `t${k}` }, { id: BigInt(100 + k), v: `t${k}` }]);
      await txn.commit({ timeoutMs: 20_000 });
    }
    const tservers = cl.tservers.map((p) => ({ name: `ts${p.index}`, webUrl: `http://${p.webAddress}` }));
    const ok = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 60_000 });
    expect(ok.diverged).toEqual([]);
    expect(ok.unsettled).toEqual([]);
    const tables = (await tabletsOf(cl.tservers[0]!, 'conv')).map((t) => t.tabletId);
    expect(tables).toHaveLength(2);
    expect(ok.tablets).toBeGreaterThan(2); // the status tablets are checked too
    expect(ok.converged).toBe(ok.tablets);
    expect(ok.rows).toBeGreaterThanOrEqual(200);
    // The same check from the command line on a live cluster: exit 0.
    const fine = cli('admin', 'check_replicas', '--replicas', `--master_addresses=${cl.masterAddresses.join(',')}`);
    expect(fine.status, fine.stderr).toBe(0);
    expect(fine.stdout).toMatch(/replica convergence: (\d+) of \1 tablet\(s\) converged/);
    // --replicas: one line per replica of every tablet, with its applied index and both digests.
    expect(fine.stdout).toContain('Intents sha256');
    for (const id of tables) expect(fine.stdout.split('\n').filter((l) => l.startsWith(id) && l.includes('CONVERGED'))).toHaveLength(3);

    // Rewrite one row of one replica behind Raft's back.
    const victim = cl.tservers[2]!;
    const tabletId = tables[0]!;
    await cl.kill9(victim);
    const dir = path.join(victim.dataDir, 'tablets', tabletId);
    const db = await DocDb.open({ regular: await RocksDbEngine.open(path.join(dir, 'regular')), intents: await RocksDbEngine.open(path.join(dir, 'intents')) });
    try {
      const some = await db.scan({ readHt: htFrom(Date.now() * 1000), resolveStatus: () => Promise.resolve({ status: 'PENDING' }), limit: 1 });
      expect(some.rows).toHaveLength(1);
      const row = some.rows[0]!;
      const columns = [...row.columns.entries()].map(([columnId, v]) => ({ columnId, value: typeof v === 'string' ? `${v}-changed` : v }));
      // Straight into the engine: DocDB itself skips writes at or below its frontier (replay).
      await db.regularDb.db.engine.write(RegularDb.rowOpsToKv([{ type: 'upsert', key: row.key, columns }], htFrom(Date.now() * 1000), 0).kv);
    } finally {
      await db.close();
    }
    cl.start(victim);
    await waitFor('the victim tserver to host its replicas again', 60_000, async () => (await tabletsOf(victim, 'conv')).filter((t) => t.state === 'RUNNING').length === 2, 200);

    const bad = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 60_000 });
    expect(bad.diverged.map((t) => t.tabletId)).toEqual([tabletId]);
    expect(bad.diverged[0]!.why).toContain('same applied index show different rows');
    expect(bad.diverged[0]!.differing).toEqual(['ts2']);
    expect(bad.unsettled).toEqual([]);
    expect(bad.converged).toBe(bad.tablets - 1);
    const cmd = cli('admin', 'check_replicas', 'conv', '--behind_ms=0', `--master_addresses=${cl.masterAddresses.join(',')}`);
    expect(cmd.status).toBe(1);
    expect(cmd.stdout).toContain(`${tabletId}  conv`);
    expect(cmd.stdout).toContain('DIVERGED');
    expect(cmd.stderr).toContain('error: CORRUPTION: 1 tablet(s) have replicas showing different rows');
  }, 240_000);

  it('provisional records: a follower that stored a wrong intent of an open transaction is named before anything commits; the abort removes it and the replicas agree again', async () => {
    const cl = cluster!;
    const c = client!;
    await c.createTable({ name: 'conv_intents', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 1, replicationFactor: 3 });
    await waitTableReady(cl, 'conv_intents', 1);
    const tservers = cl.tservers.map((p) => ({ name: `ts${p.index}`, webUrl: `http://${p.webAddress}` }));
    const roles = await Promise.all(cl.tservers.map(async (p) => ({ p, t: (await tabletsOf(p, 'conv_intents'))[0]! })));
    const tabletId = roles[0]!.t.tabletId;
    const follower = roles.find((r) => r.t.role === 'FOLLOWER')!.p;
    await postFlag(`http://${follower.webAddress}`, 'TEST_corrupt_tablet_replica', tabletId, false);
    const txn = await c.beginTransaction({ timeoutMs: 20_000 });
    await txn.table('conv_intents').upsert({ id: 1n, v: 'open' });
    await waitFor('the follower to store its wrong provisional record (the flag clears itself)', 20_000, async () => {
      const varz = (await getJson(`http://${follower.webAddress}/api/v1/varz`, 2000)) as { flags: Array<{ name: string; value: string }> };
      return varz.flags.find((f) => f.name === 'TEST_corrupt_tablet_replica')?.value === '';
    });
    // Nothing committed: every replica shows the same (no) rows, but the followers' intents differ.
    const bad = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 30_000, tablets: new Set([tabletId]) });
    expect(bad.diverged.map((t) => t.tabletId)).toEqual([tabletId]);
    expect(bad.diverged[0]!.why).toContain('hold different provisional records');
    expect(bad.diverged[0]!.why).toContain('0 rows');
    expect(bad.diverged[0]!.differing).toEqual([`ts${follower.index}`]);
    await txn.abort();
    const ok = await checkReplicaConvergence({ tservers, replicationFactor: 3, timeoutMs: 30_000, tablets: new Set([tabletId]) });
    expect(ok.diverged).toEqual([]);
    expect(ok.converged).toBe(1);
  }, 120_000);
});
