/**
 * The steps of startTServer (tserver-server.ts), in start order: identity, RPC services, consensus
 * transport and listener, tablet manager, background loops, web console, heartbeater; and the stop
 * sequence. Split out so each step fits a screen (docs/conventions.md).
 */
import { skewableSystemClock } from '../common/clock';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { HybridClock } from '../common/hybrid-clock';
import { droppedPeers, LAB_NODE_NAME } from '../common/server-flags';
import { masterMethods, Metrics, peerClient, rpcConnectionsOf, rpczOf, txnCoordinatorMethods, txnParticipantMethods, WebServer, type RpcClient, type RpcServer } from '../rpc';
import { LogRing, type Logger } from '../common/log';
import { MathRng, type Rng } from '../common/rng';
import { TxnService } from './transaction/txn-service';
import { RowService } from './row-service';
import { SplitService } from './split-service';
import { registerRowLockPages } from './row-locks-web';
import { registerPercolatorPages } from './percolator-web';
import { cellMethods, rowMethods, splitMethods } from '../rpc';
import { CellService } from './cell-service';
import { ConsensusTransport } from './consensus-transport';
import { Heartbeater } from './heartbeater';
import { TabletManager } from './tablet-manager';
import { armSimulatedPowerLoss } from './simulated-power-loss';
import { TabletService } from './tablet-service';
import { TabletState, type TabletPeer } from './tablet/tablet-peer';
import type { DbName } from './tablet/tablet-peer';
import { tabletSummary, type TabletsJson } from './tserver-json';
import {
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
import { advertisedAddress, serverBasics, splitHostPort } from '../common/server-identity';
import type { TServerOptions } from './tserver-options';

/** What the process is before anything listens: data dir, uuid, logger, clocks, bind address. */
export interface TServerIdentity {
  flags: Flags;
  dataDir: string;
  uuid: string;
  logRing: LogRing;
  log: Logger;
  clock: HybridClock;
  rng: Rng;
  bind: { host: string; port: number };
}

/**
 * Late-bound parts: services register before the tablet manager exists (the RPC address must be
 * known before tablets open), so they reach it, the heartbeater and the bound address through here.
 */
export interface TServerRefs {
  manager: TabletManager | undefined;
  heartbeater: Heartbeater | undefined;
  boundAddress: string;
}

/** Reads the data dir and identity flags, creates the logger and clocks, checks the bind address. */
export function tserverIdentity(opts: TServerOptions): TServerIdentity {
  const flags = opts.flags;
  const { dataDir, uuid, logRing, log } = serverBasics('tserver', flags, opts);
  const clock = new HybridClock(opts.clock ?? skewableSystemClock(flags));
  const rng = opts.rng ?? new MathRng();
  const bind = splitHostPort(flags.get(RPC_BIND_ADDRESSES), TSERVER_RPC_PORT_DEFAULT);
  if (bind.port !== 0) advertisedAddress(flags.get(SERVER_BROADCAST_ADDRESSES), bind, bind.port); // a bad pair fails before anything starts
  return { flags, dataDir, uuid, logRing, log, clock, rng, bind };
}

/** The tablet manager, or SERVICE_UNAVAILABLE while the tablets are still opening. */
function managerOf(refs: TServerRefs): TabletManager {
  if (!refs.manager) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, 'tablet server is starting');
  return refs.manager;
}

/** Creates the RPC server and the peer client (named after our bound address once it is known). */
export function createRpc(opts: TServerOptions, id: TServerIdentity, refs: TServerRefs): { rpc: RpcServer; client: RpcClient } {
  const rpc: RpcServer = opts.transport.createServer({ host: id.bind.host, port: id.bind.port });
  const client = peerClient(opts.transport.createClient({ caller: () => (refs.boundAddress !== '' ? `tserver ${refs.boundAddress}` : undefined) }), id.flags);
  return { rpc, client };
}

export interface RegisterServicesDeps {
  opts: TServerOptions;
  id: TServerIdentity;
  refs: TServerRefs;
  rpc: RpcServer;
  client: RpcClient;
  /** Tablet reports for the master (built once the manager is up). */
  reports: () => Promise<TabletReportPB[]>;
}

