/**
 * Pure: which peers each server must drop so that a group of nodes is cut off from the rest, in both
 * directions. The process driver hands each list to the server as the run-time flag
 * TEST_drop_traffic_peers (comma-separated host:port of peers' RPC addresses; '' = drop nothing).
 */
import type { NodeName, ServerRole } from './cluster-spec';

export const DROP_TRAFFIC_FLAG = 'TEST_drop_traffic_peers';

export interface PlanServer {
  node: NodeName;
  role: ServerRole;
  rpcAddress: string;
}

export interface DropList {
  node: NodeName;
  role: ServerRole;
  /** The flag value: peers' RPC host:port, sorted, comma-separated. */
  peers: string;
}

/** An empty `cut` heals: every server gets ''. */
export function partitionDropLists(servers: readonly PlanServer[], cut: readonly NodeName[]): DropList[] {
  const inCut = new Set(cut);
  return servers.map((s) => {
    const mine = inCut.has(s.node);
    const peers = cut.length === 0 ? [] : servers.filter((o) => inCut.has(o.node) !== mine).map((o) => o.rpcAddress);
    return { node: s.node, role: s.role, peers: [...new Set(peers)].sort().join(',') };
  });
}
