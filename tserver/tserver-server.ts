/**
 * The tablet server process: RPC server (tablet services + Raft traffic), tablet manager, Raft tick
 * and log-GC timers, heartbeater. One Node event loop serves every tablet.
 *
 * The RPC transport and the protobuf method table are injected (rpc/ provides the WebSocket transport
 * and the codecs; tests may pass an in-memory transport).
 */
import { DbError, ErrorCode } from '../common/errors';
import { Flags, parseFlagArgs } from '../common/flags';
import type { HybridClock } from '../common/hybrid-clock';
import type { Metrics, RpcServer, WebServer, Transport } from '../rpc';
import type { LogRing, Logger } from '../common/log';
import type { TxnService } from './transaction/txn-service';
import { CERTS_DIR } from '../rpc';
import type { ConsensusTransport } from './consensus-transport';
import type { TabletManager } from './tablet-manager';
import type { TabletService, TServerMethods } from './tablet-service';
import type { TabletsJson } from './tserver-json';
import type { TabletReportPB } from './tserver-pb';
import { TabletMemTrackers } from './tserver-web';
import { startMemstoreLimit } from './memstore-limit';
import {
  buildReports,
  buildTabletsJson,
  createHeartbeater,
  createRpc,
  openManager,
  registerServices,
  startBackgroundLoops,
  startConsensus,
  startWebConsole,
  stopTServer,
  tserverIdentity,
  type TServerRefs,
} from './tserver-start';

/** How often memtable sizes are sampled for the memory trackers' peaks. */
export const MEM_TRACKER_SAMPLE_INTERVAL_MS = 1_000;

export type { TServerOptions } from './tserver-options';
import type { TServerOptions } from './tserver-options';

export type { TabletsJson } from './tserver-json';

export interface TServer {
  readonly uuid: string;
  readonly rpcAddress: string;
  /** Its RPC server: a companion in the same process calls its own tablets through dispatchLocal (rpc/local-calls.ts). */
  readonly rpcServer: RpcServer;
  readonly webAddress: string;
  readonly flags: Flags;
  readonly manager: TabletManager;
  readonly service: TabletService;
  /** Coordinators (status tablets) and participants: `txn.snapshot()` feeds the /transactions page. */
  readonly txn: TxnService;
  readonly consensus: ConsensusTransport;
  readonly clock: HybridClock;
  readonly log: Logger;
  readonly logRing: LogRing;
  /** The console, when opts.webConsole. */
  readonly web: WebServer | undefined;
  readonly metrics: Metrics;
  tabletsJson(): Promise<TabletsJson>;
  reports(): Promise<TabletReportPB[]>;
  stop(): Promise<void>;
}

export async function startTServer(opts: TServerOptions): Promise<TServer> {
  const id = tserverIdentity(opts);
  const { flags, dataDir, uuid, logRing, log, clock } = id;
  // The RPC address must be known before tablets open (it is our entry in the address book); with
  // port 0 it is known only after start(), so tablets open after the server starts listening.
  const refs: TServerRefs = { manager: undefined, heartbeater: undefined, boundAddress: '' };
  const { rpc, client } = createRpc(opts, id, refs);
  const reports = (): Promise<TabletReportPB[]> => buildReports(managerOrThrow());
  const { service, metrics, txn } = registerServices({ opts, id, refs, rpc, client, reports });
  const pendingBatches: Array<() => void> = [];
  const { consensus, rpcAddress } = await startConsensus(id, refs, rpc, client, pendingBatches);

  const manager = await openManager({ opts, id, refs, client, consensus, txn, rpcAddress });
  refs.manager = manager;
  for (const f of pendingBatches.splice(0)) f();
  txn.start();
  const loops = startBackgroundLoops(flags, manager);

  const trackers = new TabletMemTrackers(() => manager);
  const tabletsJson = (): Promise<TabletsJson> => buildTabletsJson(manager, trackers);
  const { web, webAddress } = await startWebConsole({ opts, id, rpc, client, rpcAddress, metrics, manager, txn, consensus, trackers, loops, tabletsJson });
  // Peaks of the memory trackers are sampled; this keeps sampling while nobody looks at the console.
  const memSampler = setInterval(() => void trackers.sample().catch(() => undefined), MEM_TRACKER_SAMPLE_INTERVAL_MS);
  const stopMemstoreLimit = startMemstoreLimit({
    flags,
    engines: () => manager.list().flatMap((p) => [{ name: `${p.tabletId} RegularDB`, engine: p.engines().regular }, { name: `${p.tabletId} IntentsDB`, engine: p.engines().intents }]),
    onFlush: (name, bytes, limitBytes) => log.info({ db: name, memtableBytes: bytes, limitBytes }, 'memtables above the global memstore limit: flushing the largest'),
  });

  const heartbeater = createHeartbeater({ opts, id, client, manager, rpcAddress, webAddress, reports });
  refs.heartbeater = heartbeater;
  heartbeater.start();
  log.info({ rpcAddress, dataDir, tablets: manager.list().length }, 'tserver started');

  let stopping: Promise<void> | undefined;
  return {
    uuid,
    rpcAddress,
    rpcServer: rpc,
    webAddress,
    flags,
    manager,
    service,
    txn,
    consensus,
    clock,
    log,
    logRing,
    reports,
    web,
    metrics,
    tabletsJson,
    stop(): Promise<void> {
      stopping ??= stopTServer({ log, heartbeater, memSampler, stopMemstoreLimit, web, loops, txn, consensus, rpc, client, manager });
      return stopping;
    },
  };

  /** The manager once open (reports are asked for only after it is: by the master, via the service). */
  function managerOrThrow(): TabletManager {
    if (!refs.manager) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
    return refs.manager;
  }
}

/** Runtime wiring the CLI passes in (transport + codecs from rpc/). */
export interface TServerWiring {
  transport: Transport;
  methods: TServerMethods;
  heartbeat?: TServerOptions['heartbeat'];
}

/** `tessera tserver --fs_data_dirs=... [flags]`: run until SIGINT/SIGTERM, then shut down cleanly. */
/** Something the process runs beside the tserver once it is up (the SQL endpoint), stopped before it. */
export interface TServerCompanion {
  stop(): Promise<void>;
}

export async function tserverMain(argv: readonly string[], wiring: TServerWiring, afterStart?: (flags: Flags, ts: TServer) => Promise<TServerCompanion | undefined>): Promise<void> {
  const { flags, positional } = parseFlagArgs(argv, new Flags());
  if (positional.length > 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unexpected arguments: ${positional.join(' ')}`);
  const ts = await startTServer({ flags, ...wiring, webConsole: true });
  process.stdout.write(`tserver ${ts.uuid} listening on ${ts.rpcAddress}, console ${flags.get(CERTS_DIR) ? 'https' : 'http'}://${ts.webAddress}\n`);
  // Companions start only once the tserver's own listeners passed their checks (a refused address
  // fails the start before anything else listens); one that cannot start stops the tserver too.
  let companion: TServerCompanion | undefined;
  try {
    // The companion shares the tserver's flags: a runtime change (SetFlag, the console) reaches it too.
    companion = await afterStart?.(flags, ts);
  } catch (e) {
    await ts.stop();
    throw e;
  }
  await new Promise<void>((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
  await companion?.stop();
  await ts.stop();
}
