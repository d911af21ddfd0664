/**
 * What each node's tserver says about its tablet replicas (GET /api/v1/tablets, docs/architecture.md §Contracts), for
 * `lab status`, experiments and tests: per-node rows, leaders by tablet, and "has this node caught
 * up" — a replica has caught up when its appliedIndex reached its tablet leader's appliedIndex.
 */
import type { ClusterDriver, NodeAddresses } from './cluster-driver';
import type { NodeName } from './cluster-spec';
import { getJson } from './console-http';
import { waitUntil } from './wait-until';

export interface ReplicaRow {
  tabletId: string;
  table: string;
  role: string;
  term: number;
  leaderUuid: string;
  commitIndex: number;
  appliedIndex: number;
  regulardb: { memtableBytes: number; sstBytes: number };
  intentsdb: { memtableBytes: number; sstBytes: number; intentCount: number };
}

export interface NodeReplicas {
  node: NodeName;
  /** undefined when the tserver did not answer (down, paused). */
  tablets: ReplicaRow[] | undefined;
}

const TABLETS_TIMEOUT_MS = 2_000;

function isLeaderRole(role: string): boolean {
  return role.toUpperCase() === 'LEADER';
}

export async function tserverTablets(webUrl: string): Promise<ReplicaRow[] | undefined> {
  try {
    const body = (await getJson(`${webUrl}/api/v1/tablets`, TABLETS_TIMEOUT_MS)) as { tablets?: unknown };
    return Array.isArray(body.tablets) ? (body.tablets as ReplicaRow[]) : undefined;
  } catch {
    return undefined;
  }
}

export async function replicasByNode(nodes: readonly NodeAddresses[]): Promise<NodeReplicas[]> {
  return Promise.all(nodes.map(async (n) => ({ node: n.name, tablets: await tserverTablets(n.tserver.webUrl) })));
}

/**
 * The same through the driver (ClusterDriver.consoleJson): a partitioned node is read too, which the
 * Docker driver can only do from inside the node's container.
 */
export async function replicasViaDriver(driver: ClusterDriver): Promise<NodeReplicas[]> {
  return Promise.all(
    driver.addresses().map(async (n) => {
      try {
        const body = (await driver.consoleJson(n.name, 'tserver', '/api/v1/tablets', TABLETS_TIMEOUT_MS)) as { tablets?: unknown };
        return { node: n.name, tablets: Array.isArray(body.tablets) ? (body.tablets as ReplicaRow[]) : undefined };
      } catch {
        return { node: n.name, tablets: undefined };
      }
    }),
  );
}

/**
 * The leader replica of every tablet: the one reporting role LEADER with the highest term (a
 * partitioned old leader may still believe it leads in an older term).
 */
export function leadersByTablet(all: readonly NodeReplicas[]): Map<string, { node: NodeName; row: ReplicaRow }> {
  const out = new Map<string, { node: NodeName; row: ReplicaRow }>();
  for (const n of all) {
    for (const r of n.tablets ?? []) {
      if (!isLeaderRole(r.role)) continue;
      const cur = out.get(r.tabletId);
      if (!cur || r.term > cur.row.term) out.set(r.tabletId, { node: n.node, row: r });
    }
  }
  return out;
}

/** Tablets of `node` that lag their leader (empty when caught up); undefined when some fact is missing. */
export function laggingTablets(all: readonly NodeReplicas[], node: NodeName, table?: string): string[] | undefined {
  const mine = all.find((n) => n.node === node)?.tablets;
  if (!mine) return undefined;
  const leaders = leadersByTablet(all);
  const lag: string[] = [];
  for (const r of mine) {
    if (table !== undefined && r.table !== table) continue;
    const l = leaders.get(r.tabletId);
    if (!l) return undefined;
    if (r.appliedIndex < l.row.appliedIndex) lag.push(r.tabletId);
  }
  return lag;
}

/** Waits until every replica on `node` (of `table`, if given) applied as far as its leader. */
export async function waitCaughtUp(driver: ClusterDriver, node: NodeName, timeoutMs: number, table?: string): Promise<void> {
  await waitUntil(
    async () => {
      const lag = laggingTablets(await replicasViaDriver(driver), node, table);
      return lag !== undefined && lag.length === 0;
    },
    { timeoutMs, intervalMs: 200, what: `${node}'s replicas to apply as far as their leaders` },
  );
}
