/**
 * The cluster a verification run attacks: 1 or 3 masters + N tservers as child processes of the verifier
 * (not detached), each with its own data dir and log under the run's directory. A SIGINT or SIGTERM
 * to the verifier kills them (SIGKILL) before it exits, so a stopped run leaves no server behind to
 * hold its addresses (their data dirs and logs stay, for a look).
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
import type { RpcClient } from '../../rpc';
import { DROP_TRAFFIC_FLAG, partitionDropLists } from '../partition-plan';
import { loopbackAliasesWork, STANDARD_PORTS } from '../process-addressing';
import { serverEntryPath } from '../package-root';
import { consoleTokenOf, LAB_SERVER_FLAGS } from '../flag-setter';
import { trustConsoleCa } from '../console-http';
import type { NemesisKind } from './nemesis-schedule';
import { setServerFlag, type VerifyConnectOptions, type VerifyServerRef, type VerifyTarget, waitVerifyHealthy } from './verify-target';
import { makeDirs } from '../../common/fs-dirs';
import { serverEnv } from '../../common/server-env';

export const SERVER_KILL_WAIT_MS = 5_000;

export interface VerifyServer extends VerifyServerRef {
  dataDir: string;
  logFile: string;
  argv: string[];
  child?: ChildProcess;
}

export interface VerifyClusterOptions {
  baseDir: string;
  tservers: number;
  /** Masters on nodes 0 .. masters-1 (default 1). */
  masters?: 1 | 3;
  /** Node i listens on 127.0.0.(hostBase+i) when loopback aliases work. */
  hostBase: number;
  /** Added to the standard ports (always without aliases, where node i also adds i). */
  portOffset: number;
  tserverFlags?: string[];
  masterFlags?: string[];
}

export class VerifyCluster implements VerifyTarget<VerifyServer> {
  readonly driver = 'process' as const;
  readonly servers: VerifyServer[] = [];

