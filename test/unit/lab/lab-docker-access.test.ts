/**
 * The pieces that let the lab act on a Docker lab from this machine, without an engine: the client
 * address map from a lab's addresses, the in-container signal script's reply, and the node
 * supervisor (PID 1 of a container) starting again a server killed alone, run here as a local process
 * with a stand-in entry script.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { clientAddressMap, labConnectOptions, type NodeAddresses, waitUntil } from '../../../lab';
import { parseRoleSignalReply } from '../../../lab/docker-in-container';

const ROOT = path.resolve(__dirname, '../../..');

function dockerLike(): NodeAddresses[] {
  return [0, 1, 2].map((i) => ({
    name: `n${i}`,
    index: i,
    ...(i === 0 ? { master: { role: 'master' as const, rpcAddress: 'n0:7100', hostRpcAddress: '127.0.0.1:17100', webUrl: 'http://127.0.0.1:17000' } } : {}),
    tserver: { role: 'tserver' as const, rpcAddress: `n${i}:9100`, hostRpcAddress: `127.0.0.1:${19100 + i}`, webUrl: `http://127.0.0.1:${19000 + i}` },
  }));
}

describe('lab: reaching a docker lab from this machine', () => {
  it('lab: clientAddressMap maps every advertised RPC address to its published one; labConnectOptions names the masters', () => {
    expect(clientAddressMap(dockerLike())).toEqual({ 'n0:7100': '127.0.0.1:17100', 'n0:9100': '127.0.0.1:19100', 'n1:9100': '127.0.0.1:19101', 'n2:9100': '127.0.0.1:19102' });
    expect(labConnectOptions(dockerLike()).masterAddresses).toEqual(['n0:7100']);
  });

  it('lab: local processes need no translation (advertised = reachable)', () => {
    const local = dockerLike().map((n) => ({ ...n, tserver: { ...n.tserver, hostRpcAddress: n.tserver.rpcAddress }, ...(n.master ? { master: { ...n.master, hostRpcAddress: n.master.rpcAddress } } : {}) }));
    expect(clientAddressMap(local)).toEqual({});
  });

  it('lab: the in-container signal reply is parsed from its last line; anything else is a clear error', () => {
    expect(parseRoleSignalReply('noise\n{"pids":[14]}\n', 'tserver')).toEqual({ pids: [14] });
    expect(parseRoleSignalReply('{"pids":[]}', 'master')).toEqual({ pids: [] });
    expect(() => parseRoleSignalReply('OCI runtime exec failed', 'tserver')).toThrow(/signalling the tserver/);
  });
});

describe('lab: node supervisor', () => {
  let sup: ChildProcess | undefined;
  let dir: string | undefined;
  afterEach(() => {
    if (sup && sup.exitCode === null && sup.signalCode === null) sup.kill('SIGKILL');
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lab: the supervisor outlives one server killed alone and starts it again on SIGUSR2; SIGTERM stops it', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-supervisor-'));
    // Stand-in server: records its pid under its role's name and waits.
    const entry = path.join(dir, 'entry.js');
    fs.writeFileSync(entry, `require('fs').writeFileSync(require('path').join(${JSON.stringify(dir)}, process.argv[2] + '.pid'), String(process.pid)); setInterval(() => {}, 1000);`);
    const pidOf = (role: string): number | undefined => {
      try {
        return Number(fs.readFileSync(path.join(dir!, `${role}.pid`), 'utf8'));
      } catch {
        return undefined;
      }
    };
    let out = '';
    sup = spawn(process.execPath, [path.join(ROOT, 'dist/lab/node-supervisor.js'), entry, 'master', ':::', 'tserver'], { stdio: ['ignore', 'pipe', 'pipe'] });
    sup.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const first = await waitUntil(async () => pidOf('tserver'), { timeoutMs: 10_000, what: 'the tserver stand-in to start' });
    await waitUntil(async () => pidOf('master'), { timeoutMs: 10_000, what: 'the master stand-in to start' });
    fs.rmSync(path.join(dir, 'tserver.pid'));
    process.kill(first, 'SIGKILL');
    await waitUntil(async () => out.includes('tserver killed by SIGKILL'), { timeoutMs: 10_000, what: 'the supervisor to see the kill' });
    expect(sup.exitCode).toBeNull();
    sup.kill('SIGUSR2');
    const second = await waitUntil(async () => pidOf('tserver'), { timeoutMs: 10_000, what: 'the tserver stand-in to start again' });
    expect(second).not.toBe(first);
    expect(out).toContain('SIGUSR2: starting tserver again');
    expect(out).not.toContain('starting master again');
    const exited = new Promise<number | null>((resolve) => sup!.on('exit', (code) => resolve(code)));
    sup.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 30_000);
});
