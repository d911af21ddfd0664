/**
 * `tessera master …` and `tessera tserver …`: the raw YugabyteDB-style flags go through untouched to
 * masterMain / tserverMain; this file only wires the tserver's transport, codecs and heartbeat RPC
 * (the tserver takes them injected so its tests can run on an in-memory transport).
 */
import { UV_THREADPOOL_SIZE } from '../common/common-flags';
import { Flags, parseFlagArgs } from '../common/flags';
import { masterMain } from '../master/master-server';
import { defineMethod, masterMethods, TSERVER_ADMIN_SERVICE, TSERVER_SERVICE, WsTransport } from '../rpc';
import type { TServerMethods } from '../tserver/tablet-service';
import { tserverMain, type TServerWiring } from '../tserver/tserver-server';

function tserverMethods(): TServerMethods {
  return {
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
    fetchSnapshotChunk: defineMethod(TSERVER_ADMIN_SERVICE, 'FetchSnapshotChunk', 'FetchSnapshotChunkRequestPB', 'FetchSnapshotChunkResponsePB'),
  };
}

export function tserverWiring(argv: readonly string[]): TServerWiring {
  // The transport reads its limits (rpc_max_message_size, timeouts) from the same flags.
  const { flags } = parseFlagArgs(argv, new Flags());
  return {
    transport: new WsTransport({ flags }),
    methods: tserverMethods(),
    heartbeat: (client, address, req, timeoutMs) => client.call(address, masterMethods().tsHeartbeat, req, { timeoutMs }),
  };
}

/**
 * Size libuv's thread pool from --uv_threadpool_size before anything uses it (the pool starts at its
 * first task and reads UV_THREADPOOL_SIZE then). Bad flags are left for the server's own parse,
 * which reports them.
 */
export function applyThreadpoolSize(argv: readonly string[]): void {
  let n: number;
  try {
    n = parseFlagArgs(argv, new Flags()).flags.get(UV_THREADPOOL_SIZE);
  } catch {
    return;
  }
  process.env['UV_THREADPOOL_SIZE'] = String(n);
}

export async function runMaster(argv: readonly string[]): Promise<void> {
  applyThreadpoolSize(argv);
  await masterMain(argv);
}

export async function runTServer(argv: readonly string[]): Promise<void> {
  applyThreadpoolSize(argv);
  await tserverMain(argv, tserverWiring(argv));
}