  private signalsHooked = false;
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    const running = this.servers.filter((s) => this.isRunning(s));
    process.stderr.write(`verify: ${sig}: killing the run's ${running.length} server process(es); their data and logs stay in ${this.baseDir}\n`);
    for (const s of running) s.child!.kill('SIGKILL');
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };

  private constructor(readonly baseDir: string) {}

  static async plan(o: VerifyClusterOptions): Promise<VerifyCluster> {
    const c = new VerifyCluster(path.resolve(o.baseDir));
    const aliases = await loopbackAliasesWork();
    const host = (i: number): string => (aliases ? `127.0.0.${o.hostBase + i}` : '127.0.0.1');
    const port = (base: number, i: number): number => base + o.portOffset + (aliases ? 0 : i);
    const masterCount = o.masters ?? 1;
    const masterRpc = Array.from({ length: masterCount }, (_, i) => `${host(i)}:${port(STANDARD_PORTS.masterRpc, i)}`).join(',');
    // A TLS cluster (--certs_dir among the flags): consoles speak https, verified against its CA.
    const certsDir = [...(o.masterFlags ?? []), ...(o.tserverFlags ?? [])].filter((a) => a.startsWith('--certs_dir=')).pop()?.slice('--certs_dir='.length);
    const scheme = certsDir ? 'https' : 'http';
    if (certsDir) trustConsoleCa(fs.readFileSync(path.join(certsDir, 'ca.crt')));
    const mk = (role: 'master' | 'tserver', i: number, rpc: number, web: number, flags: string[]): VerifyServer => {
      const name = role === 'master' ? `m${i}` : `t${i}`;
      const dataDir = path.join(c.baseDir, name);
      const rpcAddress = `${host(i)}:${port(rpc, i)}`;
      const common = [`--rpc_bind_addresses=${rpcAddress}`, `--webserver_port=${port(web, i)}`, `--fs_data_dirs=${dataDir}`, ...LAB_SERVER_FLAGS];
      const argv = role === 'master' ? ['master', `--master_addresses=${masterRpc}`, ...common, ...flags] : ['tserver', `--tserver_master_addrs=${masterRpc}`, ...common, ...flags];
      return { role, node: i, name, rpcAddress, webUrl: `${scheme}://${host(i)}:${port(web, i)}`, dataDir, logFile: path.join(c.baseDir, `${name}.log`), argv, paused: false, consoleToken: consoleTokenOf(argv) };
    };
    for (let i = 0; i < masterCount; i++) c.servers.push(mk('master', i, STANDARD_PORTS.masterRpc, STANDARD_PORTS.masterWeb, o.masterFlags ?? []));
    for (let i = 0; i < o.tservers; i++) c.servers.push(mk('tserver', i, STANDARD_PORTS.tserverRpc, STANDARD_PORTS.tserverWeb, o.tserverFlags ?? []));
    return c;
  }

  get masterAddresses(): string[] {
    return this.servers.filter((s) => s.role === 'master').map((s) => s.rpcAddress);
  }
  connectOptions(): VerifyConnectOptions {
    // Servers run with a cluster secret (--server_flag cluster_secret_file=F): the workload's clients prove it too.
    const secretArg = this.servers[0]?.argv.filter((a) => a.startsWith('--cluster_secret_file=')).pop();
    const secret = secretArg?.slice('--cluster_secret_file='.length);
    const certsDir = this.servers[0]?.argv.filter((a) => a.startsWith('--certs_dir=')).pop()?.slice('--certs_dir='.length);
    return { masterAddresses: this.masterAddresses, ...(secret ? { clusterSecretFile: secret } : {}), ...(certsDir ? { certsDir } : {}) };
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
    if (!this.signalsHooked) {
      this.signalsHooked = true;
      process.once('SIGINT', this.onSignal);
      process.once('SIGTERM', this.onSignal);
    }
    makeDirs(this.baseDir);
    const fd = fs.openSync(s.logFile, 'a');
    try {
      fs.writeSync(fd, `==== verify ${new Date().toISOString()}: starting ${s.name}\n`);
      s.child = spawn(process.execPath, [serverEntryPath('dist/cli/main.js'), ...s.argv], { stdio: ['ignore', fd, fd], env: serverEnv() });
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

  /** Running masters answer /healthz and their leader sees every running tserver alive. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    await waitVerifyHealthy({
      masterWebUrls: () => this.masters.filter((m) => this.isRunning(m)).map((m) => m.webUrl),
      tservers: () => this.tservers.filter((t) => this.isRunning(t)),
      gone: async () => {
        const s = this.servers.find((x) => x.child && !this.isRunning(x));
        return s ? `${s.name} exited (${String(s.child!.exitCode ?? s.child!.signalCode)}); see ${s.logFile}` : undefined;
      },
      timeoutMs,
      where: this.baseDir,
    });
  }

  /** Set a run-time flag on one server: console first, admin RPC for a tserver without one. */
  async setFlag(s: VerifyServer, name: string, value: string, rpc: RpcClient): Promise<void> {
    await setServerFlag(s, name, value, rpc);
  }

  /** Cut the given nodes off from the rest both ways (empty = heal) through TEST_drop_traffic_peers. */
  async isolate(nodes: number[], rpc: RpcClient): Promise<void> {
    const all = this.servers.map((s) => ({ node: `n${s.node}`, role: s.role, rpcAddress: s.rpcAddress, rec: s }));
    const lists = partitionDropLists(all, nodes.map((n) => `n${n}`));
    const errors: string[] = [];
    await Promise.all(
      all.map(async (a, i) => {
        if (!this.isRunning(a.rec) || a.rec.paused) return;
        try {
          await this.setFlag(a.rec, DROP_TRAFFIC_FLAG, lists[i]!.peers, rpc);
        } catch (e) {
          errors.push(`${a.rec.name}: ${(e as Error).message}`);
        }
      }),
    );
    if (errors.length) throw new DbError(ErrorCode.INTERNAL, `partition skipped: could not set ${DROP_TRAFFIC_FLAG}: ${errors.join('; ')}`);
  }

  faultNote(_kind: NemesisKind, _servers: readonly VerifyServer[]): string | undefined {
    return undefined;
  }

  async settle(rpc: RpcClient, timeoutMs: number): Promise<string | undefined> {
    for (const s of this.servers) this.resume(s);
    for (const s of this.servers) if (!this.isRunning(s)) this.start(s);
    await this.waitHealthy(timeoutMs);
    // The drop lists are flags on the servers: they must be up to take the empty list.
    return this.isolate([], rpc).then(
      () => undefined,
      (e: Error) => `heal: ${e.message}`,
    );
  }

  async destroy(keepData: boolean): Promise<void> {
    await Promise.all(this.servers.map((s) => this.kill9(s)));
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    this.signalsHooked = false;
    if (!keepData) for (const s of this.servers) fs.rmSync(s.dataDir, { recursive: true, force: true });
  }
}
