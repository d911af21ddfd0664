/**
 * The Docker driver (through dockerode): one bridge network per lab (tessera-lab-<id> by default, a /24
 * subnet so nodes keep fixed addresses across partition and heal; the name prefix and the 10.213 range
 * are options, so tessera verify keeps its labs apart), one container per node (hostname and network
 * alias nI, PID 1 = node-supervisor running the node's master and tserver), the node's folder
 * BASE/nI bind-mounted at /data, flags on the command line. Ports published on 127.0.0.1:
 * master web 7000+offset+i, tserver web 9000+offset+i, master RPC 7100+offset+i, tserver RPC
 * 9100+offset+i (offset defaults to 10000: n0's tserver console is http://127.0.0.1:19000).
 * Faults: kill/stop/start/restart/pause/resume act on the whole container (pause = docker pause);
 * with a role they act on that server alone (signalled inside the container: SIGKILL/SIGTERM, and
 * SIGSTOP/SIGCONT for pause/resume; the supervisor starts it again on SIGUSR2), unless it is the
 * container's only server. Status reads each server's own process state inside a running container
 * (container-freeze-plan.ts). Partition disconnects each named container from the lab network (it
 * then reaches nobody and nobody reaches it, nor its published ports); heal reconnects it with its old address. Consoles
 * listen on every interface of their container, so consoleJson can read a cut-off node from inside.
 * A host client reaches the servers through clientAddressMap (advertised nI:port -> published port).
 */
import { newSecretText } from '../rpc';
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DbError, ErrorCode } from '../common';
import { type ClusterSpec, dockerPublishAddress, type NodeName, nodeName, type ServerRole, validateSpec } from './cluster-spec';
import type { ClusterDriver, DownOptions, FlagSetResult, LabStatus, NodeAddresses, RoleSelector, ServerState, ServerStatus } from './cluster-driver';
import { getJson, isHealthy } from './console-http';
import { freezePlan, needsProcessStates, serverStatesIn } from './container-freeze-plan';
import { CONSOLE_GET_SCRIPT, parseRoleSignalReply, parseRoleStates, ROLE_STATES_SCRIPT, SIGNAL_ROLE_SCRIPT } from './docker-in-container';
import { EXEC_TIMEOUT_MS, type ExecResult, execInContainer } from './docker-exec';
import { demuxDockerFrames } from './docker-frames';
import { ensureLabImage } from './docker-image';
import { serverGoneProbe } from './docker-server-gone';
import { containerConsoleToken, containerServer, LAB_SECRET_FILE, writeLabSecret } from './docker-node-records';
import { DockerLabResources } from './docker-resources';
import { setFlagOnServers } from './flag-setter';
import { type HealthTarget, waitAllHealthy } from './health-wait';
import { addressesOf, addStatusFigures, hostPort, LabDriverBase, labServerFlags, setDropLists } from './lab-driver-base';
import { assertNoOldData, type DockerRecord, type LabState, LAB_STATE_VERSION, type NodeRecord, readLabState, type ServerRecord, serversOf, writeLabState } from './lab-state';
import { tailLines } from './log-tail';
import { SUPERVISOR_RESPAWN_SIGNAL } from './node-supervisor';
import { serverEntryPath } from './package-root';
import { planPartition } from './partition-plan';
import { assertAddressesFree, STANDARD_PORTS } from './process-addressing';
import { waitUntil } from './wait-until';

export type { ExecResult } from './docker-exec';

/** docker stop / restart: seconds before the engine SIGKILLs PID 1. */
export const DOCKER_STOP_TIMEOUT_S = 10;
/** A server stopped alone gets this long after SIGTERM before SIGKILL (inside the container). */
const ROLE_STOP_GRACE_MS = 8_000;

/** Network and container names start with this (tessera-lab-<labId>, tessera-lab-<labId>-n0, …). */
export const DEFAULT_DOCKER_NAME_PREFIX = 'tessera-lab';
/** The lab network is a /24 under this /16 (10.213.X.0/24, X from the lab id). */
export const DEFAULT_DOCKER_SUBNET_PREFIX = '10.213';

