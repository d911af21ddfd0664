/**
 * What the process and docker drivers (cluster-driver.ts is their interface) share: the lab state they
 * keep in BASE/lab.json, the servers' flags up() derives from a spec, waiting until a new lab is
 * ready, the status figures read from the masters and each server's /rpcz, and setting
 * TEST_drop_traffic_peers for a partition. What differs — how a server is started, signalled and
 * observed — stays in each driver.
 */
import * as fs from 'node:fs';
import { DbError, ErrorCode } from '../common';
import { type ClusterSpec, flagArgs, type NodeName, nodeIndex, type ServerRole } from './cluster-spec';
import type { DownOptions, NodeAddresses, NodeStatus, ServerAddresses } from './cluster-driver';
import { setFlagOnServers } from './flag-setter';
import { type HealthTarget, waitAllHealthy, waitClusterReady } from './health-wait';
import { type LabState, type NodeRecord, removeLabState, type ServerRecord, serversOf } from './lab-state';
import { DROP_TRAFFIC_FLAG, partitionDropLists } from './partition-plan';
import { addCallsInFlight } from './rpcz-calls';
import { tabletCountsFromMasters } from './tablet-counts';

export abstract class LabDriverBase {
  protected state: LabState | undefined;

  constructor(state?: LabState) {
    this.state = state;
  }

  /** The lab's state; a clear error when no lab is up (each driver says how to start its kind). */
  protected abstract need(): LabState;

  protected node(name: NodeName): NodeRecord {
    const st = this.need();
    return st.nodes[nodeIndex(name, st.spec.nodes)]!;
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

  /**
   * Bounded by spec.healthTimeoutMs each: every server answers /api/v1/healthz, then the master leader
   * sees every tablet server (a lab is only "up" once a client can create a table on it).
   */
  protected async waitLabReady(nodes: readonly NodeRecord[], spec: ClusterSpec, targetOf: (n: NodeRecord, s: ServerRecord) => HealthTarget, say: (line: string) => void = () => {}): Promise<void> {
    await waitAllHealthy(nodes.flatMap((n) => serversOf(n).map((s) => targetOf(n, s))), spec.healthTimeoutMs);
    say('lab: waiting until the master leader sees every tablet server');
    await waitClusterReady(nodes.filter((n) => n.master).map((n) => n.master!.webUrl), nodes.length, spec.healthTimeoutMs);
  }

  /** down()'s end, once the servers are gone: their data (unless keepData) and lab.json. */
  protected forget(st: LabState, opts: DownOptions = {}): void {
    if (!opts.keepData) for (const n of st.nodes) for (const s of serversOf(n)) fs.rmSync(s.dataDir, { recursive: true, force: true });
    this.dropState(st.spec.baseDir);
  }

  /** Forgets the lab (lab.json and this driver's copy), after down() or a failed up(). */
  protected dropState(baseDir: string): void {
    removeLabState(baseDir);
    this.state = undefined;
  }
}

/** The flags of a node's servers that come from the spec; `extra` (e.g. a secret file) goes after the addresses. */
export function labServerFlags(spec: ClusterSpec, name: NodeName, masterAddrs: string, extra: readonly string[] = []): { tserver: string[]; master: string[] } {
  return {
    tserver: [`--tserver_master_addrs=${masterAddrs}`, `--lab_node_name=${name}`, ...extra, ...flagArgs(spec.tserverFlags), ...flagArgs(spec.nodeFlags[name] ?? {})],
    master: [`--master_addresses=${masterAddrs}`, ...extra, ...flagArgs(spec.masterFlags), ...flagArgs(spec.nodeMasterFlags[name] ?? {})],
  };
}

/** `lab status` figures both drivers add the same way: tablets and leaders per tserver (from a master), calls in flight. */
export async function addStatusFigures(nodes: readonly NodeStatus[]): Promise<void> {
  const servers = nodes.flatMap((n) => n.servers);
  const masters = servers.filter((s) => s.role === 'master' && s.healthy).map((s) => s.webUrl);
  const counts = await tabletCountsFromMasters(masters);
  for (const s of servers) {
    const c = s.role === 'tserver' ? counts.get(s.rpcAddress) : undefined;
    if (c) Object.assign(s, c);
  }
  await addCallsInFlight(servers);
}

export interface DropListOptions {
  /** Nodes cut off whole by the drop lists (the process driver's partition; docker disconnects them instead). */
  partitioned: readonly NodeName[];
  /** Whether this server gets its list now (targeted and able to take it). */
  include: (n: NodeRecord, s: ServerRecord) => Promise<boolean>;
  /** The bearer token of the server's console. */
  token: (s: ServerRecord) => string | undefined;
}

/** Sets each included server's TEST_drop_traffic_peers for the lab's partition and cut links ('' when healed). */
export async function setDropLists(st: LabState, opts: DropListOptions): Promise<void> {
  const all = st.nodes.flatMap((n) => serversOf(n).map((s) => ({ node: n.name, role: s.role, rpcAddress: s.rpcAddress, n, s })));
  const lists = partitionDropLists(all, [...opts.partitioned], st.cutLinks ?? []);
  const failures: string[] = [];
  await Promise.all(
    all.map(async (a, i) => {
      if (!(await opts.include(a.n, a.s))) return;
      try {
        await setFlagOnServers([{ node: a.node, role: a.role, webUrl: a.s.webUrl, token: opts.token(a.s) }], DROP_TRAFFIC_FLAG, lists[i]!.peers, true);
      } catch (e) {
        failures.push(`${a.node} ${a.role}: ${(e as Error).message}`);
      }
    }),
  );
  if (failures.length) {
    throw new DbError(ErrorCode.INTERNAL, `could not set ${DROP_TRAFFIC_FLAG} on every server (the servers must define it as a run-time flag): ${failures.join('; ')}`);
  }
}

export function addressesOf(s: ServerRecord): ServerAddresses & { role: ServerRole } {
  return { role: s.role, rpcAddress: s.rpcAddress, hostRpcAddress: s.hostRpcAddress, webUrl: s.webUrl };
}

export function hostPort(hp: string): { host: string; port: number } {
  const i = hp.lastIndexOf(':');
  return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
}
