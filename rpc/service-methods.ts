/**
 * Method tables of the services in rpc/protos/ (master.proto, tserver.proto), with TypeScript shapes
 * of their messages as rpc/proto.ts decodes them (camelCase, 64-bit integers as bigint, absent
 * sub-messages undefined). Here, in rpc/, because the master, the client and the CLI all speak these
 * services and may share nothing else. Fields are optional: a decoded message is untrusted input and
 * every handler checks what it uses.
 *
 * Built lazily (the schemas load on first use), once per process.
 */
import { defineMethod, defineOneway } from './proto';
import type { MethodDef, OnewayDef } from './types';
import type { TxnContextPB } from './txn-methods';

// ---- common.proto --------------------------------------------------------------------------------

export interface ValuePB {
  int64Value?: bigint | null;
  doubleValue?: number | null;
  stringValue?: string | null;
  bytesValue?: Uint8Array | null;
  boolValue?: boolean | null;
  /** A string as its UTF-8 bytes (large column values; see common.proto). */
  utf8Value?: Uint8Array | null;
}
export interface ColumnSchemaPB {
  name?: string;
  id?: number;
  type?: string;
  nullable?: boolean;
  family?: string;
}
export interface ColumnFamilyPB {
  name?: string;
  versions?: number;
  minVersions?: number;
  ttlSec?: bigint;
  keepDeletedCells?: string;
  durability?: string;
}
export interface TableSchemaPB {
  columns?: ColumnSchemaPB[];
  hashColumns?: string[];
  rangeColumns?: string[];
  families?: ColumnFamilyPB[];
}
export interface PartitionPB {
  start?: number;
  end?: number;
  /** Range tables: encoded DocKey bounds [keyStart, keyEnd) (docs/splitting.md); empty = open. */
  keyStart?: Uint8Array;
  keyEnd?: Uint8Array;
}
export interface RaftPeerPB {
  uuid?: string;
  rpcAddress?: string;
  memberType?: string;
}
export interface ReplicaPB {
  tserverUuid?: string;
  rpcAddress?: string;
  role?: string;
}
export interface TabletLocationPB {
  tabletId?: string;
  tableId?: string;
  partition?: PartitionPB;
  replicas?: ReplicaPB[];
}
export interface TableInfoPB {
  id?: string;
  name?: string;
  schema?: TableSchemaPB;
  numTablets?: number;
  replicationFactor?: number;
  state?: string;
  schemaVersion?: number;
  durability?: string;
}
export interface DocKeyPB {
  hash?: number;
  hashed?: ValuePB[];
  range?: ValuePB[];
}
export interface ColumnValuePB {
  columnId?: number;
  value?: ValuePB;
}
export interface RowPB {
  key?: DocKeyPB;
  columns?: ColumnValuePB[];
  writeHt?: bigint;
}

// ---- master.proto --------------------------------------------------------------------------------

