/**
 * `tessera verify --driver docker` for real: each workload runs on a Docker lab the run creates itself
 * (real servers, dist/cli/main.js in the offline image; names tessera-verify-*, a 10.214.X.0/24
 * network) under the mixed nemesis, where kill is a docker kill or a SIGKILL inside the container,
 * pause a docker pause and partition a docker network disconnect, until its history counts (>= 1,000
 * ok operations and an applied fault window) or RUN_CAP_MS passes. The checkers must find no anomaly,
 * and the run must leave no container or network behind.
 * Without an engine every test is skipped with a visible line saying why (a failure when
 * TESSERA_REQUIRE_DOCKER=1).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DockerDriver, labIdFor } from '../../lab';
import { parseNemesisKinds } from '../../lab/verify/nemesis-schedule';
import { runWorkload, type WorkloadName } from '../../lab/verify/verify-runner';
import { markdownReport, MIN_OK_OPS, verdictLine, type WorkloadReport } from '../../lab/verify/verify-report';

// Published ports 18600+i, 18700+i, 20600+i, 20700+i: away from lab-docker (11000), the docker
// experiments (11300), a person's verify --driver docker (10500) and a person's lab (10000), and below
// the ephemeral range (32768+) where a test's outgoing connection could hold one.
const PORT_OFFSET = 11_600;
const MIXED = parseNemesisKinds('kill,pause,partition,skew,stepdown');
/** Longest a workload's op loop runs; it ends earlier once the history counts. */
const RUN_CAP_MS = 40_000;
const OP_TIMEOUT_MS = 1_000;
/** Lab up (image build when dist/ changed, three containers) + the run + the final read + teardown. */
const TEST_TIMEOUT_MS = 300_000;

const docker = new Docker();
let engine: { ok: true; version: string } | { ok: false; reason: string } = { ok: false, reason: 'not checked' };
const DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-verify-docker-'));
let keep = false;

/** The lab id the run of a workload uses (the runner's cluster dir is DIR/<workload>/cluster-<workload>). */
const labLabel = (workload: WorkloadName): string => JSON.stringify({ label: [`tessera.lab=${labIdFor(path.join(DIR, workload, `cluster-${workload}`))}`] });

/** Containers and networks a workload's run left behind (none, when its teardown worked). */
async function leftovers(workload: WorkloadName): Promise<string[]> {
  const cs = await docker.listContainers({ all: true, filters: labLabel(workload) });
  const nets = await docker.listNetworks({ filters: labLabel(workload) });
  return [...cs.map((c) => c.Names.join(',')), ...nets.map((n) => n.Name)];
}

async function run(workload: WorkloadName, seed: number, concurrency: number): Promise<WorkloadReport> {
  const lines: string[] = [];
  const r = await runWorkload({
    workload,
    driver: 'docker',
    nemesis: MIXED,
    timeMs: RUN_CAP_MS,
    endWhenCounted: true,
    seed,
    dir: path.join(DIR, workload),
    hostBase: 1,
    portOffset: PORT_OFFSET,
    concurrency,
    opTimeoutMs: OP_TIMEOUT_MS,
    log: (l) => lines.push(l),
  });
  process.stdout.write(`${lines.filter((l) => !l.startsWith('image 3/4: sent')).join('\n')}\n${verdictLine(r)} [${r.timeMs} ms]\n`);
  if (r.verdict !== 'valid') keep = true;
  return r;
}

function expectCounted(r: WorkloadReport): void {
  expect(r.driver).toBe('docker');
  expect(r.verdict, `${verdictLine(r)}\n${r.details.slice(0, 20).join('\n')}`).toBe('valid');
  expect(r.anomalies).toEqual({});
  expect(r.lostWrites).toBe(0);
  expect(r.counts.ok).toBeGreaterThanOrEqual(MIN_OK_OPS);
  // The replica convergence check reached every container's console through its published port.
  expect(r.convergence?.converged, r.convergence ? JSON.stringify(r.convergence) : 'no convergence check').toBeGreaterThan(0);
  const applied = r.faults.filter((f) => !f.skipped);
  expect(applied.length).toBeGreaterThanOrEqual(1);
  // Each applied kill/pause/partition says how the docker driver did it.
  for (const f of applied.filter((x) => ['kill', 'pause', 'partition'].includes(x.kind))) expect(f.note ?? '', `${f.kind} ${f.target}`).toMatch(/container tessera-verify-/);
  expect(markdownReport([r], { nemesis: MIXED.join(','), command: 'tessera verify --driver docker' })).toContain('Driver: docker');
}

describe('tessera verify --driver docker (real servers in a Docker lab of its own)', () => {
  beforeAll(async () => {
    engine = await DockerDriver.engineReachable(docker);
    if (!engine.ok) {
      // CI provides an engine (.ci/docker-setup.sh) and sets TESSERA_REQUIRE_DOCKER=1: there a missing engine is a failure.
      if (process.env.TESSERA_REQUIRE_DOCKER === '1') throw new Error(`no Docker engine reachable (${engine.reason}) but TESSERA_REQUIRE_DOCKER=1`);
      console.warn(`SKIP test/docker/verify-docker: no Docker engine reachable (${engine.reason}); run .ci/docker-setup.sh to provide one`);
    }
  });

  afterAll(async () => {
    // Leave no container or network behind, whatever failed above (a run's own teardown should have).
    if (engine.ok) {
      for (const w of ['set', 'register'] as const) {
        for (const c of await docker.listContainers({ all: true, filters: labLabel(w) })) await docker.getContainer(c.Id).remove({ force: true });
        for (const n of await docker.listNetworks({ filters: labLabel(w) })) await docker.getNetwork(n.Id).remove();
      }
    }
    if (keep) process.stdout.write(`verify --driver docker: histories and container logs kept in ${DIR}\n`);
    else if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(DIR, { recursive: true, force: true });
  });

  // Seed 23 starts with a docker kill of n2's container (its only server), then a SIGKILL of n0's
  // tserver inside its container; the run may end after the first window once it counts.
  it('verify docker set: no acknowledged insert lost when tservers die by docker kill of their container or SIGKILL inside it; the lab is removed', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const r = await run('set', 23, 16);
    expectCounted(r);
    expect(r.faults[0]).toMatchObject({ kind: 'kill', note: expect.stringContaining('docker kill of container') });
    expect(await leftovers('set')).toEqual([]);
  }, TEST_TIMEOUT_MS);

  // Seed 25: SIGKILL of n0's tserver inside its container, docker pause of n0 (master and tserver), of n2.
  it('verify docker register: linearizable under a kill inside a container and a docker pause; the lab is removed', async (ctx) => {
    if (!engine.ok) return ctx.skip(`no Docker engine reachable: ${engine.reason}`);
    const r = await run('register', 25, 20);
    expectCounted(r);
    expect(r.faults[0]).toMatchObject({ kind: 'kill', note: expect.stringContaining('inside container') });
    expect(await leftovers('register')).toEqual([]);
  }, TEST_TIMEOUT_MS);
});
