/**
 * The Docker objects of a lab (docker-driver.ts): its bridge network, one container per node, and
 * removing them again, also those an earlier run left behind before it wrote lab.json.
 */
import * as path from 'node:path';
import type Docker from 'dockerode';
import { DbError, ErrorCode } from '../common';
import type { ClusterSpec } from './cluster-spec';
import { IMAGE_APP_DIR } from './image-inputs';
import { hostPort } from './lab-driver-base';
import { type DockerRecord, type LabState, type NodeRecord, serversOf } from './lab-state';
import { SUPERVISOR_GROUP_SEPARATOR } from './node-supervisor';
import { STANDARD_PORTS } from './process-addressing';
import { makeDirs } from '../common/fs-dirs';

/** Subnets tried for the lab network before giving up (another network may hold one). */
const SUBNET_TRIES_MAX = 16;

export interface DockerLabResourcesDeps {
  docker: Docker;
  say: (line: string) => void;
  /** The first two octets of the lab network's /24 subnets. */
  subnetPrefix: string;
}

export class DockerLabResources {
  constructor(private readonly deps: DockerLabResourcesDeps) {}

  async createNetwork(labId: string, name: string, baseDir: string): Promise<{ id: string; subnet: string }> {
    const first = parseInt(labId.slice(0, 2), 16);
    let lastErr: unknown;
    for (let k = 0; k < SUBNET_TRIES_MAX; k++) {
      const subnet = `${this.deps.subnetPrefix}.${(first + k) % 256}.0/24`;
      try {
        const net = await this.deps.docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          CheckDuplicate: true,
          IPAM: { Driver: 'default', Config: [{ Subnet: subnet }] },
          Labels: { 'tessera.lab': labId, 'tessera.baseDir': baseDir },
        });
        this.deps.say(`lab: network ${name} (${subnet})`);
        return { id: net.id, subnet: subnet.replace('/24', '') };
      } catch (e) {
        lastErr = e;
        if (!/overlap|in use|conflict/i.test((e as Error).message)) break;
      }
    }
    throw new DbError(ErrorCode.INTERNAL, `could not create network ${name}: ${(lastErr as Error).message}`);
  }

  async createNodeContainer(n: NodeRecord, spec: ClusterSpec, d: DockerRecord): Promise<Docker.Container> {
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
    return this.deps.docker.createContainer({
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
  async removeAll(st: LabState): Promise<void> {
    const errors: string[] = [];
    for (const n of st.nodes) {
      if (!n.containerId && !n.containerName) continue;
      try {
        await this.deps.docker.getContainer(n.containerId ?? n.containerName!).remove({ force: true, v: true });
      } catch (e) {
        if (!/no such container|404/i.test((e as Error).message)) errors.push(`${n.name}: ${(e as Error).message}`);
      }
    }
    if (st.docker) {
      try {
        await this.deps.docker.getNetwork(st.docker.networkName).remove();
      } catch (e) {
        if (!/not found|404/i.test((e as Error).message)) errors.push(`network: ${(e as Error).message}`);
      }
    }
    if (errors.length) throw new DbError(ErrorCode.INTERNAL, `lab down left something behind: ${errors.join('; ')}`);
  }

  /** Containers and the network of an earlier run of this lab id that died before writing lab.json. */
  async removeLeftovers(labId: string): Promise<void> {
    const cs = await this.deps.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`tessera.lab=${labId}`] }) });
    for (const c of cs) await this.deps.docker.getContainer(c.Id).remove({ force: true, v: true });
    const nets = await this.deps.docker.listNetworks({ filters: JSON.stringify({ label: [`tessera.lab=${labId}`] }) });
    for (const n of nets) await this.deps.docker.getNetwork(n.Id).remove();
  }
}
