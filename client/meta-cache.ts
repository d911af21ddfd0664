/**
 * Table locations (schema, tablets, replicas, leaders) as the master last reported them, refreshed
 * when a tablet call says the picture is stale (NOT_THE_LEADER without a usable hint,
 * TABLET_NOT_FOUND, NETWORK_ERROR to a replica). Leaders learnt from NOT_THE_LEADER hints are kept
 * per tablet so most failovers cost one extra round trip, not a master call.
 */
import { DbError, ErrorCode } from '../common/errors';
import { compareKeyBytes } from '../common/key-bounds';
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
      tablets.sort((a, b) => a.start - b.start || compareKeyBytes(a.keyStart ?? EMPTY, b.keyStart ?? EMPTY));
      for (const t of tablets) {
        const l = t.replicas.find((x) => x.role === 'LEADER');
        // The master learns of a new leader from heartbeats: a leader that stopped answering may
        // still be the one it reports. Then keep what calls learnt (or nothing: ask the others).
        if (l?.rpcAddress && !this.health.isSuspect(l.rpcAddress)) this.leaders.set(t.tabletId, l.rpcAddress);
      }
      const loc: TableLocations = { schema, tablets, loadedAtMs: performance.now() };
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
