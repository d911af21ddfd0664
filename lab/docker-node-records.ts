/**
 * The lab.json records of a docker lab's servers: their flags inside the container, the addresses
 * published on this machine, and the lab's cluster secret in each node's directory (bind-mounted at
 * /data), which the servers need because they bind beyond loopback (docs/security.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { NodeName, ServerRole } from './cluster-spec';
import { consoleTokenOf, LAB_SERVER_FLAGS } from './flag-setter';
import type { ServerRecord } from './lab-state';
import { STANDARD_PORTS } from './process-addressing';
import { makeDirs } from '../common/fs-dirs';

export function containerServer(role: ServerRole, node: NodeName, nodeDir: string, at: { host: string; bump: number }, flags: string[]): ServerRecord {
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
export const LAB_SECRET_FILE = 'cluster-secret';

export function writeLabSecret(nodeDir: string, text: string): string {
  makeDirs(nodeDir, 'node directory');
  const f = path.join(nodeDir, LAB_SECRET_FILE);
  fs.writeFileSync(f, text, { mode: 0o600 });
  return f;
}

/** The console token of a container's server: its argv names a file under /data, the node directory's bind mount. */
export function containerConsoleToken(s: ServerRecord): string | undefined {
  const nodeDir = path.dirname(s.dataDir);
  return consoleTokenOf(s.argv, (p) => (p.startsWith('/data/') ? path.join(nodeDir, p.slice('/data/'.length)) : p));
}
