/** Public API of the tablet server. */
export { startTServer, tserverMain, type TServer, type TServerOptions, type TServerWiring, type TabletsJson } from './tserver-server';
export { TabletManager, type TabletManagerDeps } from './tablet-manager';
export { TabletService, type TServerMethods, valueFromPb, valueToPb, keyFromPb, keyToPb, rowToPb } from './tablet-service';
export { ConsensusTransport, RAFT_BATCH } from './consensus-transport';
export { raftBatchCodec, encodeRaftBatch, decodeRaftBatch, type RaftBatch, type RaftEnvelope } from './raft-batch-codec';
export { Heartbeater, type HeartbeatRequest, type HeartbeatResponse } from './heartbeater';
export { TabletPeer, TabletState, type SnapshotDescriptor } from './tablet/tablet-peer';
export { encodeTabletOp, decodeTabletOp, type TabletOp } from './tablet/tablet-op';
export type { TabletMeta, TableSchema, ColumnSchema, RaftPeer } from './tablet/tablet-meta';
export type * from './tserver-pb';
export * from './tserver-flags';
