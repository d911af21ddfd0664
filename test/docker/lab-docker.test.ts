/**
 * The Docker driver for real, on a machine with a Docker engine (`.ci/docker-setup.sh` provides one):
 * the offline image, three containers on their own network, consoles on published ports, a partition
 * by network disconnect (name lookups of the cut node fail from the others), heal, faults, down.
 * Without an engine every test is skipped with a visible line saying why.
 * Servers: the fake-node fixture by default; TESSERA_LAB_SERVERS=real runs dist/cli/main.js (every
 * test passes with either; the flags each mode's servers know are chosen below).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { defaultSpec, DockerDriver, ensureLabImage, getJson, isHealthy, labIdFor, readLabState } from '../../lab';
import { type DbError, ErrorCode } from '../../common';

const REAL = process.env['TESSERA_LAB_SERVERS'] === 'real';
const ENTRY = REAL ? 'dist/cli/main.js' : 'dist/lab/fixtures/fake-node.js';
// Flags the servers of each mode know: a tserver flag given at start, one every server can change at
// run time, and one that makes a tserver exit at start (real servers refuse an unknown flag).
const MARKER = REAL ? { name: 'TEST_inject_sleep_before_applying_intents_ms', value: '1' } : { name: 'TEST_lab_marker', value: '1' };
const RUNTIME = REAL ? { name: 'log_level', value: 'warn' } : { name: 'TEST_lab_runtime', value: '9' };
const FAIL_START = REAL ? { name: 'no_such_flag', value: '1' } : { name: 'TEST_fake_fail_start', value: 'true' };
/** What a server's /api/v1/healthz answers, in each mode. */
const HEALTHY_TSERVER = REAL ? { ok: true, kind: 'tserver' } : { status: 'ok', role: 'tserver' };
// Published ports 18000+i, 18100+i, 20000+i, 20100+i: away from a person's lab (17000+) and the
// process tests, and below the ephemeral range (32768+) where a test's outgoing connection could hold one.
const PORT_OFFSET = 11_000;

const docker = new Docker();
let engine: { ok: true; version: string } | { ok: false; reason: string } = { ok: false, reason: 'not checked' };
const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-docker-'));
const progress: string[] = [];
let driver: DockerDriver;

/** Resolves `host` from inside `node`'s container; ok=false when the lookup fails. */
async function lookupFrom(node: string, host: string): Promise<{ ok: boolean; text: string }> {
  const script = `require('dns').lookup(${JSON.stringify(host)}, (e, a) => { if (e) { console.log('ERR ' + e.code); process.exit(1); } console.log('IP ' + a); })`;
  const r = await driver.exec(node, [driver.nodePath(), '-e', script]);
  return { ok: r.exitCode === 0, text: r.output.trim() };
}

async function flagValue(webUrl: string, name: string): Promise<unknown> {
  const body = (await getJson(`${webUrl}/api/v1/varz`)) as { flags: Array<{ name: string; value: unknown }> };
  return body.flags.find((f) => f.name === name)?.value;
}

/** A node's servers as `lab status` shows them: state, and /healthy when the console answered. */
async function serverStates(node: string): Promise<Record<string, string>> {
  const n = (await driver.status()).nodes.find((x) => x.name === node)!;
  return Object.fromEntries(n.servers.map((s) => [s.role, `${s.state}${s.healthy ? '/healthy' : ''}`]));
}

