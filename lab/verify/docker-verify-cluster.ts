/**
 * The cluster a `tessera verify --driver docker` run attacks: a Docker lab of its own (the lab's
 * DockerDriver: one container per node on a bridge network, 1 master on n0 and a tserver on every
 * node), reached from this machine through the published ports (advertised nI:port -> 127.0.0.1:port
 * via the client's addressMap). Names start with tessera-verify- and the network takes a 10.214.X.0/24
 * subnet, so a verify lab never meets a person's lab (tessera-lab-, 10.213) or the lab tests.
 *
 * Faults, the Docker way: kill = SIGKILL of the server inside its container (the driver kills the
 * whole container when the server is its only one) and start again; pause = docker pause / unpause of
 * the node's container (every server in it stops); partition = docker network disconnect / connect
 * of the node's container (a real network partition; its published ports go with it); flags (clock
 * skew) and leader stepdown go through the published consoles and RPC ports as for processes.
 *
 * destroy() keeps the last lines of every container's log under the run's directory (the containers
 * go), then removes the containers and the network; a SIGINT / SIGTERM during the run does the same.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Docker from 'dockerode';
import { DbError, ErrorCode } from '../../common/errors';
import type { RpcClient } from '../../rpc';
import { labConnectOptions } from '../cluster-driver';
import { defaultSpec, type FlagMap, nodeName } from '../cluster-spec';
import { DockerDriver, labIdFor } from '../docker-driver';
import type { NemesisKind } from './nemesis-schedule';
import { setServerFlag, type VerifyConnectOptions, type VerifyServerRef, type VerifyTarget, waitVerifyHealthy } from './verify-target';

export const VERIFY_DOCKER_NAME_PREFIX = 'tessera-verify';
export const VERIFY_DOCKER_SUBNET_PREFIX = '10.214';
/**
 * Default published-port offset: master web 17500+i, master RPC 17600+i, tserver web 19500+i, tserver
 * RPC 19600+i on 127.0.0.1; away from a person's docker lab (10000) and the docker tests (11000,
 * 11300, 11600), and below Linux's ephemeral range (32768–60999), where any outgoing connection may
 * hold the port when the cluster starts ("address already in use").
 */
export const VERIFY_DOCKER_PORT_OFFSET = 10_500;
/** Lines of each container's log kept under the run's directory when the lab goes. */
export const CONTAINER_LOG_LINES_KEPT = 5_000;

export interface DockerVerifyServer extends VerifyServerRef {
  nodeName: string;
}

export interface DockerVerifyClusterOptions {
  baseDir: string;
  tservers: number;
  portOffset: number;
  tserverFlags?: string[];
  masterFlags?: string[];
  /** Masters on nodes 0 .. masters-1 (default 1). */
  masters?: 1 | 3;
  docker?: Docker;
  log?: (line: string) => void;
}

