/**
 * Table locations (schema, tablets, replicas, leaders) as the master last reported them, refreshed
 * when a tablet call says the picture is stale (NOT_THE_LEADER without a usable hint,
 * TABLET_NOT_FOUND, NETWORK_ERROR to a replica). Leaders learnt from NOT_THE_LEADER hints are kept
 * per tablet so most failovers cost one extra round trip, not a master call.
 */
import { DbError, ErrorCode } from '../common/errors';
import { bytesOfHex, compareKeyBytes } from '../common/key-bounds';
import { OldestKeys } from '../common/oldest-keys';
import { masterMethods } from '../rpc';
import type { MasterProxy } from './master-proxy';
import type { Deadline } from './retry-policy';
import { TableSchema } from './table-schema';
import { ReplicaHealth } from './replica-health';

const EMPTY = new Uint8Array(0);
/** Tables cached at most (least recently loaded dropped first). */
export const META_CACHE_TABLES_MAX = 1000;
/** A location refresh of one table is not repeated sooner than this (a storm of errors costs one call). */
const REFRESH_MIN_INTERVAL_MS = 50;
/** Split parents remembered at most (their children stand in for them until the master lists the children). */
const SPLIT_PARENTS_MAX = 10_000;
/** Nested splits followed at most when a parent's children are substituted (a child split again before the master caught up). */
const SPLIT_DEPTH_MAX = 8;

export interface TabletLocation {
  tabletId: string;
  start: number;
  end: number;
  /** Range tables: encoded DocKey bounds [keyStart, keyEnd) (empty = open; docs/splitting.md). */
  keyStart?: Uint8Array;
  keyEnd?: Uint8Array;
  replicas: Array<{ uuid: string; rpcAddress: string; role: string }>;
}

export interface TableLocations {
  schema: TableSchema;
  /** In partition order. */
  tablets: TabletLocation[];
  loadedAtMs: number;
}

export class MetaCache {
  private readonly tables = new Map<string, TableLocations>();
  private readonly oldestTable = new OldestKeys(this.tables);
  private readonly inflight = new Map<string, Promise<TableLocations>>();
  /** tabletId -> RPC address believed to lead it. */
  private readonly leaders = new Map<string, string>();
  /**
   * Split parents learnt from TABLET_SPLIT answers -> their children: they stand in for the parent
   * in the master's locations until the master lists the children (it records a split only once
   * the children lead).
   */
  private readonly splitChildren = new Map<string, TabletLocation[]>();

  constructor(
    private readonly master: MasterProxy,
    private readonly health = new ReplicaHealth(0),
  ) {}

  async get(name: string, deadline: Deadline): Promise<TableLocations> {
    return this.tables.get(name) ?? this.load(name, deadline);
  }

  /** Reload unless another caller just did. */
  async refresh(name: string, deadline: Deadline): Promise<TableLocations> {
    const t = this.tables.get(name);
    if (t && performance.now() - t.loadedAtMs < REFRESH_MIN_INTERVAL_MS) return t;
    return this.load(name, deadline);
  }

  invalidate(name: string): void {
    this.tables.delete(name);
  }

  /**
   * A tablet of `name` answered TABLET_SPLIT naming its children's partitions, replicas and leaders
   * (docs/splitting.md): they take its place in the cached locations — with a new loadedAtMs, so
   * callers that reload only unchanged locations keep them — and no master call is made. False when
   * the answer has no routes (a server that learnt of the split by restarting) or the table is not
   * cached: then the caller asks the master.
   */
  installSplit(name: string, err: DbError): boolean {
    const parentId = err.details['tabletId'];
    const children = splitChildrenOf(err.details['children']);
    const loc = this.tables.get(name);
    if (typeof parentId !== 'string' || !children || !loc) return false;
    if (this.splitChildren.size >= SPLIT_PARENTS_MAX) this.splitChildren.clear();
    this.splitChildren.set(parentId, children.map((c) => c.location));
    this.leaders.delete(parentId);
    for (const c of children) if (c.leaderHint && !this.health.isSuspect(c.leaderHint)) this.leaders.set(c.location.tabletId, c.leaderHint);
    const tablets = withSplitChildren(loc.tablets, this.splitChildren);
    if (tablets !== loc.tablets) this.tables.set(name, { ...loc, tablets, loadedAtMs: performance.now() });
    return true;
  }

