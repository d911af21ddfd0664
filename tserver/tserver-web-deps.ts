/** What the tserver console's pages (tserver-web.ts and its tserver-web-*.ts parts) read. */
import type { Metrics, WebServer } from '../rpc';
import type { TabletMemTrackers } from './tablet-mem-trackers';
import type { TabletManager } from './tablet-manager';
import type { TransactionsJson } from './transaction/txn-service';
import type { TabletsJson } from './tserver-json';

export interface TServerWebDeps {
  web: WebServer;
  metrics: Metrics;
  uuid: string;
  rpcAddress: string;
  /** The lab's name of this node (lab_node_name), '' outside a lab. */
  nodeName?: string;
  manager: () => TabletManager;
  trackers: TabletMemTrackers;
  tabletsJson(): Promise<TabletsJson>;
  /** Running transactions on this server's coordinators (status tablets) and participants. */
  transactions?: () => Promise<TransactionsJson>;
  /** Each status tablet replica's memory of forgotten commits. */
  coordinatorMemories?: () => Array<{ tabletId: string; neverCommitted: number; committedAnswers: number; uncovered: number }>;
  /** Raft traffic counters of the server's consensus transport. */
  raftTransport?: () => { messagesSent: number; messagesReceived: number; batchesSent: number; batchesReceived: number; dropped: number; unknownGroup: number; unknownPeer: number };
}
