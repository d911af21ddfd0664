/**
 * Pure: which peers each server must drop so that a group of nodes is cut off from the rest, or so
 * that only some links between nodes are cut (a partial partition: `lab partition n0 --from n1`), in
 * both directions. The drivers hand each list to the server as the run-time flag
 * TEST_drop_traffic_peers (comma-separated host:port of peers' RPC addresses; '' = drop nothing).
 */
import { DbError, ErrorCode } from '../common/errors';
import { nodeIndex, type NodeName, type ServerRole } from './cluster-spec';

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

/** Two nodes that do not hear each other (either order; a node is never linked to itself). */
export type CutLink = readonly [NodeName, NodeName];

/**
 * An empty `cut` and no `links` heal: every server gets ''. `cut`: those nodes against all others;
 * `links`: each pair of nodes against each other only (every other path stays open).
 */
export function partitionDropLists(servers: readonly PlanServer[], cut: readonly NodeName[], links: readonly CutLink[] = []): DropList[] {
  const inCut = new Set(cut);
  const linked = (a: NodeName, b: NodeName): boolean => links.some(([x, y]) => (x === a && y === b) || (x === b && y === a));
  return servers.map((s) => {
    const mine = inCut.has(s.node);
    const peers = servers.filter((o) => (cut.length > 0 && inCut.has(o.node) !== mine) || (o.node !== s.node && linked(s.node, o.node))).map((o) => o.rpcAddress);
    return { node: s.node, role: s.role, peers: [...new Set(peers)].sort().join(',') };
  });
}

/**
 * The links `lab partition NODES --from OTHERS` cuts: every node of `nodes` with every node of `from`,
 * sorted, each pair once. The two groups must not share a node.
 */
export function linksBetween(nodes: readonly NodeName[], from: readonly NodeName[]): CutLink[] {
  const both = nodes.filter((n) => from.includes(n));
  if (both.length > 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `partition --from: ${[...new Set(both)].join(', ')} cannot be on both sides of the cut`);
  const out = new Map<string, CutLink>();
  for (const a of nodes) for (const b of from) {
    const pair: CutLink = a < b ? [a, b] : [b, a];
    out.set(pair.join('|'), pair);
  }
  return [...out.values()].sort((x, y) => (x[0] === y[0] ? x[1].localeCompare(y[1]) : x[0].localeCompare(y[0])));
}

/**
 * What `partition(nodes, from)` sets, checked against a lab of `nodeCount` nodes: a whole-node cut
 * (nodes against all the others; at least one node must stay on the other side) or, with `from`,
 * the links between the two groups only.
 */
export function planPartition(nodes: readonly NodeName[], from: readonly NodeName[] | undefined, nodeCount: number): { partitioned: NodeName[]; cutLinks: CutLink[] } {
  if (nodes.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'partition needs at least one node (use heal to undo)');
  for (const n of [...nodes, ...(from ?? [])]) nodeIndex(n, nodeCount);
  if (from !== undefined) {
    if (from.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'partition --from needs at least one node');
    return { partitioned: [], cutLinks: linksBetween(nodes, from) };
  }
  const cut = [...new Set(nodes)].sort();
  if (cut.length >= nodeCount) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'partition must leave at least one node on the other side');
  return { partitioned: cut, cutLinks: [] };
}

/** "n0–n1, n0–n2" for status lines. */
export function linksText(links: readonly CutLink[]): string {
  return links.map(([a, b]) => `${a}–${b}`).join(', ');
}
