/**
 * `tessera start` (like yugabyted): a local cluster of child processes under one base directory.
 * Node i runs on 127.0.0.(hostBase+i) with the standard ports when loopback aliases work, otherwise
 * on 127.0.0.1 with ports shifted by i. The plan is saved in BASE/cluster.json on the first start and
 * reused afterwards, so the same data directories come back on the same addresses (data survives
 * stop/start). The supervisor (the `tessera start` process) records its pid and the children's pids
 * there so `tessera status` / `stop` / `destroy` from another terminal find them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DbError, ErrorCode } from '../common/errors';
import { isHealthy } from '../lab/console-http';
import { probeReadiness } from '../lab/health-wait';
import { loopbackAliasesWork } from '../lab/process-addressing';
import { LAB_SERVER_FLAGS } from '../lab/flag-setter';
import { makeDirs } from '../common/fs-dirs';
import { serverEnv } from '../common/server-env';

export const STATE_FILE = 'cluster.json';
const STATE_VERSION = 1;
export const STOP_GRACE_MS = 10_000;
const HEALTH_POLL_MS = 200;

export function defaultBaseDir(): string {
  return path.join(os.homedir(), 'var', 'tessera');
}

export interface ServerPlan {
  role: 'master' | 'tserver';
  node: number;
  rpcAddress: string;
  webAddress: string;
  dataDir: string;
  logFile: string;
  argv: string[];
  /** A tserver's SQL endpoint (PostgreSQL protocol); absent in plans saved before it existed. */
  pgAddress?: string;
  pid?: number;
}

export interface ClusterState {
  version: number;
  baseDir: string;
  nodes: number;
  masters: number;
  masterAddresses: string;
  servers: ServerPlan[];
  supervisorPid?: number;
}

export interface StartOptions {
  baseDir: string;
  nodes: number;
  masters: number;
  hostBase: number;
  portOffset: number;
  masterFlags: Array<[string, string]>;
  tserverFlags: Array<[string, string]>;
  nodeFlags: Map<number, Array<[string, string]>>;
}

export function readState(baseDir: string): ClusterState | undefined {
  const f = path.join(baseDir, STATE_FILE);
  if (!fs.existsSync(f)) return undefined;
  const v = JSON.parse(fs.readFileSync(f, 'utf8')) as ClusterState;
  if (v.version !== STATE_VERSION) throw new DbError(ErrorCode.CORRUPTION, `${f} has version ${String(v.version)}, expected ${STATE_VERSION}`);
  return v;
}

export function writeState(st: ClusterState): void {
  const f = path.join(st.baseDir, STATE_FILE);
  fs.writeFileSync(f + '.tmp', JSON.stringify(st, null, 2));
  fs.renameSync(f + '.tmp', f);
}

export function pidAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // An exited process its parent has not reaped yet (a zombie) still answers signal 0.
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc (macOS): trust the signal
  }
}

const flagArgs = (fl: Array<[string, string]>): string[] => fl.map(([k, v]) => `--${k}=${v}`);