export interface DockerDriverOptions {
  docker?: Docker;
  onProgress?: (line: string) => void;
  /**
   * up(): prefix of the network and container names (default tessera-lab). Another user of the driver
   * (tessera verify) picks its own so its labs never meet a person's lab or the lab tests.
   */
  namePrefix?: string;
  /** up(): the first two octets of the lab network's /24 subnets (default 10.213). */
  subnetPrefix?: string;
}

export function labIdFor(baseDir: string): string {
  return crypto.createHash('sha256').update(path.resolve(baseDir)).digest('hex').slice(0, 8);
}

export class DockerDriver extends LabDriverBase implements ClusterDriver {
  readonly kind = 'docker' as const;
  private readonly docker: Docker;
  private readonly say: (line: string) => void;
  private readonly namePrefix: string;
  private readonly subnetPrefix: string;
  private readonly resources: DockerLabResources;

  constructor(state?: LabState, opts: DockerDriverOptions = {}) {
    super(state);
    this.docker = opts.docker ?? new Docker();
    this.say = opts.onProgress ?? ((l) => process.stderr.write(`${l}\n`));
    this.namePrefix = opts.namePrefix ?? DEFAULT_DOCKER_NAME_PREFIX;
    this.subnetPrefix = opts.subnetPrefix ?? DEFAULT_DOCKER_SUBNET_PREFIX;
    if (!/^[a-z0-9][a-z0-9_.-]{0,40}$/.test(this.namePrefix)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `docker name prefix '${this.namePrefix}' is not a valid container name start`);
    if (!/^\d{1,3}\.\d{1,3}$/.test(this.subnetPrefix)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `docker subnet prefix '${this.subnetPrefix}' must look like 10.213`);
    this.resources = new DockerLabResources({ docker: this.docker, say: this.say, subnetPrefix: this.subnetPrefix });
  }

  static open(baseDir: string, opts: DockerDriverOptions = {}): DockerDriver {
    const st = readLabState(baseDir);
    if (!st) throw new DbError(ErrorCode.NOT_FOUND, `no lab in ${path.resolve(baseDir)} (no lab.json); start one with tessera lab up --driver docker`);
    return new DockerDriver(st, opts);
  }

  /** Whether an engine answers, with the reason when not (for skip lines and clear errors). */
  static async engineReachable(docker = new Docker()): Promise<{ ok: true; version: string } | { ok: false; reason: string }> {
    try {
      const v = await docker.version();
      return { ok: true, version: v.Version };
    } catch (e) {
      return { ok: false, reason: (e as Error).message };
    }
  }

  async up(spec: ClusterSpec): Promise<NodeAddresses[]> {
    validateSpec(spec);
    const reach = await DockerDriver.engineReachable(this.docker);
    if (!reach.ok) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `Docker engine not reachable (${reach.reason}): install and start one (Debian: apt-get install -y docker.io && (dockerd >/var/log/dockerd.log 2>&1 &); or .ci/docker-setup.sh), or use --driver process`);
    if (readLabState(spec.baseDir)) {
      throw new DbError(ErrorCode.ALREADY_EXISTS, `a lab is already up in ${spec.baseDir}; run tessera lab down --base_dir ${spec.baseDir} first`);
    }
    // The image carries dist/: a missing entry would only show up as containers that exit at once.
    serverEntryPath(spec.serverEntry);
    const labId = labIdFor(spec.baseDir);
    await this.resources.removeLeftovers(labId);
    const image = await ensureLabImage({ docker: this.docker, baseImage: spec.baseImage, onProgress: this.say });
    const networkName = `${this.namePrefix}-${labId}`;
    const nodes: NodeRecord[] = [];
    const masterAddrs = Array.from({ length: spec.masters }, (_, i) => `${nodeName(i)}:${STANDARD_PORTS.masterRpc}`).join(',');
    // Servers in containers bind every interface, so they need the cluster secret (docs/security.md):
    // one per lab, a copy in each node's directory (bind-mounted at /data).
    const secretText = newSecretText();
    for (let i = 0; i < spec.nodes; i++) {
      const name = nodeName(i);
      const dir = path.join(spec.baseDir, name);
      const flags = labServerFlags(spec, name, masterAddrs, [`--cluster_secret_file=/data/${LAB_SECRET_FILE}`]);
      const rec: NodeRecord = {
        name,
        index: i,
        containerName: `${networkName}-${name}`,
        clusterSecretFile: writeLabSecret(dir, secretText),
        tserver: containerServer('tserver', name, dir, dockerPublishAddress(spec, i), flags.tserver),
      };
      if (i < spec.masters) rec.master = containerServer('master', name, dir, dockerPublishAddress(spec, i), flags.master);
      for (const s of serversOf(rec)) assertNoOldData(s.dataDir);
      nodes.push(rec);
    }
    await assertAddressesFree(nodes.flatMap((n) => serversOf(n)).flatMap((s) => [hostPort(s.hostRpcAddress), hostPort(new URL(s.webUrl).host)]));

