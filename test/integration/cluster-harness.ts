/**
 * Real tessera processes on loopback for the cluster integration tests: spawns
 * `node dist/cli/main.js master|tserver …` with temp data dirs, kills them for real (SIGKILL), and
 * waits on conditions (never fixed sleeps). Each test file passes its own host base so files can run
 * in parallel: node i listens on 127.0.0.(hostBase+i) (or, without loopback aliases, on 127.0.0.1 with
 * ports shifted by hostBase*10+i).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { getJson } from '../../lab/console-http';
import { loopbackAliasesWork } from '../../lab/process-addressing';
import { LAB_SERVER_FLAGS } from '../../lab/flag-setter';
import { tabletServerMethods } from '../../rpc/service-methods';
import type { RpcClient } from '../../rpc/types';
import { serverEnv } from '../../common/server-env';

const CLI = path.resolve(__dirname, '../../dist/cli/main.js');

export interface Proc {
  role: 'master' | 'tserver';
  index: number;
  rpcAddress: string;
  webAddress: string;
  dataDir: string;
  logFile: string;
  argv: string[];
  /** A tserver's SQL endpoint (PostgreSQL protocol), host:port. */
  pgAddress?: string;
  child?: ChildProcess;
}

export async function waitFor<T>(what: string, timeoutMs: number, f: () => Promise<T | undefined | false> | T | undefined | false, intervalMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** `tessera ARGS --master_addresses=…` against `cluster` (the built CLI); stdout and stderr together, killed after `timeoutMs`. */
export function runCliOn(cluster: { masterAddresses: string[] }, args: string[], timeoutMs = 60_000): Promise<{ code: number | null; out: string }> {
  const cli = path.resolve(__dirname, '../../dist/cli/main.js');
  return new Promise((resolve) => {
    const c = spawn(process.execPath, [cli, ...args, `--master_addresses=${cluster.masterAddresses.join(',')}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b.toString()));
    c.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
    c.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

export class ProcCluster {
  readonly baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-it-'));
  readonly masters: Proc[] = [];
  readonly tservers: Proc[] = [];

  private constructor() {}

  static async create(opts: { hostBase: number; masters: number; tservers: number; masterFlags?: string[]; tserverFlags?: string[] }): Promise<ProcCluster> {
    if (!fs.existsSync(CLI)) throw new Error(`${CLI} missing: build first (npx tsc -b)`);
    const c = new ProcCluster();
    const aliases = await loopbackAliasesWork();
    const host = (i: number): string => (aliases ? `127.0.0.${opts.hostBase + i}` : '127.0.0.1');
    const port = (base: number, i: number): number => base + (aliases ? 0 : opts.hostBase * 10 + i);
    const masterAddrs = Array.from({ length: opts.masters }, (_, i) => `${host(i)}:${port(7100, i)}`).join(',');
    for (let i = 0; i < opts.masters; i++) {
      const dataDir = path.join(c.baseDir, `m${i}`);
      c.masters.push({
        role: 'master',
        index: i,
        rpcAddress: `${host(i)}:${port(7100, i)}`,
        webAddress: `${host(i)}:${port(7000, i)}`,
        dataDir,
        logFile: path.join(c.baseDir, `m${i}.log`),
        argv: ['master', `--master_addresses=${masterAddrs}`, `--rpc_bind_addresses=${host(i)}:${port(7100, i)}`, `--webserver_port=${port(7000, i)}`, `--fs_data_dirs=${dataDir}`, ...LAB_SERVER_FLAGS, ...(opts.masterFlags ?? [])],
      });
    }
    for (let i = 0; i < opts.tservers; i++) {
      const dataDir = path.join(c.baseDir, `t${i}`);
      c.tservers.push({
        role: 'tserver',
        index: i,
        rpcAddress: `${host(i)}:${port(9100, i)}`,
        webAddress: `${host(i)}:${port(9000, i)}`,
        dataDir,
        logFile: path.join(c.baseDir, `t${i}.log`),
        pgAddress: `${host(i)}:${port(5433, i)}`,
        argv: ['tserver', `--tserver_master_addrs=${masterAddrs}`, `--rpc_bind_addresses=${host(i)}:${port(9100, i)}`, `--webserver_port=${port(9000, i)}`, `--fs_data_dirs=${dataDir}`, `--pgsql_proxy_bind_address=${host(i)}:${port(5433, i)}`, ...LAB_SERVER_FLAGS, ...(opts.tserverFlags ?? [])],
      });
    }
    return c;
  }

  get masterAddresses(): string[] {
    return this.masters.map((m) => m.rpcAddress);
  }

  start(p: Proc): void {
    if (p.child && p.child.exitCode === null && p.child.signalCode === null) throw new Error(`${p.role} ${p.index} is already running`);
    const fd = fs.openSync(p.logFile, 'a');
    p.child = spawn(process.execPath, [CLI, ...p.argv], { stdio: ['ignore', fd, fd], env: serverEnv() });
    fs.closeSync(fd);
  }

  async kill9(p: Proc): Promise<void> {
    const c = p.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGKILL');
    await gone;
  }

  isRunning(p: Proc): boolean {
    return p.child !== undefined && p.child.exitCode === null && p.child.signalCode === null;
  }

  async startAll(timeoutMs = 60_000): Promise<void> {
    for (const p of [...this.masters, ...this.tservers]) if (!this.isRunning(p)) this.start(p);
    await this.waitTServersAlive(this.tservers.length, timeoutMs);
  }

  /** The leader master's /api/v1/tablet-servers (tries every master). */
  async tabletServers(): Promise<Array<{ uuid: string; rpcAddress: string; alive: boolean; tablets: number; leaders: number }>> {
    for (const m of this.masters) {
      if (!this.isRunning(m)) continue;
      try {
        const body = (await getJson(`http://${m.webAddress}/api/v1/tablet-servers`, 1000)) as { tabletServers: Array<{ uuid: string; rpcAddress: string; alive: boolean; tablets: number; leaders: number }> };
        return body.tabletServers;
      } catch {
        // follower or down: next
      }
    }
    throw new Error('no master answered /api/v1/tablet-servers');
  }

  /** The RPC address of the tserver whose replica of `tabletId` says LEADER, if one does (asked in turn). */
  async leaderOf(rpc: RpcClient, tabletId: string): Promise<string | undefined> {
    for (const t of this.tservers) {
      const r = await rpc.call(t.rpcAddress, tabletServerMethods().listTablets, {}, { timeoutMs: 2_000 }).catch(() => undefined);
      if (r?.tablets?.some((x) => x.tabletId === tabletId && x.role === 'LEADER')) return t.rpcAddress;
    }
    return undefined;
  }

  /** Wait for a leader of `tabletId` on another tserver than `avoid` (asking for a stepdown to one if needed); its address. */
  async leaderAwayFrom(rpc: RpcClient, tabletId: string, avoid: string, timeoutMs = 20_000): Promise<string> {
    const leader = await waitFor(`a leader of ${tabletId}`, timeoutMs, () => this.leaderOf(rpc, tabletId));
    if (leader !== avoid) return leader;
    const to = (await this.tabletServers()).find((s) => s.rpcAddress !== avoid)!;
    await rpc.call(leader, tabletServerMethods().leaderStepdown, { tabletId, newLeaderUuid: to.uuid }, { timeoutMs: 5_000 });
    return waitFor(`the leader of ${tabletId} to move off ${avoid}`, timeoutMs, async () => {
      const l = await this.leaderOf(rpc, tabletId);
      return l && l !== avoid ? l : undefined;
    });
  }

  async waitTServersAlive(n: number, timeoutMs: number): Promise<void> {
    await waitFor(`${n} live tablet servers`, timeoutMs, async () => (await this.tabletServers()).filter((t) => t.alive).length >= n, 200);
  }

  logTail(p: Proc, lines = 30): string {
    try {
      return fs.readFileSync(p.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }

  async destroy(): Promise<void> {
    await Promise.all([...this.masters, ...this.tservers].map((p) => this.kill9(p)));
    if (!process.env['TESSERA_KEEP_TEST_DATA']) fs.rmSync(this.baseDir, { recursive: true, force: true });
  }
}