export interface CreateTableRequestPB {
  name?: string;
  schema?: TableSchemaPB;
  numTablets?: number;
  replicationFactor?: number;
  ifNotExists?: boolean;
  durability?: string;
  /** Range tables: split points (docs/splitting.md). */
  splitKeys?: Uint8Array[];
  splitPolicy?: string;
}
export interface CreateTableResponsePB {
  tableId?: string;
}
export interface DropTableRequestPB {
  name?: string;
  ifExists?: boolean;
}
export interface RenameColumnPB {
  from?: string;
  to?: string;
}
export interface AlterTableRequestPB {
  name?: string;
  addColumns?: ColumnSchemaPB[];
  dropColumns?: string[];
  renameColumns?: RenameColumnPB[];
  newName?: string;
  durability?: string;
  setFamilies?: ColumnFamilyPB[];
}
export interface AlterTableResponsePB {
  tableId?: string;
  schemaVersion?: number;
}
export interface IsAlterTableDoneRequestPB {
  name?: string;
  id?: string;
}
export interface IsAlterTableDoneResponsePB {
  done?: boolean;
  schemaVersion?: number;
  tabletsDone?: number;
  tablets?: number;
}
export interface AlterSchemaRequestPB {
  tabletId?: string;
  schema?: TableSchemaPB;
  schemaVersion?: number;
  tableName?: string;
  durability?: string;
}
export interface AlterSchemaResponsePB {
  schemaVersion?: number;
}
export type EmptyPB = Record<string, never>;
export interface ListTablesRequestPB {
  includeSystem?: boolean;
}
export interface ListTablesResponsePB {
  tables?: TableInfoPB[];
}
export interface GetTableLocationsRequestPB {
  name?: string;
  id?: string;
}
export interface GetTableLocationsResponsePB {
  table?: TableInfoPB;
  tablets?: TabletLocationPB[];
}
export interface TabletReportPB {
  tabletId?: string;
  tableId?: string;
  state?: string;
  role?: string;
  term?: bigint;
  leaderUuid?: string;
  commitIndex?: bigint;
  appliedIndex?: bigint;
  peers?: RaftPeerPB[];
  regularMemtableBytes?: bigint;
  regularSstBytes?: bigint;
  intentsMemtableBytes?: bigint;
  intentsSstBytes?: bigint;
  intentCount?: bigint;
  schemaVersion?: number;
}
export interface TSHeartbeatRequestPB {
  uuid?: string;
  rpcAddress?: string;
  webAddress?: string;
  placementZone?: string;
  tablets?: TabletReportPB[];
  rssBytes?: bigint;
  hybridTime?: bigint;
}
export interface TSHeartbeatResponsePB {
  isLeader?: boolean;
  leaderHint?: string;
  tabletsToDelete?: string[];
  hybridTime?: bigint;
}
export interface TabletServerInfoPB {
  uuid?: string;
  rpcAddress?: string;
  webAddress?: string;
  alive?: boolean;
  lastHeartbeatMsAgo?: bigint;
  tablets?: number;
  leaders?: number;
  placementZone?: string;
}
export interface ListTabletServersResponsePB {
  servers?: TabletServerInfoPB[];
}
export interface MasterInfoPB {
  uuid?: string;
  rpcAddress?: string;
  webAddress?: string;
  role?: string;
  term?: bigint;
}
export interface ListMastersRequestPB {
  selfOnly?: boolean;
}
export interface ListMastersResponsePB {
  masters?: MasterInfoPB[];
}

// ---- tserver.proto -------------------------------------------------------------------------------

