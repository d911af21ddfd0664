/**
 * The lab experiments under the Docker driver with the REAL servers (dist/cli/main.js in the offline
 * image): intents-apply through the command a lab user runs (`tessera lab experiment intents-apply
 * --driver docker`, small sizes), then data commands from this machine against the kept lab
 * (`--lab_dir`: advertised n0:7100 / nI:9100 reached through the published ports), then
 * leader-failover (kill -9 of one tserver inside its container) and partition-minority (network
 * disconnect) through the experiment runner. Every check must hold and every report must exist.
 * Without an engine every test is skipped with a visible line saying why (a failure when
 * TESSERA_REQUIRE_DOCKER=1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DockerDriver, labIdFor, readLabState } from '../../lab';
import { findExperiment, passed, runExperiment, type ExperimentOptions, type ExperimentResult } from '../../lab/experiments';

const ROOT = path.resolve(__dirname, '../..');
// Published ports 18300+i, 18400+i, 20300+i, 20400+i: away from lab-docker.test.ts (11000) and a
// person's lab (10000), and below the ephemeral range (32768+): a concurrent test's outgoing connection
// once held 127.0.0.1:40100 when this lab started ("address already in use").
const PORT_OFFSET = 11_300;
const CLI_TIMEOUT_MS = 240_000;

const docker = new Docker();
let engine: { ok: true; version: string } | { ok: false; reason: string } = { ok: false, reason: 'not checked' };
const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-docker-exp-'));
const labDir = (name: string): string => path.join(baseDir, `lab-${name}`);
const progress: string[] = [];

function runCli(args: string[], timeoutMs = CLI_TIMEOUT_MS): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/cli/main.js', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

function expectPassed(r: ExperimentResult): void {
  expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
  expect(passed(r)).toBe(true);
  expect(fs.readFileSync(r.reportPath!, 'utf8')).toContain('**PASSED**');
  expect(fs.existsSync(r.reportPath!.replace(/\.md$/, '.svg'))).toBe(true);
}

async function labContainers(name: string): Promise<string[]> {
  const cs = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${labIdFor(labDir(name))}`] }) });
  return cs.map((c) => c.Names.join(','));
}

describe('lab experiments under the docker driver (real servers)', () => {
  beforeAll(async () => {
    engine = await DockerDriver.engineReachable(docker);
    if (!engine.ok) {
      // CI provides an engine (.ci/docker-setup.sh) and sets TESSERA_REQUIRE_DOCKER=1: there a missing engine is a failure.
      if (process.env.TESSERA_REQUIRE_DOCKER === '1') throw new Error(`no Docker engine reachable (${engine.reason}) but TESSERA_REQUIRE_DOCKER=1`);
      console.warn(`SKIP test/docker/lab-docker-experiments: no Docker engine reachable (${engine.reason}); run .ci/docker-setup.sh to provide one`);
    }
  });

  afterAll(async () => {
    // Leave no container or network behind, whatever failed above.
    if (engine.ok) {
      for (const name of ['intents-apply', 'leader-failover', 'partition-minority']) {
        try {
          await DockerDriver.open(labDir(name), { docker, onProgress: () => undefined }).down();
        } catch {
          // not up
        }
        const id = labIdFor(labDir(name));
        for (const c of await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getContainer(c.Id).remove({ force: true });
        for (const n of await docker.listNetworks({ filters: JSON.stringify({ label: [`tessera.lab=${id}`] }) })) await docker.getNetwork(n.Id).remove();
      }
    }
    if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(baseDir, { recursive: true, force: true });
  });

  it('docker experiment intents-apply: tessera lab experiment --driver docker passes every check with real servers and writes its report', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const r = await runCli(['lab', 'experiment', 'intents-apply', '--driver', 'docker', '--rows', '20', '--row-bytes', '65536', '--delay-ms', '5000', '--port_offset', String(PORT_OFFSET), '--base_dir', baseDir, '--keep', '--json']);
    // With --json a failed check exits 1 with the checks on stdout: show both.
    expect(r.status, `${r.stderr.slice(-3000)}\n${r.stdout.slice(-3000)}`).toBe(0);
    const out = JSON.parse(r.stdout) as { passed: boolean; driver: string; checks: Array<{ name: string; ok: boolean }>; reportPath: string; figures: Record<string, number>; summary: string };
    expect(out.driver).toBe('docker');
    expect(out.summary).toContain('docker driver');
    expect(out.checks.length).toBeGreaterThanOrEqual(9);
    expect(out.checks.filter((c) => !c.ok)).toEqual([]);
    expect(out.passed).toBe(true);
    expect(out.figures['n0ApplyAfterCommitMs']).toBeGreaterThanOrEqual(4500);
    expect(fs.readFileSync(out.reportPath, 'utf8')).toContain('all replicas hold the same RegularDB contents');
    // Two step charts (IntentsDB and RegularDB per node) beside the report, and the HTML page with them inline.
    for (const f of ['-chart1.svg', '-chart2.svg', '.html']) expect(fs.existsSync(out.reportPath.replace(/\.md$/, f)), f).toBe(true);
    // --keep: the lab still runs, with the servers advertising lab-network names.
    expect(readLabState(labDir('intents-apply'))?.nodes[1]?.tserver.rpcAddress).toBe('n1:9100');
  }, CLI_TIMEOUT_MS + 10_000);

  it('docker lab from this machine: data and admin commands with --lab_dir reach the masters and tservers through the published ports', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const dir = labDir('intents-apply');
    if (!readLabState(dir)) {
      console.warn('SKIP lab-docker-experiments (the kept lab): the intents-apply experiment above failed before keeping its lab; its own failure says why');
      return ctx.skip('the intents-apply experiment above failed before keeping its lab; its own failure says why');
    }
    const scan = await runCli(['scan', 'demo', '--lab_dir', dir, '--limit', '100', '--json'], 60_000);
    expect(scan.status, scan.stderr).toBe(0);
    expect((JSON.parse(scan.stdout) as { rows: unknown[] }).rows).toHaveLength(20);
    expect((await runCli(['upsert', 'demo', 'id=1000', 'value=from-the-host', '--lab_dir', dir], 60_000)).status).toBe(0);
    const get = await runCli(['get', 'demo', 'id=1000', '--lab_dir', dir, '--json'], 60_000);
    expect(get.status, get.stderr).toBe(0);
    expect(get.stdout).toContain('from-the-host');
    const ts = await runCli(['admin', '--lab_dir', dir, '--json', 'list_all_tablet_servers'], 60_000);
    expect(ts.status, ts.stderr).toBe(0);
    expect(ts.stdout).toContain('n2:9100');
    // The replica check reaches each container's console through the lab's published ports.
    const replicas = await runCli(['admin', '--lab_dir', dir, '--json', 'check_replicas', 'demo', '--behind_ms', '0'], 120_000);
    expect(replicas.status, replicas.stderr).toBe(0);
    expect(JSON.parse(replicas.stdout)).toMatchObject({ tablets: 3, converged: 3, diverged: [], unsettled: [] });
    // Without the translation the advertised names do not resolve here: the lab is only reachable through --lab_dir.
    const plain = await runCli(['get', 'demo', 'id=1000', '--master_addresses', `127.0.0.1:${7100 + PORT_OFFSET}`, '--timeout_ms', '3000'], 60_000);
    expect(plain.status).not.toBe(0);
    const down = await runCli(['lab', 'down', '--base_dir', dir], 120_000);
    expect(down.status, down.stderr).toBe(0);
    expect(await labContainers('intents-apply')).toEqual([]);
  }, 300_000);

  const opts = (): ExperimentOptions => ({ baseDir, driver: 'docker', hostBase: 1, portOffset: PORT_OFFSET, serverEntry: 'dist/cli/main.js', keep: false, progress: (l) => progress.push(l) });

  it('docker experiment leader-failover: the killed tserver (alone, inside its container) loses leadership, restarts and catches up; no acknowledged write lost', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const r = await runExperiment(findExperiment('leader-failover')!, opts());
    expectPassed(r);
    // Progress for a person: the image step (built or reused) and the containers.
    expect(progress.some((l) => /^image (1\/4: collecting|: tessera-lab:\w+ (exists|built))/.test(l)), progress.slice(0, 20).join('\n')).toBe(true);
    expect(progress.some((l) => l.startsWith('lab: creating container'))).toBe(true);
    expect(r.summary).toContain('docker lab');
    expect(await labContainers('leader-failover')).toEqual([]);
  }, 240_000);

  it('docker experiment partition-minority: a node disconnected from the lab network for 25 s falls behind (read inside its container), RPC keepalive closes the connections whose pings went unanswered, connects whose SYN went unanswered are given up after rpc_tcp_connect_timeout_ms, and the node catches up after heal', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    // Longer than rpc_connection_timeout_ms (15 s) from the first unanswered ping (sent within two
    // 2 s keepalive ticks of the cut), so keepalive closes connections before the heal.
    const r = await runExperiment(findExperiment('partition-minority')!, { ...opts(), params: { holdMs: 25_000 } });
    expectPassed(r);
    expect(r.summary).toContain('disconnected from the lab network');
    expect(r.figures['partitionHoldMs']).toBe(25_000);
    expect(Number(r.figures['rpcConnectionsClosedByKeepalive'])).toBeGreaterThan(0);
    expect(Number(r.figures['rpcConnectsTimedOut'])).toBeGreaterThan(0);
    expect(await labContainers('partition-minority')).toEqual([]);
  }, 240_000);

  it('docker experiment replica-divergence: a follower container\'s silent wrong value is found by the convergence check through the published console ports, and re-creating the replica repairs it', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const r = await runExperiment(findExperiment('replica-divergence')!, opts());
    expect(r.checks.filter((c) => !c.ok), JSON.stringify(r.checks)).toEqual([]);
    expect(passed(r)).toBe(true);
    expect(fs.readFileSync(r.reportPath!, 'utf8')).toContain('**PASSED**'); // no chart: it draws no memtables
    expect(r.summary).toContain('docker lab');
    expect(await labContainers('replica-divergence')).toEqual([]);
  }, 240_000);
});
