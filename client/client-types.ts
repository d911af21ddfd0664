/** Public types of the client library. */
import type { AggregatePartial, AggregateWireSpec } from '../common/scan-aggregate';
import type { FilterAst } from '../common/filter-ast';
export type ColumnType = 'int64' | 'double' | 'string' | 'bytes' | 'bool';

/** A column value: int64 as bigint (a safe-integer number is accepted on input), double as number, bytes as Uint8Array. */
export type ColumnValue = null | bigint | number | string | Uint8Array | boolean;

import type { ColumnFamily } from '../common/column-families';

export type { ColumnFamily } from '../common/column-families';

/** A row as a plain object { column: value }. */
export type Row = Record<string, ColumnValue>;

export interface ColumnSpec {
  name: string;
  type: ColumnType;
  /** Non-key columns are nullable unless false. */
  nullable?: boolean;
  /** Its column family (docs/cells.md); absent: `default`. */
  family?: string;
}

export interface CreateTableOptions {
  name: string;
  columns: ColumnSpec[];
  primaryKey: { hash?: string[]; range?: string[] };
  /** Default: one per live tablet server. */
  numTablets?: number;
  /** Default: the master's replication_factor flag (3). */
  replicationFactor?: number;
  ifNotExists?: boolean;
  /** The Raft log level of the table's tablets: ASYNC, FLUSH or FSYNC (the default); docs/durability.md. */
  durability?: TableDurability;
  /** Column families and their retention (docs/cells.md); parseFamilySpec reads `cf1:VERSIONS=3,TTL=10`. */
  families?: ColumnFamily[];
  /** Range tables: split points, each a tuple of leading range-column values (docs/splitting.md). */
  splitAt?: ReadonlyArray<readonly unknown[]>;
  /** Range tables: split points already encoded (DocKey bytes, as tableLocations' keyStart gives them); instead of splitAt. */
  splitKeys?: ReadonlyArray<Uint8Array>;
  /** Where splits may fall: 'any' (default) or 'prefix:N' (docs/splitting.md). */
  splitPolicy?: string;
}

/** How far a write gets before it is acknowledged (docs/durability.md). */
export type TableDurability = 'ASYNC' | 'FLUSH' | 'FSYNC';

export interface TableSummary {
  id: string;
  name: string;
  numTablets: number;
  replicationFactor: number;
  /** 0 at creation; every ALTER TABLE adds 1. */
  schemaVersion: number;
  /** ASYNC, FLUSH or FSYNC (docs/durability.md). */
  durability: string;
}

/** One ALTER TABLE: any mix of these, applied together as the table's next schema version. */
export interface AlterTableOptions {
  /** New columns (nullable: existing rows have no value for them). */
  addColumns?: Array<{ name: string; type: ColumnType; family?: string }>;
  /** Families to add, or to redefine by name (their retention; docs/cells.md). */
  setFamilies?: ColumnFamily[];
  /** Columns to drop (not primary key columns); their values are no longer read. */
  dropColumns?: string[];
  /** Column renames (primary key columns too); names before this change. */
  renameColumns?: Array<{ from: string; to: string }>;
  /** A new name for the table. */
  renameTo?: string;
  /** A new Raft log level for the table's tablets (docs/durability.md). */
  durability?: TableDurability;
}

export interface AlterTableProgress {
  schemaVersion: number;
  /** Tablets whose leader serves the new schema version, of all the table's tablets. */
  tabletsDone: number;
  tablets: number;
}

export interface CallOptions {
  /** Deadline of the whole operation including retries (default: the client's timeoutMs). */
  timeoutMs?: number;
}

export interface ReadOptions extends CallOptions {
  /** Only these columns (key columns are always returned). */
  columns?: string[];
}

export interface ScanOptions extends ReadOptions {
  /** Rows returned at most (default: all). */
  limit?: number;
  /** Values of every hash column: scan only rows with this hash key (one tablet). */
  hashKey?: Row;
  /** Inclusive lower bound on a prefix of the range columns (needs hashKey when the table has hash columns). */
  rangeStart?: Row;
  /** Exclusive upper bound on a prefix of the range columns. */
  rangeEnd?: Row;
  /** Rows per scan RPC (default 1000). */
  pageSize?: number;
  /**
   * Read every tablet at exactly this hybrid time, with no uncertainty window: a consistent snapshot
   * (an export's cut, docs/backup.md). Below a tablet's history floor: SNAPSHOT_TOO_OLD. Not inside
   * a transaction (it has its own read time).
   */
  readHt?: bigint;
  /**
   * Only the scanned tablet at this position (0-based, in partition order): a scan of the whole
   * table split into one scan per tablet, run side by side (an export, docs/backup.md). Past the
   * last tablet: nothing.
   */
  tabletOrdinal?: number;
  /**
   * Only the keys of this hash-code range [from, to) (0..65536) of a hash-sharded table: a slice of
   * a tablet, so one tablet's rows can be read by several scans side by side (an export, an
   * import's digest check). Ignored on a table without hash columns.
   */
  hashSlice?: { from: number; to: number };
  /** A server-side filter (docs/filters.md): an expression such as "PrefixFilter('a')", or a filter tree. */
  filter?: string | FilterAst;
  /** Filled by the scan: the tablets' filter counters summed over its calls. */
  stats?: ScanStats;
  /** Table.aggregate's: fold the rows on the tablets into these aggregates instead of returning them. */
  aggregateInto?: AggregateInto;
}