export interface RowOpPB {
  type?: string;
  key?: DocKeyPB;
  columns?: ColumnValuePB[];
  ttlMs?: bigint;
}
export interface WriteRequestPB {
  tabletId?: string;
  ops?: RowOpPB[];
  txn?: TxnContextPB;
  propagatedHt?: bigint;
  /** Further transactional writes to the same tablet, each as if in its own request (needs `txn`). */
  more?: WriteItemPB[];
  schemaVersion?: number;
  /** Retryable requests: the client's id, this write's id, the client's lowest unanswered id. */
  clientId?: string;
  requestId?: bigint;
  minRunningRequestId?: bigint;
  /** With `txn`: commit the transaction here, these ops being its whole write set (fast path). */
  singleTabletCommit?: boolean;
}
export interface WriteItemPB {
  ops?: RowOpPB[];
  txn?: TxnContextPB;
  requestId?: bigint;
}
export interface WriteResponsePB {
  writeHt?: bigint;
  propagatedHt?: bigint;
  /** With `more`: one per write (the first, then `more`); empty code = written at writeHt. */
  results?: WriteResultPB[];
}
export interface WriteResultPB {
  writeHt?: bigint;
  code?: string;
  message?: string;
}
export interface ReadRequestPB {
  tabletId?: string;
  keys?: DocKeyPB[];
  columns?: number[];
  readHt?: bigint;
  txn?: TxnContextPB;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
  schemaVersion?: number;
}
export interface ReadResponsePB {
  rows?: RowPB[];
  found?: boolean[];
  readHt?: bigint;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
  /** Keys answered, from the first (0 or absent: all). */
  keysAnswered?: number;
}
export interface ScanRequestPB {
  tabletId?: string;
  startKey?: Uint8Array;
  endKey?: Uint8Array;
  limit?: number;
  columns?: number[];
  readHt?: bigint;
  txn?: TxnContextPB;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
  schemaVersion?: number;
  /** A filter tree as JSON (docs/filters.md); empty: none. */
  filter?: string;
  /** Aggregates to fold each page into, as JSON (common/scan-aggregate.ts); empty: rows are sent. */
  aggregate?: string;
  /** ROW_FORMAT_EXPORT_LINES: the rows come back as export lines (`lines`), not RowPBs. */
  rowFormat?: number;
}
/** ScanRequestPB.row_format: rows as RowPB messages (the default). */
export const ROW_FORMAT_ROWS = 0;
/** ScanRequestPB.row_format: rows as export-format lines (common/export-line.ts) in one bytes field. */
export const ROW_FORMAT_EXPORT_LINES = 1;
export interface ScanResponsePB {
  rows?: RowPB[];
  resumeKey?: Uint8Array;
  readHt?: bigint;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
  cellsRead?: bigint;
  cellsSkipped?: bigint;
  /** With `aggregate`: the page's partial results as JSON (no rows are sent). */
  aggregates?: string;
  /** With row_format EXPORT_LINES: the page's rows as export lines (UTF-8), and how many. */
  lines?: Uint8Array;
  lineCount?: number;
}
export interface CreateTabletRequestPB {
  tabletId?: string;
  tableId?: string;
  tableName?: string;
  schema?: TableSchemaPB;
  partition?: PartitionPB;
  peers?: RaftPeerPB[];
  schemaVersion?: number;
  durability?: string;
  /** One replica of a new tablet campaigns at once (master/catalog-round.ts). */
  campaign?: boolean;
}
export interface DeleteTabletRequestPB {
  tabletId?: string;
}
export interface LeaderStepdownRequestPB {
  tabletId?: string;
  newLeaderUuid?: string;
}
export interface ChangeConfigRequestPB {
  tabletId?: string;
  type?: string;
  peer?: RaftPeerPB;
}
export interface SetFlagRequestPB {
  name?: string;
  value?: string;
  force?: boolean;
}
export interface SetFlagResponsePB {
  name?: string;
  value?: string;
}
export interface ListTabletsResponsePB {
  tablets?: TabletReportPB[];
}
export interface RaftEnvelopePB {
  groupId?: string;
  message?: Uint8Array;
}
export interface RaftBatchPB {
  fromUuid?: string;
  messages?: RaftEnvelopePB[];
  fromAddress?: string;
}

// ---- txn.proto: rpc/txn-methods.ts -------------------------------------------------------------

export * from './txn-methods';

// ---- method tables -------------------------------------------------------------------------------

export const MASTER_SERVICE = 'tessera.MasterService';
export const TSERVER_SERVICE = 'tessera.TabletServerService';
export const TSERVER_ADMIN_SERVICE = 'tessera.TabletServerAdminService';
export const CONSENSUS_SERVICE = 'tessera.ConsensusService';

export interface MasterMethods {
  createTable: MethodDef<CreateTableRequestPB, CreateTableResponsePB>;
  dropTable: MethodDef<DropTableRequestPB, EmptyPB>;
  alterTable: MethodDef<AlterTableRequestPB, AlterTableResponsePB>;
  isAlterTableDone: MethodDef<IsAlterTableDoneRequestPB, IsAlterTableDoneResponsePB>;
  listTables: MethodDef<ListTablesRequestPB, ListTablesResponsePB>;
  getTableLocations: MethodDef<GetTableLocationsRequestPB, GetTableLocationsResponsePB>;
  tsHeartbeat: MethodDef<TSHeartbeatRequestPB, TSHeartbeatResponsePB>;
  listTabletServers: MethodDef<EmptyPB, ListTabletServersResponsePB>;
  listMasters: MethodDef<ListMastersRequestPB, ListMastersResponsePB>;
}

export interface TabletServerMethods {
  write: MethodDef<WriteRequestPB, WriteResponsePB>;
  read: MethodDef<ReadRequestPB, ReadResponsePB>;
  scan: MethodDef<ScanRequestPB, ScanResponsePB>;
  createTablet: MethodDef<CreateTabletRequestPB, EmptyPB>;
  deleteTablet: MethodDef<DeleteTabletRequestPB, EmptyPB>;
  alterSchema: MethodDef<AlterSchemaRequestPB, AlterSchemaResponsePB>;
  leaderStepdown: MethodDef<LeaderStepdownRequestPB, EmptyPB>;
  changeConfig: MethodDef<ChangeConfigRequestPB, EmptyPB>;
  setFlag: MethodDef<SetFlagRequestPB, SetFlagResponsePB>;
  listTablets: MethodDef<EmptyPB, ListTabletsResponsePB>;
}