    const docker: DockerRecord = { labId, networkName, subnet: '', image: image.tag, nodePath: image.nodePath };
    this.state = { version: LAB_STATE_VERSION, createdAt: new Date().toISOString(), spec, nodes, partitioned: [], docker };
    try {
      const net = await this.resources.createNetwork(labId, networkName, spec.baseDir);
      docker.networkId = net.id;
      docker.subnet = net.subnet;
      writeLabState(this.state);
      for (const n of nodes) {
        n.ip = `${net.subnet.slice(0, net.subnet.lastIndexOf('.'))}.${10 + n.index}`;
        this.say(`lab: creating container ${n.containerName} (${n.name}, ${n.ip})`);
        const c = await this.resources.createNodeContainer(n, spec, docker);
        n.containerId = c.id;
        writeLabState(this.state);
      }
      for (const n of nodes) await this.docker.getContainer(n.containerId!).start();
      this.say(`lab: ${nodes.length} container(s) started; waiting until every server answers /api/v1/healthz`);
      await this.waitLabReady(nodes, spec, (n, s) => this.healthTarget(n, s), this.say);
    } catch (e) {
      await this.resources.removeAll(this.state);
      this.dropState(spec.baseDir);
      throw e;
    }
    return this.addresses();
  }

  async down(opts: DownOptions = {}): Promise<void> {
    const st = this.need();
    await this.resources.removeAll(st);
    this.forget(st, opts);
  }

  /** The bearer token a node's server's console asks for changes (the lab's cluster secret), if any. */
  consoleToken(node: NodeName, role: ServerRole): string | undefined {
    const s = serversOf(this.node(node)).find((x) => x.role === role);
    return s ? containerConsoleToken(s) : undefined;
  }

  async status(): Promise<LabStatus> {
    const st = this.need();
    const nodes = await Promise.all(
      st.nodes.map(async (n) => {
        const container = await this.containerState(n);
        const roles = serversOf(n).map((s) => s.role);
        // A server killed or paused alone inside a running container is not running, whatever the container says.
        const states = serverStatesIn(container, roles, needsProcessStates(container, roles) ? await this.processStates(n, roles) : undefined);
        const servers = await Promise.all(
          serversOf(n).map(async (s): Promise<ServerStatus> => {
            const state = states[s.role];
            return { ...addressesOf(s), state, healthy: state === 'running' && (await this.serverHealthy(n, s)) };
          }),
        );
        return { name: n.name, index: n.index, servers, partitioned: st.partitioned.includes(n.name), ...(n.containerId ? { containerId: n.containerId.slice(0, 12) } : {}), ...(n.ip ? { ip: n.ip } : {}) };
      }),
    );
    await addStatusFigures(nodes);
    return { driver: 'docker', baseDir: st.spec.baseDir, nodes, partitioned: [...st.partitioned], cutLinks: [...(st.cutLinks ?? [])] };
  }

  async setFlag(node: NodeName, name: string, value: string, force = false, role?: RoleSelector): Promise<FlagSetResult[]> {
    const n = this.node(node);
    const servers = serversOf(n).filter((s) => role === undefined || s.role === role);
    if (servers.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} runs no ${String(role)}`);
    return setFlagOnServers(servers.map((s) => ({ node: n.name, role: s.role, webUrl: s.webUrl, token: containerConsoleToken(s) })), name, value, force);
  }

  async kill(node: NodeName, role?: RoleSelector): Promise<void> {
    const one = this.oneServer(node, role);
    if (one) return this.signalServer(one.n, one.s, 'SIGKILL');
    const n = this.wholeNode(node, role, 'kill');
    const c = this.docker.getContainer(n.containerId!);
    if ((await this.containerState(n)) !== 'stopped') await c.kill();
    await waitUntil(async () => (await this.containerState(n)) === 'stopped', { timeoutMs: 10_000, what: `container ${n.containerName} to die` });
  }

  async stop(node: NodeName, role?: RoleSelector): Promise<void> {
    const one = this.oneServer(node, role);
    if (one) return this.signalServer(one.n, one.s, 'SIGTERM');
    const n = this.wholeNode(node, role, 'stop');
    const state = await this.containerState(n);
    if (state === 'paused') await this.docker.getContainer(n.containerId!).unpause();
    if (state !== 'stopped') await this.docker.getContainer(n.containerId!).stop({ t: DOCKER_STOP_TIMEOUT_S });
  }

  async start(node: NodeName, role?: RoleSelector): Promise<void> {
    const one = this.oneServer(node, role);
    const n = one?.n ?? this.wholeNode(node, role, 'start');
    const container = await this.containerState(n);
    if (container === 'stopped') {
      // A stopped container starts with all its servers.
      await this.docker.getContainer(n.containerId!).start();
      await this.waitNodeHealthy(n);
      return this.reapplyLinks(n);
    }
    // As with local processes: start brings back stopped servers; a paused one is resumed, not started.
    if (container === 'paused') {
      this.say(`lab: ${n.name} is paused, not stopped: nothing to start (resume it)`);
      return;
    }
    // The container runs: start the servers in it that stopped alone (all of them, or the one named).
    const servers = one ? [one.s] : serversOf(n);
    const states = await this.processStates(n, servers.map((s) => s.role));
    const live: ServerRecord[] = [];
    for (const s of servers) {
      if (states?.[s.role] === 'paused') this.say(`lab: the ${s.role} of ${n.name} is paused, not stopped: nothing to start (resume it)`);
      else live.push(s);
    }
    if (live.length === 0) return;
    const respawnAtMs = Date.now();
    // A state not read (the exec failed) counts as stopped when the server does not answer.
    const stopped = async (s: ServerRecord): Promise<boolean> => states?.[s.role] === 'stopped' || (states?.[s.role] === undefined && !(await isHealthy(s.webUrl)));
    // The supervisor starts again whichever of its servers is not running (a running one is left alone).
    if ((await Promise.all(live.map(stopped))).some(Boolean)) await this.docker.getContainer(n.containerId!).kill({ signal: SUPERVISOR_RESPAWN_SIGNAL });
    await waitAllHealthy(live.map((s) => this.healthTarget(n, s, respawnAtMs)), this.need().spec.healthTimeoutMs);
    await this.reapplyLinks(n);
  }

  async restart(node: NodeName, role?: RoleSelector): Promise<void> {
    const one = this.oneServer(node, role);
    if (one) {
      await this.stop(node, role);
      return this.start(node, role);
    }
    const n = this.wholeNode(node, role, 'restart');
    if ((await this.containerState(n)) === 'paused') await this.docker.getContainer(n.containerId!).unpause();
    await this.docker.getContainer(n.containerId!).restart({ t: DOCKER_STOP_TIMEOUT_S });
    await this.waitNodeHealthy(n);
    await this.reapplyLinks(n);
  }

  /** docker pause of the node's container; with a role of a multi-server container, SIGSTOP to that server alone. */
  async pause(node: NodeName, role?: RoleSelector): Promise<void> {
    await this.freeze('pause', node, role);
  }

  /** docker unpause (and SIGCONT to each server of the container); with a role of several, SIGCONT to it alone. */
  async resume(node: NodeName, role?: RoleSelector): Promise<void> {
    await this.freeze('resume', node, role);
  }

  /**
   * Whole nodes: disconnected from the lab's network. With `from` (a partial partition), the links
   * between the two groups only: TEST_drop_traffic_peers on the servers at both ends (set through
   * their consoles, again after a start or restart), since a container is on the network or not.
   */
  async partition(nodes: NodeName[], from?: NodeName[]): Promise<void> {
    const st = this.need();
    const plan = planPartition(nodes, from, st.spec.nodes);
    await this.heal();
    if (plan.cutLinks.length > 0) {
      st.cutLinks = plan.cutLinks;
      writeLabState(st);
      await this.applyLinkDrops(st.nodes);
      return;
    }
    const net = this.docker.getNetwork(st.docker!.networkName);
    for (const name of plan.partitioned) {
      await net.disconnect({ Container: this.node(name).containerId!, Force: true });
      st.partitioned.push(name);
      writeLabState(st);
    }
  }

  async heal(): Promise<void> {
    const st = this.need();
    const net = this.docker.getNetwork(st.docker!.networkName);
    for (const name of [...st.partitioned]) {
      const n = this.node(name);
      await net.connect({ Container: n.containerId!, EndpointConfig: { IPAMConfig: { IPv4Address: n.ip! }, Aliases: [n.name] } });
      st.partitioned = st.partitioned.filter((x) => x !== name);
      writeLabState(st);
    }
    if ((st.cutLinks ?? []).length > 0) {
      st.cutLinks = [];
      writeLabState(st);
      await this.applyLinkDrops(st.nodes);
    }
  }

  /** Sets the drop list of the current cut links ('' when none) on the running servers of `targets`. */
  private async applyLinkDrops(targets: readonly NodeRecord[]): Promise<void> {
    const names = new Set(targets.map((n) => n.name));
    // Whole nodes are cut by disconnecting their containers, never by drop lists.
    await setDropLists(this.need(), { partitioned: [], include: async (n, s) => names.has(n.name) && (await isHealthy(s.webUrl)), token: containerConsoleToken });
  }

  /** After a start or restart of node `n`: its servers came up without the cut links' drop lists. */
  private async reapplyLinks(n: NodeRecord): Promise<void> {
    if ((this.need().cutLinks ?? []).length > 0) await this.applyLinkDrops([n]);
  }

  async logs(node: NodeName, lines: number): Promise<string> {
    const n = this.node(node);
    const raw = (await this.docker.getContainer(n.containerId!).logs({ stdout: true, stderr: true, tail: lines, follow: false })) as unknown as Buffer;
    return `==> ${n.name} container ${n.containerName} <==\n${demuxDockerFrames(raw)}`;
  }

  /**
   * GET a console JSON page of one server of the node (path like /api/v1/tablets). Through the
   * published port; while the node is partitioned (its published ports are gone with its network),
   * from inside its container on the container's loopback.
   */
  async consoleJson(node: NodeName, role: ServerRole, pathAndQuery: string, timeoutMs = 3_000): Promise<unknown> {
    const n = this.node(node);
    const s = serversOf(n).find((x) => x.role === role);
    if (!s) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} runs no ${role}`);
    if (!this.need().partitioned.includes(n.name)) return getJson(`${s.webUrl}${pathAndQuery}`, timeoutMs);
    const port = role === 'master' ? STANDARD_PORTS.masterWeb : STANDARD_PORTS.tserverWeb;
    const r = await this.exec(n.name, [this.nodePath(), '-e', CONSOLE_GET_SCRIPT, String(port), pathAndQuery, String(timeoutMs)], timeoutMs + EXEC_TIMEOUT_MS);
    if (r.exitCode !== 0) throw new DbError(ErrorCode.NETWORK_ERROR, `${n.name} ${role} console ${pathAndQuery} (read inside the container): ${r.output.trim().slice(-200)}`);
    try {
      return JSON.parse(r.output);
    } catch {
      throw new DbError(ErrorCode.NETWORK_ERROR, `${n.name} ${role} console ${pathAndQuery}: reply is not JSON`);
    }
  }

  /** Runs a command inside the node's container (e.g. [nodePath, '-e', '…']); bounded in time and output. */
  async exec(node: NodeName, cmd: string[], timeoutMs = EXEC_TIMEOUT_MS): Promise<ExecResult> {
    const n = this.node(node);
    return execInContainer(this.docker.getContainer(n.containerId!), n.name, cmd, timeoutMs);
  }

  /** The state of the node's container (running, paused, stopped), straight from the engine. */
  async nodeState(node: NodeName): Promise<ServerState> {
    return this.containerState(this.node(node));
  }

  /** The node's container name and its address on the lab network (for reports). */
  nodeContainer(node: NodeName): { containerName: string; ip: string; networkName: string } {
    const n = this.node(node);
    return { containerName: n.containerName ?? '', ip: n.ip ?? '', networkName: this.need().docker!.networkName };
  }

  /** The node binary inside the image, for exec. */
  nodePath(): string {
    return this.need().docker!.nodePath;
  }

  // ---- internals ----

  protected need(): LabState {
    if (!this.state) throw new DbError(ErrorCode.NOT_FOUND, 'no lab is up (run tessera lab up --driver docker)');
    if (!this.state.docker) throw new DbError(ErrorCode.INVALID_ARGUMENT, `the lab in ${this.state.spec.baseDir} is not a docker lab`);
    return this.state;
  }

  protected override node(name: NodeName): NodeRecord {
    const n = super.node(name);
    if (!n.containerId) throw new DbError(ErrorCode.NOT_FOUND, `node ${name} has no container`);
    return n;
  }

  private wholeNode(name: NodeName, role: RoleSelector, op: string): NodeRecord {
    const n = this.node(name);
    // A role that is the node's only server means the whole container (see oneServer).
    const only = serversOf(n);
    if (role !== undefined && !(only.length === 1 && only[0]!.role === role)) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `the docker driver can only ${op} a whole node (container), not its ${role} alone`);
    }
    return n;
  }

  /**
   * The server a role-targeted kill/stop/start acts on alone; undefined for the whole container
   * (no role given, or the role is the node's only server, whose end ends the container anyway).
   */
  private oneServer(name: NodeName, role: RoleSelector): { n: NodeRecord; s: ServerRecord } | undefined {
    if (role === undefined) return undefined;
    const n = this.node(name);
    const servers = serversOf(n);
    const s = servers.find((x) => x.role === role);
    if (!s) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} runs no ${role}`);
    return servers.length === 1 ? undefined : { n, s };
  }

  private async freeze(op: 'pause' | 'resume', node: NodeName, role: RoleSelector): Promise<void> {
    const n = this.node(node);
    const roles = serversOf(n).map((s) => s.role);
    if (role !== undefined && !roles.includes(role)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} runs no ${role}`);
    const c = this.docker.getContainer(n.containerId!);
    for (const step of freezePlan({ op, node: n.name, roles, role, container: await this.containerState(n) })) {
      if (step.type === 'docker-pause') await c.pause();
      else if (step.type === 'docker-unpause') await c.unpause();
      else {
        const pids = await this.signalRoles(n, step.roles, step.signal, 0);
        this.say(`lab: ${step.signal} to the ${step.roles.join(' and ')} of ${n.name} (pid ${pids.join(', ') || 'none: not running'} in its container)`);
      }
    }
  }

  /** Sends sig to the given servers' processes inside the running container; their pids. */
  private async signalRoles(n: NodeRecord, roles: readonly ServerRole[], sig: NodeJS.Signals, graceMs: number): Promise<number[]> {
    const r = await this.exec(n.name, [this.nodePath(), '-e', SIGNAL_ROLE_SCRIPT, roles.join(','), sig, String(graceMs)]);
    if (r.exitCode !== 0) throw new DbError(ErrorCode.INTERNAL, `${sig} to the ${roles.join(' and ')} of ${n.name} failed (exit ${r.exitCode}): ${r.output.slice(-300)}`);
    return parseRoleSignalReply(r.output, roles.join(',')).pids;
  }

  /**
   * Each given server's process state inside the node's running container (running, paused alone,
   * stopped alone); undefined when the container cannot be asked (it stopped or froze meanwhile).
   */
  private async processStates(n: NodeRecord, roles: readonly ServerRole[]): Promise<Partial<Record<ServerRole, ServerState>> | undefined> {
    try {
      const r = await this.exec(n.name, [this.nodePath(), '-e', ROLE_STATES_SCRIPT, '1', ...roles]);
      return r.exitCode === 0 ? parseRoleStates(r.output, roles) : undefined;
    } catch {
      return undefined;
    }
  }

  /** SIGKILL / SIGTERM one server inside its container and wait until it is gone. */
  private async signalServer(n: NodeRecord, s: ServerRecord, sig: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const state = await this.containerState(n);
    if (state === 'stopped') return;
    if (state === 'paused') throw new DbError(ErrorCode.INVALID_ARGUMENT, `node ${n.name} is paused; resume it before stopping its ${s.role} alone`);
    const r = await this.exec(n.name, [this.nodePath(), '-e', SIGNAL_ROLE_SCRIPT, s.role, sig, String(ROLE_STOP_GRACE_MS)]);
    // The node's last server gone, its supervisor (PID 1) exits and the container stops, taking the
    // exec with it (exit 137): the server is gone as asked.
    if (r.exitCode !== 0 && (await this.containerState(n)) === 'stopped') {
      this.say(`lab: ${sig} to the ${s.role} of ${n.name}: it was the last server running, container ${n.containerName} stopped`);
      return;
    }
    if (r.exitCode !== 0) throw new DbError(ErrorCode.INTERNAL, `signalling the ${s.role} of ${n.name} failed (exit ${r.exitCode}): ${r.output.slice(-300)}`);
    const { pids } = parseRoleSignalReply(r.output, s.role);
    this.say(`lab: ${sig} to the ${s.role} of ${n.name} (pid ${pids.join(', ') || 'none: not running'} in its container)`);
  }

  private async containerState(n: NodeRecord): Promise<ServerState> {
    try {
      const info = await this.docker.getContainer(n.containerId!).inspect();
      if (info.State.Paused) return 'paused';
      return info.State.Running ? 'running' : 'stopped';
    } catch {
      return 'stopped';
    }
  }

  /**
   * /api/v1/healthz answers: through the published port, or, while the node is partitioned (its
   * published ports are gone with its network), read inside its container (consoleJson).
   */
  private async serverHealthy(n: NodeRecord, s: ServerRecord): Promise<boolean> {
    if (!this.need().partitioned.includes(n.name)) return isHealthy(s.webUrl);
    try {
      return (await this.consoleJson(n.name, s.role, '/api/v1/healthz', 1_000)) !== undefined;
    } catch {
      return false;
    }
  }

  /**
   * `startedAtMs`: when this server was started alone inside a running container (SIGUSR2 to its
   * supervisor); otherwise the container's current run started it.
   */
  private healthTarget(n: NodeRecord, s: ServerRecord, startedAtMs = 0): HealthTarget {
    return {
      node: n.name,
      role: s.role,
      webUrl: s.webUrl,
      healthy: () => this.serverHealthy(n, s),
      gone: serverGoneProbe(this.docker.getContainer(n.containerId!), n, s.role, startedAtMs),
      logTail: async (lines) => tailLines(await this.logs(n.name, lines * 2), lines),
    };
  }

  private async waitNodeHealthy(n: NodeRecord): Promise<void> {
    await waitAllHealthy(serversOf(n).map((s) => this.healthTarget(n, s)), this.need().spec.healthTimeoutMs);
  }
}
