/**
 * Tablet splitting (rpc/protos/split.proto, docs/splitting.md): the master's SplitTablet and the
 * tablet leader's, with the TypeScript shapes of their messages as rpc/proto.ts decodes them.
 */
import { defineMethod } from './proto';
import type { MethodDef } from './types';
import type { PartitionPB, RaftPeerPB } from './service-methods';

export const MASTER_SPLIT_SERVICE = 'tessera.MasterSplit';
export const TSERVER_SPLIT_SERVICE = 'tessera.TabletSplit';

export interface SplitPointPB {
  hash?: number;
  key?: Uint8Array;
}
export interface MasterSplitTabletRequestPB {
  tabletId?: string;
  splitKey?: Uint8Array;
  splitHash?: number;
  hasSplitHash?: boolean;
}
export interface MasterSplitTabletResponsePB {
  children?: string[];
  splitPoint?: SplitPointPB;
}
export interface TabletSplitChildPB {
  tabletId?: string;
  partition?: PartitionPB;
}
export interface TabletSplitRequestPB {
  tabletId?: string;
  children?: TabletSplitChildPB[];
  peers?: RaftPeerPB[];
  splitPrefix?: number;
  flushOnly?: boolean;
}
export interface TabletSplitResponsePB {
  splitPoint?: SplitPointPB;
  dataBytes?: bigint;
}

export interface SplitMethods {
  masterSplitTablet: MethodDef<MasterSplitTabletRequestPB, MasterSplitTabletResponsePB>;
  tabletSplit: MethodDef<TabletSplitRequestPB, TabletSplitResponsePB>;
}

let split: SplitMethods | undefined;

export function splitMethods(): SplitMethods {
  split ??= {
    masterSplitTablet: defineMethod(MASTER_SPLIT_SERVICE, 'SplitTablet', 'MasterSplitTabletRequestPB', 'MasterSplitTabletResponsePB'),
    tabletSplit: defineMethod(TSERVER_SPLIT_SERVICE, 'SplitTablet', 'TabletSplitRequestPB', 'TabletSplitResponsePB'),
  };
  return split;
}
