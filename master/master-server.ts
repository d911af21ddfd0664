/**
 * The master process: RPC server (MasterService + the sys catalog's Raft traffic), the sys catalog,
 * the catalog manager's background round, and the console. `masterMain(argv)` is `tessera master`.
 */
import { skewableSystemClock } from '../common/clock';
import { DbError, ErrorCode } from '../common/errors';
import { Flags, parseFlagArgs } from '../common/flags';
import { setFlagByOperator } from '../common/flag-policy';
import { HybridClock } from '../common/hybrid-clock';
import { LOG_LEVEL } from '../common/common-flags';
import { createLogger, followLogLevel, LogRing, type Logger } from '../common/log';
import { MathRng } from '../common/rng';
import { decodeMessage, encodeMessage, type Message } from '../raft';
import { masterMethods, Metrics, peerClient, raftBatchMethod, rpcConnectionsOf, rpczOf, tabletServerMethods, WebServer, WsTransport, type ListMastersResponsePB, type RaftEnvelopePB, type RpcClient, type RpcServer, type Transport } from '../rpc';
import { CatalogManager, tableToPb } from './catalog-manager';
import {
  CATALOG_RECONCILE_INTERVAL_MS,
  FS_DATA_DIRS,
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
import { registerMasterPages } from './master-web';
import { SYS_CATALOG_GROUP_ID, SysCatalog } from './sys-catalog';
import { TServerRegistry } from './tserver-registry';
import { oracleMethods, splitMethods } from '../rpc';
import { CERTS_DIR } from '../rpc';
import { oracleBoundOf } from './catalog-state';
import { TimestampOracle } from './timestamp-oracle';
import { registerOraclePage } from './oracle-web';
import { ORACLE_RANGE_MS } from './master-flags';
import { advertisedAddress, loadOrCreateUuid, splitHostPort } from '../common/server-identity';
import { makeDirs } from '../common/fs-dirs';

export interface MasterOptions {
  flags: Flags;
  /** Default: the WebSocket transport. */
  transport?: Transport;
  log?: Logger;
  logRing?: LogRing;
}

export interface Master {
  readonly uuid: string;
  readonly rpcAddress: string;
  readonly webAddress: string;
  readonly sys: SysCatalog;
  readonly manager: CatalogManager;
  readonly oracle: TimestampOracle;
  masters(): Promise<MasterInfo[]>;
  stop(): Promise<void>;
}


/** How long a master's self description fetched from a peer is reused. */
const PEER_INFO_TTL_MS = 5_000;
const PEER_INFO_TIMEOUT_MS = 1_000;

export async function startMaster(opts: MasterOptions): Promise<Master> {
  const flags = opts.flags;
  const dataDir = flags.get(FS_DATA_DIRS).split(',')[0]!.trim();
  if (!dataDir) throw new DbError(ErrorCode.INVALID_ARGUMENT, '--fs_data_dirs is required');
  makeDirs(dataDir, 'data directory');
  const uuid = loadOrCreateUuid(dataDir);
  const logRing = opts.logRing ?? new LogRing();
  const log = (opts.log ?? createLogger({ name: 'master', ring: logRing })).child({ uuid });
  // A logger handed in (tests) keeps its own level; ours follows --log_level, also at run time.
  if (!opts.log) followLogLevel(log, () => flags.get(LOG_LEVEL), (l) => flags.onChange(LOG_LEVEL, l));
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

  const clock = new HybridClock(skewableSystemClock(flags));
  const rpc: RpcServer = transport.createServer({ host: bind.host, port: bind.port });
  const client: RpcClient = peerClient(transport.createClient({ caller: `master ${selfId}` }), flags);
  const registry = new TServerRegistry();
  const raftBatch = raftBatchMethod();
  let manager: CatalogManager | undefined;
  let oracle: TimestampOracle | undefined;

  // Listen first: a port already taken fails the start before the sys catalog is bootstrapped in the
  // data directory. Until the handlers are registered below, requests get a retryable SERVICE_UNAVAILABLE.
  rpc.setStarting('master is starting: opening its sys catalog');
  await rpc.start();
  let sys: SysCatalog;
  try {
    sys = await SysCatalog.open({
      dataDir,
      selfId,
      peers,
      flags,
      log,
      rng: new MathRng(),
      send: (msgs: Message[]) => {
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
            client.send(to, raftBatch, { fromUuid: selfId, fromAddress: selfId, messages });
          } catch (e) {
            log.debug({ err: e, to }, 'sys catalog raft batch not sent');
          }
        }
      },
      onLeaderChange: (c) => {
        manager?.onLeadership(c.isLeader);
        oracle?.reset();
        log.info({ leader: c.leader, term: c.term, role: c.role }, 'sys catalog leader changed');
      },
    });
  } catch (e) {
    await rpc.stop().catch(() => undefined);
    await client.close().catch(() => undefined);
    throw e;
  }
  manager = new CatalogManager({ sys, registry, flags, clock, log, client });
  if (sys.isLeader()) manager.onLeadership(true);

  rpc.onOneway(raftBatch, (batch) => {
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
  const m = masterMethods();
  const mgr = manager;
  const sysRef = sys;
  const tso = new TimestampOracle(
    {
      store: {
        persistedBound: () => oracleBoundOf(sysRef.state()),
        persist: async (bound) => {
          await sysRef.propose({ type: 'reserveTimestamps', bound: bound.toString() });
        },
      },
      nowMs: () => Date.now(),
    },
    { get rangeMs() { return flags.get(ORACLE_RANGE_MS); } },
  );
  oracle = tso;
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

  const webPortFlag = flags.get(WEBSERVER_PORT);
  const webHost = flags.get(WEBSERVER_INTERFACE) || bind.host;
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
    logRing,
    metrics,
    log,
    health: () => ({ ok: true, uuid, rpcAddress: selfId, role: sys.isLeader() ? 'LEADER' : 'FOLLOWER', rpcConnections: rpcConnectionsOf(rpc, client) }),
    rpcz: () => rpczOf(rpc, client),
    ownHosts: [bind.host, selfId],
  });

  const self = (): MasterInfo => {
    const st = sys.status();
    return { uuid, rpcAddress: selfId, webAddress: web.address, role: sys.isLeader() ? 'LEADER' : 'FOLLOWER', term: st.term };
  };
  const peerCache = new Map<string, { at: number; info: MasterInfo }>();
  const peerInfo = async (addr: string): Promise<MasterInfo> => {
    const c = peerCache.get(addr);
    // A cached LEADER may be stale (killed or deposed since): ask again rather than show two leaders.
    if (c && performance.now() - c.at < PEER_INFO_TTL_MS && c.info.role !== 'LEADER') return c.info;
    try {
      const r = await client.call(addr, m.listMasters, { selfOnly: true }, { timeoutMs: PEER_INFO_TIMEOUT_MS });
      const x = r.masters?.[0];
      const info: MasterInfo = { uuid: x?.uuid ?? '', rpcAddress: addr, webAddress: x?.webAddress ?? '', role: x?.role ?? 'FOLLOWER', term: Number(x?.term ?? 0n) };
      peerCache.set(addr, { at: performance.now(), info });
      return info;
    } catch {
      return { uuid: c?.info.uuid ?? '', rpcAddress: addr, webAddress: c?.info.webAddress ?? '', role: 'UNREACHABLE', term: 0 };
    }
  };
  const masters = async (): Promise<MasterInfo[]> => {
    const all = await Promise.all(peers.map((p) => (p === selfId ? Promise.resolve(self()) : peerInfo(p))));
    // Only the newest term's claim counts: a peer that says LEADER for an older term was deposed.
    const top = Math.max(...all.filter((x) => x.role === 'LEADER').map((x) => x.term), -1);
    return all.map((x) => (x.role === 'LEADER' && x.term < top ? { ...x, role: 'FOLLOWER' } : x));
  };
  rpc.handle(m.listMasters, async (req): Promise<ListMastersResponsePB> => {
    const list = req.selfOnly ? [self()] : await masters();
    return { masters: list.map((x) => ({ uuid: x.uuid, rpcAddress: x.rpcAddress, webAddress: x.webAddress, role: x.role, term: BigInt(x.term) })) };
  });
  registerMasterPages({
    web,
    manager,
    masters,
    isLeader: () => sys.isLeader(),
    leaderWebAddress: async () => {
      const l = sys.leaderId();
      if (!l) return '';
      return l === selfId ? web.address : (await peerInfo(l)).webAddress;
    },
  });

  registerOraclePage({ web, oracle: tso, persistedBound: () => oracleBoundOf(sys.state()), isLeader: () => sys.isLeader(), rangeMs: () => flags.get(ORACLE_RANGE_MS) });
  metrics.gauge('master_oracle_timestamps_served', 'Timestamps handed out by this leader since it became leader', [], (g) => g.set(tso.status().served));

  rpc.setStarting(undefined);
  try {
    await web.start();
  } catch (e) {
    await rpc.stop().catch(() => undefined);
    await client.close().catch(() => undefined);
    await sys.stop();
    throw e;
  }
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
  log.info({ rpcAddress: selfId, webAddress: web.address, masters: peers }, 'master started');

  let stopping: Promise<void> | undefined;
  return {
    uuid,
    rpcAddress: selfId,
    webAddress: web.address,
    sys,
    manager,
    oracle: tso,
    masters,
    stop(): Promise<void> {
      stopping ??= (async () => {
        stopped = true;
        clearInterval(tick);
        if (roundTimer) clearTimeout(roundTimer);
        await web.stop().catch(() => undefined);
        await rpc.stop().catch(() => undefined);
        await client.close().catch(() => undefined);
        await sys.stop();
        log.info('master stopped');
      })();
      return stopping;
    },
  };
}

/** `tessera master --fs_data_dirs=... [flags]`: run until SIGINT/SIGTERM, then stop cleanly. */
export async function masterMain(argv: readonly string[], opts: { transport?: Transport } = {}): Promise<void> {
  const { flags, positional } = parseFlagArgs(argv, new Flags());
  if (positional.length > 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, `unexpected arguments: ${positional.join(' ')}`);
  const master = await startMaster({ flags, ...(opts.transport ? { transport: opts.transport } : {}) });
  process.stdout.write(`master ${master.uuid} listening on ${master.rpcAddress}, console ${flags.get(CERTS_DIR) ? 'https' : 'http'}://${master.webAddress}\n`);
  await new Promise<void>((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      resolve();
    };
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
  await master.stop();
}