  /** When the cached locations of `name` were loaded (undefined: not cached). */
  cachedLoadedAtMs(name: string): number | undefined {
    return this.tables.get(name)?.loadedAtMs;
  }

  /** The schema version of the cached locations of `name` (undefined: not cached). */
  cachedSchemaVersion(name: string): number | undefined {
    return this.tables.get(name)?.schema.version;
  }

  private load(name: string, deadline: Deadline): Promise<TableLocations> {
    let p = this.inflight.get(name);
    if (p) return p;
    p = (async () => {
      const r = await this.master.call(masterMethods().getTableLocations, { name }, deadline, true, true);
      if (!r.table?.id) throw new DbError(ErrorCode.TABLE_NOT_FOUND, `table ${name} not found`);
      const schema = new TableSchema(r.table.id, r.table.name ?? name, r.table);
      const tablets: TabletLocation[] = (r.tablets ?? []).map((t) => ({
        tabletId: t.tabletId ?? '',
        start: t.partition?.start ?? 0,
        end: t.partition?.end || 65536,
        keyStart: new Uint8Array(t.partition?.keyStart ?? []),
        keyEnd: new Uint8Array(t.partition?.keyEnd ?? []),
        replicas: (t.replicas ?? []).map((x) => ({ uuid: x.tserverUuid ?? '', rpcAddress: x.rpcAddress ?? '', role: x.role ?? '' })),
      }));
      tablets.sort(byPartition);
      const listed = new Set(tablets.map((t) => t.tabletId));
      // The master lists the parent until the children lead: what a TABLET_SPLIT answer said stands in for it.
      for (const [parent, children] of this.splitChildren) if (!listed.has(parent) && children.every((c) => listed.has(c.tabletId))) this.splitChildren.delete(parent);
      const routed = withSplitChildren(tablets, this.splitChildren);
      for (const t of tablets) {
        const l = t.replicas.find((x) => x.role === 'LEADER');
        // The master learns of a new leader from heartbeats: a leader that stopped answering may
        // still be the one it reports. Then keep what calls learnt (or nothing: ask the others).
        if (l?.rpcAddress && !this.health.isSuspect(l.rpcAddress)) this.leaders.set(t.tabletId, l.rpcAddress);
      }
      const loc: TableLocations = { schema, tablets: routed, loadedAtMs: performance.now() };
      this.tables.delete(name);
      this.tables.set(name, loc);
      if (this.tables.size > META_CACHE_TABLES_MAX) this.tables.delete(this.oldestTable.take()!);
      if (this.leaders.size > META_CACHE_TABLES_MAX * 256) this.leaders.clear();
      return loc;
    })().finally(() => this.inflight.delete(name));
    this.inflight.set(name, p);
    return p;
  }

  leaderOf(tabletId: string): string | undefined {
    return this.leaders.get(tabletId);
  }

  setLeader(tabletId: string, address: string | undefined): void {
    if (address) this.leaders.set(tabletId, address);
    else this.leaders.delete(tabletId);
  }

  /** Forget the leader of `tabletId` if it is still `address` (a concurrent call may have learnt a newer one). */
  dropLeader(tabletId: string, address: string): void {
    if (this.leaders.get(tabletId) === address) this.leaders.delete(tabletId);
  }
}

function byPartition(a: TabletLocation, b: TabletLocation): number {
  return a.start - b.start || compareKeyBytes(a.keyStart ?? EMPTY, b.keyStart ?? EMPTY);
}

