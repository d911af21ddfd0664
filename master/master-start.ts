/**
 * The steps of startMaster (master-server.ts), in start order: identity and peers, sys catalog,
 * its Raft traffic, the timestamp oracle, MasterService handlers, the console, the masters list,
 * the tick and catalog round loops; and the stop sequence. Split out so each step fits a screen
 * (docs/conventions.md).
 */
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import { setFlagByOperator } from '../common/flag-policy';
import { LogRing, type Logger } from '../common/log';
import { MathRng } from '../common/rng';
import { decodeMessage, encodeMessage, type Message } from '../raft';
import { masterMethods, Metrics, rpcConnectionsOf, rpczOf, tabletServerMethods, WebServer, WsTransport, type ListMastersResponsePB, type RaftEnvelopePB, type RpcClient, type RpcServer, type Transport } from '../rpc';
import type { raftBatchMethod } from '../rpc';
import { tableToPb, type CatalogManager } from './catalog-manager';
import {
  CATALOG_RECONCILE_INTERVAL_MS,
  MASTER_ADDRESSES,
  MASTER_RAFT_TICK_INTERVAL_MS,
  MASTER_RPC_PORT_DEFAULT,
  MASTER_WEB_PORT_DEFAULT,
  RPC_BIND_ADDRESSES,
  SERVER_BROADCAST_ADDRESSES,
  WEBSERVER_INTERFACE,
  WEBSERVER_PORT,
} from './master-flags';
import type { MasterInfo } from './master-info';
import { droppedPeers } from '../common/server-flags';
import { SYS_CATALOG_GROUP_ID, SysCatalog } from './sys-catalog';
import { oracleMethods, splitMethods } from '../rpc';
import { oracleBoundOf } from './catalog-state';
import { TimestampOracle } from './timestamp-oracle';
import { ORACLE_RANGE_MS } from './master-flags';
import { advertisedAddress, serverBasics, splitHostPort } from '../common/server-identity';
import type { MasterOptions } from './master-options';

/** How long a master's self description fetched from a peer is reused. */
const PEER_INFO_TTL_MS = 5_000;
const PEER_INFO_TIMEOUT_MS = 1_000;

/** What the master is before anything listens: data dir, uuid, logger, transport, its id and peers. */
export interface MasterIdentity {
  flags: Flags;
  dataDir: string;
  uuid: string;
  logRing: LogRing;
  log: Logger;
  transport: Transport;
  bind: { host: string; port: number };
  /** Our advertised RPC address: our Raft id in the sys catalog. */
  selfId: string;
  peers: string[];
}

