/**
 * The master process: RPC server (MasterService + the sys catalog's Raft traffic), the sys catalog,
 * the catalog manager's background round, and the console. `masterMain(argv)` is `tessera master`.
 */
import { skewableSystemClock } from '../common/clock';
import { DbError, ErrorCode } from '../common/errors';
import { Flags, parseFlagArgs } from '../common/flags';
import { HybridClock } from '../common/hybrid-clock';
import { peerClient, raftBatchMethod, type RpcClient, type RpcServer, type Transport } from '../rpc';
import { CatalogManager } from './catalog-manager';
import { ORACLE_RANGE_MS } from './master-flags';
import type { MasterInfo } from './master-info';
import { registerMasterPages } from './master-web';
import type { SysCatalog } from './sys-catalog';
import { TServerRegistry } from './tserver-registry';
import { CERTS_DIR } from '../rpc';
import { oracleBoundOf } from './catalog-state';
import type { TimestampOracle } from './timestamp-oracle';
import { registerOraclePage } from './oracle-web';
import {
  createMasterWeb,
  createOracle,
  MasterDirectory,
  masterIdentity,
  openSysCatalog,
  registerMasterHandlers,
  registerSysCatalogRaft,
  startMasterLoops,
  stopMaster,
  type MasterRefs,
} from './master-start';

export type { MasterOptions } from './master-options';
import type { MasterOptions } from './master-options';

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

export async function startMaster(opts: MasterOptions): Promise<Master> {
  const id = masterIdentity(opts);
  const { flags, log, transport, bind, selfId, peers } = id;
  const clock = new HybridClock(skewableSystemClock(flags));
  const rpc: RpcServer = transport.createServer({ host: bind.host, port: bind.port });
  const client: RpcClient = peerClient(transport.createClient({ caller: `master ${selfId}` }), flags);
  const registry = new TServerRegistry();
  const refs: MasterRefs = { manager: undefined, oracle: undefined };
  const sysDeps = { id, refs, rpc, client, raftBatch: raftBatchMethod() };

  // Listen first: a port already taken fails the start before the sys catalog is bootstrapped in the
  // data directory. Until the handlers are registered below, requests get a retryable SERVICE_UNAVAILABLE.
  rpc.setStarting('master is starting: opening its sys catalog');
  await rpc.start();
  const sys = await openSysCatalog(sysDeps);
  const manager = new CatalogManager({ sys, registry, flags, clock, log, client });
  refs.manager = manager;
  if (sys.isLeader()) manager.onLeadership(true);

  registerSysCatalogRaft(sysDeps, sys);
  const tso = createOracle(sys, flags);
  refs.oracle = tso;
  registerMasterHandlers(rpc, manager, tso, flags);

  const { metrics, web } = createMasterWeb(id, sys, manager, rpc, client);
  const directory = new MasterDirectory(id, sys, web, client);
  const masters = (): Promise<MasterInfo[]> => directory.masters();
  directory.register(rpc);
  registerMasterPages({
    web,
    manager,
    masters,
    isLeader: () => sys.isLeader(),
    leaderWebAddress: async () => {
      const l = sys.leaderId();
      if (!l) return '';
      return l === selfId ? web.address : (await directory.peerInfo(l)).webAddress;
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
  const loops = startMasterLoops(flags, sys, manager);
  log.info({ rpcAddress: selfId, webAddress: web.address, masters: peers }, 'master started');

  let stopping: Promise<void> | undefined;
  return {
    uuid: id.uuid,
    rpcAddress: selfId,
    webAddress: web.address,
    sys,
    manager,
    oracle: tso,
    masters,
    stop(): Promise<void> {
      stopping ??= stopMaster({ log, loops, web, rpc, client, sys });
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
