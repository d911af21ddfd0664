/**
 * `tessera start` as a person uses it: foreground cluster, data commands against it, status, Ctrl-C
 * (SIGINT) stops it cleanly, a second start brings the same data back, destroy removes it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from './cluster-harness';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');
const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-start-'));
let sup: ChildProcess | undefined;
let out = '';

function startCluster(): ChildProcess {
  out = '';
  const c = spawn(process.execPath, [CLI, 'start', '--base_dir', baseDir, '--nodes', '1', '--host_base', '101', '--tserver_flags', 'heartbeat_interval_ms=200'], { stdio: ['ignore', 'pipe', 'pipe'] });
  c.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  c.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  return c;
}

function cli(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return cliEnv(process.env, ...args);
}

function cliEnv(env: NodeJS.ProcessEnv, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, env });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A home directory whose default base dir (~/var/tessera) is this test's cluster: commands without --master_addresses. */
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-home-'));
fs.mkdirSync(path.join(home, 'var'));
fs.symlinkSync(baseDir, path.join(home, 'var', 'tessera'));
const homeEnv: NodeJS.ProcessEnv = { ...process.env, HOME: home };
delete homeEnv['TESSERA_MASTER_ADDRESSES'];

afterAll(async () => {
  if (sup && sup.exitCode === null) {
    const exited = new Promise((r) => sup!.once('exit', r));
    sup.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000).unref())]); // its clean stop, bounded
  }
  cli('destroy', '--base_dir', baseDir);
  fs.rmSync(baseDir, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
});

describe('tessera start', () => {
  it('start: foreground cluster serves data, stops on Ctrl-C, comes back with its data, and is destroyed', async () => {
    sup = startCluster();
    // Up, and the 'try:' line naming the masters printed too (it may come in a later chunk of stdout).
    await waitFor('tessera start to report the cluster up', 90_000, () => (out.includes('cluster is up') && /--master_addresses (\S+)/.test(out)) || (sup!.exitCode !== null ? Promise.reject(new Error(out)) : false), 100);
    const masters = /--master_addresses (\S+)/.exec(out)![1]!;
    expect(cli('create-table', 'demo', '--columns', 'id:int64,value:string', '--hash', 'id', '--tablets', '2', '--master_addresses', masters).status).toBe(0);
    expect(cli('insert', 'demo', 'id=1', 'value=hello', '--master_addresses', masters).status).toBe(0);
    const status = cli('status', '--base_dir', baseDir, '--json');
    expect(status.status).toBe(0);
    const st = JSON.parse(status.stdout) as { servers: Array<{ role: string; running: boolean }> };
    expect(st.servers.map((s) => s.role).sort()).toEqual(['master', 'tserver']);
    expect(st.servers.every((s) => s.running)).toBe(true);
    // Both servers answer their consoles, which give their calls in flight (/rpcz).
    const full = JSON.parse(status.stdout) as { servers: Array<{ healthy: boolean; calls?: { inbound: number; outbound: number; oldestMs: number } }> };
    for (const s of full.servers) expect(s).toMatchObject({ healthy: true, calls: { inbound: expect.any(Number), outbound: expect.any(Number), oldestMs: expect.any(Number) } });
    expect(cli('status', '--base_dir', baseDir).stdout).toContain('calls in/out');

    const exited = new Promise<number | null>((r) => sup!.once('exit', (code) => r(code)));
    sup.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(JSON.parse(cli('status', '--base_dir', baseDir, '--json').stdout).servers.every((s: { running: boolean }) => !s.running)).toBe(true);

    sup = startCluster();
    await waitFor('the second start', 90_000, () => out.includes('cluster is up') || (sup!.exitCode !== null ? Promise.reject(new Error(out)) : false), 100);
    const got = cli('get', 'demo', 'id=1', '--json', '--master_addresses', masters);
    expect(got.status).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ rows: [{ id: '1', value: 'hello' }] });
    // Without --master_addresses, commands find the running cluster of the default base directory
    // (here a host base of 101, not 127.0.0.1).
    expect(masters).not.toBe('127.0.0.1:7100');
    const found = cliEnv(homeEnv, 'get', 'demo', 'id=1', '--json', '--timeout_ms', '20000');
    expect(found.status, found.stderr).toBe(0);
    expect(JSON.parse(found.stdout)).toEqual({ rows: [{ id: '1', value: 'hello' }] });
    expect(cliEnv(homeEnv, 'scan', '--help').stdout).toContain(masters);
    // ALTER TABLE from the command line: a new column, then a refused change with its reason.
    const altered = cli('alter-table', 'demo', '--add_columns', 'note:string', '--json', '--master_addresses', masters);
    expect(altered.status).toBe(0);
    expect(JSON.parse(altered.stdout)).toEqual({ name: 'demo', schemaVersion: 1 });
    expect(cli('upsert', 'demo', 'id=1', 'note=altered', '--master_addresses', masters).status).toBe(0);
    expect(JSON.parse(cli('get', 'demo', 'id=1', '--json', '--master_addresses', masters).stdout)).toEqual({ rows: [{ id: '1', value: 'hello', note: 'altered' }] });
    const described = cli('describe-table', 'demo', '--json', '--master_addresses', masters);
    expect(described.status).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({
      name: 'demo',
      schemaVersion: 1,
      tablets: 2,
      columns: [
        { name: 'id', id: 1, type: 'int64', nullable: false, key: 'HASH' },
        { name: 'value', id: 2, type: 'string', nullable: true, key: '' },
        { name: 'note', id: 3, type: 'string', nullable: true, key: '' },
      ],
    });
    // describe-table names each tablet's leader and followers by host:port.
    const locs = (JSON.parse(described.stdout) as { tabletLocations: Array<{ leader: string | null; followers: string[] }> }).tabletLocations;
    expect(locs).toHaveLength(2);
    for (const t of locs) expect([t.leader, ...t.followers].every((a) => a !== null && /^127\.0\.0\.\d+:\d+$/.test(a))).toBe(true);
    // Long values are cut in tables (with their length) unless --full; --columns picks and orders columns.
    expect(cli('upsert', 'demo', 'id=2', `value=${'v'.repeat(300)}`, '--master_addresses', masters).status).toBe(0);
    const cut = cli('get', 'demo', 'id=2', '--columns', 'value,id', '--master_addresses', masters);
    expect(cut.stdout.split('\n')[0]).toMatch(/^value\s+id$/);
    expect(cut.stdout).toContain('…(300 chars)');
    expect(cli('get', 'demo', 'id=2', '--full', '--master_addresses', masters).stdout).toContain('v'.repeat(300));
    expect(cli('scan', 'demo', '--columns', 'nope', '--master_addresses', masters).stderr).toMatch(/^error: INVALID_ARGUMENT: table demo has no column nope/);
    const refused = cli('alter-table', 'demo', '--drop_columns', 'id', '--master_addresses', masters);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/^error: INVALID_ARGUMENT: column id is part of the primary key/);
    // A second start on a running cluster is refused with a clear reason.
    const again = cli('start', '--base_dir', baseDir);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^error: ALREADY_EXISTS: /);

    expect(cli('stop', '--base_dir', baseDir).status).toBe(0);
    await waitFor('the supervisor to exit', 30_000, () => sup!.exitCode !== null);
    // A stopped cluster is not a default any more.
    expect(cliEnv(homeEnv, 'scan', '--help').stdout).toContain('127.0.0.1:7100');
    expect(cli('destroy', '--base_dir', baseDir).status).toBe(0);
    expect(fs.existsSync(path.join(baseDir, 'cluster.json'))).toBe(false);
  }, 240_000);
});
