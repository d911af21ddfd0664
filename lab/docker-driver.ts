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
import * as fs from 'node:fs';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DbError, ErrorCode } from '../common';
import { type ClusterSpec, dockerPublishAddress, flagArgs, type NodeName, nodeIndex, nodeName, type ServerRole, validateSpec } from './cluster-spec';
import type { ClusterDriver, DownOptions, FlagSetResult, LabStatus, NodeAddresses, RoleSelector, ServerState, ServerStatus } from './cluster-driver';
import { getJson, isHealthy } from './console-http';
import { freezePlan, needsProcessStates, serverStatesIn } from './container-freeze-plan';
import { CONSOLE_GET_SCRIPT, parseRoleSignalReply, parseRoleStates, ROLE_STATES_SCRIPT, SIGNAL_ROLE_SCRIPT } from './docker-in-container';
import { demuxDockerFrames } from './docker-frames';
import { ensureLabImage } from './docker-image';
import { consoleTokenOf, LAB_SERVER_FLAGS, setFlagOnServers } from './flag-setter';
import { type HealthTarget, waitAllHealthy, waitClusterReady } from './health-wait';
import { IMAGE_APP_DIR } from './image-inputs';
import { assertNoOldData, type DockerRecord, type LabState, LAB_STATE_VERSION, type NodeRecord, readLabState, removeLabState, type ServerRecord, serversOf, writeLabState } from './lab-state';
import { tailLines } from './log-tail';
import { serverExitSince, SUPERVISOR_GROUP_SEPARATOR, SUPERVISOR_RESPAWN_SIGNAL } from './node-supervisor';
import { serverEntryPath } from './package-root';
import { DROP_TRAFFIC_FLAG, partitionDropLists, planPartition } from './partition-plan';
import { assertAddressesFree, STANDARD_PORTS } from './process-addressing';
import { addCallsInFlight } from './rpcz-calls';
import { tabletCountsFromMasters } from './tablet-counts';
import { waitUntil } from './wait-until';
import { makeDirs } from '../common/fs-dirs';

/** How often a health wait reads a running container's log for its server's exit line. */
const EXIT_CHECK_INTERVAL_MS = 1_000;

/** docker stop / restart: seconds before the engine SIGKILLs PID 1. */
export const DOCKER_STOP_TIMEOUT_S = 10;
/** Subnets tried for the lab network before giving up (another network may hold one). */
const SUBNET_TRIES_MAX = 16;
const EXEC_TIMEOUT_MS = 30_000;
const EXEC_OUTPUT_BYTES_MAX = 4 * 1024 * 1024;
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

export interface ExecResult {
  exitCode: number;
  output: string;
}

export function labIdFor(baseDir: string): string {
  return crypto.createHash('sha256').update(path.resolve(baseDir)).digest('hex').slice(0, 8);
}

export class DockerDriver implements ClusterDriver {
  readonly kind = 'docker' as const;
  private state: LabState | undefined;
  private readonly docker: Docker;
  private readonly say: (line: string) => void;
  private readonly namePrefix: string;
  private readonly subnetPrefix: string;

  constructor(state?: LabState, opts: DockerDriverOptions = {}) {
    this.state = state;
    this.docker = opts.docker ?? new Docker();
    this.say = opts.onProgress ?? ((l) => process.stderr.write(`${l}\n`));
    this.namePrefix = opts.namePrefix ?? DEFAULT_DOCKER_NAME_PREFIX;
    this.subnetPrefix = opts.subnetPrefix ?? DEFAULT_DOCKER_SUBNET_PREFIX;
    if (!/^[a-z0-9][a-z0-9_.-]{0,40}$/.test(this.namePrefix)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `docker name prefix '${this.namePrefix}' is not a valid container name start`);
    if (!/^\d{1,3}\.\d{1,3}$/.test(this.subnetPrefix)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `docker subnet prefix '${this.subnetPrefix}' must look like 10.213`);
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
    await this.removeLeftovers(labId);
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
      const secretFlag = `--cluster_secret_file=/data/${LAB_SECRET_FILE}`;
      const rec: NodeRecord = {
        name,
        index: i,
        containerName: `${networkName}-${name}`,
        clusterSecretFile: writeLabSecret(dir, secretText),
        tserver: containerServer('tserver', name, dir, dockerPublishAddress(spec, i), [`--tserver_master_addrs=${masterAddrs}`, `--lab_node_name=${name}`, secretFlag, ...flagArgs(spec.tserverFlags), ...flagArgs(spec.nodeFlags[name] ?? {})]),
      };
      if (i < spec.masters) {
        rec.master = containerServer('master', name, dir, dockerPublishAddress(spec, i), [`--master_addresses=${masterAddrs}`, secretFlag, ...flagArgs(spec.masterFlags), ...flagArgs(spec.nodeMasterFlags[name] ?? {})]);
      }
      for (const s of serversOf(rec)) assertNoOldData(s.dataDir);
      nodes.push(rec);
    }
    await assertAddressesFree(nodes.flatMap((n) => serversOf(n)).flatMap((s) => [hostPort(s.hostRpcAddress), hostPort(new URL(s.webUrl).host)]));