describe('lab docker driver', () => {
  beforeAll(async () => {
    engine = await DockerDriver.engineReachable(docker);
    if (!engine.ok) {
      // CI provides an engine (.ci/docker-setup.sh) and sets TESSERA_REQUIRE_DOCKER=1: there a missing engine is a failure.
      if (process.env.TESSERA_REQUIRE_DOCKER === '1') throw new Error(`no Docker engine reachable (${engine.reason}) but TESSERA_REQUIRE_DOCKER=1`);
      console.warn(`SKIP test/docker/lab-docker: no Docker engine reachable (${engine.reason}); run .ci/docker-setup.sh to provide one`);
      return;
    }
    driver = new DockerDriver(undefined, { docker, onProgress: (l) => progress.push(l) });
  });

  afterAll(async () => {
    // Leave no container or network behind, whatever failed above.
    if (engine.ok) {
      try {
        await DockerDriver.open(baseDir, { docker, onProgress: () => undefined }).down();
      } catch {
        // not up
      }
      const id = labIdFor(baseDir);
      for (const c of await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getContainer(c.Id).remove({ force: true });
      for (const n of await docker.listNetworks({ filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getNetwork(n.Id).remove();
    }
    fs.rmSync(baseDir, { recursive: true, force: true });
  });

  it('lab docker: the offline image builds once (with progress) and is reused by tag', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const lines: string[] = [];
    const first = await ensureLabImage({ docker, onProgress: (l) => lines.push(l) });
    expect(first.tag).toMatch(/^tessera-lab:[0-9a-f]{12}$/);
    expect(lines.some((l) => l.startsWith('image 1/4'))).toBe(true);
    // Other work may rebuild dist/ meanwhile (a new tag, rightly); a few tries find a quiet moment.
    let again = await ensureLabImage({ docker, onProgress: () => undefined });
    for (let i = 0; i < 3 && again.built; i++) again = await ensureLabImage({ docker, onProgress: () => undefined });
    expect(again.built).toBe(false);
    expect(again.tag).toMatch(/^tessera-lab:[0-9a-f]{12}$/);
  }, 300_000);

  it('lab docker: up starts 3 containers whose consoles answer on published 127.0.0.1 ports', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const addrs = await driver.up(
      defaultSpec({ baseDir, driver: 'docker', nodes: 3, masters: 1, serverEntry: ENTRY, portOffset: PORT_OFFSET, healthTimeoutMs: 60_000, nodeFlags: { n0: { [MARKER.name]: MARKER.value } } }),
    );
    expect(addrs.map((a) => a.tserver.webUrl)).toEqual(['http://127.0.0.1:20000', 'http://127.0.0.1:20001', 'http://127.0.0.1:20002']);
    expect(addrs[0]!.master?.rpcAddress).toBe('n0:7100');
    for (const a of addrs) expect(await isHealthy(a.tserver.webUrl)).toBe(true);
    expect(String(await flagValue(addrs[0]!.tserver.webUrl, MARKER.name))).toBe(MARKER.value);
    const st = await DockerDriver.open(baseDir, { docker }).status();
    expect(st.nodes.every((n) => n.servers.every((s) => s.state === 'running' && s.healthy))).toBe(true);
    expect((await lookupFrom('n1', 'n0')).text).toBe(`IP ${readLabState(baseDir)!.nodes[0]!.ip!}`);
  }, 300_000);

  it('lab docker: partition n0 makes its name unresolvable from n1 and its console unreachable from here (readable inside); a restart while cut off brings its servers up; heal restores both', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const a = driver.addresses();
    await driver.partition(['n0']);
    const cut = await lookupFrom('n1', 'n0');
    expect(cut.ok, cut.text).toBe(false);
    expect((await lookupFrom('n2', 'n1')).ok).toBe(true);
    expect(await isHealthy(a[0]!.tserver.webUrl, 1_000)).toBe(false);
    expect(await isHealthy(a[1]!.tserver.webUrl)).toBe(true);
    // The cut-off node is still readable from inside its container (its console listens there too).
    expect(await driver.consoleJson('n0', 'tserver', '/api/v1/healthz')).toMatchObject(HEALTHY_TSERVER);
    expect(await driver.consoleJson('n1', 'tserver', '/api/v1/healthz')).toMatchObject(HEALTHY_TSERVER);
    expect((await driver.status()).partitioned).toEqual(['n0']);
    // Restarted while cut off, its servers come up: they bind every interface of the container and
    // broadcast the node's name, which only the lab network's DNS knows (binding the name failed with
    // EAI_AGAIN and the container stopped), and the restart's health wait reads them inside.
    await driver.restart('n0');
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'running/healthy' });
    // The fixture writes the identity it took (the broadcast address, not the bind address 0.0.0.0).
    if (!REAL) expect(fs.readFileSync(path.join(baseDir, 'n0', 'tserver', 'fake-node-marker'), 'utf8').trim()).toBe('tserver n0:9100');
    await driver.heal();
    expect((await lookupFrom('n1', 'n0')).ok).toBe(true);
    // Same address after heal: the server's sockets bound to it work again.
    for (let i = 0; i < 50 && !(await isHealthy(a[0]!.tserver.webUrl)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await isHealthy(a[0]!.tserver.webUrl)).toBe(true);
  }, 120_000);

  it('lab docker: a partial partition (n0 --from n1) sets drop lists on both ends only, keeps the network, is set again after a restart, and heal clears it', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const a = driver.addresses();
    const drops = async (url: string): Promise<string[]> => String(await flagValue(url, 'TEST_drop_traffic_peers')).split(',').filter(Boolean).sort();
    const n0 = [a[0]!.master!.rpcAddress, a[0]!.tserver.rpcAddress].sort();
    await driver.partition(['n0'], ['n1']);
    expect(await drops(a[0]!.tserver.webUrl)).toEqual([a[1]!.tserver.rpcAddress]);
    expect(await drops(a[0]!.master!.webUrl)).toEqual([a[1]!.tserver.rpcAddress]);
    expect(await drops(a[1]!.tserver.webUrl)).toEqual(n0);
    expect(await drops(a[2]!.tserver.webUrl)).toEqual([]);
    // No network disconnect: names resolve and the published ports answer.
    expect((await lookupFrom('n1', 'n0')).ok).toBe(true);
    expect(await isHealthy(a[0]!.tserver.webUrl)).toBe(true);
    const st = await driver.status();
    expect(st.cutLinks).toEqual([['n0', 'n1']]);
    expect(st.partitioned).toEqual([]);
    // A restarted container starts its servers with fresh flags: the driver sets the list again.
    await driver.restart('n1');
    expect(await drops(a[1]!.tserver.webUrl)).toEqual(n0);
    await driver.heal();
    for (const n of a) expect(await drops(n.tserver.webUrl)).toEqual([]);
    expect((await driver.status()).cutLinks).toEqual([]);
  }, 180_000);

  it('lab docker: flags at run time, kill/start and pause/resume (of a container or one server in it, status showing each server\'s state) and logs act on one container', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const a = driver.addresses();
    expect((await driver.setFlag('n1', RUNTIME.name, RUNTIME.value, true)).every((r) => r.ok)).toBe(true);
    expect(String(await flagValue(a[1]!.tserver.webUrl, RUNTIME.name))).toBe(RUNTIME.value);
    // One server alone: n0's tserver dies inside its container, its master keeps running; start brings it back.
    await driver.kill('n0', 'tserver');
    expect(await isHealthy(a[0]!.tserver.webUrl, 500)).toBe(false);
    expect(await isHealthy(a[0]!.master!.webUrl)).toBe(true);
    // Status asks the container about each server: the tserver is stopped, its container and master run.
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'stopped' });
    await driver.start('n0', 'tserver');
    expect(await isHealthy(a[0]!.tserver.webUrl)).toBe(true);
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'running/healthy' });
    expect(await driver.logs('n0', 50)).toContain('SIGUSR2: starting tserver again');
    // Starting the whole node (its container still running) brings back the server that stopped alone.
    await driver.kill('n0', 'tserver');
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'stopped' });
    await driver.start('n0');
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'running/healthy' });
    // Pausing one server of n0 (SIGSTOP inside the container) leaves the other one answering.
    await driver.pause('n0', 'tserver');
    expect(await isHealthy(a[0]!.tserver.webUrl, 500)).toBe(false);
    expect(await isHealthy(a[0]!.master!.webUrl)).toBe(true);
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'paused' });
    await driver.resume('n0', 'tserver');
    expect(await isHealthy(a[0]!.tserver.webUrl)).toBe(true);
    expect(await serverStates('n0')).toEqual({ master: 'running/healthy', tserver: 'running/healthy' });
    await driver.kill('n2');
    expect((await driver.status()).nodes[2]!.servers[0]!.state).toBe('stopped');
    await driver.start('n2');
    expect(await isHealthy(a[2]!.tserver.webUrl)).toBe(true);
    await driver.pause('n1');
    expect((await driver.status()).nodes[1]!.servers[0]!.state).toBe('paused');
    expect(await isHealthy(a[1]!.tserver.webUrl, 500)).toBe(false);
    await driver.resume('n1');
    expect(await isHealthy(a[1]!.tserver.webUrl)).toBe(true);
    const logs = await driver.logs('n0', 50);
    expect(logs).toContain('[tserver]');
    expect(logs).toContain('[master]');
  }, 120_000);

  it('lab docker: down removes every container and the network', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const st = readLabState(baseDir)!;
    await driver.down();
    const left = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${st.docker!.labId}`] }) });
    expect(left).toEqual([]);
    await expect(docker.getNetwork(st.docker!.networkName).inspect()).rejects.toThrow();
    expect(readLabState(baseDir)).toBeUndefined();
  }, 60_000);

  it('lab docker: a server that exits at start inside a container its other server keeps running fails up at once, naming the exit and showing its log', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-docker-fail-'));
    const d = new DockerDriver(undefined, { docker, onProgress: () => undefined });
    try {
      // A health timeout far longer than the test's own: only noticing the exit can end the wait in time.
      const err = await d.up(defaultSpec({ baseDir: dir, driver: 'docker', nodes: 1, masters: 1, serverEntry: ENTRY, portOffset: PORT_OFFSET, healthTimeoutMs: 600_000, nodeFlags: { n0: { [FAIL_START.name]: FAIL_START.value } } })).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/node n0 tserver exited with status [13] inside container \S+, which keeps running/);
      expect(err?.message).not.toMatch(/did not answer/);
      expect((err as DbError | undefined)?.code).toBe(ErrorCode.SERVER_EXITED);
      expect(err?.message).toMatch(/last \d+ log lines of n0 tserver/);
    } finally {
      // A failed up removes what it started (no lab.json is left); anything still there goes here.
      if (readLabState(dir)) await DockerDriver.open(dir, { docker, onProgress: () => undefined }).down().catch(() => undefined);
      const id = labIdFor(dir);
      for (const c of await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getContainer(c.Id).remove({ force: true });
      for (const n of await docker.listNetworks({ filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getNetwork(n.Id).remove();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
