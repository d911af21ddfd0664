/**
 * `tessera lab` with the real servers (dist/cli/main.js master|tserver) on 127.0.0.45-47: up, status
 * with tablets and leaders per node, a run-time flag, a partition of one node (the majority keeps
 * serving writes, the cut-off node falls behind), heal (it catches up: every one of its replicas
 * applies as far as its leader), down.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { TesseraClient } from '../../client/tessera-client';
import { type LabStatus, openLab, registerLabCommands } from '../../lab';
import { laggingTablets, replicasByNode, waitCaughtUp } from '../../lab/tablet-view';
import { defaultSpec } from '../../lab/cluster-spec';
import { ProcessDriver } from '../../lab/process-driver';
import { waitFor } from './cluster-harness';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-real-'));
const out: string[] = [];
const err: string[] = [];
let client: TesseraClient | undefined;

async function lab(...args: string[]): Promise<{ out: string; err: string; code: number }> {
  out.length = 0;
  err.length = 0;
  process.exitCode = 0;
  const program = new Command().exitOverride();
  registerLabCommands(program, { out: (t) => out.push(t), err: (t) => err.push(t) });
  await program.parseAsync(['node', 'tessera', 'lab', ...args]);
  const code = Number(process.exitCode ?? 0);
  process.exitCode = 0;
  return { out: out.join('\n'), err: err.join('\n'), code };
}

afterAll(async () => {
  await client?.close().catch(() => undefined);
  try {
    await openLab(baseDir).down();
  } catch {
    // already down
  }
  if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
});

describe('lab with real servers', () => {
  it('lab real: up, status, flag, partition one node (majority keeps writing), heal (minority catches up), down', async () => {
    const up = await lab('up', '--nodes', '3', '--base_dir', baseDir, '--host_base', '45', '--tserver_flags', 'heartbeat_interval_ms=200', '--json');
    expect(up.code, up.err).toBe(0);
    const driver = openLab(baseDir);
    const addrs = driver.addresses();
    client = await TesseraClient.connect({ masterAddresses: addrs.flatMap((a) => (a.master ? [a.master.hostRpcAddress] : [])), timeoutMs: 20_000 });
    await client.createTable({ name: 'labkv', columns: [{ name: 'id', type: 'int64' }, { name: 'v', type: 'string' }], primaryKey: { hash: ['id'] }, numTablets: 3 });
    await client.table('labkv').upsertMany(Array.from({ length: 100 }, (_, i) => ({ id: BigInt(i), v: `before-${i}` })), { timeoutMs: 30_000 });

    // status: every tserver hosts the 3 replicas (plus the system status tablets, once transactions
    // created them); the leaders add up to at least 3.
    const st = await waitFor('3+ tablets on every tserver and 3+ leaders', 20_000, async () => {
      const r = await lab('status', '--base_dir', baseDir, '--json');
      const s = JSON.parse(r.out) as LabStatus;
      const ts = s.nodes.flatMap((n) => n.servers.filter((x) => x.role === 'tserver'));
      return ts.every((t) => t.healthy && (t.tablets ?? 0) >= 3) && ts.reduce((a, t) => a + (t.leaders ?? 0), 0) >= 3 ? s : undefined;
    });
    expect(st.nodes.find((n) => n.name === 'n0')!.servers.map((s) => s.role).sort()).toEqual(['master', 'tserver']);
    expect(st.nodes.find((n) => n.name === 'n0')!.servers.find((s) => s.role === 'master')!.raftRole).toBe('LEADER');
    const text = await lab('status', '--base_dir', baseDir);
    expect(text.out).toMatch(/n2\s+tserver\s+running\s+yes/);
    expect(text.out).toMatch(/n0\s+master \(LEADER\)\s+running\s+yes/);

    const flag = await lab('flag', 'n1', 'log_min_entries_to_retain=5000', '--role', 'tserver', '--base_dir', baseDir, '--json');
    expect(flag.code, flag.err).toBe(0);

    // Calls in flight per server (its /rpcz): a slow apply on every tserver holds writes there, and
    // status shows them as inbound calls on the leaders, with the oldest one's age.
    for (const n of ['n0', 'n1', 'n2']) expect((await lab('flag', n, 'TEST_inject_sleep_before_applying_write_batch_ms=3000', '--role', 'tserver', '--force', '--base_dir', baseDir)).code).toBe(0);
    const slow = client.table('labkv').upsertMany(Array.from({ length: 30 }, (_, i) => ({ id: BigInt(500 + i), v: `slow-${i}` })), { timeoutMs: 30_000 });
    const piled = await waitFor('writes in flight on a tserver, as lab status shows them', 10_000, async () => {
      const s = JSON.parse((await lab('status', '--base_dir', baseDir, '--json')).out) as LabStatus;
      const ts = s.nodes.flatMap((n) => n.servers.filter((x) => x.role === 'tserver'));
      return ts.some((t) => (t.calls?.inbound ?? 0) > 0 && (t.calls?.oldestMs ?? 0) > 0) ? ts : undefined;
    });
    for (const t of piled) expect(t.calls, `${t.webUrl} answered /rpcz`).toEqual({ inbound: expect.any(Number), outbound: expect.any(Number), oldestMs: expect.any(Number) });
    expect((await lab('status', '--base_dir', baseDir)).out).toContain('CALLS IN/OUT');
    await slow;
    for (const n of ['n0', 'n1', 'n2']) expect((await lab('flag', n, 'TEST_inject_sleep_before_applying_write_batch_ms=0', '--role', 'tserver', '--force', '--base_dir', baseDir)).code).toBe(0);

    // Partition n2 (a tserver only: the master lives on n0).
    const part = await lab('partition', 'n2', '--base_dir', baseDir);
    expect(part.code, part.err).toBe(0);
    // The majority keeps serving writes on every tablet (leaders on n2 lose leadership by check-quorum).
    const during = Array.from({ length: 200 }, (_, i) => ({ id: BigInt(1000 + i), v: `during-${i}` }));
    await client.table('labkv').upsertMany(during, { timeoutMs: 60_000 });
    // n2 cannot apply what it never received: it lags on at least one tablet.
    await waitFor('n2 to lag its leaders', 20_000, async () => (laggingTablets(await replicasByNode(driver.addresses()), 'n2', 'labkv') ?? []).length > 0);

    const heal = await lab('heal', '--base_dir', baseDir);
    expect(heal.code, heal.err).toBe(0);
    await waitCaughtUp(driver, 'n2', 30_000, 'labkv');
    for (const r of during.slice(0, 20)) expect(await client.table('labkv').get({ id: r['id'] as bigint })).toEqual(r);

    const down = await lab('down', '--base_dir', baseDir);
    expect(down.code, down.err).toBe(0);
    expect(fs.existsSync(path.join(baseDir, 'lab.json'))).toBe(false);
  }, 180_000);

  it('lab real: partitioning the leader master moves sys-catalog leadership to the majority; heal rejoins it as a follower', async () => {
    const dir = path.join(baseDir, 'masters');
    const driver = new ProcessDriver();
    await driver.up(defaultSpec({ baseDir: dir, nodes: 3, masters: 3, hostBase: 45, healthTimeoutMs: 60_000 }));
    try {
      const roles = async (): Promise<Map<string, string | undefined>> => {
        const st = await driver.status();
        return new Map(st.nodes.map((n) => [n.name, n.servers.find((s) => s.role === 'master')?.raftRole]));
      };
      const leader = await waitFor('a leader master', 30_000, async () => [...(await roles()).entries()].find(([, r]) => r === 'LEADER')?.[0]);
      await driver.partition([leader]);
      const next = await waitFor('a new leader master in the majority', 30_000, async () => {
        const r = await roles();
        const l = [...r.entries()].filter(([, x]) => x === 'LEADER').map(([n]) => n);
        // The cut-off master must also have stepped down (check-quorum), so exactly one leader remains.
        return l.length === 1 && l[0] !== leader ? l[0] : undefined;
      });
      expect(next).not.toBe(leader);
      await driver.heal();
      await waitFor('the old leader to rejoin as a follower', 30_000, async () => (await roles()).get(leader) === 'FOLLOWER');
    } finally {
      await driver.down();
    }
  }, 120_000);
});