export async function planCluster(o: StartOptions): Promise<ClusterState> {
  if (!Number.isInteger(o.nodes) || o.nodes < 1 || o.nodes > 20) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--nodes must be between 1 and 20');
  if (o.masters !== 1 && o.masters !== 3) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--masters must be 1 or 3');
  if (o.masters > o.nodes) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--masters ${o.masters} needs at least as many --nodes`);
  const aliases = await loopbackAliasesWork();
  const host = (i: number): string => (aliases ? `127.0.0.${o.hostBase + i}` : '127.0.0.1');
  const port = (base: number, i: number): number => base + o.portOffset + (aliases ? 0 : i);
  const masterAddresses = Array.from({ length: o.masters }, (_, i) => `${host(i)}:${port(7100, i)}`).join(',');
  const rf = Math.min(3, o.nodes);
  const servers: ServerPlan[] = [];
  for (let i = 0; i < o.nodes; i++) {
    const nodeDir = path.join(o.baseDir, `node-${i}`);
    const nodeFlags = flagArgs(o.nodeFlags.get(i) ?? []);
    if (i < o.masters) {
      const dataDir = path.join(nodeDir, 'master');
      servers.push({
        role: 'master',
        node: i,
        rpcAddress: `${host(i)}:${port(7100, i)}`,
        webAddress: `${host(i)}:${port(7000, i)}`,
        dataDir,
        logFile: path.join(nodeDir, 'master.log'),
        argv: ['master', `--master_addresses=${masterAddresses}`, `--rpc_bind_addresses=${host(i)}:${port(7100, i)}`, `--webserver_port=${port(7000, i)}`, `--fs_data_dirs=${dataDir}`, `--replication_factor=${rf}`, ...LAB_SERVER_FLAGS, ...flagArgs(o.masterFlags)],
      });
    }
    const dataDir = path.join(nodeDir, 'tserver');
    servers.push({
      role: 'tserver',
      node: i,
      rpcAddress: `${host(i)}:${port(9100, i)}`,
      webAddress: `${host(i)}:${port(9000, i)}`,
      dataDir,
      logFile: path.join(nodeDir, 'tserver.log'),
      pgAddress: `${host(i)}:${port(5433, i)}`,
      argv: ['tserver', `--tserver_master_addrs=${masterAddresses}`, `--rpc_bind_addresses=${host(i)}:${port(9100, i)}`, `--webserver_port=${port(9000, i)}`, `--fs_data_dirs=${dataDir}`, `--pgsql_proxy_bind_address=${host(i)}:${port(5433, i)}`, ...LAB_SERVER_FLAGS, ...flagArgs(o.tserverFlags), ...nodeFlags],
    });
  }
  return { version: STATE_VERSION, baseDir: o.baseDir, nodes: o.nodes, masters: o.masters, masterAddresses, servers };
}

export function spawnServer(s: ServerPlan, cliEntry: string): ChildProcess {
  makeDirs(path.dirname(s.logFile));
  makeDirs(s.dataDir);
  const fd = fs.openSync(s.logFile, 'a');
  try {
    fs.writeSync(fd, `==== ${new Date().toISOString()} starting ${s.role}: ${s.argv.join(' ')}\n`);
    const child = spawn(process.execPath, [cliEntry, ...s.argv], { stdio: ['ignore', fd, fd], env: serverEnv() });
    if (child.pid === undefined) throw new DbError(ErrorCode.INTERNAL, `could not start ${s.role} of node ${s.node}`);
    s.pid = child.pid;
    return child;
  } finally {
    fs.closeSync(fd);
  }
}

/** Wait until every master console is healthy and the leader master sees every tserver alive. */
export async function waitHealthy(st: ClusterState, timeoutMs: number, gone: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const masters = st.servers.filter((s) => s.role === 'master');
  const tservers = st.servers.filter((s) => s.role === 'tserver');
  let why = 'masters not answering';
  while (Date.now() < deadline) {
    const g = gone();
    if (g) throw new DbError(ErrorCode.SERVER_EXITED, g);
    const healthy = await Promise.all(masters.map((m) => isHealthy(`http://${m.webAddress}`)));
    if (healthy.every(Boolean)) {
      const probe = await probeReadiness(masters.map((m) => `http://${m.webAddress}`));
      if (probe.aliveAddresses) {
        const alive = new Set(probe.aliveAddresses);
        if (tservers.every((t) => alive.has(t.rpcAddress))) return;
        why = `${tservers.filter((t) => alive.has(t.rpcAddress)).length} of ${tservers.length} tablet servers registered`;
      } else {
        why = 'no master answered as the leader';
      }
    }
    await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
  }
  throw new DbError(ErrorCode.TIMED_OUT, `cluster not healthy within ${timeoutMs} ms (${why}); see the logs under ${st.baseDir}`);
}

/** SIGTERM, then SIGKILL after the grace period; resolves when every pid is gone. */
export async function stopPids(pids: number[], graceMs = STOP_GRACE_MS): Promise<void> {
  const live = pids.filter(pidAlive);
  for (const p of live) {
    try {
      process.kill(p, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const until = Date.now() + graceMs;
  while (Date.now() < until && live.some(pidAlive)) await new Promise((r) => setTimeout(r, 100));
  for (const p of live) {
    if (!pidAlive(p)) continue;
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // raced with its exit
    }
  }
  const hard = Date.now() + 5000;
  while (Date.now() < hard && live.some(pidAlive)) await new Promise((r) => setTimeout(r, 50));
}
