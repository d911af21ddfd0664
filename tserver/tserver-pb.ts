/**
 * TypeScript shapes of the tserver wire messages (rpc/protos/tserver.proto, common.proto) as the
 * protobuf codecs produce them: camelCase fields, 64-bit integers as bigint, absent fields undefined.
 * Everything that arrives is untrusted: tablet-service.ts validates it before use.
 */
export interface ValuePB {
  int64Value?: bigint | null;
  doubleValue?: number | null;
  stringValue?: string | null;
  bytesValue?: Uint8Array | null;
  boolValue?: boolean | null;
}
export interface DocKeyPB {
  hash?: number;
  hashed?: ValuePB[];
  range?: ValuePB[];
}
export interface ColumnValuePB {
  columnId?: number;
  value?: ValuePB | null;
}
export interface RowPB {
  key?: DocKeyPB;
  columns?: ColumnValuePB[];
  writeHt?: bigint;
}
export interface RowOpPB {
  type?: string;
  key?: DocKeyPB | null;
  columns?: ColumnValuePB[];
  ttlMs?: bigint;
}
export interface TxnContextPB {
  txnId?: string;
  statusTablet?: string;
  isolation?: string;
  priority?: number;
  startHt?: bigint;
  readHt?: bigint;
  globalLimitHt?: bigint;
}
export interface WriteRequestPB {
  tabletId?: string;
  ops?: RowOpPB[];
  txn?: TxnContextPB | null;
  propagatedHt?: bigint;
}
export interface WriteResponsePB {
  writeHt: bigint;
  propagatedHt: bigint;
}
export interface ReadRequestPB {
  tabletId?: string;
  keys?: DocKeyPB[];
  columns?: number[];
  readHt?: bigint;
  txn?: TxnContextPB | null;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
}
export interface ReadResponsePB {
  rows: RowPB[];
  found: boolean[];
  readHt: bigint;
  propagatedHt: bigint;
  globalLimitHt: bigint;
}
export interface ScanRequestPB {
  tabletId?: string;
  startKey?: Uint8Array;
  endKey?: Uint8Array;
  limit?: number;
  columns?: number[];
  readHt?: bigint;
  txn?: TxnContextPB | null;
  propagatedHt?: bigint;
  globalLimitHt?: bigint;
}
export interface ScanResponsePB {
  rows: RowPB[];
  resumeKey: Uint8Array;
  readHt: bigint;
  propagatedHt: bigint;
  globalLimitHt: bigint;
}
export interface ColumnSchemaPB {
  name?: string;
  id?: number;
  type?: string;
  nullable?: boolean;
}
export interface TableSchemaPB {
  columns?: ColumnSchemaPB[];
  hashColumns?: string[];
  rangeColumns?: string[];
}
export interface RaftPeerPB {
  uuid?: string;
  rpcAddress?: string;
  memberType?: string;
}
export interface CreateTabletRequestPB {
  tabletId?: string;
  tableId?: string;
  tableName?: string;
  schema?: TableSchemaPB | null;
  partition?: { start?: number; end?: number } | null;
  peers?: RaftPeerPB[];
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
  peer?: RaftPeerPB | null;
}
export interface SetFlagRequestPB {
  name?: string;
  value?: string;
  force?: boolean;
}
export interface SetFlagResponsePB {
  name: string;
  value: string;
}
export interface TabletReportPB {
  tabletId: string;
  tableId: string;
  state: string;
  role: string;
  term: bigint;
  leaderUuid: string;
  commitIndex: bigint;
  appliedIndex: bigint;
  peers: RaftPeerPB[];
  regularMemtableBytes: bigint;
  regularSstBytes: bigint;
  intentsMemtableBytes: bigint;
  intentsSstBytes: bigint;
  intentCount: bigint;
}
export interface ListTabletsResponsePB {
  tablets: TabletReportPB[];
}
export interface FetchSnapshotChunkRequestPB {
  tabletId?: string;
  sessionId?: string;
  bytesMax?: number;
}
export interface FetchSnapshotChunkResponsePB {
  sessionId: string;
  db: string;
  keys: Uint8Array[];
  values: Uint8Array[];
  done: boolean;
}
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface EmptyPB {}