    const docker: DockerRecord = { labId, networkName, subnet: '', image: image.tag, nodePath: image.nodePath };
    this.state = { version: LAB_STATE_VERSION, createdAt: new Date().toISOString(), spec, nodes, partitioned: [], docker };
    try {
      const net = await this.createNetwork(labId, networkName, spec.baseDir);
      docker.networkId = net.id;
      docker.subnet = net.subnet;
      writeLabState(this.state);
      for (const n of nodes) {
        n.ip = `${net.subnet.slice(0, net.subnet.lastIndexOf('.'))}.${10 + n.index}`;
        this.say(`lab: creating container ${n.containerName} (${n.name}, ${n.ip})`);
        const c = await this.createNodeContainer(n, spec, docker);
        n.containerId = c.id;
        writeLabState(this.state);
      }
      for (const n of nodes) await this.docker.getContainer(n.containerId!).start();
      this.say(`lab: ${nodes.length} container(s) started; waiting until every server answers /api/v1/healthz`);
      await waitAllHealthy(nodes.flatMap((n) => serversOf(n).map((s) => this.healthTarget(n, s))), spec.healthTimeoutMs);
      this.say('lab: waiting until the master leader sees every tablet server');
      await waitClusterReady(nodes.filter((n) => n.master).map((n) => n.master!.webUrl), nodes.length, spec.healthTimeoutMs);
    } catch (e) {
      await this.removeAll(this.state);
      removeLabState(spec.baseDir);
      this.state = undefined;
      throw e;
    }
    return this.addresses();
  }

  async down(opts: DownOptions = {}): Promise<void> {
    const st = this.need();
    await this.removeAll(st);
    if (!opts.keepData) for (const n of st.nodes) for (const s of serversOf(n)) fs.rmSync(s.dataDir, { recursive: true, force: true });
    removeLabState(st.spec.baseDir);
    this.state = undefined;
  }

  addresses(): NodeAddresses[] {
    return this.need().nodes.map((n) => ({
      name: n.name,
      index: n.index,
      ...(n.master ? { master: addressesOf(n.master) } : {}),
      tserver: addressesOf(n.tserver),
      ...(n.clusterSecretFile !== undefined ? { clusterSecretFile: n.clusterSecretFile } : {}),
    }));
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
    const masters = nodes.flatMap((n) => n.servers).filter((s) => s.role === 'master' && s.healthy).map((s) => s.webUrl);
    const counts = await tabletCountsFromMasters(masters);
    for (const s of nodes.flatMap((n) => n.servers)) {
      const c = s.role === 'tserver' ? counts.get(s.rpcAddress) : undefined;
      if (c) Object.assign(s, c);
    }
    await addCallsInFlight(nodes.flatMap((n) => n.servers));
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
    const st = this.need();
    const all = st.nodes.flatMap((n) => serversOf(n).map((s) => ({ node: n.name, role: s.role, rpcAddress: s.rpcAddress, webUrl: s.webUrl, token: containerConsoleToken(s) })));
    const lists = partitionDropLists(all, [], st.cutLinks ?? []);
    const names = new Set(targets.map((n) => n.name));
    const failures: string[] = [];
    await Promise.all(
      all.map(async (a, i) => {
        if (!names.has(a.node) || !(await isHealthy(a.webUrl))) return;
        try {
          await setFlagOnServers([{ node: a.node, role: a.role, webUrl: a.webUrl, token: a.token }], DROP_TRAFFIC_FLAG, lists[i]!.peers, true);
        } catch (e) {
          failures.push(`${a.node} ${a.role}: ${(e as Error).message}`);
        }
      }),
    );
    if (failures.length) throw new DbError(ErrorCode.INTERNAL, `could not set ${DROP_TRAFFIC_FLAG} on every server: ${failures.join('; ')}`);
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
    const ex = await this.docker.getContainer(n.containerId!).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    const stream = await ex.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    let bytes = 0;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.destroy();
        reject(new DbError(ErrorCode.TIMED_OUT, `exec in ${n.name} did not finish within ${timeoutMs} ms: ${cmd.join(' ')}`));
      }, timeoutMs);
      stream.on('data', (c: Buffer) => {
        bytes += c.length;
        if (bytes <= EXEC_OUTPUT_BYTES_MAX) chunks.push(c);
      });
      stream.on('end', () => {
        clearTimeout(timer);
        resolve();
      });
      stream.on('error', (e: Error) => {
        clearTimeout(timer);
        reject(e);
      });
    });
    const info = await ex.inspect();
    return { exitCode: info.ExitCode ?? -1, output: demuxDockerFrames(Buffer.concat(chunks)) };
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

  private need(): LabState {
    if (!this.state) throw new DbError(ErrorCode.NOT_FOUND, 'no lab is up (run tessera lab up --driver docker)');
    if (!this.state.docker) throw new DbError(ErrorCode.INVALID_ARGUMENT, `the lab in ${this.state.spec.baseDir} is not a docker lab`);
    return this.state;
  }

  private node(name: NodeName): NodeRecord {
    const st = this.need();
    const n = st.nodes[nodeIndex(name, st.spec.nodes)]!;
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
    // A server that ends while the wait runs (a bad flag, a port in use) is gone even though its
    // container keeps running for the node's other server: its supervisor's exit line, stamped at or
    // after this server's start (the container run's, or startedAtMs), says so. Docker's log
    // timestamps tell it from the exits of earlier runs (a restart's stop, a kill before a start).
    let logsReadMs = 0;
    return {
      node: n.name,
      role: s.role,
      webUrl: s.webUrl,
      healthy: () => this.serverHealthy(n, s),
      gone: async () => {
        let sinceMs: number;
        try {
          const info = await this.docker.getContainer(n.containerId!).inspect();
          if (!info.State.Running) return `container ${n.containerName} exited with status ${info.State.ExitCode}`;
          sinceMs = Math.max(Date.parse(info.State.StartedAt), startedAtMs);
        } catch (e) {
          return `container ${String(n.containerName)} is gone (${(e as Error).message})`;
        }
        if (!Number.isFinite(sinceMs) || Date.now() - logsReadMs < EXIT_CHECK_INTERVAL_MS) return undefined;
        logsReadMs = Date.now();
        try {
          const raw = (await this.docker.getContainer(n.containerId!).logs({ stdout: true, stderr: true, timestamps: true, since: Math.floor(sinceMs / 1000), follow: false })) as unknown as Buffer;
          const exit = serverExitSince(demuxDockerFrames(raw), s.role, sinceMs);
          return exit === undefined ? undefined : `${exit} inside container ${n.containerName}, which keeps running for the node's other server`;
        } catch {
          return undefined; // the log not readable now: the next poll, or the timeout, decides
        }
      },
      logTail: async (lines) => tailLines(await this.logs(n.name, lines * 2), lines),
    };
  }

  private async waitNodeHealthy(n: NodeRecord): Promise<void> {
    await waitAllHealthy(serversOf(n).map((s) => this.healthTarget(n, s)), this.need().spec.healthTimeoutMs);
  }

  private async createNetwork(labId: string, name: string, baseDir: string): Promise<{ id: string; subnet: string }> {
    const first = parseInt(labId.slice(0, 2), 16);
    let lastErr: unknown;
    for (let k = 0; k < SUBNET_TRIES_MAX; k++) {
      const subnet = `${this.subnetPrefix}.${(first + k) % 256}.0/24`;
      try {
        const net = await this.docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] },
          Labels: { 'tessera.lab': labId, 'tessera.baseDir': baseDir },
        });
        this.say(`lab: network ${name} (${subnet})`);
        return { id: net.id, subnet: subnet.replace('/24', '') };
      } catch (e) {
        lastErr = e;
        if (!/overlap|in use|conflict/i.test((e as Error).message)) break;
      }
    }
    throw new DbError(ErrorCode.INTERNAL, `could not create network ${name}: ${(lastErr as Error).message}`);
  }

  private async createNodeContainer(n: NodeRecord, spec: ClusterSpec, d: DockerRecord): Promise<Docker.Container> {
    const servers = serversOf(n);
    const cmd = [`${IMAGE_APP_DIR}/dist/lab/node-supervisor.js`, `${IMAGE_APP_DIR}/${spec.serverEntry}`];
    servers.forEach((s, i) => {
      if (i > 0) cmd.push(SUPERVISOR_GROUP_SEPARATOR);
      cmd.push(...s.argv);
    });
    const exposed: Record<string, object> = {};
    const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
    for (const s of servers) {
      const std = s.role === 'master' ? [STANDARD_PORTS.masterWeb, STANDARD_PORTS.masterRpc] : [STANDARD_PORTS.tserverWeb, STANDARD_PORTS.tserverRpc];
      const host = [Number(new URL(s.webUrl).port), hostPort(s.hostRpcAddress).port];
      std.forEach((p, i) => {
        exposed[`${p}/tcp`] = {};
        bindings[`${p}/tcp`] = [{ HostIp: new URL(s.webUrl).hostname, HostPort: String(host[i]) }];
      });
    }
    const nodeDir = path.join(spec.baseDir, n.name);
    makeDirs(nodeDir, 'node directory');
    return this.docker.createContainer({
      name: n.containerName,
      Hostname: n.name,
      Image: d.image,
      Cmd: cmd,
      WorkingDir: IMAGE_APP_DIR,
      Labels: { 'tessera.lab': d.labId, 'tessera.node': n.name },
      ExposedPorts: exposed,
      HostConfig: { Binds: [`${nodeDir}:/data`], PortBindings: bindings, NetworkMode: d.networkName },
      NetworkingConfig: { EndpointsConfig: { [d.networkName]: { IPAMConfig: { IPv4Address: n.ip! }, Aliases: [n.name] } } },
    });
  }

  /** Containers and network of this lab; errors are collected so one failure does not leave the rest. */
  private async removeAll(st: LabState): Promise<void> {
    const errors: string[] = [];
    for (const n of st.nodes) {
      if (!n.containerId && !n.containerName) continue;
      try {
        await this.docker.getContainer(n.containerId ?? n.containerName!).remove({ force: true, v: true });
      } catch (e) {
        if (!/no such container|404/i.test((e as Error).message)) errors.push(`${n.name}: ${(e as Error).message}`);
      }
    }
    if (st.docker) {
      try {
        await this.docker.getNetwork(st.docker.networkName).remove();
      } catch (e) {
        if (!/not found|404/i.test((e as Error).message)) errors.push(`network: ${(e as Error).message}`);
      }
    }
    if (errors.length) throw new DbError(ErrorCode.INTERNAL, `lab down left something behind: ${errors.join('; ')}`);
  }

  /** Containers and the network of an earlier run of this lab id that died before writing lab.json. */
  private async removeLeftovers(labId: string): Promise<void> {
    const cs = await this.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${labId}`] }) });
    for (const c of cs) await this.docker.getContainer(c.Id).remove({ force: true, v: true });
    const nets = await this.docker.listNetworks({ filters: JSON.stringify({ label: [`tessera.lab=${labId}`] }) });
    for (const n of nets) await this.docker.getNetwork(n.Id).remove();
  }
}

function containerServer(role: ServerRole, node: NodeName, nodeDir: string, at: { host: string; bump: number }, flags: string[]): ServerRecord {
  const rpcStd = role === 'master' ? STANDARD_PORTS.masterRpc : STANDARD_PORTS.tserverRpc;
  const webStd = role === 'master' ? STANDARD_PORTS.masterWeb : STANDARD_PORTS.tserverWeb;
  return {
    role,
    rpcAddress: `${node}:${rpcStd}`,
    hostRpcAddress: `${at.host}:${rpcStd + at.bump}`,
    webUrl: `http://${at.host}:${webStd + at.bump}`,
    // The console listens on every interface of the container: published as before, and readable on
    // the container's loopback while a partition has taken its network away (consoleJson). RPC too,
    // broadcasting the node's name: a server (re)started while its container is cut off from the lab
    // network cannot resolve its own name (only that network's DNS knows it), so it could not bind it.
    argv: [role, `--rpc_bind_addresses=0.0.0.0:${rpcStd}`, `--server_broadcast_addresses=${node}:${rpcStd}`, `--webserver_port=${webStd}`, '--webserver_interface=0.0.0.0', `--fs_data_dirs=/data/${role}`, ...LAB_SERVER_FLAGS, ...flags],
    // The host side of the bind mount, for inspection.
    dataDir: path.join(nodeDir, role),
  };
}

/** The lab's cluster secret in a node's directory (mounted at /data in its container). */
const LAB_SECRET_FILE = 'cluster-secret';

function writeLabSecret(nodeDir: string, text: string): string {
  makeDirs(nodeDir, 'node directory');
  const f = path.join(nodeDir, LAB_SECRET_FILE);
  fs.writeFileSync(f, text, { mode: 0o600 });
  return f;
}

/** The console token of a container's server: its argv names a file under /data, the node directory's bind mount. */
function containerConsoleToken(s: ServerRecord): string | undefined {
  const nodeDir = path.dirname(s.dataDir);
  return consoleTokenOf(s.argv, (p) => (p.startsWith('/data/') ? path.join(nodeDir, p.slice('/data/'.length)) : p));
}

function addressesOf(s: ServerRecord): { role: ServerRole; rpcAddress: string; hostRpcAddress: string; webUrl: string } {
  return { role: s.role, rpcAddress: s.rpcAddress, hostRpcAddress: s.hostRpcAddress, webUrl: s.webUrl };
}

function hostPort(hp: string): { host: string; port: number } {
  const i = hp.lastIndexOf(':');
  return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
}
