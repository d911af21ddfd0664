/**
 * The process driver: each node's servers run as detached local processes (they outlive the
 * `tessera lab up` that started them), log to BASE/nI/{master,tserver}.log and keep data in
 * BASE/nI/{master,tserver}/. Faults are signals: kill = SIGKILL, pause/resume = SIGSTOP/SIGCONT.
 * A partition is the run-time flag TEST_drop_traffic_peers set on every server (partition-plan.ts);
 * it is in memory only, so the driver sets it again on servers it starts or resumes.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common';
import { type ClusterSpec, type NodeName, nodeName, type ServerRole, validateSpec } from './cluster-spec';
import type { ClusterDriver, DownOptions, FlagSetResult, LabStatus, NodeAddresses, RoleSelector, ServerStatus } from './cluster-driver';
import { getJson, isHealthy, masterRaftRole } from './console-http';
import { consoleTokenOf, LAB_SERVER_FLAGS, setFlagOnServers } from './flag-setter';
import { type HealthTarget, waitAllHealthy } from './health-wait';
import { addressesOf, addStatusFigures, hostPort, LabDriverBase, labServerFlags, setDropLists } from './lab-driver-base';
import { assertNoOldData, type LabState, type NodeRecord, type ServerRecord, LAB_STATE_VERSION, readLabState, serversOf, writeLabState } from './lab-state';
import { tailFile } from './log-tail';
import { packageRoot, serverEntryPath } from './package-root';
import { planPartition } from './partition-plan';
import { assertAddressesFree, loopbackAliasesWork, planProcessNodes } from './process-addressing';
import { processState, signal } from './process-table';
import { waitUntil } from './wait-until';
import { makeDirs } from '../common/fs-dirs';
import { serverEnv } from '../common/server-env';

/** How long a SIGSTOP / SIGCONT may take to show in /proc before pause / resume fail. */
const SIGNAL_TAKE_HOLD_MS = 5_000;

/** A SIGTERM'd server gets this long to exit before SIGKILL. */
export const STOP_GRACE_MS = 10_000;
/** Bound on waiting for a SIGKILL'd process to disappear. */
export const KILL_WAIT_MS = 5_000;

export class ProcessDriver extends LabDriverBase implements ClusterDriver {
  readonly kind = 'process' as const;
  /** Exit reasons of servers this process spawned (pid -> text), for a precise "did not come up". */
  private readonly exits = new Map<number, string>();

