/**
 * `tessera lab …` through commander, as the CLI's main wires it: up/status/flag/kill/start/partition/
 * heal/logs/down against the fake-node fixture, --json output parsed back, and errors as one line
 * with exit status 1.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { type LabStatus, openLab, registerLabCommands } from '../../lab';

const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-lab-cli-'));
const out: string[] = [];
const err: string[] = [];

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

describe('tessera lab CLI', () => {
  afterAll(async () => {
    try {
      await openLab(baseDir).down();
    } catch {
      // already down
    }
    fs.rmSync(baseDir, { recursive: true, force: true });
  });

  it('lab cli: up --json starts the nodes and prints their addresses; status --json reads them back', async () => {
    const up = await lab('up', '--nodes', '3', '--base_dir', baseDir, '--server_entry', 'dist/lab/fixtures/fake-node.js', '--host_base', '221', '--port_offset', '21000', '--node-flags', 'n0:TEST_a=1,n0/master:TEST_b=2', '--json');
    expect(up.code, up.err).toBe(0);
    const nodes = (JSON.parse(up.out) as { nodes: Array<{ name: string }> }).nodes;
    expect(nodes.map((n) => n.name)).toEqual(['n0', 'n1', 'n2']);
    const st = await lab('status', '--base_dir', baseDir, '--json');
    const status = JSON.parse(st.out) as LabStatus;
    expect(status.nodes.flatMap((n) => n.servers).every((s) => s.healthy)).toBe(true);
  });

  it('lab cli: status prints a table naming every server', async () => {
    const st = await lab('status', '--base_dir', baseDir);
    expect(st.out).toMatch(/NODE\s+ROLE\s+STATE\s+HEALTHY/);
    expect(st.out.split('\n').filter((l) => /^n\d\s/.test(l))).toHaveLength(4);
  });

  it('lab cli: flag, kill, start, partition, heal and logs act on the running lab', async () => {
    const f = await lab('flag', 'n1', 'TEST_c=3', '--force', '--base_dir', baseDir);
    expect(f.code, f.err).toBe(0);
    expect(f.out).toContain('set');
    expect((await lab('kill', 'n2', '--base_dir', baseDir)).code).toBe(0);
    const st = JSON.parse((await lab('status', '--base_dir', baseDir, '--json')).out) as LabStatus;
    expect(st.nodes[2]!.servers[0]!.state).toBe('stopped');
    expect((await lab('start', 'n2', '--base_dir', baseDir)).code).toBe(0);
    expect((await lab('partition', 'n0', '--base_dir', baseDir)).out).toContain('partitioned: n0');
    expect((await lab('heal', '--base_dir', baseDir)).code).toBe(0);
    expect((await lab('partition', 'n0', '--from', 'n1', 'n2', '--base_dir', baseDir)).out).toContain('links cut: n0–n1, n0–n2 (every other path stays open)');
    expect((await lab('status', '--base_dir', baseDir)).out).toContain('partitioned: none; links cut: n0–n1, n0–n2');
    const both = await lab('partition', 'n0', '--from', 'n0', '--base_dir', baseDir);
    expect(both.code).not.toBe(0);
    expect(both.err).toContain('n0 cannot be on both sides of the cut');
    expect((await lab('heal', '--base_dir', baseDir)).code).toBe(0);
    expect((await lab('status', '--base_dir', baseDir)).out).toMatch(/partitioned: none\n|partitioned: none$/);
    const logs = await lab('logs', 'n0', '--lines', '5', '--base_dir', baseDir);
    expect(logs.out).toContain('n0 tserver');
  });

  it("lab cli: status marks a tserver's counts that come from the master's last heartbeat (it does not answer)", async () => {
    expect((await lab('status', '--base_dir', baseDir)).out).not.toContain('as the master last heard');
    expect((await lab('pause', 'n1', '--base_dir', baseDir)).code).toBe(0);
    try {
      const st = await lab('status', '--base_dir', baseDir);
      const row = st.out.split('\n').find((l) => /^n1\s+tserver/.test(l));
      expect(row).toMatch(/\spaused\s+no\s.*\s0\*\s+0\*\s/);
      expect(st.out).toContain('* as the master last heard from that tserver (it does not answer now)');
    } finally {
      expect((await lab('resume', 'n1', '--base_dir', baseDir)).code).toBe(0);
    }
  });

  it('lab cli: a bad node name fails with one line and exit status 1', async () => {
    const r = await lab('kill', 'n9', '--base_dir', baseDir);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: INVALID_ARGUMENT: unknown node 'n9'/);
  });

  it('lab cli: experiment partition-minority refuses a --hold-ms outside [1000, 600000] before it starts anything', async () => {
    const r = await lab('experiment', 'partition-minority', '--hold-ms', '10', '--base_dir', path.join(baseDir, 'exp-refused'));
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: INVALID_ARGUMENT: partition-minority: --hold-ms must be a whole number of ms in \[1000, 600000\], got 10/);
    expect(fs.existsSync(path.join(baseDir, 'exp-refused', 'lab-partition-minority'))).toBe(false);
  });

  it('lab cli: down removes the lab; status afterwards says there is none', async () => {
    expect((await lab('down', '--base_dir', baseDir)).code).toBe(0);
    const r = await lab('status', '--base_dir', baseDir);
    expect(r.code).toBe(1);
    expect(r.err).toContain('no lab in');
  });
});