/** Reads the data dir and identity flags, creates the logger and transport, checks --master_addresses. */
export function masterIdentity(opts: MasterOptions): MasterIdentity {
  const flags = opts.flags;
  const { dataDir, uuid, logRing, log } = serverBasics('master', flags, opts);
  const transport = opts.transport ?? new WsTransport({ flags, log });
  const bind = splitHostPort(flags.get(RPC_BIND_ADDRESSES), MASTER_RPC_PORT_DEFAULT);
  if (bind.port === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a master needs a fixed --rpc_bind_addresses port (it is its identity in --master_addresses)');
  const selfId = advertisedAddress(flags.get(SERVER_BROADCAST_ADDRESSES), bind, bind.port);
  const peers = flags
    .get(MASTER_ADDRESSES)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (peers.length === 0) peers.push(selfId);
  if (!peers.includes(selfId)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${flags.get(SERVER_BROADCAST_ADDRESSES) ? '--server_broadcast_addresses' : '--rpc_bind_addresses'} ${selfId} is not one of --master_addresses ${peers.join(',')}`);
  if (new Set(peers).size !== peers.length) throw new DbError(ErrorCode.INVALID_ARGUMENT, `--master_addresses lists a master twice: ${peers.join(',')}`);
  return { flags, dataDir, uuid, logRing, log, transport, bind, selfId, peers };
}

/** Late-bound parts the sys catalog's leader changes reach (they exist only once it is open). */
export interface MasterRefs {
  manager: CatalogManager | undefined;
  oracle: TimestampOracle | undefined;
}

export interface SysCatalogDeps {
  id: MasterIdentity;
  refs: MasterRefs;
  rpc: RpcServer;
  client: RpcClient;
  raftBatch: ReturnType<typeof raftBatchMethod>;
}

/** Sends sys catalog Raft messages, one batch per peer, skipping lab-dropped peers. */
function sendSysCatalogMessages(d: SysCatalogDeps, msgs: Message[]): void {
  const { flags, selfId, log } = d.id;
  const byTo = new Map<string, RaftEnvelopePB[]>();
  // Lab partitions: a master's Raft peer id is its RPC address, so the drop list applies directly.
  const drop = droppedPeers(flags);
  for (const m of msgs) {
    if (drop.has(m.to)) continue;
    let q = byTo.get(m.to);
    if (!q) byTo.set(m.to, (q = []));
    q.push({ groupId: SYS_CATALOG_GROUP_ID, message: encodeMessage(m) });
  }
  for (const [to, messages] of byTo) {
    try {
      d.client.send(to, d.raftBatch, { fromUuid: selfId, fromAddress: selfId, messages });
    } catch (e) {
      log.debug({ err: e, to }, 'sys catalog raft batch not sent');
    }
  }
}

/** Opens the sys catalog; a failure stops the listener and the client, then throws. */
export async function openSysCatalog(d: SysCatalogDeps): Promise<SysCatalog> {
  const { id, refs } = d;
  try {
    return await SysCatalog.open({
      dataDir: id.dataDir,
      selfId: id.selfId,
      peers: id.peers,
      flags: id.flags,
      log: id.log,
      rng: new MathRng(),
      send: (msgs: Message[]) => sendSysCatalogMessages(d, msgs),
      onLeaderChange: (c) => {
        refs.manager?.onLeadership(c.isLeader);
        refs.oracle?.reset();
        id.log.info({ leader: c.leader, term: c.term, role: c.role }, 'sys catalog leader changed');
      },
    });
  } catch (e) {
    await d.rpc.stop().catch(() => undefined);
    await d.client.close().catch(() => undefined);
    throw e;
  }
}

/** Steps incoming sys catalog Raft batches (lab-dropped senders ignored, undecodable ones logged). */
export function registerSysCatalogRaft(d: SysCatalogDeps, sys: SysCatalog): void {
  const { flags, log } = d.id;
  d.rpc.onOneway(d.raftBatch, (batch) => {
    if (droppedPeers(flags).has(batch.fromUuid ?? '')) return;
    for (const env of batch.messages ?? []) {
      if (env.groupId !== SYS_CATALOG_GROUP_ID || !env.message) continue;
      try {
        sys.step(decodeMessage(env.message));
      } catch (e) {
        log.warn({ err: e, from: batch.fromUuid }, 'undecodable sys catalog message dropped');
      }
    }
  });
}

/** The timestamp oracle, its reserved bound kept in the sys catalog. */
export function createOracle(sys: SysCatalog, flags: Flags): TimestampOracle {
  return new TimestampOracle(
    {
      store: {
        persistedBound: () => oracleBoundOf(sys.state()),
        persist: async (bound) => {
          await sys.propose({ type: 'reserveTimestamps', bound: bound.toString() });
        },
      },
      nowMs: () => Date.now(),
    },
    { get rangeMs() { return flags.get(ORACLE_RANGE_MS); } },
  );
}

/** Registers the oracle, table, split, heartbeat, set_flag and tablet server list handlers. */
export function registerMasterHandlers(rpc: RpcServer, mgr: CatalogManager, tso: TimestampOracle, flags: Flags): void {
  const m = masterMethods();
  rpc.handle(oracleMethods().getTimestamps, async (req) => {
    const count = req.count ?? 0;
    mgr.requireLeader();
    const first = await tso.getTimestamps(count);
    // The lease may have ended while a range was reserved: a deposed leader answers nothing.
    mgr.requireLeader();
    return { first, count };
  });
  rpc.handle(m.createTable, async (req) => ({ tableId: await mgr.createTable(req) }));
  rpc.handle(m.dropTable, async (req) => {
    await mgr.dropTable(req);
    return {};
  });
  rpc.handle(m.alterTable, async (req) => {
    const r = await mgr.alterTable(req);
    return { tableId: r.table.id, schemaVersion: r.schemaVersion };
  });
  rpc.handle(m.isAlterTableDone, (req) => Promise.resolve(mgr.isAlterTableDone(req)));
  rpc.handle(m.listTables, (req) => Promise.resolve({ tables: mgr.listTables(req.includeSystem === true).map(tableToPb) }));
  rpc.handle(m.getTableLocations, (req) => Promise.resolve(mgr.tableLocations(req)));
  rpc.handle(splitMethods().masterSplitTablet, (req) => mgr.splits.split(req));
  rpc.handle(m.tsHeartbeat, (req) => {
    // Lab partitions: a cut-off tserver's heartbeats must not reach us (it would look alive).
    if (droppedPeers(flags).has(req.rpcAddress ?? '')) return Promise.reject(new DbError(ErrorCode.NETWORK_ERROR, 'heartbeat dropped (TEST_drop_traffic_peers)'));
    return Promise.resolve(mgr.heartbeat(req));
  });
  // set_flag on a master by its RPC address (the same admin method tservers serve).
  rpc.handle(tabletServerMethods().setFlag, (req) => {
    if (!req.name) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'flag name missing');
    const v = setFlagByOperator(flags, req.name, req.value ?? '', req.force === true);
    return Promise.resolve({ name: req.name, value: String(v) });
  });
  rpc.handle(m.listTabletServers, () => {
    mgr.requireLeader();
    return Promise.resolve({ servers: mgr.tabletServersPb() });
  });
}

/** The catalog metrics and the (not yet started) web console. */
export function createMasterWeb(id: MasterIdentity, sys: SysCatalog, mgr: CatalogManager, rpc: RpcServer, client: RpcClient): { metrics: Metrics; web: WebServer } {
  const { flags, uuid, selfId } = id;
  const webPortFlag = flags.get(WEBSERVER_PORT);
  const webHost = flags.get(WEBSERVER_INTERFACE) || id.bind.host;
  const metrics = new Metrics({ defaultLabels: { server: 'master' }, processMetrics: true });
  metrics.gauge('master_tables', 'Tables in the catalog', [], (g) => g.set(sys.state().tables.size));
  metrics.gauge('master_tablets', 'Tablets in the catalog', [], (g) => g.set(sys.state().tablets.size));
  metrics.gauge('master_is_leader', '1 on the sys catalog leader', [], (g) => g.set(sys.isLeader() ? 1 : 0));
  metrics.gauge('master_tablet_splits_completed', 'Tablet splits this master completed since it started (docs/splitting.md)', [], (g) => g.set(mgr.splits.splitsCompleted));
  metrics.rpcConnections(rpc, client);
  const web = new WebServer({
    kind: 'master',
    host: webHost,
    port: webPortFlag === -1 ? MASTER_WEB_PORT_DEFAULT : webPortFlag,
    flags,
    logRing: id.logRing,
    metrics,
    log: id.log,
    health: () => ({ ok: true, uuid, rpcAddress: selfId, role: sys.isLeader() ? 'LEADER' : 'FOLLOWER', rpcConnections: rpcConnectionsOf(rpc, client) }),
    rpcz: () => rpczOf(rpc, client),
    ownHosts: [id.bind.host, selfId],
  });
  return { metrics, web };
}

/** The list of masters with their roles: ours from the sys catalog, peers' asked for and cached. */
export class MasterDirectory {
  private readonly peerCache = new Map<string, { at: number; info: MasterInfo }>();

  constructor(
    private readonly id: MasterIdentity,
    private readonly sys: SysCatalog,
    private readonly web: WebServer,
    private readonly client: RpcClient,
  ) {}

  /** This master's own description. */
  self(): MasterInfo {
    const st = this.sys.status();
    return { uuid: this.id.uuid, rpcAddress: this.id.selfId, webAddress: this.web.address, role: this.sys.isLeader() ? 'LEADER' : 'FOLLOWER', term: st.term };
  }

  /** A peer's self description (cached for PEER_INFO_TTL_MS unless it claims to lead). */
  async peerInfo(addr: string): Promise<MasterInfo> {
    const c = this.peerCache.get(addr);
    // A cached LEADER may be stale (killed or deposed since): ask again rather than show two leaders.
    if (c && performance.now() - c.at < PEER_INFO_TTL_MS && c.info.role !== 'LEADER') return c.info;
    try {
      const r = await this.client.call(addr, masterMethods().listMasters, { selfOnly: true }, { timeoutMs: PEER_INFO_TIMEOUT_MS });
      const x = r.masters?.[0];
      const info: MasterInfo = { uuid: x?.uuid ?? '', rpcAddress: addr, webAddress: x?.webAddress ?? '', role: x?.role ?? 'FOLLOWER', term: Number(x?.term ?? 0n) };
      this.peerCache.set(addr, { at: performance.now(), info });
      return info;
    } catch {
      return { uuid: c?.info.uuid ?? '', rpcAddress: addr, webAddress: c?.info.webAddress ?? '', role: 'UNREACHABLE', term: 0 };
    }
  }

  /** Every master in --master_addresses, with stale leader claims shown as FOLLOWER. */
  async masters(): Promise<MasterInfo[]> {
    const all = await Promise.all(this.id.peers.map((p) => (p === this.id.selfId ? Promise.resolve(this.self()) : this.peerInfo(p))));
    // Only the newest term's claim counts: a peer that says LEADER for an older term was deposed.
    const top = Math.max(...all.filter((x) => x.role === 'LEADER').map((x) => x.term), -1);
    return all.map((x) => (x.role === 'LEADER' && x.term < top ? { ...x, role: 'FOLLOWER' } : x));
  }

  /** Registers ListMasters (selfOnly: just us, as peers ask). */
  register(rpc: RpcServer): void {
    rpc.handle(masterMethods().listMasters, async (req): Promise<ListMastersResponsePB> => {
      const list = req.selfOnly ? [this.self()] : await this.masters();
      return { masters: list.map((x) => ({ uuid: x.uuid, rpcAddress: x.rpcAddress, webAddress: x.webAddress, role: x.role, term: BigInt(x.term) })) };
    });
  }
}

/** The sys catalog tick and the catalog manager's round; stop() ends both (the round reschedules no more). */
export interface MasterLoops {
  stop(): void;
}

/** Starts the sys catalog Raft tick and the catalog round (rescheduled after each round ends). */
export function startMasterLoops(flags: Flags, sys: SysCatalog, mgr: CatalogManager): MasterLoops {
  const tick = setInterval(() => sys.tick(), flags.get(MASTER_RAFT_TICK_INTERVAL_MS));
  let roundTimer: NodeJS.Timeout | undefined;
  const scheduleRound = (): void => {
    roundTimer = setTimeout(() => {
      void mgr.runRound().finally(() => {
        if (!stopped) scheduleRound();
      });
    }, flags.get(CATALOG_RECONCILE_INTERVAL_MS));
  };
  let stopped = false;
  scheduleRound();
  return {
    stop(): void {
      stopped = true;
      clearInterval(tick);
      if (roundTimer) clearTimeout(roundTimer);
    },
  };
}

/** Everything the master's stop sequence tears down. */
export interface MasterParts {
  log: Logger;
  loops: MasterLoops;
  web: WebServer;
  rpc: RpcServer;
  client: RpcClient;
  sys: SysCatalog;
}

/** Stops the loops, the console, the listener, the client, then the sys catalog. */
export async function stopMaster(p: MasterParts): Promise<void> {
  p.loops.stop();
  await p.web.stop().catch(() => undefined);
  await p.rpc.stop().catch(() => undefined);
  await p.client.close().catch(() => undefined);
  await p.sys.stop();
  p.log.info('master stopped');
}