let master: MasterMethods | undefined;
let tserver: TabletServerMethods | undefined;
let raftBatch: OnewayDef<RaftBatchPB> | undefined;

export function masterMethods(): MasterMethods {
  master ??= {
    createTable: defineMethod(MASTER_SERVICE, 'CreateTable', 'CreateTableRequestPB', 'CreateTableResponsePB'),
    dropTable: defineMethod(MASTER_SERVICE, 'DropTable', 'DropTableRequestPB', 'DropTableResponsePB'),
    alterTable: defineMethod(MASTER_SERVICE, 'AlterTable', 'AlterTableRequestPB', 'AlterTableResponsePB'),
    isAlterTableDone: defineMethod(MASTER_SERVICE, 'IsAlterTableDone', 'IsAlterTableDoneRequestPB', 'IsAlterTableDoneResponsePB'),
    listTables: defineMethod(MASTER_SERVICE, 'ListTables', 'ListTablesRequestPB', 'ListTablesResponsePB'),
    getTableLocations: defineMethod(MASTER_SERVICE, 'GetTableLocations', 'GetTableLocationsRequestPB', 'GetTableLocationsResponsePB'),
    tsHeartbeat: defineMethod(MASTER_SERVICE, 'TSHeartbeat', 'TSHeartbeatRequestPB', 'TSHeartbeatResponsePB'),
    listTabletServers: defineMethod(MASTER_SERVICE, 'ListTabletServers', 'ListTabletServersRequestPB', 'ListTabletServersResponsePB'),
    listMasters: defineMethod(MASTER_SERVICE, 'ListMasters', 'ListMastersRequestPB', 'ListMastersResponsePB'),
  };
  return master;
}

export function tabletServerMethods(): TabletServerMethods {
  tserver ??= {
    write: defineMethod(TSERVER_SERVICE, 'Write', 'WriteRequestPB', 'WriteResponsePB'),
    read: defineMethod(TSERVER_SERVICE, 'Read', 'ReadRequestPB', 'ReadResponsePB'),
    scan: defineMethod(TSERVER_SERVICE, 'Scan', 'ScanRequestPB', 'ScanResponsePB'),
    createTablet: defineMethod(TSERVER_ADMIN_SERVICE, 'CreateTablet', 'CreateTabletRequestPB', 'CreateTabletResponsePB'),
    deleteTablet: defineMethod(TSERVER_ADMIN_SERVICE, 'DeleteTablet', 'DeleteTabletRequestPB', 'DeleteTabletResponsePB'),
    alterSchema: defineMethod(TSERVER_ADMIN_SERVICE, 'AlterSchema', 'AlterSchemaRequestPB', 'AlterSchemaResponsePB'),
    leaderStepdown: defineMethod(TSERVER_ADMIN_SERVICE, 'LeaderStepdown', 'LeaderStepdownRequestPB', 'LeaderStepdownResponsePB'),
    changeConfig: defineMethod(TSERVER_ADMIN_SERVICE, 'ChangeConfig', 'ChangeConfigRequestPB', 'ChangeConfigResponsePB'),
    setFlag: defineMethod(TSERVER_ADMIN_SERVICE, 'SetFlag', 'SetFlagRequestPB', 'SetFlagResponsePB'),
    listTablets: defineMethod(TSERVER_ADMIN_SERVICE, 'ListTablets', 'ListTabletsRequestPB', 'ListTabletsResponsePB'),
  };
  return tserver;
}

/** Raft traffic between servers (the tserver encodes the same RaftBatchPB by hand for speed). */
export function raftBatchMethod(): OnewayDef<RaftBatchPB> {
  raftBatch ??= defineOneway(CONSENSUS_SERVICE, 'RaftBatch', 'RaftBatchPB');
  return raftBatch;
}