/** `--name=value` server arguments as the lab spec's flag map. */
export function flagMapOfArgs(args: readonly string[]): FlagMap {
  const out: FlagMap = {};
  for (const a of args) {
    const m = /^--([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(a);
    if (!m) throw new DbError(ErrorCode.INVALID_ARGUMENT, `server flag must look like --name=value, got '${a}'`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

export class DockerVerifyCluster implements VerifyTarget<DockerVerifyServer> {
  readonly driver = 'docker' as const;
  readonly servers: DockerVerifyServer[] = [];
  private readonly lab: DockerDriver;
  private readonly docker: Docker;
  private readonly log: (line: string) => void;
  /** Servers the nemesis killed and has not started again. */
  private readonly down = new Set<string>();
  /**
   * The last operation on each node's container: operations on one container run one after another
   * (two role kills at once in one container would signal each other's helper process).
   */
  private readonly nodeOps = new Map<string, Promise<unknown>>();
  private upCalled = false;
  private destroyed = false;
  private readonly onSignal = (sig: NodeJS.Signals): void => {
    this.log(`verify: ${sig}: removing the verify lab's containers and network`);
    void this.destroy(false).finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };

  private constructor(private readonly o: DockerVerifyClusterOptions) {
    this.docker = o.docker ?? new Docker();
    this.log = o.log ?? (() => undefined);
    this.lab = new DockerDriver(undefined, { docker: this.docker, onProgress: this.log, namePrefix: VERIFY_DOCKER_NAME_PREFIX, subnetPrefix: VERIFY_DOCKER_SUBNET_PREFIX });
  }

  static plan(o: DockerVerifyClusterOptions): DockerVerifyCluster {
    return new DockerVerifyCluster({ ...o, baseDir: path.resolve(o.baseDir) });
  }

  get masters(): DockerVerifyServer[] {
    return this.servers.filter((s) => s.role === 'master');
  }
  get tservers(): DockerVerifyServer[] {
    return this.servers.filter((s) => s.role === 'tserver');
  }

  connectOptions(): VerifyConnectOptions {
    return labConnectOptions(this.lab.addresses());
  }

  /** Creates the lab (image, network, containers) and waits until the master sees every tserver. */
  async startAll(timeoutMs: number): Promise<void> {
    const reach = await DockerDriver.engineReachable(this.docker);
    if (!reach.ok) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `verify --driver docker: no Docker engine reachable (${reach.reason}); run .ci/docker-setup.sh or start dockerd`);
    const spec = defaultSpec({
      baseDir: this.o.baseDir,
      driver: 'docker',
      nodes: this.o.tservers,
      masters: this.o.masters ?? 1,
      portOffset: this.o.portOffset,
      healthTimeoutMs: timeoutMs,
      tserverFlags: flagMapOfArgs(this.o.tserverFlags ?? []),
      masterFlags: flagMapOfArgs(this.o.masterFlags ?? []),
    });
    process.once('SIGINT', this.onSignal);
    process.once('SIGTERM', this.onSignal);
    this.upCalled = true;
    const nodes = await this.lab.up(spec);
    for (const n of nodes) {
      for (const a of [n.master, n.tserver]) {
        if (!a) continue;
        this.servers.push({ role: a.role, node: n.index, nodeName: n.name, name: `${a.role === 'master' ? 'm' : 't'}${n.index}`, rpcAddress: a.rpcAddress, webUrl: a.webUrl, paused: false, consoleToken: this.lab.consoleToken(n.name, a.role) });
      }
    }
    const c = this.lab.nodeContainer(nodeName(0));
    this.log(`verify: docker lab up: ${nodes.length} containers on network ${c.networkName}`);
    await this.waitHealthy(timeoutMs);
  }

  isRunning(s: DockerVerifyServer): boolean {
    return !this.down.has(s.name);
  }

  async kill9(s: DockerVerifyServer): Promise<void> {
    await this.onContainer(s, async () => {
      // The node's last running server: its container ends with it, so kill the container.
      const last = this.onNode(s).every((x) => x === s || this.down.has(x.name));
      await this.lab.kill(s.nodeName, last ? undefined : s.role);
      this.down.add(s.name);
      // A killed container is not paused any more (a server inside a paused one cannot be killed alone).
      if (this.soleServer(s)) s.paused = false;
    });
  }

  async start(s: DockerVerifyServer): Promise<void> {
    await this.onContainer(s, async () => {
      if (!this.down.has(s.name)) return;
      const whole = this.onNode(s).every((x) => this.down.has(x.name));
      // A stopped container starts with all its servers.
      await this.lab.start(s.nodeName, whole ? undefined : s.role);
      for (const x of whole ? this.onNode(s) : [s]) this.down.delete(x.name);
    });
  }

  /** docker pause of the server's container: every server of the node stops. */
  async pause(s: DockerVerifyServer): Promise<void> {
    await this.onContainer(s, async () => {
      await this.lab.pause(s.nodeName);
      for (const x of this.onNode(s)) x.paused = true;
    });
  }

  async resume(s: DockerVerifyServer): Promise<void> {
    await this.onContainer(s, async () => {
      await this.lab.resume(s.nodeName);
      for (const x of this.onNode(s)) x.paused = false;
    });
  }

  async waitHealthy(timeoutMs: number): Promise<void> {
    if (this.masters.length === 0) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'the docker verify lab is not up');
    await waitVerifyHealthy({
      masterWebUrls: () => this.masters.filter((m) => this.isRunning(m)).map((m) => m.webUrl),
      tservers: () => this.tservers.filter((t) => this.isRunning(t)),
      gone: async () => {
        // A container that should run but stopped (its servers crashed, or the engine killed it).
        for (const name of new Set(this.servers.filter((s) => this.isRunning(s)).map((s) => s.nodeName))) {
          if ((await this.lab.nodeState(name)) === 'stopped') return `container ${this.lab.nodeContainer(name).containerName} stopped; its log: ${await this.lab.logs(name, 20).catch((e: Error) => e.message)}`;
        }
        return undefined;
      },
      timeoutMs,
      where: `the containers' logs (docker logs; kept in ${this.o.baseDir} when the lab goes)`,
    });
  }

  async setFlag(s: DockerVerifyServer, name: string, value: string, rpc: RpcClient): Promise<void> {
    await setServerFlag(s, name, value, rpc);
  }

  /** docker network disconnect of the listed nodes' containers (empty: connect every one again). */
  async isolate(nodes: number[], _rpc: RpcClient): Promise<void> {
    if (nodes.length === 0) await this.lab.heal();
    else await this.lab.partition(nodes.map((n) => nodeName(n)));
  }

  faultNote(kind: NemesisKind, servers: readonly DockerVerifyServer[]): string | undefined {
    const s = servers[0];
    if (!s) return undefined;
    const c = this.lab.nodeContainer(s.nodeName);
    const roles = (x: DockerVerifyServer): string => this.onNode(x).map((y) => y.role).join(' and ');
    if (kind === 'kill') return this.soleServer(s) ? `docker kill of container ${c.containerName}` : `SIGKILL of the ${servers.map((x) => x.role).join(' and ')} inside container ${c.containerName}`;
    if (kind === 'pause') return `docker pause of container ${c.containerName}: its ${roles(s)} stop`;
    if (kind === 'partition') return `container ${c.containerName} disconnected from network ${c.networkName}`;
    return undefined;
  }

  async settle(rpc: RpcClient, timeoutMs: number): Promise<string | undefined> {
    for (const s of this.servers) if (s.paused) await this.resume(s);
    // Connect the network first: a cut-off node's consoles are not reachable from here.
    await this.isolate([], rpc);
    for (const s of this.servers) await this.start(s);
    await this.waitHealthy(timeoutMs);
    return undefined;
  }

  /** Keeps the containers' log tails, then removes the containers and the network (by label, whatever is left). */
  async destroy(keepData: boolean): Promise<void> {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
    if (this.destroyed || !this.upCalled) return;
    this.destroyed = true;
    const problems: string[] = [];
    for (const name of new Set(this.servers.map((s) => s.nodeName))) {
      try {
        fs.writeFileSync(path.join(this.o.baseDir, `${name}.log`), await this.lab.logs(name, CONTAINER_LOG_LINES_KEPT));
      } catch (e) {
        problems.push(`log of ${name}: ${(e as Error).message}`);
      }
    }
    try {
      await this.lab.down({ keepData });
    } catch (e) {
      // Not up (up() failed and cleaned up after itself) or something left: the sweep below gets it.
      if (!(e instanceof DbError && e.code === ErrorCode.NOT_FOUND)) problems.push((e as Error).message);
    }
    const label = JSON.stringify({ label: [`tessera.lab=${labIdFor(this.o.baseDir)}`] });
    for (const c of await this.docker.listContainers({ all: true, filters: label }).catch(() => [])) {
      await this.docker.getContainer(c.Id).remove({ force: true, v: true }).catch((e: Error) => problems.push(`container ${c.Id.slice(0, 12)}: ${e.message}`));
    }
    for (const n of await this.docker.listNetworks({ filters: label }).catch(() => [])) {
      await this.docker.getNetwork(n.Id).remove().catch((e: Error) => problems.push(`network ${n.Name}: ${e.message}`));
    }
    if (problems.length) this.log(`verify: docker lab teardown: ${problems.join('; ')}`);
  }

  /** Runs op after every earlier operation on the same container has ended (however it ended). */
  private async onContainer<T>(s: DockerVerifyServer, op: () => Promise<T>): Promise<T> {
    const before = this.nodeOps.get(s.nodeName) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(op);
    this.nodeOps.set(s.nodeName, mine.catch(() => undefined));
    return mine;
  }

  private onNode(s: DockerVerifyServer): DockerVerifyServer[] {
    return this.servers.filter((x) => x.node === s.node);
  }

  /** The server is its container's only one: killing it kills the container. */
  private soleServer(s: DockerVerifyServer): boolean {
    return this.onNode(s).length === 1;
  }
}
