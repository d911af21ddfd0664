/**
 * The catalog's data model: tables (schema, partitioning, tablets) and tablets (partition, replicas).
 * Plain JSON-able values: the catalog is replicated as JSON through the sys-catalog Raft group.
 */
import { DEFAULT_WAL_DURABILITY, type WalDurability } from '../raft';
import type { ColumnFamily } from '../common/column-families';

export const COLUMN_TYPES = ['int64', 'double', 'string', 'bytes', 'bool'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

export function isColumnType(s: string): s is ColumnType {
  return (COLUMN_TYPES as readonly string[]).includes(s);
}

export interface ColumnDef {
  name: string;
  /** Stable id (never reused within a table): what rows carry on the wire and on disk. */
  id: number;
  type: ColumnType;
  nullable: boolean;
  /** Its column family (docs/cells.md); absent: `default`. */
  family?: string;
}

export interface TableSchema {
  columns: ColumnDef[];
  hashColumns: string[];
  rangeColumns: string[];
  /** The table's column families with their retention (absent: only `default`, with the defaults). */
  families?: ColumnFamily[];
}

/** Hash partition [start, end) of the 16-bit hash space; end = 65536 for the last tablet. */
export interface Partition {
  start: number;
  end: number;
  /**
   * Range tables (docs/splitting.md): the encoded DocKey bounds [keyStart, keyEnd) as lower-case hex;
   * absent or '' = open. A hash table's tablets leave them unset (they split by hash).
   */
  keyStart?: string;
  keyEnd?: string;
}

export const HASH_SPACE = 65536;

export type MemberType = 'VOTER' | 'LEARNER';

export interface ReplicaDef {
  tserverUuid: string;
  memberType: MemberType;
}

export interface TabletInfo {
  id: string;
  tableId: string;
  partition: Partition;
  /** Where the catalog wants this tablet's replicas; the background round makes Raft agree. */
  replicas: ReplicaDef[];
  /** Set once a split of this tablet is registered: its two children (docs/splitting.md). */
  splitChildren?: string[];
  /** The tablet this one was split from (absent: created with its table). */
  parentId?: string;
  /** Splits from the table's first tablets down to this one (absent: 0). */
  splitDepth?: number;
}

/** One completed split, kept in the table's history (the master's table page). */
export interface SplitRecord {
  parentId: string;
  children: string[];
  /** The split point: a hash (hash tables) or the key bound as hex (range tables). */
  at: string;
  atMs: number;
}

export interface TableInfo {
  id: string;
  name: string;
  schema: TableSchema;
  numTablets: number;
  replicationFactor: number;
  state: 'RUNNING';
  /** In partition order. */
  tabletIds: string[];
  createdAtMs: number;
  /** Bumped by every ALTER TABLE (absent: 0, a table never altered). */
  schemaVersion?: number;
  /** The id the next added column gets (absent: one above the highest id in the schema); ids of dropped columns are never reused. */
  nextColumnId?: number;
  /** The Raft log level of the table's tablets (docs/durability.md); absent: FSYNC. */
  durability?: WalDurability;
  /** Where splits may fall: absent = any key; `prefix:N` = only between the first N range components (docs/splitting.md). */
  splitPolicy?: string;
  /** Completed splits, oldest first (bounded: the last SPLIT_HISTORY_MAX). */
  splitHistory?: SplitRecord[];
}

export const SPLIT_HISTORY_MAX = 64;

export function durabilityOf(t: TableInfo): WalDurability {
  return t.durability ?? DEFAULT_WAL_DURABILITY;
}

export function schemaVersionOf(t: TableInfo): number {
  return t.schemaVersion ?? 0;
}

export function nextColumnIdOf(t: TableInfo): number {
  return t.nextColumnId ?? Math.max(0, ...t.schema.columns.map((c) => c.id)) + 1;
}

export interface TServerAddress {
  uuid: string;
  rpcAddress: string;
  webAddress: string;
}

export interface CatalogState {
  tables: ReadonlyMap<string, TableInfo>;
  tablets: ReadonlyMap<string, TabletInfo>;
  /** Last known addresses of every tserver ever registered (for locations after a master failover). */
  tservers: ReadonlyMap<string, TServerAddress>;
  /**
   * The timestamp oracle's persisted high-water mark (decimal; absent = 0): no leader ever hands out
   * a timestamp at or above it, and a new leader starts at it (master/timestamp-oracle.ts).
   */
  oracleBoundTs?: string;
}

/** Catalog operations: the payload of every sys-catalog Raft entry. */
export type CatalogOp =
  | { type: 'createTable'; table: TableInfo; tablets: TabletInfo[] }
  | { type: 'dropTable'; tableId: string }
  /** The table's next schema: refused unless the table is still at `fromVersion` (a concurrent ALTER won). */
  | { type: 'alterTable'; tableId: string; fromVersion: number; name: string; schema: TableSchema; nextColumnId: number; durability?: WalDurability }
  | { type: 'setReplicas'; tabletId: string; replicas: ReplicaDef[] }
  | { type: 'registerTServer'; tserver: TServerAddress }
  /** Register a split of `parentId` into two new tablets (docs/splitting.md); the parent keeps serving until it applies SPLIT. */
  | { type: 'registerSplit'; parentId: string; children: TabletInfo[]; at: string }
  /** The children run: they take the parent's place in the table, and the parent leaves the catalog. */
  | { type: 'completeSplit'; parentId: string; atMs: number }
  /** The tablet refused the split (nothing done there): the children leave the catalog again. */
  | { type: 'abortSplit'; parentId: string }
  /** Raise the oracle's high-water mark to `bound` (decimal); a lower or equal bound changes nothing. */
  | { type: 'reserveTimestamps'; bound: string };

export type CatalogOpType = CatalogOp['type'];