/** An aggregate over a table's rows: count(*) without a column, else of the column's non-null values. */
export interface AggregateSpec {
  fn: 'count' | 'sum' | 'min' | 'max';
  column?: string;
}

/** Where a scan puts the aggregates the tablets computed (its specs by column id, and the merged partials). */
export interface AggregateInto {
  named: readonly AggregateSpec[];
  specs?: AggregateWireSpec[];
  acc?: AggregatePartial[];
}

/** A filtered scan's counters (docs/filters.md): cells read from storage, and of those the ones dropped. */
export interface ScanStats {
  cellsRead: number;
  cellsSkipped: number;
  /** Scan RPCs answered. */
  calls: number;
}

export interface BatchOptions extends CallOptions {
  /** Tablet write RPCs in flight at once (default 8). */
  concurrency?: number;
  /** Rows per write RPC (default 1000). */
  rowsPerRpc?: number;
}

export interface ConnectOptions {
  masterAddresses: string[];
  /**
   * The cluster secret's text (a secured cluster: its servers run with --cluster_secret_file;
   * docs/security.md); its first line is proved to every server that challenges. Without it such a
   * cluster fails every call with UNAUTHENTICATED.
   */
  clusterSecret?: string;
  /** The same, read from this file. */
  clusterSecretFile?: string;
  /** A TLS cluster's certificates directory (its servers run with --certs_dir): dial wss, verify servers against its ca.crt. */
  certsDir?: string;
  /** Default deadline of every operation (default 10 s): past it the operation fails with TIMED_OUT. */
  timeoutMs?: number;
  /** Transactions heartbeat their status tablet this often (default 500000 µs, YugabyteDB's transaction_heartbeat_usec). */
  transactionHeartbeatUsec?: number;
  /**
   * Advertised host:port -> host:port this client dials instead, for servers whose advertised
   * addresses do not resolve here (a Docker lab: `{ 'n0:9100': '127.0.0.1:19100', … }`, from
   * `clientAddressMap` in lab/). Addresses not in the map are dialled as they are.
   */
  addressMap?: Record<string, string>;
  /** The same as a function (applied to addresses addressMap does not name). */
  translateAddress?: (address: string) => string;
  /**
   * Coalesce single-row upserts and deletes outside transactions that are issued in the same
   * event-loop turn and go to the same tablet into one Write RPC (one Raft entry), as YugabyteDB's
   * client session batches (default true). Each operation still resolves or fails on its own
   * promise, with the batch's outcome; inserts and updates (which check existence) are never merged.
   * Inside transactions, the writes of concurrent transactions (any row operation) that go to the same
   * tablet in the same turn travel in one Write request, each still written and answered on its own.
   */
  batchWrites?: boolean;
  /**
   * With batchWrites: row operations and row-lock calls keep at most this many requests per tablet
   * in flight (lock calls: per kind), and calls issued meanwhile wait and go together (docs/rows.md,
   * "Coalesced on the wire"; default 1, 0: no bound).
   */
  rowRequestsInflightMax?: number;
  /**
   * One RPC attempt of an operation that is safe to resend (reads, upserts, deletes) waits at most
   * this long (default 2500 ms, YugabyteDB's retryable_rpc_single_call_timeout_ms) before the client
   * tries the tablet's other replicas: a leader that stopped answering without closing its
   * connections (SIGSTOP, a hung disk) costs one such wait, not the whole deadline. Operations that
   * must not be resent (inserts, transactional writes, commits) keep the whole deadline. 0: no cap.
   */
  rpcSingleCallTimeoutMs?: number;
  /**
   * Default of beginTransaction's `deferWrites` (default false): writes kept back to the commit, so a
   * transaction whose writes fall in one tablet takes the single-tablet fast path (client/fast-path.ts).
   */
  deferTxnWrites?: boolean;
}
