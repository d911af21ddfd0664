/**
 * The process driver for real: detached processes on loopback, signals, run-time flags, lab.json
 * read back by a second driver instance (as a later CLI invocation would).
 * Servers: the fake-node test fixture by default; TESSERA_LAB_SERVERS=real runs dist/cli/main.js.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSpec, getJson, isHealthy, ProcessDriver, processState, readLabState, type ClusterSpec } from '../../lab';
import { type DbError, ErrorCode } from '../../common';

const REAL = process.env['TESSERA_LAB_SERVERS'] === 'real';
const ENTRY = REAL ? 'dist/cli/main.js' : 'dist/lab/fixtures/fake-node.js';
// Far from 127.0.0.1:7100 and friends, so a lab or test of another part never collides with this one.
const HOST_BASE = 201;
const PORT_OFFSET = 20_000;

async function flagValue(webUrl: string, name: string): Promise<unknown> {
  const body = (await getJson(`${webUrl}/api/v1/varz`)) as { flags: Array<{ name: string; value: unknown }> };
  return body.flags.find((f) => f.name === name)?.value;
}

function spec(baseDir: string, over: Partial<ClusterSpec> = {}): ClusterSpec {
  return defaultSpec({ baseDir, nodes: 3, masters: 1, serverEntry: ENTRY, hostBase: HOST_BASE, portOffset: PORT_OFFSET, healthTimeoutMs: 30_000, ...over });
}

describe('lab process driver', () => {
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-proc-'));
  let driver: ProcessDriver;

  beforeAll(async () => {
    driver = new ProcessDriver();
    await driver.up(spec(baseDir, { nodeFlags: { n0: { TEST_lab_marker: '42' } } }));
  });

  afterAll(async () => {
    // Whatever happened above, leave no process behind.
    try {
      await ProcessDriver.open(baseDir).down();
    } catch {
      // already down
    }
    fs.rmSync(baseDir, { recursive: true, force: true });
  });

  it('lab process: up starts 3 healthy nodes (master on n0 only) and a later invocation finds them via lab.json', async () => {
    const again = ProcessDriver.open(baseDir);
    const st = await again.status();
    expect(st.nodes.map((n) => n.name)).toEqual(['n0', 'n1', 'n2']);
    expect(st.nodes.map((n) => n.servers.map((s) => s.role))).toEqual([['master', 'tserver'], ['tserver'], ['tserver']]);
    for (const s of st.nodes.flatMap((n) => n.servers)) {
      expect(s.state, `${s.webUrl}`).toBe('running');
      expect(s.healthy, `${s.webUrl}`).toBe(true);
    }
    // Distinct addresses for every server.
    const rpc = st.nodes.flatMap((n) => n.servers.map((s) => s.rpcAddress));
    expect(new Set(rpc).size).toBe(rpc.length);
    expect(readLabState(baseDir)?.nodes.length).toBe(3);
  });

  it('lab process: per-node flags reach the tserver at start and setFlag changes one at run time', async () => {
    const a = driver.addresses();
    expect(String(await flagValue(a[0]!.tserver.webUrl, 'TEST_lab_marker'))).toBe('42');
    expect(await flagValue(a[1]!.tserver.webUrl, 'TEST_lab_marker')).toBeUndefined();
    const res = await driver.setFlag('n1', 'TEST_lab_runtime', '7', true);
    expect(res.every((r) => r.ok)).toBe(true);
    expect(String(await flagValue(a[1]!.tserver.webUrl, 'TEST_lab_runtime'))).toBe('7');
  });

  it('lab process: kill n1 leaves it stopped; start brings it back healthy with the same flags', async () => {
    const before = readLabState(baseDir)!.nodes[1]!.tserver.pid;
    await driver.kill('n1');
    const st = await driver.status();
    expect(st.nodes[1]!.servers[0]!.state).toBe('stopped');
    expect(st.nodes[1]!.servers[0]!.healthy).toBe(false);
    expect(st.nodes[0]!.servers.every((s) => s.healthy)).toBe(true);
    await driver.start('n1');
    const after = readLabState(baseDir)!.nodes[1]!.tserver;
    expect(after.pid).not.toBe(before);
    expect(await isHealthy(after.webUrl)).toBe(true);
    expect(after.argv.some((x) => x.startsWith('--tserver_master_addrs='))).toBe(true);
  });

  it('lab process: pause makes n2 stop answering; resume makes it answer again', async () => {
    const url = driver.addresses()[2]!.tserver.webUrl;
    await driver.pause('n2');
    expect((await driver.status()).nodes[2]!.servers[0]!.state).toBe('paused');
    expect(await isHealthy(url, 500)).toBe(false);
    await driver.resume('n2');
    expect(await isHealthy(url)).toBe(true);
  });

  it('lab process: partition sets TEST_drop_traffic_peers both ways, survives a restart, heal clears it', async () => {
    const a = driver.addresses();
    await driver.partition(['n0']);
    const n0Drops = String(await flagValue(a[0]!.tserver.webUrl, 'TEST_drop_traffic_peers')).split(',');
    expect(n0Drops.sort()).toEqual([a[1]!.tserver.rpcAddress, a[2]!.tserver.rpcAddress].sort());
    const n1Drops = String(await flagValue(a[1]!.tserver.webUrl, 'TEST_drop_traffic_peers')).split(',');
    expect(n1Drops.sort()).toEqual([a[0]!.master!.rpcAddress, a[0]!.tserver.rpcAddress].sort());
    await driver.restart('n0');
    expect(String(await flagValue(a[0]!.master!.webUrl, 'TEST_drop_traffic_peers')).split(',').sort()).toEqual(n0Drops);
    expect((await driver.status()).partitioned).toEqual(['n0']);
    await driver.heal();
    for (const n of a) expect(await flagValue(n.tserver.webUrl, 'TEST_drop_traffic_peers')).toBe('');
  });

  it('lab process: a partial partition (n0 --from n1) cuts only that link, survives a restart, and a whole-node partition replaces it', async () => {
    const a = driver.addresses();
    const drops = async (url: string): Promise<string[]> => String(await flagValue(url, 'TEST_drop_traffic_peers')).split(',').filter(Boolean).sort();
    await driver.partition(['n0'], ['n1']);
    expect(await drops(a[0]!.tserver.webUrl)).toEqual([a[1]!.tserver.rpcAddress]);
    expect(await drops(a[0]!.master!.webUrl)).toEqual([a[1]!.tserver.rpcAddress]);
    expect(await drops(a[1]!.tserver.webUrl)).toEqual([a[0]!.master!.rpcAddress, a[0]!.tserver.rpcAddress].sort());
    expect(await drops(a[2]!.tserver.webUrl)).toEqual([]);
    let st = await driver.status();
    expect(st.cutLinks).toEqual([['n0', 'n1']]);
    expect(st.partitioned).toEqual([]);
    // lab.json keeps the cut links for later invocations; a restarted node gets its list again.
    expect(readLabState(baseDir)?.cutLinks).toEqual([['n0', 'n1']]);
    await driver.restart('n1');
    expect(await drops(a[1]!.tserver.webUrl)).toEqual([a[0]!.master!.rpcAddress, a[0]!.tserver.rpcAddress].sort());
    // A whole-node partition replaces the partial one.
    await driver.partition(['n2']);
    st = await driver.status();
    expect(st.cutLinks).toEqual([]);
    expect(await drops(a[0]!.tserver.webUrl)).toEqual([a[2]!.tserver.rpcAddress]);
    expect(await drops(a[2]!.tserver.webUrl)).toEqual([a[0]!.master!.rpcAddress, a[0]!.tserver.rpcAddress, a[1]!.tserver.rpcAddress].sort());
    await driver.partition(['n0'], ['n1', 'n2']);
    await driver.heal();
    for (const n of a) expect(await drops(n.tserver.webUrl)).toEqual([]);
    expect((await driver.status()).cutLinks).toEqual([]);
  });

  it('lab process: logs returns the tail of each server log of the node', async () => {
    const text = await driver.logs('n0', 20);
    expect(text).toContain('n0 master');
    expect(text).toContain('n0 tserver');
    expect(text).toContain('starting tserver');
  });

  it('lab process: down stops every process and removes lab.json', async () => {
    const st = readLabState(baseDir)!;
    await driver.down();
    for (const n of st.nodes) for (const s of [n.master, n.tserver]) if (s) expect(processState(s.pid, `--fs_data_dirs=${s.dataDir}`)).toBe('stopped');
    expect(readLabState(baseDir)).toBeUndefined();
  });
});

describe('lab process driver: failures', () => {
  it('lab process: up names the node that did not come up and shows its log tail, leaving nothing running', async () => {
    if (REAL) return; // the failure switch exists only in the fixture
    const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-fail-'));
    try {
      const d = new ProcessDriver();
      const err = await d.up(spec(baseDir, { nodes: 2, nodeFlags: { n1: { TEST_fake_fail_start: 'true' } } })).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/node n1 tserver (exited|was killed)/);
      expect(err?.message).toContain('failing at start as asked');
      expect((err as DbError | undefined)?.code).toBe(ErrorCode.SERVER_EXITED);
      expect(readLabState(baseDir)).toBeUndefined();
    } finally {
      fs.rmSync(baseDir, { recursive: true, force: true });
    }
  });
});
