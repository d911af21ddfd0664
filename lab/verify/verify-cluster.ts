/**
 * The cluster a verification run attacks: 1 master + N tservers as child processes of the verifier
 * (not detached: they die with it), each with its own data dir and log under the run's directory.
 * The verifier owns the processes directly because its nemeses need exact control: kill -9 and
 * restart of one server, SIGSTOP/SIGCONT, and run-time TEST_ flags set on one server at a time.
 *
 * Flags are set through the server's console (POST /api/v1/flags); a tserver without a console is
 * reached through its admin RPC (SetFlag) instead, so partitions and clock skew work on both.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../../common/errors';
import { tabletServerMethods } from '../../rpc/service-methods';
import type { RpcClient } from '../../rpc/types';
import { getJson, isHealthy, postFlag } from '../console-http';
import { loopbackAliasesWork, STANDARD_PORTS } from '../process-addressing';
import { serverEntryPath } from '../package-root';

export const SERVER_KILL_WAIT_MS = 5_000;
const HEALTH_POLL_MS = 200;
const SET_FLAG_ATTEMPTS_MAX = 5;

export interface VerifyServer {
  role: 'master' | 'tserver';
  /** Node index: a node is a tserver plus (on node 0) the master. */
  node: number;
  name: string;
  rpcAddress: string;
  webUrl: string;
  dataDir: string;
  logFile: string;
  argv: string[];
  child?: ChildProcess;
  paused: boolean;
}

export interface VerifyClusterOptions {
  baseDir: string;
  tservers: number;
  /** Node i listens on 127.0.0.(hostBase+i) when loopback aliases work. */
  hostBase: number;
  /** Added to the standard ports (always without aliases, where node i also adds i). */
  portOffset: number;
  tserverFlags?: string[];
  masterFlags?: string[];
}

export class VerifyCluster {
  readonly servers: VerifyServer[] = [];

  private constructor(readonly baseDir: string) {}

  static async plan(o: VerifyClusterOptions): Promise<VerifyCluster> {
    const c = new VerifyCluster(path.resolve(o.baseDir));
    const aliases = await loopbackAliasesWork();
    const host = (i: number): string => (aliases ? `127.0.0.${o.hostBase + i}` : '127.0.0.1');
    const port = (base: number, i: number): number => base + o.portOffset + (aliases ? 0 : i);
    const masterRpc = `${host(0)}:${port(STANDARD_PORTS.masterRpc, 0)}`;
    const mk = (role: 'master' | 'tserver', i: number, rpc: number, web: number, flags: string[]): VerifyServer => {
      const name = role === 'master' ? `m${i}` : `t${i}`;
      const dataDir = path.join(c.baseDir, name);
      const rpcAddress = `${host(i)}:${port(rpc, i)}`;
      const common = [`--rpc_bind_addresses=${rpcAddress}`, `--webserver_port=${port(web, i)}`, `--fs_data_dirs=${dataDir}`];
      const argv = role === 'master' ? ['master', `--master_addresses=${masterRpc}`, ...common, ...flags] : ['tserver', `--tserver_master_addrs=${masterRpc}`, ...common, ...flags];
      return { role, node: i, name, rpcAddress, webUrl: `http://${host(i)}:${port(web, i)}`, dataDir, logFile: path.join(c.baseDir, `${name}.log`), argv, paused: false };
    };
    c.servers.push(mk('master', 0, STANDARD_PORTS.masterRpc, STANDARD_PORTS.masterWeb, o.masterFlags ?? []));
    for (let i = 0; i < o.tservers; i++) c.servers.push(mk('tserver', i, STANDARD_PORTS.tserverRpc, STANDARD_PORTS.tserverWeb, o.tserverFlags ?? []));
    return c;
  }

  get masterAddresses(): string[] {
    return this.servers.filter((s) => s.role === 'master').map((s) => s.rpcAddress);
  }
  get tservers(): VerifyServer[] {
    return this.servers.filter((s) => s.role === 'tserver');
  }
  get masters(): VerifyServer[] {
    return this.servers.filter((s) => s.role === 'master');
  }

  isRunning(s: VerifyServer): boolean {
    return s.child !== undefined && s.child.exitCode === null && s.child.signalCode === null;
  }