/** Registers the tablet, transaction, row, split and cell services on the RPC server. */
export function registerServices(d: RegisterServicesDeps): { service: TabletService; metrics: Metrics; txn: TxnService } {
  const { opts, refs, rpc, client } = d;
  const { flags, clock, log, rng, uuid } = d.id;
  const service = new TabletService({
    get manager(): TabletManager {
      return managerOf(refs);
    },
    flags,
    clock,
    selfUuid: uuid,
    reports: () => d.reports(),
  });
  const metrics = new Metrics({ defaultLabels: { server: 'tserver' }, processMetrics: opts.webConsole === true });
  metrics.rpcConnections(rpc, client);
  service.register(countingServer(rpc, metrics), opts.methods);
  const txnMethods = opts.txnMethods ?? { coordinator: txnCoordinatorMethods(), participant: txnParticipantMethods(), master: masterMethods() };
  const txn = new TxnService({
    manager: () => managerOf(refs),
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
  new RowService({ manager: () => managerOf(refs), flags, clock }).register(countingServer(rpc, metrics), rowMethods());
  new SplitService({ manager: () => managerOf(refs), log }).register(countingServer(rpc, metrics), splitMethods());
  // HBase's cell model (docs/cells.md).
  new CellService({ manager: () => managerOf(refs), clock }).register(countingServer(rpc, metrics), cellMethods());
  return { service, metrics, txn };
}

/**
 * Registers the Raft transport and starts listening; returns the advertised RPC address. Raft
 * batches that arrive before the manager opens are queued (up to 1000) and replayed once it has.
 */
export async function startConsensus(
  id: TServerIdentity,
  refs: TServerRefs,
  rpc: RpcServer,
  client: RpcClient,
  pendingBatches: Array<() => void>,
): Promise<{ consensus: ConsensusTransport; rpcAddress: string }> {
  const consensus = new ConsensusTransport({
    selfUuid: id.uuid,
    selfAddress: () => refs.boundAddress,
    learnAddress: (u, a) => refs.manager?.learnAddress(u, a),
    client,
    flags: id.flags,
    rng: id.rng,
    log: id.log,
    addressOf: (u) => refs.manager?.addressOf(u),
    dispatch: (g, m) => {
      if (!refs.manager) {
        if (pendingBatches.length < 1000) pendingBatches.push(() => refs.manager?.dispatch(g, m));
        return true;
      }
      return refs.manager.dispatch(g, m);
    },
  });
  consensus.register(rpc);
  await rpc.start();
  const rpcAddress = advertisedAddress(id.flags.get(SERVER_BROADCAST_ADDRESSES), id.bind, splitHostPort(rpc.address, id.bind.port).port);
  refs.boundAddress = rpcAddress;
  return { consensus, rpcAddress };
}

export interface OpenManagerDeps {
  opts: TServerOptions;
  id: TServerIdentity;
  refs: TServerRefs;
  client: RpcClient;
  consensus: ConsensusTransport;
  txn: TxnService;
  rpcAddress: string;
}

/** Creates the tablet manager and opens every tablet replica in the data dir. */
export async function openManager(d: OpenManagerDeps): Promise<TabletManager> {
  const { opts, id, refs, client, consensus, txn } = d;
  const { flags, dataDir, log } = id;
  const methods = opts.methods;
  const walFs = armSimulatedPowerLoss({ flags, dataDir, log });
  const manager = new TabletManager({
    dataDir,
    selfUuid: id.uuid,
    selfAddress: d.rpcAddress,
    flags,
    clock: id.clock,
    log,
    rng: id.rng,
    send: (g, msgs) => consensus.send(g, msgs),
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
      if (c.isLeader) refs.heartbeater?.soon();
    },
    // ... and once a split's children are ready (the master completes it when their leaders committed).
    onSplitApplied: () => refs.heartbeater?.soon(),
    ...(walFs ? { walFs } : {}),
    ...(opts.storage ?? {}),
  });
  await manager.openAll();
  return manager;
}

/** The Raft tick, log GC and history GC timers; stop() clears them in that order. */
export interface BackgroundLoops {
  stop(): void;
}

/** Starts the Raft tick, log GC and history GC loops over every tablet. */
export function startBackgroundLoops(flags: Flags, manager: TabletManager): BackgroundLoops {
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
  return {
    stop(): void {
      clearInterval(tick);
      clearInterval(gc);
      clearInterval(historyGc);
    },
  };
}

export interface WebConsoleDeps {
  opts: TServerOptions;
  id: TServerIdentity;
  rpc: RpcServer;
  client: RpcClient;
  rpcAddress: string;
  metrics: Metrics;
  manager: TabletManager;
  txn: TxnService;
  consensus: ConsensusTransport;
  trackers: TabletMemTrackers;
  loops: BackgroundLoops;
  tabletsJson: () => Promise<TabletsJson>;
}

/**
 * Starts the web console when opts.webConsole; returns it and the web address (the flag's when
 * there is no console). A console that cannot start stops what started before it, then throws.
 */
export async function startWebConsole(d: WebConsoleDeps): Promise<{ web: WebServer | undefined; webAddress: string }> {
  const { id, rpc, client, rpcAddress, metrics, manager, txn, consensus } = d;
  const { flags, uuid, log } = id;
  const webPortFlag = flags.get(WEBSERVER_PORT);
  const webHost = flags.get(WEBSERVER_INTERFACE) || id.bind.host;
  const webAddress = webPortFlag === -1 ? `${webHost}:${TSERVER_WEB_PORT_DEFAULT}` : `${webHost}:${webPortFlag}`;
  if (d.opts.webConsole !== true) return { web: undefined, webAddress };
  const web = new WebServer({
    kind: 'tserver',
    host: webHost,
    port: webPortFlag === -1 ? TSERVER_WEB_PORT_DEFAULT : webPortFlag,
    flags,
    logRing: id.logRing,
    metrics,
    log,
    health: () => ({ ok: true, uuid, rpcAddress, tablets: manager.list().length, rpcConnections: rpcConnectionsOf(rpc, client) }),
    rpcz: () => rpczOf(rpc, client),
    ownHosts: [id.bind.host, rpcAddress],
  });
  registerTServerPages({ web, metrics, uuid, rpcAddress, nodeName: flags.get(LAB_NODE_NAME), manager: () => manager, trackers: d.trackers, tabletsJson: () => d.tabletsJson(), transactions: () => txn.snapshot(), coordinatorMemories: () => txn.coordinatorMemories(), raftTransport: () => consensus.metrics });
  registerRowLockPages({ web, metrics, manager: () => manager });
  registerPercolatorPages({ web, manager: () => manager });
  try {
    await web.start();
  } catch (e) {
    d.loops.stop();
    consensus.stop();
    await rpc.stop().catch(() => undefined);
    await manager.stop();
    throw e;
  }
  return { web, webAddress: web.address };
}

/** The /tablets JSON: every open replica (noting its sizes in the trackers), then the failed ones. */
export async function buildTabletsJson(manager: TabletManager, trackers: TabletMemTrackers): Promise<TabletsJson> {
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

/** One replica's report for the master's heartbeat (peer addresses filled in by the caller). */
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

/** Reports of every replica for the master, with peer addresses from the address book. */
export async function buildReports(manager: TabletManager): Promise<TabletReportPB[]> {
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

export interface HeartbeaterStartDeps {
  opts: TServerOptions;
  id: TServerIdentity;
  client: RpcClient;
  manager: TabletManager;
  rpcAddress: string;
  webAddress: string;
  reports: () => Promise<TabletReportPB[]>;
}

/** Creates the heartbeater to the masters (none without opts.heartbeat); the caller starts it. */
export function createHeartbeater(d: HeartbeaterStartDeps): Heartbeater {
  const { flags, log, clock, uuid } = d.id;
  const masters = flags
    .get(TSERVER_MASTER_ADDRS)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const hbCall = d.opts.heartbeat;
  return new Heartbeater({
    masters: hbCall ? masters : [],
    flags,
    log,
    request: async () => ({
      uuid,
      rpcAddress: d.rpcAddress,
      webAddress: d.webAddress,
      placementZone: flags.get(PLACEMENT_ZONE),
      tablets: await d.reports(),
      rssBytes: BigInt(process.memoryUsage.rss()), // rss() alone: memoryUsage() also walks the heap spaces
      hybridTime: clock.now(),
    }),
    call: (addr, req, timeoutMs) =>
      // Lab partitions cut heartbeats too, so a cut-off tserver looks dead to the master.
      droppedPeers(flags).has(addr) ? Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, `heartbeat to ${addr} dropped (TEST_drop_traffic_peers)`)) : hbCall!(d.client, addr, req, timeoutMs),
    deleteTablet: (id) => d.manager.deleteTablet(id),
    onHybridTime: (ht) => clock.update(ht),
  });
}

/** Everything the stop sequence tears down. */
export interface TServerParts {
  log: Logger;
  heartbeater: Heartbeater;
  memSampler: NodeJS.Timeout;
  stopMemstoreLimit: () => void;
  web: WebServer | undefined;
  loops: BackgroundLoops;
  txn: TxnService;
  consensus: ConsensusTransport;
  rpc: RpcServer;
  client: RpcClient;
  manager: TabletManager;
}

/** Stops in reverse dependency order: heartbeats and samplers, console, loops, services, RPC, tablets. */
export async function stopTServer(p: TServerParts): Promise<void> {
  p.heartbeater.stop();
  clearInterval(p.memSampler);
  p.stopMemstoreLimit();
  await p.web?.stop().catch(() => undefined);
  p.loops.stop();
  p.txn.stop();
  p.consensus.stop();
  await p.rpc.stop().catch(() => undefined);
  await p.client.close().catch(() => undefined);
  await p.manager.stop();
  p.log.info('tserver stopped');
}