  /** The driver of a lab an earlier invocation started in baseDir. */
  static open(baseDir: string): ProcessDriver {
    const st = readLabState(baseDir);
    if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no lab in ${path.resolve(baseDir)} (no lab.json); start one with tessera lab up`);
    return new ProcessDriver(st);
  }

  async up(spec: ClusterSpec): Promise<NodeAddresses[]> {
    validateSpec(spec);
    const prev = readLabState(spec.baseDir);
    if (prev && prev.nodes.some((n) => serversOf(n).some((s) => processState(s.pid, dataDirArg(s)) !== 'stopped'))) {
      throw new DbError(ErrorCode.ALREADY_EXISTS, `a lab is already up in ${spec.baseDir}; run tessera lab down --base_dir ${spec.baseDir} first`);
    }
    serverEntryPath(spec.serverEntry);
    const plans = planProcessNodes(spec, await loopbackAliasesWork());
    const masterAddrs = plans.slice(0, spec.masters).map((p) => `${p.host}:${p.masterRpcPort}`).join(',');
    const nodes: NodeRecord[] = plans.map((p, i) => {
      const name = nodeName(i);
      const dir = path.join(spec.baseDir, name);
      const flags = labServerFlags(spec, name, masterAddrs);
      const rec: NodeRecord = { name, index: i, tserver: serverRecord('tserver', dir, p.host, p.tserverRpcPort, p.tserverWebPort, flags.tserver) };
      if (i < spec.masters) rec.master = serverRecord('master', dir, p.host, p.masterRpcPort, p.masterWebPort, flags.master);
      return rec;
    });
    for (const n of nodes) for (const s of serversOf(n)) assertNoOldData(s.dataDir);
    await assertAddressesFree(
      nodes.flatMap((n) => serversOf(n)).flatMap((s) => [hostPort(s.rpcAddress), hostPort(new URL(s.webUrl).host)]),
    );
    this.state = { version: LAB_STATE_VERSION, createdAt: new Date().toISOString(), spec, nodes, partitioned: [] };
    // Saved before spawning: if this invocation dies half-way, `lab down` still finds what it started.
    writeLabState(this.state);
    try {
      for (const n of nodes) for (const s of serversOf(n)) this.spawnServer(s);
      writeLabState(this.state);
      await this.waitLabReady(nodes, spec, (n, s) => this.healthTarget(n, s));
    } catch (e) {
      await this.terminate(nodes.flatMap((n) => serversOf(n)));
      this.dropState(spec.baseDir);
      throw e;
    }
    return this.addresses();
  }

  async down(opts: DownOptions = {}): Promise<void> {
    const st = this.need();
    await this.terminate(st.nodes.flatMap((n) => serversOf(n)));
    this.forget(st, opts);
  }

  async status(): Promise<LabStatus> {
    const st = this.need();
    const nodes = await Promise.all(
      st.nodes.map(async (n) => ({
        name: n.name,
        index: n.index,
        partitioned: st.partitioned.includes(n.name),
        servers: await Promise.all(
          serversOf(n).map(async (s): Promise<ServerStatus> => {
            const state = processState(s.pid, dataDirArg(s));
            const healthy = state === 'running' && (await isHealthy(s.webUrl));
            return { ...addressesOf(s), state, healthy, ...(state !== 'stopped' && s.pid ? { pid: s.pid } : {}) };
          }),
        ),
      })),
    );
    await Promise.all(
      nodes
        .flatMap((n) => n.servers)
        .filter((s) => s.role === 'master' && s.healthy)
        .map(async (s) => {
          const role = await masterRaftRole(s.webUrl);
          if (role) s.raftRole = role;
        }),
    );
    await addStatusFigures(nodes);
    return { driver: 'process', baseDir: st.spec.baseDir, nodes, partitioned: [...st.partitioned], cutLinks: [...(st.cutLinks ?? [])] };
  }

  async setFlag(node: NodeName, name: string, value: string, force = false, role?: RoleSelector): Promise<FlagSetResult[]> {
    const n = this.node(node);
    return setFlagOnServers(this.select(n, role).map((s) => ({ node: n.name, role: s.role, webUrl: s.webUrl, token: consoleTokenOf(s.argv) })), name, value, force);
  }

  async kill(node: NodeName, role?: RoleSelector): Promise<void> {
    const servers = this.select(this.node(node), role);
    for (const s of servers) if (s.pid && processState(s.pid, dataDirArg(s)) !== 'stopped') signal(s.pid, 'SIGKILL');
    await this.waitStopped(servers, KILL_WAIT_MS);
  }

  async stop(node: NodeName, role?: RoleSelector): Promise<void> {
    await this.terminate(this.select(this.node(node), role));
  }

  async start(node: NodeName, role?: RoleSelector): Promise<void> {
    const st = this.need();
    const n = this.node(node);
    const started = this.select(n, role).filter((s) => processState(s.pid, dataDirArg(s)) === 'stopped');
    for (const s of started) this.spawnServer(s);
    writeLabState(st);
    await waitAllHealthy(started.map((s) => this.healthTarget(n, s)), st.spec.healthTimeoutMs);
    await this.applyPartition(started);
  }

  async restart(node: NodeName, role?: RoleSelector): Promise<void> {
    await this.stop(node, role);
    await this.start(node, role);
  }

  async pause(node: NodeName, role?: RoleSelector): Promise<void> {
    await this.signalAndWait(this.select(this.node(node), role), 'running', 'SIGSTOP', 'paused');
  }

  async resume(node: NodeName, role?: RoleSelector): Promise<void> {
    const servers = this.select(this.node(node), role);
    await this.signalAndWait(servers, 'paused', 'SIGCONT', 'running');
    // A server paused while a partition was set may have missed the flag.
    await this.applyPartition(servers);
  }

  /**
   * Send `sig` to every server in state `from`, then wait until they show `to`: the kernel delivers
   * SIGSTOP/SIGCONT asynchronously (later on a busy machine), and callers read the state right after.
   */
  private async signalAndWait(servers: ServerRecord[], from: 'running' | 'paused', sig: NodeJS.Signals, to: 'running' | 'paused'): Promise<void> {
    const sent = servers.filter((s) => s.pid && processState(s.pid, dataDirArg(s)) === from);
    for (const s of sent) signal(s.pid!, sig);
    await this.waitForState(sent, to);
  }

  /** Wait (bounded) until every server shows `want` (or has exited); else a clear error. */
  private async waitForState(servers: ServerRecord[], want: 'paused' | 'running'): Promise<void> {
    const deadline = Date.now() + SIGNAL_TAKE_HOLD_MS;
    for (;;) {
      const late = servers.filter((s) => s.pid && !['stopped', want].includes(processState(s.pid, dataDirArg(s))));
      if (late.length === 0) return;
      if (Date.now() > deadline) {
        throw new DbError(ErrorCode.TIMED_OUT, `${late.map((s) => s.role).join(', ')} not ${want} ${SIGNAL_TAKE_HOLD_MS} ms after the signal`, { pids: late.map((s) => s.pid) });
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async partition(nodes: NodeName[], from?: NodeName[]): Promise<void> {
    const st = this.need();
    const plan = planPartition(nodes, from, st.spec.nodes);
    st.partitioned = plan.partitioned;
    st.cutLinks = plan.cutLinks;
    await this.applyPartition(st.nodes.flatMap((n) => serversOf(n)));
    writeLabState(st);
  }

  async heal(): Promise<void> {
    const st = this.need();
    st.partitioned = [];
    st.cutLinks = [];
    await this.applyPartition(st.nodes.flatMap((n) => serversOf(n)));
    writeLabState(st);
  }

  async logs(node: NodeName, lines: number): Promise<string> {
    const n = this.node(node);
    return serversOf(n)
      .map((s) => `==> ${n.name} ${s.role} (${s.logFile ?? '?'}) <==\n${s.logFile ? tailFile(s.logFile, lines).join('\n') : ''}`)
      .join('\n');
  }

  // ---- internals ----

  protected need(): LabState {
    if (!this.state) throw new DbError(ErrorCode.NOT_FOUND, 'no lab is up (run tessera lab up)');
    return this.state;
  }

  /** Consoles of local processes are reachable in every state but paused/stopped (a partition drops Raft traffic only). */
  async consoleJson(node: NodeName, role: ServerRole, pathAndQuery: string, timeoutMs = 3_000): Promise<unknown> {
    const s = this.select(this.node(node), role)[0];
    if (!s) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${node} runs no ${role}`);
    return getJson(`${s.webUrl}${pathAndQuery}`, timeoutMs);
  }

  private select(n: NodeRecord, role: RoleSelector): ServerRecord[] {
    if (role === 'master' && !n.master) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} runs no master`);
    return serversOf(n).filter((s) => role === undefined || s.role === role);
  }

  private spawnServer(s: ServerRecord): void {
    const entry = serverEntryPath(this.need().spec.serverEntry);
    makeDirs(s.dataDir, 'data directory');
    const log = s.logFile!;
    const fd = fs.openSync(log, 'a');
    try {
      fs.writeSync(fd, `==== tessera lab ${new Date().toISOString()}: starting ${s.role}: ${process.execPath} ${entry} ${s.argv.join(' ')}\n`);
      const child = spawn(process.execPath, [entry, ...s.argv], { detached: true, stdio: ['ignore', fd, fd], cwd: packageRoot(), env: serverEnv() });
      const pid = child.pid;
      if (pid === undefined) throw new DbError(ErrorCode.INTERNAL, `could not start ${s.role} (${entry})`);
      child.on('exit', (code, sig) => this.exits.set(pid, sig ? `was killed by ${sig}` : `exited with status ${String(code)}`));
      child.on('error', (e) => this.exits.set(pid, `failed to start: ${e.message}`));
      // Detached and unref'd: the server outlives this CLI invocation.
      child.unref();
      s.pid = pid;
    } finally {
      fs.closeSync(fd);
    }
  }

  private healthTarget(n: NodeRecord, s: ServerRecord): HealthTarget {
    const pid = s.pid;
    return {
      node: n.name,
      role: s.role,
      webUrl: s.webUrl,
      gone: async () => {
        if (pid !== undefined && this.exits.has(pid)) return this.exits.get(pid);
        return processState(pid, dataDirArg(s)) === 'stopped' ? 'exited before becoming healthy' : undefined;
      },
      logTail: async (lines) => (s.logFile ? tailFile(s.logFile, lines) : []),
    };
  }

  /** SIGTERM (and SIGCONT, so a paused server can act on it), then SIGKILL what is left after the grace period. */
  private async terminate(servers: ServerRecord[]): Promise<void> {
    const live = servers.filter((s) => s.pid && processState(s.pid, dataDirArg(s)) !== 'stopped');
    for (const s of live) {
      signal(s.pid!, 'SIGTERM');
      signal(s.pid!, 'SIGCONT');
    }
    try {
      await this.waitStopped(live, STOP_GRACE_MS);
    } catch {
      for (const s of live) if (processState(s.pid, dataDirArg(s)) !== 'stopped') signal(s.pid!, 'SIGKILL');
      await this.waitStopped(live, KILL_WAIT_MS);
    }
  }

  private async waitStopped(servers: ServerRecord[], timeoutMs: number): Promise<void> {
    await waitUntil(async () => servers.every((s) => processState(s.pid, dataDirArg(s)) === 'stopped'), {
      timeoutMs,
      intervalMs: 50,
      what: `${servers.map((s) => `${s.role} pid ${String(s.pid)}`).join(', ')} to exit`,
    });
  }

  /** Sets each given running server's drop list for the current partition (all '' when healed). */
  private async applyPartition(targets: ServerRecord[]): Promise<void> {
    const st = this.need();
    const wanted = new Set(targets);
    await setDropLists(st, {
      partitioned: st.partitioned,
      include: async (_n, s) => wanted.has(s) && processState(s.pid, dataDirArg(s)) === 'running',
      token: (s) => consoleTokenOf(s.argv),
    });
  }
}

function serverRecord(role: 'master' | 'tserver', nodeDir: string, host: string, rpcPort: number, webPort: number, flags: string[]): ServerRecord {
  const dataDir = path.join(nodeDir, role);
  const rpcAddress = `${host}:${rpcPort}`;
  return {
    role,
    rpcAddress,
    hostRpcAddress: rpcAddress,
    webUrl: `http://${host}:${webPort}`,
    argv: [role, `--rpc_bind_addresses=${rpcAddress}`, `--webserver_port=${webPort}`, `--fs_data_dirs=${dataDir}`, ...LAB_SERVER_FLAGS, ...flags],
    dataDir,
    logFile: path.join(nodeDir, `${role}.log`),
  };
}

/** The argv element that identifies a server's process (see processState). */
function dataDirArg(s: ServerRecord): string {
  return `--fs_data_dirs=${s.dataDir}`;
}
