/**
 * The one interface every lab cluster driver implements (process, docker). Experiments and the
 * `tessera lab` commands speak only this interface; the driver decides what "kill", "pause" or
 * "partition" means for its kind of node.
 */
import type { ClusterSpec, DriverKind, NodeName, ServerRole } from './cluster-spec';
import type { CutLink } from './partition-plan';

/** Addresses of one server, as peers see it and as a person on this machine reaches it. */
export interface ServerAddresses {
  role: ServerRole;
  /** host:port other servers of the lab use (what --rpc_bind_addresses says). */
  rpcAddress: string;
  /** host:port a client on this machine connects to (equal to rpcAddress for local processes). */
  hostRpcAddress: string;
  /** Console base URL reachable from this machine, e.g. http://127.0.0.2:9000 */
  webUrl: string;
}

export interface NodeAddresses {
  name: NodeName;
  index: number;
  master?: ServerAddresses;
  tserver: ServerAddresses;
  /** The lab's cluster secret file on this machine, when its servers need one (a docker lab's bind beyond loopback). */
  clusterSecretFile?: string;
}

export type ServerState = 'running' | 'paused' | 'stopped';

/** Calls in flight on one server, from its /rpcz (rpcz-calls.ts reads them). */
export interface CallsInFlight {
  /** Calls this server is answering now. */
  inbound: number;
  /** Calls this server waits on now. */
  outbound: number;
  /** Age of the oldest of them, ms (0 with none). */
  oldestMs: number;
}

export interface ServerStatus extends ServerAddresses {
  state: ServerState;
  healthy: boolean;
  pid?: number;
  /** From the master's /api/v1/tablet-servers when a master answers (tservers only). */
  tablets?: number;
  leaders?: number;
  /** Masters: LEADER or FOLLOWER of the sys catalog, from the master's /api/v1/healthz. */
  raftRole?: string;
  /** Calls in flight now, from the server's /api/v1/rpcz (running servers that answer). */
  calls?: CallsInFlight;
}

export interface NodeStatus {
  name: NodeName;
  index: number;
  servers: ServerStatus[];
  partitioned: boolean;
  /** Docker only. */
  containerId?: string;
  ip?: string;
}

export interface LabStatus {
  driver: DriverKind;
  baseDir: string;
  nodes: NodeStatus[];
  /** Nodes currently cut off by `partition` (empty when healed). */
  partitioned: NodeName[];
  /** Links cut by a partial partition (`partition NODES --from OTHERS`), each pair once; empty when healed. */
  cutLinks: CutLink[];
}

export interface FlagSetResult {
  node: NodeName;
  role: ServerRole;
  ok: boolean;
  /** The value the server reports after the change, or the server's error text. */
  value?: unknown;
  error?: string;
}

/** Which servers of a node an operation targets; omitted = all servers of the node. */
export type RoleSelector = ServerRole | undefined;

export interface DownOptions {
  keepData?: boolean;
}

export interface ClusterDriver {
  readonly kind: DriverKind;
  /** Start every node and wait (bounded by spec.healthTimeoutMs) until each answers /healthz. */
  up(spec: ClusterSpec): Promise<NodeAddresses[]>;
  /**
   * Stop and remove everything up() created (processes / containers and network) and lab.json; node
   * data is removed too unless keepData. Logs are kept (process driver: BASE/nI/*.log).
   */
  down(opts?: DownOptions): Promise<void>;
  status(): Promise<LabStatus>;
  addresses(): NodeAddresses[];
  /** Change a flag at run time through the node's console (POST /api/v1/flags). */
  setFlag(node: NodeName, name: string, value: string, force?: boolean, role?: RoleSelector): Promise<FlagSetResult[]>;
  /** SIGKILL (process) / container kill: no shutdown path runs. */
  kill(node: NodeName, role?: RoleSelector): Promise<void>;
  /** Graceful stop (SIGTERM, then SIGKILL after a bound). */
  stop(node: NodeName, role?: RoleSelector): Promise<void>;
  /** Start again with the same flags and wait until healthy. */
  start(node: NodeName, role?: RoleSelector): Promise<void>;
  restart(node: NodeName, role?: RoleSelector): Promise<void>;
  /** SIGSTOP / docker pause: the node keeps its sockets but does nothing. */
  pause(node: NodeName, role?: RoleSelector): Promise<void>;
  resume(node: NodeName, role?: RoleSelector): Promise<void>;
  /**
   * Cut the listed nodes off from the rest; with `from`, only the links between the listed nodes and
   * those (a partial partition: every other path stays open; TEST_drop_traffic_peers on both ends,
   * with either driver). Replaces any earlier partition of either kind.
   */
  partition(nodes: NodeName[], from?: NodeName[]): Promise<void>;
  heal(): Promise<void>;
  /** The last `lines` lines of the node's logs (both servers, each line prefixed with its role). */
  logs(node: NodeName, lines: number): Promise<string>;
  /**
   * GET a console JSON page (e.g. /api/v1/tablets) of one server of the node, as the node itself
   * serves it: also while the node is partitioned (docker: read from inside its container, whose
   * published ports go with its network).
   */
  consoleJson(node: NodeName, role: ServerRole, pathAndQuery: string, timeoutMs?: number): Promise<unknown>;
}

/**
 * Advertised RPC address -> the address a client on this machine dials, for every server whose two
 * differ (Docker: `n1:9100` -> `127.0.0.1:19101`; empty for local processes). Pass it to
 * TesseraClient.connect as addressMap.
 */
export function clientAddressMap(nodes: readonly NodeAddresses[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const n of nodes) {
    for (const s of [n.master, n.tserver]) if (s && s.hostRpcAddress !== s.rpcAddress) map[s.rpcAddress] = s.hostRpcAddress;
  }
  return map;
}

/** What TesseraClient.connect needs to reach the lab from this machine: its masters, the address map, and its cluster secret if it has one. */
export function labConnectOptions(nodes: readonly NodeAddresses[]): { masterAddresses: string[]; addressMap: Record<string, string>; clusterSecretFile?: string } {
  const secret = nodes.find((n) => n.clusterSecretFile !== undefined)?.clusterSecretFile;
  return { masterAddresses: nodes.flatMap((n) => (n.master ? [n.master.rpcAddress] : [])), addressMap: clientAddressMap(nodes), ...(secret !== undefined ? { clusterSecretFile: secret } : {}) };
}
