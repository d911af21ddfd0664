/**
 * What startTServer takes (tserver-server.ts): a leaf module both the server and its start steps
 * (tserver-start.ts) import, so neither imports the other back.
 */
import type { Clock } from '../common/clock';
import type { Flags } from '../common/flags';
import type { LogRing, Logger } from '../common/log';
import type { Rng } from '../common/rng';
import type { MasterMethods, RpcClient, Transport, TxnCoordinatorMethods, TxnParticipantMethods } from '../rpc';
import type { HeartbeatRequest, HeartbeatResponse } from './heartbeater';
import type { TabletManagerDeps } from './tablet-manager';
import type { TServerMethods } from './tablet-service';

export interface TServerOptions {
  flags: Flags;
  transport: Transport;
  methods: TServerMethods;
  /** TSHeartbeat RPC to a master (absent: no heartbeats, e.g. tests without a master). */
  heartbeat?: (client: RpcClient, address: string, req: HeartbeatRequest, timeoutMs: number) => Promise<HeartbeatResponse>;
  clock?: Clock;
  rng?: Rng;
  log?: Logger;
  logRing?: LogRing;
  /** Transaction service method tables (default: rpc/service-methods over rpc/protos/txn.proto). */
  txnMethods?: { coordinator: TxnCoordinatorMethods; participant: TxnParticipantMethods; master: Pick<MasterMethods, 'listTables' | 'getTableLocations'> };
  /** Storage seams for tests (defaults: files and RocksDB). */
  storage?: Pick<TabletManagerDeps, 'openLogStorage' | 'openEngine' | 'openDocDb' | 'newRaftCore'>;
  /**
   * Serve the web console on --webserver_interface:--webserver_port. Default false here because
   * in-process tests run several tservers on one host (they would all want port 9000); tserverMain
   * turns it on.
   */
  webConsole?: boolean;
}
