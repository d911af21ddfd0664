/**
 * Where local server processes listen. As yugabyted does, node i gets its own loopback address
 * 127.0.0.(hostBase+i) with the standard ports when the system lets us bind such addresses (Linux
 * routes all of 127/8 to lo); elsewhere (macOS without aliases) every node shares 127.0.0.1 and gets
 * distinct ports: standard + portOffset + i.
 */
import * as net from 'node:net';
import { DbError, ErrorCode } from '../common';
import type { ClusterSpec } from './cluster-spec';

export const STANDARD_PORTS = { masterRpc: 7100, masterWeb: 7000, tserverRpc: 9100, tserverWeb: 9000 } as const;

export interface ProcessNodePlan {
  host: string;
  masterRpcPort: number;
  masterWebPort: number;
  tserverRpcPort: number;
  tserverWebPort: number;
}

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ host, port, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

let aliasesCached: boolean | undefined;

/** Whether 127.0.0.2 can be bound here (checked once per process). */
export async function loopbackAliasesWork(): Promise<boolean> {
  if (aliasesCached === undefined) aliasesCached = await canListen('127.0.0.2', 0);
  return aliasesCached;
}

export function planProcessNodes(spec: Pick<ClusterSpec, 'nodes' | 'hostBase' | 'portOffset'>, aliases: boolean): ProcessNodePlan[] {
  const plans: ProcessNodePlan[] = [];
  for (let i = 0; i < spec.nodes; i++) {
    const bump = spec.portOffset + (aliases ? 0 : i);
    plans.push({
      host: aliases ? `127.0.0.${spec.hostBase + i}` : '127.0.0.1',
      masterRpcPort: STANDARD_PORTS.masterRpc + bump,
      masterWebPort: STANDARD_PORTS.masterWeb + bump,
      tserverRpcPort: STANDARD_PORTS.tserverRpc + bump,
      tserverWebPort: STANDARD_PORTS.tserverWeb + bump,
    });
  }
  return plans;
}

/** Fails naming every address already taken (another lab, another server) before anything starts. */
export async function assertAddressesFree(addrs: ReadonlyArray<{ host: string; port: number }>): Promise<void> {
  const taken: string[] = [];
  for (const a of addrs) if (!(await canListen(a.host, a.port))) taken.push(`${a.host}:${a.port}`);
  if (taken.length) {
    throw new DbError(ErrorCode.ALREADY_EXISTS, `address(es) already in use: ${taken.join(', ')} (another lab or server runs there; stop it or choose another --base_dir/--host_base)`);
  }
}
