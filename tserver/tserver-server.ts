/**
 * The tablet server process: RPC server (tablet services + Raft traffic), tablet manager, Raft tick
 * and log-GC timers, heartbeater. One Node event loop serves every tablet.
 *
 * The RPC transport and the protobuf method table are injected (rpc/ provides the WebSocket transport
 * and the codecs; tests may pass an in-memory transport).
 */
import { skewableSystemClock, type Clock } from '../common/clock';
import { DbError, ErrorCode } from '../common/errors';
import { Flags, parseFlagArgs } from '../common/flags';
import { HybridClock } from '../common/hybrid-clock';
import { droppedPeers, LAB_NODE_NAME } from '../common/server-flags';
import { masterMethods, Metrics, peerClient, rpcConnectionsOf, rpczOf, txnCoordinatorMethods, txnParticipantMethods, WebServer, type MasterMethods, type RpcClient, type RpcServer, type Transport, type TxnCoordinatorMethods, type TxnParticipantMethods } from '../rpc';
import { LOG_LEVEL } from '../common/common-flags';
import { createLogger, followLogLevel, LogRing, type Logger } from '../common/log';
import { MathRng, type Rng } from '../common/rng';
import { TxnService } from './transaction/txn-service';
import { RowService } from './row-service';
import { SplitService } from './split-service';
import { registerRowLockPages } from './row-locks-web';
import { registerPercolatorPages } from './percolator-web';
import { cellMethods, rowMethods, splitMethods } from '../rpc';
import { CERTS_DIR } from '../rpc';
import { CellService } from './cell-service';
import { ConsensusTransport } from './consensus-transport';
import { Heartbeater, type HeartbeatRequest, type HeartbeatResponse } from './heartbeater';
import { TabletManager, type TabletManagerDeps } from './tablet-manager';
import { armSimulatedPowerLoss } from './simulated-power-loss';
import { TabletService, type TServerMethods } from './tablet-service';
import { TabletState, type TabletPeer } from './tablet/tablet-peer';
import type { DbName } from './tablet/tablet-peer';
import { tabletSummary, type TabletsJson } from './tserver-json';
import {
  FS_DATA_DIRS,
  LOG_GC_INTERVAL_MS,
  HISTORY_GC_INTERVAL_SEC,
  PLACEMENT_ZONE,
  RAFT_TICK_INTERVAL_MS,
  REMOTE_BOOTSTRAP_CHUNK_BYTES,
  RPC_BIND_ADDRESSES,
  SERVER_BROADCAST_ADDRESSES,
  TSERVER_MASTER_ADDRS,
  TSERVER_RPC_PORT_DEFAULT,
  TSERVER_WEB_PORT_DEFAULT,
  WEBSERVER_INTERFACE,
  WEBSERVER_PORT,
} from './tserver-flags';
import type { TabletReportPB } from './tserver-pb';
import { countingServer, registerTServerPages, sizesOf, TabletMemTrackers } from './tserver-web';
import { startMemstoreLimit } from './memstore-limit';
import { advertisedAddress, loadOrCreateUuid, splitHostPort } from '../common/server-identity';
import { makeDirs } from '../common/fs-dirs';

/** How often memtable sizes are sampled for the memory trackers' peaks. */
export const MEM_TRACKER_SAMPLE_INTERVAL_MS = 1_000;

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

export type { TabletsJson } from './tserver-json';

export interface TServer {
  readonly uuid: string;
  readonly rpcAddress: string;
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


async function peerReport(p: TabletPeer): Promise<TabletReportPB> {
  const st = p.status();
  const sizes = await p.sizes().catch(() => ({ regulardb: { memtableBytes: 0, sstBytes: 0 }, intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 } }));
  return {
    tabletId: p.tabletId,
    tableId: p.meta.tableId,
    state: p.state,
    role: st.role,
    term: BigInt(st.term),
    leaderUuid: st.leader,
    commitIndex: BigInt(st.commit),
    appliedIndex: BigInt(st.appliedIndex),
    peers: [
      ...st.conf.voters.map((u) => ({ uuid: u, rpcAddress: '', memberType: 'VOTER' })),
      ...st.conf.learners.map((u) => ({ uuid: u, rpcAddress: '', memberType: 'LEARNER' })),
    ],
    regularMemtableBytes: BigInt(sizes.regulardb.memtableBytes),
    regularSstBytes: BigInt(sizes.regulardb.sstBytes),
    intentsMemtableBytes: BigInt(sizes.intentsdb.memtableBytes),
    intentsSstBytes: BigInt(sizes.intentsdb.sstBytes),
    intentCount: BigInt(sizes.intentsdb.intentCount),
    schemaVersion: p.meta.schemaVersion,
  };
}