/** `tablets` with every known split parent replaced by its children (the same array when none is). */
function withSplitChildren(tablets: TabletLocation[], splits: ReadonlyMap<string, TabletLocation[]>): TabletLocation[] {
  if (!tablets.some((t) => splits.has(t.tabletId))) return tablets;
  const out: TabletLocation[] = [];
  const add = (t: TabletLocation, depth: number): void => {
    const children = depth < SPLIT_DEPTH_MAX ? splits.get(t.tabletId) : undefined;
    if (children) for (const c of children) add(c, depth + 1);
    else out.push(t);
  };
  for (const t of tablets) add(t, 0);
  return out;
}

/** TABLET_SPLIT's details.children as locations (undefined: missing or malformed, or without replicas). */
function splitChildrenOf(v: unknown): Array<{ location: TabletLocation; leaderHint: string | undefined }> | undefined {
  if (!Array.isArray(v) || v.length !== 2) return undefined;
  const out: Array<{ location: TabletLocation; leaderHint: string | undefined }> = [];
  for (const c of v as Array<Record<string, unknown>>) {
    const p = c?.['partition'] as Record<string, unknown> | undefined;
    const replicas = c?.['replicas'];
    if (typeof c?.['tabletId'] !== 'string' || !p || typeof p['start'] !== 'number' || typeof p['end'] !== 'number' || !Array.isArray(replicas) || replicas.length === 0) return undefined;
    const hint = typeof c['leaderHint'] === 'string' && c['leaderHint'] ? c['leaderHint'] : undefined;
    const rs = (replicas as Array<Record<string, unknown>>).map((r) => ({ uuid: String(r?.['uuid'] ?? ''), rpcAddress: String(r?.['rpcAddress'] ?? '') }));
    if (rs.some((r) => !r.rpcAddress)) return undefined;
    let keyStart: Uint8Array;
    let keyEnd: Uint8Array;
    try {
      keyStart = bytesOfHex(typeof p['keyStart'] === 'string' ? p['keyStart'] : '');
      keyEnd = bytesOfHex(typeof p['keyEnd'] === 'string' ? p['keyEnd'] : '');
    } catch {
      return undefined;
    }
    const replicasOut = rs.map((r) => ({ ...r, role: r.rpcAddress === hint ? 'LEADER' : 'FOLLOWER' }));
    out.push({ location: { tabletId: c['tabletId'], start: p['start'], end: p['end'], keyStart, keyEnd, replicas: replicasOut }, leaderHint: hint });
  }
  return out.sort((a, b) => byPartition(a.location, b.location));
}

/**
 * Where a row goes: its hash and, for a range table, its encoded DocKey (`key`). Tablets are in
 * (hash, key) order, so a binary search finds the one whose partition holds the row.
 */
export interface RowRoute {
  hash: number;
  key?: Uint8Array | undefined;
}

/** -1: the route sorts before tablet t, 1: after it, 0: t holds it. */
export function compareRoute(t: TabletLocation, hash: number, key: Uint8Array | undefined): number {
  if (hash < t.start) return -1;
  if (hash >= t.end) return 1;
  if (!key) return 0;
  if (t.keyStart && t.keyStart.length > 0 && compareKeyBytes(key, t.keyStart) < 0) return -1;
  if (t.keyEnd && t.keyEnd.length > 0 && compareKeyBytes(key, t.keyEnd) >= 0) return 1;
  return 0;
}

/** The tablet whose partition holds this hash (and key, for a range table). */
export function tabletForHash(loc: TableLocations, hash: number, key?: Uint8Array): TabletLocation {
  const ts = loc.tablets;
  let lo = 0;
  let hi = ts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = ts[mid]!;
    const c = compareRoute(t, hash, key);
    if (c < 0) hi = mid - 1;
    else if (c > 0) lo = mid + 1;
    else return t;
  }
  throw new DbError(ErrorCode.TABLET_NOT_FOUND, `no tablet of table ${loc.schema.name} covers hash ${hash}`);
}

/** The tablet holding a route, or undefined (the sites that fall back to an unbatched call). */
export function tabletForRoute(loc: TableLocations, r: RowRoute): TabletLocation | undefined {
  try {
    return tabletForHash(loc, r.hash, r.key);
  } catch {
    return undefined;
  }
}
