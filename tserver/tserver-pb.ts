/**
 * TypeScript shapes of the tserver wire messages (rpc/protos/tserver.proto, common.proto) as the
 * protobuf codecs produce them: camelCase fields, 64-bit integers as bigint, absent fields undefined.
 * Everything that arrives is untrusted: tablet-service.ts validates it before use. The shapes are
 * defined once, with the service methods, in rpc/service-methods.ts; this module names the ones the
 * tserver uses, plus the remote-bootstrap chunk messages that only the tserver speaks.
 */
export type {
  AlterSchemaRequestPB,
  AlterSchemaResponsePB,
  ChangeConfigRequestPB,
  ColumnSchemaPB,
  ColumnValuePB,
  CreateTabletRequestPB,
  DeleteTabletRequestPB,
  DocKeyPB,
  EmptyPB,
  LeaderStepdownRequestPB,
  ListTabletsResponsePB,
  RaftPeerPB,
  ReadRequestPB,
  ReadResponsePB,
  RowOpPB,
  RowPB,
  ScanRequestPB,
  ScanResponsePB,
  SetFlagRequestPB,
  SetFlagResponsePB,
  TableSchemaPB,
  TabletReportPB,
  TxnContextPB,
  ValuePB,
  WriteRequestPB,
  WriteItemPB,
  WriteResultPB,
  WriteResponsePB,
} from '../rpc';

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