export async function startTServer(opts: TServerOptions): Promise<TServer> {
  const flags = opts.flags;
  const dataDir = flags.get(FS_DATA_DIRS).split(',')[0]!.trim();
  if (!dataDir) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--fs_data_dirs is required');
  makeDirs(dataDir, 'data directory');
  const uuid = loadOrCreateUuid(dataDir);
  const logRing = opts.logRing ?? new LogRing();
  const log = (opts.log ?? createLogger({ name: 'tserver', ring: logRing })).child({ uuid });
  // A logger handed in (tests) keeps its own level; ours follows --log_level, also at run time.
  if (!opts.log) followLogLevel(log, () => flags.get(LOG_LEVEL), (l) => flags.onChange(LOG_LEVEL, l));
  const clock = new HybridClock(opts.clock ?? skewableSystemClock(flags));
  const rng = opts.rng ?? new MathRng();
  const bind = splitHostPort(flags.get(RPC_BIND_ADDRESSES), TSERVER_RPC_PORT_DEFAULT);
  if (bind.port !== 0) advertisedAddress(flags.get(SERVER_BROADCAST_ADDRESSES), bind, bind.port); // a bad pair fails before anything starts

  const rpc: RpcServer = opts.transport.createServer({ host: bind.host, port: bind.port });
  const client = peerClient(opts.transport.createClient({ caller: () => (boundAddress !== '' ? `tserver ${boundAddress}` : undefined) }), flags);
  // The RPC address must be known before tablets open (it is our entry in the address book); with
  // port 0 it is known only after start(), so tablets open after the server starts listening.
  let consensus: ConsensusTransport | undefined;
  let managerRef: TabletManager | undefined;
  const methods = opts.methods;

  const service = new TabletService({
    get manager(): TabletManager {
      if (!managerRef) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
      return managerRef;
    },
    flags,
    clock,
    selfUuid: uuid,
    reports: () => reports(),
  });
  const metrics = new Metrics({ defaultLabels: { server: 'tserver' }, processMetrics: opts.webConsole === true });
  metrics.rpcConnections(rpc, client);
  service.register(countingServer(rpc, metrics), methods);
  const txnMethods = opts.txnMethods ?? { coordinator: txnCoordinatorMethods(), participant: txnParticipantMethods(), master: masterMethods() };
  const txn = new TxnService({
    manager: () => {
      if (!managerRef) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
      return managerRef;
    },
    flags,
    clock,
    log,
    rng,
    client,
    masters: () => flags.get(TSERVER_MASTER_ADDRS).split(',').map((x) => x.trim()).filter(Boolean),
    coordinatorMethods: txnMethods.coordinator,
    participantMethods: txnMethods.participant,
    masterMethods: txnMethods.master,
  });
  txn.register(countingServer(rpc, metrics));
  new RowService({
    manager: () => {
      if (!managerRef) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
      return managerRef;
    },
    flags,
    clock,
  }).register(countingServer(rpc, metrics), rowMethods());
  new SplitService({
    manager: () => {
      if (!managerRef) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
      return managerRef;
    },
    log,
  }).register(countingServer(rpc, metrics), splitMethods());
  // HBase's cell model (docs/cells.md).
  new CellService({
    manager: () => {
      if (!managerRef) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
      return managerRef;
    },
    clock,
  }).register(countingServer(rpc, metrics), cellMethods());
  const pendingBatches: Array<() => void> = [];
  let boundAddress = '';
  consensus = new ConsensusTransport({
    selfUuid: uuid,
    selfAddress: () => boundAddress,
    learnAddress: (u, a) => managerRef?.learnAddress(u, a),
    client,
    flags,
    rng,
    log,
    addressOf: (u) => managerRef?.addressOf(u),
    dispatch: (g, m) => {
      if (!managerRef) {
        if (pendingBatches.length < 1000) pendingBatches.push(() => managerRef?.dispatch(g, m));
        return true;
      }
      return managerRef.dispatch(g, m);
    },
  });
  consensus.register(rpc);
  await rpc.start();
  const rpcAddress = advertisedAddress(flags.get(SERVER_BROADCAST_ADDRESSES), bind, splitHostPort(rpc.address, bind.port).port);
  boundAddress = rpcAddress;

  let heartbeaterRef: Heartbeater | undefined;
  const walFs = armSimulatedPowerLoss({ flags, dataDir, log });
  const manager = new TabletManager({
    dataDir,
    selfUuid: uuid,
    selfAddress: rpcAddress,
    flags,
    clock,
    log,
    rng,
    send: (g, msgs) => consensus!.send(g, msgs),
    fetchChunk: async (address, req) => {
      const r = await client.call(address, methods.fetchSnapshotChunk, req, { timeoutMs: 60_000 });
      if (r.db !== 'regular' && r.db !== 'intents') throw new DbError(ErrorCode.CORRUPTION, `remote bootstrap: unknown database '${r.db}'`);
      if (r.keys.length !== r.values.length) throw new DbError(ErrorCode.CORRUPTION, 'remote bootstrap: keys and values differ in count');
      return { sessionId: r.sessionId, db: r.db as DbName, pairs: r.keys.map((k, i) => [k, r.values[i]!] as [Uint8Array, Uint8Array]), done: r.done };
    },
    chunkBytes: () => flags.get(REMOTE_BOOTSTRAP_CHUNK_BYTES),
    txnEnv: txn.statusClient,
    onPeerOpened: (p) => txn.onPeerOpened(p),
    onPeerClosing: (p) => txn.onPeerClosing(p),
    // A new leader is reported at once: the master completes a split when the children lead.
    onLeaderChange: (_tabletId, c) => {
      if (c.isLeader) heartbeaterRef?.soon();
    },
    ...(walFs ? { walFs } : {}),
    ...(opts.storage ?? {}),
  });
  await manager.openAll();
  managerRef = manager;
  for (const f of pendingBatches.splice(0)) f();
  txn.start();

  const tick = setInterval(() => manager.tickAll(), flags.get(RAFT_TICK_INTERVAL_MS));
  let gcRunning = false;
  const gc = setInterval(() => {
    if (gcRunning) return;
    gcRunning = true;
    void manager.gcAll().finally(() => (gcRunning = false));
  }, flags.get(LOG_GC_INTERVAL_MS));
  // History GC: checked every second so history_gc_interval_sec can change at runtime.
  let historyGcRunning = false;
  let historyGcLastMs = performance.now();
  const historyGc = setInterval(() => {
    const every = flags.get(HISTORY_GC_INTERVAL_SEC) * 1000;
    if (historyGcRunning || every === 0 || performance.now() - historyGcLastMs < every) return;
    historyGcRunning = true;
    void manager.historyGcAll().finally(() => {
      historyGcRunning = false;
      historyGcLastMs = performance.now();
    });
  }, 1000);

  const webPortFlag = flags.get(WEBSERVER_PORT);
  const webHost = flags.get(WEBSERVER_INTERFACE) || bind.host;
  let webAddress = webPortFlag === -1 ? `${webHost}:${TSERVER_WEB_PORT_DEFAULT}` : `${webHost}:${webPortFlag}`;
  const trackers = new TabletMemTrackers(() => manager);
  let web: WebServer | undefined;
  if (opts.webConsole === true) {
    web = new WebServer({
      kind: 'tserver',
      host: webHost,
      port: webPortFlag === -1 ? TSERVER_WEB_PORT_DEFAULT : webPortFlag,
      flags,
      logRing,
      metrics,
      log,
      health: () => ({ ok: true, uuid, rpcAddress, tablets: manager.list().length, rpcConnections: rpcConnectionsOf(rpc, client) }),
      rpcz: () => rpczOf(rpc, client),
      ownHosts: [bind.host, rpcAddress],
    });
    registerTServerPages({ web, metrics, uuid, rpcAddress, nodeName: flags.get(LAB_NODE_NAME), manager: () => manager, trackers, tabletsJson: () => tabletsJson(), transactions: () => txn.snapshot(), coordinatorMemories: () => txn.coordinatorMemories(), raftTransport: () => consensus.metrics });
    registerRowLockPages({ web, metrics, manager: () => manager });
    registerPercolatorPages({ web, manager: () => manager });
    try {
      await web.start();
    } catch (e) {
      clearInterval(tick);
      clearInterval(gc);
      clearInterval(historyGc);
      consensus.stop();
      await rpc.stop().catch(() => undefined);
      await manager.stop();
      throw e;
    }
    webAddress = web.address;
  }
  // Peaks of the memory trackers are sampled; this keeps sampling while nobody looks at the console.
  const memSampler = setInterval(() => void trackers.sample().catch(() => undefined), MEM_TRACKER_SAMPLE_INTERVAL_MS);
  const stopMemstoreLimit = startMemstoreLimit({
    flags,
    engines: () => manager.list().flatMap((p) => [{ name: `${p.tabletId} RegularDB`, engine: p.engines().regular }, { name: `${p.tabletId} IntentsDB`, engine: p.engines().intents }]),
    onFlush: (name, bytes, limitBytes) => log.info({ db: name, memtableBytes: bytes, limitBytes }, 'memtables above the global memstore limit: flushing the largest'),
  });

  async function tabletsJson(): Promise<TabletsJson> {
    const tablets: TabletsJson['tablets'] = [];
    for (const p of manager.list()) {
      const st = p.status();
      const sizes = await sizesOf(p);
      trackers.note(p.tabletId, sizes, p.logCacheBytes());
      const background = p.backgroundWork();
      const wal = p.walSync();
      tablets.push({
        ...tabletSummary(p, st),
        regulardb: sizes.regulardb,
        intentsdb: sizes.intentsdb,
        ...(background && (background.regulardb || background.intentsdb) ? { background } : {}),
        ...(wal ? { wal } : {}),
        ...(p.lastError ? { lastError: p.lastError } : {}),
        schemaVersion: p.meta.schemaVersion,
        durability: p.walDurability(),
      });
    }
    for (const f of manager.failedOpenReplicas()) {
      tablets.push({
        tabletId: f.tabletId,
        table: f.tableName,
        tableId: f.tableId,
        partition: f.partition,
        state: TabletState.FAILED,
        role: '',
        term: 0,
        leaderUuid: '',
        commitIndex: 0,
        appliedIndex: 0,
        regulardb: { memtableBytes: 0, sstBytes: 0 },
        intentsdb: { memtableBytes: 0, sstBytes: 0, intentCount: 0 },
        lastError: f.error,
        schemaVersion: 0,
      });
    }
    return { tablets };
  }

  async function reports(): Promise<TabletReportPB[]> {
    const out: TabletReportPB[] = [];
    for (const p of manager.list()) {
      const r = await peerReport(p);
      for (const peer of r.peers ?? []) peer.rpcAddress = manager.addressOf(peer.uuid ?? '') ?? '';
      out.push(r);
    }
    // A replica that did not open: FAILED, leading nothing, in no configuration (the master replaces it).
    for (const f of manager.failedOpenReplicas()) out.push({ tabletId: f.tabletId, tableId: f.tableId, state: TabletState.FAILED, role: '', peers: [] });
    return out;
  }

  const masters = flags
    .get(TSERVER_MASTER_ADDRS)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const hbCall = opts.heartbeat;
  const heartbeater: Heartbeater = new Heartbeater({
    masters: hbCall ? masters : [],
    flags,
    log,
    request: async () => ({
      uuid,
      rpcAddress,
      webAddress,
      placementZone: flags.get(PLACEMENT_ZONE),
      tablets: await reports(),
      rssBytes: BigInt(process.memoryUsage.rss()), // rss() alone: memoryUsage() also walks the heap spaces
      hybridTime: clock.now(),
    }),
    call: (addr, req, timeoutMs) =>
      // Lab partitions cut heartbeats too, so a cut-off tserver looks dead to the master.
      droppedPeers(flags).has(addr) ? Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `heartbeat to ${addr} dropped (TEST_drop_traffic_peers)`)) : hbCall!(client, addr, req, timeoutMs),
    deleteTablet: (id) => manager.deleteTablet(id),
    onHybridTime: (ht) => clock.update(ht),
  });
  heartbeaterRef = heartbeater;
  heartbeater.start();
  log.info({ rpcAddress, dataDir, tablets: manager.list().length }, 'tserver started');

  let stopping: Promise<void> | undefined;
  return {
    uuid,
    rpcAddress,
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
      stopping ??= (async () => {
        heartbeater.stop();
        clearInterval(memSampler);
        stopMemstoreLimit();
        await web?.stop().catch(() => undefined);
        clearInterval(tick);
        clearInterval(gc);
        clearInterval(historyGc);
        txn.stop();
        consensus!.stop();
        await rpc.stop().catch(() => undefined);
        await client.close().catch(() => undefined);
        await manager.stop();
        log.info('tserver stopped');
      })();
      return stopping;
    },
  };
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

export async function tserverMain(argv: readonly string[], wiring: TServerWiring, afterStart?: (flags: Flags) => Promise<TServerCompanion | undefined>): Promise<void> {
  const { flags, positional } = parseFlagArgs(argv, new Flags());
  if (positional.length > 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unexpected arguments: ${positional.join(' ')}`);
  const ts = await startTServer({ flags, ...wiring, webConsole: true });
  process.stdout.write(`tserver ${ts.uuid} listening on ${ts.rpcAddress}, console ${flags.get(CERTS_DIR) ? 'https' : 'http'}://${ts.webAddress}\n`);
  // Companions start only once the tserver's own listeners passed their checks (a refused address
  // fails the start before anything else listens); one that cannot start stops the tserver too.
  let companion: TServerCompanion | undefined;
  try {
    // The companion shares the tserver's flags: a runtime change (SetFlag, the console) reaches it too.
    companion = await afterStart?.(flags);
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