  start(s: VerifyServer): void {
    if (this.isRunning(s)) return;
    fs.mkdirSync(this.baseDir, { recursive: true });
    const fd = fs.openSync(s.logFile, 'a');
    try {
      fs.writeSync(fd, `==== verify ${new Date().toISOString()}: starting ${s.name}\n`);
      s.child = spawn(process.execPath, [serverEntryPath('dist/cli/main.js'), ...s.argv], { stdio: ['ignore', fd, fd] });
      s.paused = false;
    } finally {
      fs.closeSync(fd);
    }
  }

  async startAll(timeoutMs: number): Promise<void> {
    for (const s of this.servers) this.start(s);
    await this.waitHealthy(timeoutMs);
  }

  /** SIGKILL (after SIGCONT is pointless: a stopped process dies on SIGKILL too) and wait for the exit. */
  async kill9(s: VerifyServer): Promise<void> {
    const c = s.child;
    if (!c || !this.isRunning(s)) return;
    const gone = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGKILL');
    await Promise.race([gone, new Promise<void>((r) => setTimeout(r, SERVER_KILL_WAIT_MS).unref())]);
    s.paused = false;
  }

  pause(s: VerifyServer): void {
    if (this.isRunning(s) && !s.paused) {
      s.child!.kill('SIGSTOP');
      s.paused = true;
    }
  }

  resume(s: VerifyServer): void {
    if (this.isRunning(s) && s.paused) {
      s.child!.kill('SIGCONT');
      s.paused = false;
    }
  }

  /** Masters answer /healthz and the master sees every running tserver alive. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let why = 'master not answering';
    while (Date.now() < deadline) {
      for (const s of this.servers) if (s.child && !this.isRunning(s)) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `${s.name} exited (${String(s.child.exitCode ?? s.child.signalCode)}); see ${s.logFile}`);
      try {
        const m = this.masters[0]!;
        if (await isHealthy(m.webUrl)) {
          const body = (await getJson(`${m.webUrl}/api/v1/tablet-servers`, 1000)) as { tabletServers?: Array<{ rpcAddress: string; alive: boolean }> };
          const alive = new Set((body.tabletServers ?? []).filter((t) => t.alive).map((t) => t.rpcAddress));
          const want = this.tservers.filter((t) => this.isRunning(t));
          // The master may still count a just-killed tserver alive (heartbeat not yet timed out):
          // the restarted process itself must answer too.
          const up = await Promise.all(want.map((t) => isHealthy(t.webUrl)));
          if (want.every((t, i) => alive.has(t.rpcAddress) && up[i])) return;
          why = `${alive.size} of ${want.length} tablet servers alive, ${up.filter(Boolean).length} answering /healthz`;
        }
      } catch (e) {
        why = (e as Error).message;
      }
      await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
    }
    throw new DbError(ErrorCode.TIMED_OUT, `cluster not healthy within ${timeoutMs} ms (${why}); logs in ${this.baseDir}`);
  }

  /** Set a run-time flag on one server: console first, admin RPC for a tserver without one. */
  async setFlag(s: VerifyServer, name: string, value: string, rpc: RpcClient): Promise<void> {
    try {
      await postFlag(s.webUrl, name, value, true);
      return;
    } catch (e) {
      if (s.role !== 'tserver' || !(e instanceof DbError) || e.code !== ErrorCode.NETWORK_ERROR) throw e;
    }
    // A just-restarted tserver may not accept connections yet: a few bounded attempts.
    for (let attempt = 1; ; attempt++) {
      try {
        await rpc.call(s.rpcAddress, tabletServerMethods().setFlag, { name, value, force: true }, { timeoutMs: 3_000 });
        return;
      } catch (e) {
        if (attempt >= SET_FLAG_ATTEMPTS_MAX) throw e;
        await new Promise((r) => setTimeout(r, 300));
      }
    }
  }

  async destroy(keepData: boolean): Promise<void> {
    await Promise.all(this.servers.map((s) => this.kill9(s)));
    if (!keepData) for (const s of this.servers) fs.rmSync(s.dataDir, { recursive: true, force: true });
  }
}
