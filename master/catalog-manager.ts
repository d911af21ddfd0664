/**
 * The leader master's work: DDL, locations, tserver heartbeats, and a background round that makes
 * the cluster match the catalog — create missing replicas (CreateTablet, retried until done), carry
 * out replica moves in Raft (REMOVE the replaced replica first, then ADD_VOTER the new one, so a
 * tablet with one dead replica keeps a live quorum throughout), replace replicas of dead tservers
 * and FAILED replicas (a storage failure stopped them) and balance leaders (decisions from the pure
 * placement.ts). A FAILED replica moves to a spare tserver when there is one; otherwise it is
 * re-created in place: removed from Raft first (a voter must never come back without its log: it
 * may have counted towards a commit), then deleted on its host, then created afresh and added back,
 * catching up by remote bootstrap.
 *
 * Everything here is driven by the catalog (durable, replicated) plus heartbeat reports (soft): a new
 * leader master resumes any half-done move simply by running the same round.
 */
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import type { HybridClock } from '../common/hybrid-clock';
import { newId } from '../common/ids';
import { checkFamilies } from '../common/column-families';
import type { Logger } from '../common/log';
import { familiesFromPb, type RpcClient } from '../rpc';
import {
  tabletServerMethods,
  type AlterTableRequestPB,
  type CreateTableRequestPB,
  type IsAlterTableDoneResponsePB,
  type DropTableRequestPB,
  type GetTableLocationsRequestPB,
  type GetTableLocationsResponsePB,
  type TSHeartbeatRequestPB,
  type TSHeartbeatResponsePB,
  type TabletServerInfoPB,
} from '../rpc';
import { alterSchemaRequest, tableToPb } from './catalog-pb';
import { ADMIN_RPC_TIMEOUT_MS, CatalogRound } from './catalog-round';
import { tableByName, tabletsOf } from './catalog-state';
import { nextColumnIdOf, schemaVersionOf, type CatalogState, type ReplicaDef, type TableInfo, type TabletInfo } from './catalog-types';
import { DEFAULT_WAL_DURABILITY, parseWalDurability } from '../raft';
import { hashPartitions, validateAlterTable, validateCreateTable } from './ddl-validation';
import { parseSplitPolicy, partitionToPb, rangePartitions } from './range-partitions';
import {
  CREATE_TABLE_WAIT_MS,
  REPLICATION_FACTOR,
  TRANSACTION_TABLE_NUM_TABLETS,
  TSERVER_UNRESPONSIVE_TIMEOUT_MS,
} from './master-flags';
import { placeNewTablets, type TServerLoad } from './placement';
import type { SysCatalog } from './sys-catalog';
import { recentSplitParents, SplitManager } from './split-manager';
import type { TServerRegistry } from './tserver-registry';

import type { ClusterSummaryJson, TableLocationJson, TabletServerJson } from './catalog-json';

export { schemaToPb, tableToPb } from './catalog-pb';
export type { ClusterSummaryJson, TableLocationJson, TabletServerJson } from './catalog-json';

/** Tables ListTables hides unless include_system. */
export const SYSTEM_TABLES: ReadonlySet<string> = new Set([TRANSACTIONS_TABLE]);

export interface CatalogManagerDeps {
  sys: SysCatalog;
  registry: TServerRegistry;
  flags: Flags;
  clock: HybridClock;
  log: Logger;
  client: RpcClient;
  nowMs?(): number;
}

export class CatalogManager {
  private leaderSinceMs: number | undefined;
  private readonly registering = new Set<string>();
  private roundRunning = false;
  private creatingTxnTable = false;
  private readonly now: () => number;
  /** Tablet splitting (docs/splitting.md). */
  readonly splits: SplitManager;
  /** The background round's steps (catalog-round.ts). */
  private readonly reconciler: CatalogRound;

  constructor(private readonly deps: CatalogManagerDeps) {
    this.now = deps.nowMs ?? (() => performance.now());
    this.splits = new SplitManager({
      sys: deps.sys,
      registry: deps.registry,
      client: deps.client,
      log: deps.log,
      flags: deps.flags,
      now: () => this.now(),
      timeoutMs: () => this.timeoutMs(),
      addressOf: (u) => this.addressOf(u),
      requireLeader: () => this.requireLeader(),
      liveTServers: () => this.liveCount(),
    });
    this.reconciler = new CatalogRound({
      sys: deps.sys,
      registry: deps.registry,
      flags: deps.flags,
      log: deps.log,
      client: deps.client,
      splits: this.splits,
      now: () => this.now(),
      timeoutMs: () => this.timeoutMs(),
      addressOf: (u) => this.addressOf(u),
      leaderAgeMs: () => this.leaderAgeMs(),
      loads: () => this.loads(),
    });
  }

  onLeadership(isLeader: boolean): void {
    if (isLeader && this.leaderSinceMs === undefined) this.leaderSinceMs = this.now();
    if (!isLeader) this.leaderSinceMs = undefined;
  }

  private timeoutMs(): number {
    return this.deps.flags.get(TSERVER_UNRESPONSIVE_TIMEOUT_MS);
  }

  private catalog(): CatalogState {
    return this.deps.sys.state();
  }

  /** NOT_THE_LEADER (with the leader's address) or LEADER_NOT_READY unless this master may serve. */
  requireLeader(): void {
    const sys = this.deps.sys;
    if (!sys.isLeader()) {
      const hint = sys.leaderId();
      throw new DbError(ErrorCode.NOT_THE_LEADER, `this master is not the leader${hint ? `; the leader is ${hint}` : ' (no leader known yet)'}`, { leaderHint: hint });
    }
    if (!sys.isLeaderReady()) throw new DbError(ErrorCode.LEADER_NOT_READY, 'this master was just elected and is catching up', { leaderHint: sys.leaderId() });
  }

  private leaderAgeMs(): number {
    return this.leaderSinceMs === undefined ? 0 : this.now() - this.leaderSinceMs;
  }

  private liveCount(): number {
    return this.deps.registry.liveCount(this.now(), this.timeoutMs());
  }

  // ---- DDL -------------------------------------------------------------------------------------

  async createTable(req: CreateTableRequestPB): Promise<string> {
    this.requireLeader();
    const name = req.name ?? '';
    const existing = tableByName(this.catalog(), name);
    if (existing) {
      if (req.ifNotExists) return existing.id;
      throw new DbError(ErrorCode.ALREADY_EXISTS, `table ${name} already exists`, { tableId: existing.id });
    }
    // A freshly elected master has not heard every tserver yet: give them one timeout to report.
    const wanted = req.replicationFactor || this.deps.flags.get(REPLICATION_FACTOR);
    for (let i = 0; i < 1000 && this.liveCount() < wanted && this.leaderAgeMs() < this.timeoutMs(); i++) await sleep(50);
    const live = this.liveCount();
    const v = validateCreateTable(
      {
        name,
        columns: (req.schema?.columns ?? []).map((c) => ({ name: c.name ?? '', type: c.type ?? '', nullable: c.nullable !== false, family: c.family ?? '' })),
        families: familiesFromPb(req.schema?.families) ?? [],
        hashColumns: req.schema?.hashColumns ?? [],
        rangeColumns: req.schema?.rangeColumns ?? [],
        numTablets: req.numTablets ?? 0,
        replicationFactor: req.replicationFactor ?? 0,
        splitKeys: (req.splitKeys ?? []).map((k) => new Uint8Array(k)),
      },
      live,
      this.deps.flags.get(REPLICATION_FACTOR),
    );
    const durability = req.durability ? parseWalDurability(req.durability) : DEFAULT_WAL_DURABILITY;
    const placement = placeNewTablets(this.loads(), v.replicationFactor, v.numTablets);
    if (placement.length !== v.numTablets) {
      throw new DbError(ErrorCode.INVALID_ARGUMENT, `replication factor ${v.replicationFactor} is larger than the number of live tablet servers (${live} live)`);
    }
    const tableId = newId();
    const splitPolicy = parseSplitPolicy(req.splitPolicy, v.schema.rangeColumns.length);
    const parts = req.splitKeys?.length ? rangePartitions(req.splitKeys) : hashPartitions(v.numTablets);
    const tablets: TabletInfo[] = parts.map((partition, i) => ({
      id: newId(),
      tableId,
      partition,
      replicas: placement[i]!.map((u): ReplicaDef => ({ tserverUuid: u, memberType: 'VOTER' })),
    }));
    const table: TableInfo = {
      id: tableId,
      name: v.name,
      schema: v.schema,
      numTablets: v.numTablets,
      replicationFactor: v.replicationFactor,
      state: 'RUNNING',
      tabletIds: tablets.map((t) => t.id),
      createdAtMs: Date.now(),
      durability,
      ...(splitPolicy ? { splitPolicy } : {}),
    };
    await this.deps.sys.propose({ type: 'createTable', table, tablets });
    this.deps.log.info({ table: name, tableId, tablets: tablets.length, rf: v.replicationFactor }, 'table created');
    void this.runRound();
    // Answer once every tablet elected a leader, so the first writes do not all bounce.
    const deadline = this.now() + this.deps.flags.get(CREATE_TABLE_WAIT_MS);
    while (this.now() < deadline) {
      if (tablets.every((t) => this.deps.registry.leaderReport(t.id, this.now(), this.timeoutMs()))) break;
      await sleep(50);
    }
    return tableId;
  }

  async dropTable(req: DropTableRequestPB): Promise<void> {
    this.requireLeader();
    const t = tableByName(this.catalog(), req.name ?? '');
    if (!t) {
      if (req.ifExists) return;
      throw new DbError(ErrorCode.TABLE_NOT_FOUND, `table ${req.name ?? ''} not found`);
    }
    const tablets = tabletsOf(this.catalog(), t);
    await this.deps.sys.propose({ type: 'dropTable', tableId: t.id });
    this.deps.log.info({ table: t.name, tableId: t.id }, 'table dropped');
    // Hosts also learn it from heartbeat answers; telling them now frees the space sooner.
    for (const tablet of tablets) {
      for (const r of tablet.replicas) {
        const addr = this.addressOf(r.tserverUuid);
        if (addr) void this.deps.client.call(addr, tabletServerMethods().deleteTablet, { tabletId: tablet.id }, { timeoutMs: ADMIN_RPC_TIMEOUT_MS }).catch(() => undefined);
      }
    }
  }

  /**
   * ALTER TABLE: validated here, replicated as the table's next schema version in the sys catalog,
   * then carried to every tablet by the background round (AlterSchema to each tablet's leader, which
   * replicates it through the tablet's Raft log). Answers once the catalog has it; isAlterTableDone
   * says when every tablet serves it.
   */
  async alterTable(req: AlterTableRequestPB): Promise<{ table: TableInfo; schemaVersion: number }> {
    this.requireLeader();
    const name = req.name ?? '';
    const t = tableByName(this.catalog(), name);
    if (!t) throw new DbError(ErrorCode.TABLE_NOT_FOUND, `table ${name} not found`);
    if (SYSTEM_TABLES.has(t.name)) throw new DbError(ErrorCode.NOT_SUPPORTED, `table ${t.name} is a system table and cannot be altered`);
    const newName = req.newName ?? '';
    if (newName && newName !== t.name) {
      if (SYSTEM_TABLES.has(newName)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `${newName} is the name of a system table`);
      if (tableByName(this.catalog(), newName)) throw new DbError(ErrorCode.ALREADY_EXISTS, `table ${newName} already exists`);
    }
    const input = {
      addColumns: (req.addColumns ?? []).map((c) => ({ name: c.name ?? '', type: c.type ?? '', nullable: c.nullable !== false, family: c.family ?? '' })),
      setFamilies: familiesFromPb(req.setFamilies) ?? [],
      dropColumns: req.dropColumns ?? [],
      renameColumns: (req.renameColumns ?? []).map((r) => ({ from: r.from ?? '', to: r.to ?? '' })),
      newName,
    };
    const durability = req.durability ? parseWalDurability(req.durability) : undefined;
    const schemaChange = input.addColumns.length + input.dropColumns.length + input.renameColumns.length + input.setFamilies.length > 0 || (newName !== '' && newName !== t.name);
    // A durability-only ALTER keeps the schema; it still takes the next version, which carries it to the tablets.
    const next = schemaChange || !durability ? validateAlterTable(t, input) : { name: t.name, schema: t.schema, nextColumnId: nextColumnIdOf(t) };
    const fromVersion = schemaVersionOf(t);
    await this.deps.sys.propose({ type: 'alterTable', tableId: t.id, fromVersion, name: next.name, schema: next.schema, nextColumnId: next.nextColumnId, ...(durability ? { durability } : {}) });
    this.deps.log.info({ table: next.name, tableId: t.id, schemaVersion: fromVersion + 1, columns: next.schema.columns.map((c) => `${c.name}:${c.type}#${c.id}`) }, 'table altered');
    const altered = this.catalog().tables.get(t.id);
    if (!altered) throw new DbError(ErrorCode.TABLE_NOT_FOUND, `table ${next.name} was dropped meanwhile`);
    // Every tablet's leader now, all at once (clients that loaded the new version wait for tablets
    // still behind); the background round retries whatever did not arrive.
    const version = schemaVersionOf(altered);
    for (const tablet of tabletsOf(this.catalog(), altered)) {
      const leader = this.deps.registry.leaderReport(tablet.id, this.now(), this.timeoutMs());
      const addr = leader ? this.addressOf(leader.uuid) : undefined;
      if (!addr) continue;
      this.reconciler.createAttempts.set(`${tablet.id}/alter/${version}`, this.now());
      void this.deps.client
        .call(addr, tabletServerMethods().alterSchema, alterSchemaRequest(tablet.id, altered), { timeoutMs: ADMIN_RPC_TIMEOUT_MS })
        .catch((err: unknown) => this.deps.log.debug({ err, tablet: tablet.id }, 'AlterSchema failed; retried by the background round'));
    }
    return { table: altered, schemaVersion: schemaVersionOf(altered) };
  }

  /** Whether every tablet's leader serves the table's current schema version. */
  isAlterTableDone(req: GetTableLocationsRequestPB): IsAlterTableDoneResponsePB {
    this.requireLeader();
    const t = this.findTable(req);
    const version = schemaVersionOf(t);
    const tablets = tabletsOf(this.catalog(), t);
    const done = tablets.filter((tb) => (this.deps.registry.leaderReport(tb.id, this.now(), this.timeoutMs())?.report.schemaVersion ?? 0) >= version).length;
    return { done: done === tablets.length, schemaVersion: version, tabletsDone: done, tablets: tablets.length };
  }

  /**
   * The cluster at a glance (the master console's home page): tablet servers alive and dead, tables,
   * and tablets without a leader or with fewer live voters than their replication factor.
   */
  clusterSummary(): ClusterSummaryJson {
    this.requireLeader();
    const now = this.now();
    const timeout = this.timeoutMs();
    const servers = this.tabletServersJson();
    const alive = new Set(servers.filter((t) => t.alive).map((t) => t.uuid));
    const tables = [...this.catalog().tables.values()];
    let tablets = 0;
    let withoutLeader = 0;
    let shortOfReplicas = 0;
    for (const t of tables) {
      for (const tablet of tabletsOf(this.catalog(), t)) {
        tablets++;
        if (!this.deps.registry.leaderReport(tablet.id, now, timeout)) withoutLeader++;
        const liveVoters = tablet.replicas.filter((r) => r.memberType !== 'LEARNER' && alive.has(r.tserverUuid)).length;
        if (liveVoters < t.replicationFactor) shortOfReplicas++;
      }
    }
    return {
      tabletServersAlive: alive.size,
      tabletServersDead: servers.length - alive.size,
      userTables: tables.filter((t) => !SYSTEM_TABLES.has(t.name)).length,
      systemTables: tables.filter((t) => SYSTEM_TABLES.has(t.name)).length,
      tablets,
      tabletsWithoutLeader: withoutLeader,
      tabletsShortOfReplicas: shortOfReplicas,
    };
  }

  listTables(includeSystem = false): TableInfo[] {
    this.requireLeader();
    return [...this.catalog().tables.values()].filter((t) => includeSystem || !SYSTEM_TABLES.has(t.name)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The leader creates the `transactions` table once enough tservers are alive: RF min(3, live) —
   * three live, or one heartbeat timeout after election with at least one (a smaller lab cluster).
   */
  private maybeCreateTransactionsTable(): void {
    if (this.creatingTxnTable || tableByName(this.catalog(), TRANSACTIONS_TABLE)) return;
    const live = this.liveCount();
    if (live < 1 || (live < 3 && this.leaderAgeMs() < this.timeoutMs())) return;
    this.creatingTxnTable = true;
    const rf = Math.min(3, live);
    void this.createTable({
      name: TRANSACTIONS_TABLE,
      schema: { columns: [{ name: 'txn_id', type: 'string', nullable: false }, { name: 'record', type: 'bytes', nullable: true }], hashColumns: ['txn_id'], rangeColumns: [] },
      numTablets: this.deps.flags.get(TRANSACTION_TABLE_NUM_TABLETS),
      replicationFactor: rf,
      ifNotExists: true,
    })
      .then(() => this.deps.log.info({ rf }, 'system table transactions created'))
      .catch((err: unknown) => this.deps.log.warn({ err }, 'creating the transactions table failed; retried next round'))
      .finally(() => (this.creatingTxnTable = false));
  }

  findTable(req: GetTableLocationsRequestPB): TableInfo {
    const c = this.catalog();
    const t = req.id ? c.tables.get(req.id) : tableByName(c, req.name ?? '');
    if (!t) throw new DbError(ErrorCode.TABLE_NOT_FOUND, `table ${req.id ? `id ${req.id}` : (req.name ?? '')} not found`);
    return t;
  }

  tableLocations(req: GetTableLocationsRequestPB): GetTableLocationsResponsePB {
    this.requireLeader();
    const table = this.findTable(req);
    const loc = this.locationsJson(table);
    return {
      table: tableToPb(table),
      tablets: loc.tablets.map((t) => ({ tabletId: t.tabletId, tableId: loc.id, partition: partitionToPb(t.partition), replicas: t.replicas })),
    };
  }

  /** The /api/v1/table shape (docs/architecture.md §Contracts). */
  locationsJson(t: TableInfo): TableLocationJson {
    const now = this.now();
    const version = schemaVersionOf(t);
    const tablets = tabletsOf(this.catalog(), t);
    return {
      id: t.id,
      name: t.name,
      schemaVersion: version,
      columns: t.schema.columns.map((c) => ({ ...c })),
      families: checkFamilies(t.schema.families, t.schema.columns),
      tabletsOnSchemaVersion: tablets.filter((tb) => (this.deps.registry.leaderReport(tb.id, now, this.timeoutMs())?.report.schemaVersion ?? 0) >= version).length,
      tablets: tablets.map((tablet) => {
        const leader = this.deps.registry.leaderReport(tablet.id, now, this.timeoutMs())?.uuid ?? '';
        return {
          tabletId: tablet.id,
          partition: { start: tablet.partition.start, end: tablet.partition.end, ...(tablet.partition.keyStart ? { keyStart: tablet.partition.keyStart } : {}), ...(tablet.partition.keyEnd ? { keyEnd: tablet.partition.keyEnd } : {}) },
          replicas: tablet.replicas.map((r) => ({
            tserverUuid: r.tserverUuid,
            rpcAddress: this.addressOf(r.tserverUuid) ?? '',
            role: r.memberType === 'LEARNER' ? 'LEARNER' : r.tserverUuid === leader ? 'LEADER' : 'FOLLOWER',
          })),
        };
      }),
    };
  }

  private addressOf(uuid: string): string | undefined {
    return this.deps.registry.get(uuid)?.rpcAddress || this.catalog().tservers.get(uuid)?.rpcAddress || undefined;
  }

  // ---- tservers --------------------------------------------------------------------------------

  heartbeat(req: TSHeartbeatRequestPB): TSHeartbeatResponsePB {
    const sys = this.deps.sys;
    if (req.hybridTime) this.deps.clock.update(BigInt(req.hybridTime));
    if (!sys.isLeader()) return { isLeader: false, leaderHint: sys.leaderId(), tabletsToDelete: [], hybridTime: this.deps.clock.now() };
    const e = this.deps.registry.heartbeat(req, this.now());
    const tabletsToDelete: string[] = [];
    if (e && sys.isLeaderReady()) {
      this.maybeRegister(e.uuid, e.rpcAddress, e.webAddress);
      const c = this.catalog();
      const retained = recentSplitParents(c, Date.now());
      for (const id of e.reports.keys()) {
        const t = c.tablets.get(id);
        if (!t) {
          if (!retained.has(id)) tabletsToDelete.push(id);
          continue;
        }
        if (t.replicas.some((r) => r.tserverUuid === e.uuid)) continue;
        // Assigned elsewhere: delete once Raft no longer counts it as a voter.
        const leader = this.deps.registry.leaderReport(id, this.now(), this.timeoutMs());
        if (leader && leader.uuid !== e.uuid && !(leader.report.peers ?? []).some((p) => p.uuid === e.uuid)) tabletsToDelete.push(id);
      }
    }
    return { isLeader: true, leaderHint: '', tabletsToDelete, hybridTime: this.deps.clock.now() };
  }

  private maybeRegister(uuid: string, rpcAddress: string, webAddress: string): void {
    const known = this.catalog().tservers.get(uuid);
    if ((known && known.rpcAddress === rpcAddress && known.webAddress === webAddress) || this.registering.has(uuid)) return;
    this.registering.add(uuid);
    this.deps.sys
      .propose({ type: 'registerTServer', tserver: { uuid, rpcAddress, webAddress } })
      .catch((err: unknown) => this.deps.log.debug({ err, uuid }, 'tserver registration not replicated; retried on the next heartbeat'))
      .finally(() => this.registering.delete(uuid));
  }

  tabletServersJson(): TabletServerJson[] {
    const now = this.now();
    const timeout = this.timeoutMs();
    const out: TabletServerJson[] = [];
    const seen = new Set<string>();
    for (const e of this.deps.registry.list()) {
      seen.add(e.uuid);
      let leaders = 0;
      for (const r of e.reports.values()) if (r.role === 'LEADER') leaders++;
      out.push({
        uuid: e.uuid,
        rpcAddress: e.rpcAddress,
        webAddress: e.webAddress,
        alive: now - e.lastHeartbeatMs <= timeout,
        lastHeartbeatMsAgo: Math.round(now - e.lastHeartbeatMs),
        tablets: e.reports.size,
        leaders,
        placementZone: e.placementZone,
        rssBytes: e.rssBytes,
      });
    }
    // Registered in the catalog but not heard from since this master leads.
    for (const t of this.catalog().tservers.values()) {
      if (seen.has(t.uuid)) continue;
      out.push({ uuid: t.uuid, rpcAddress: t.rpcAddress, webAddress: t.webAddress, alive: false, lastHeartbeatMsAgo: -1, tablets: 0, leaders: 0, placementZone: '', rssBytes: 0 });
    }
    return out;
  }

  tabletServersPb(): TabletServerInfoPB[] {
    return this.tabletServersJson().map((t) => ({
      uuid: t.uuid,
      rpcAddress: t.rpcAddress,
      webAddress: t.webAddress,
      alive: t.alive,
      lastHeartbeatMsAgo: BigInt(Math.max(0, t.lastHeartbeatMsAgo)),
      tablets: t.tablets,
      leaders: t.leaders,
      placementZone: t.placementZone,
    }));
  }

  private loads(): TServerLoad[] {
    const now = this.now();
    const timeout = this.timeoutMs();
    const counts = new Map<string, number>();
    for (const t of this.catalog().tablets.values()) for (const r of t.replicas) counts.set(r.tserverUuid, (counts.get(r.tserverUuid) ?? 0) + 1);
    const leaders = this.deps.registry.leaderCounts(now, timeout);
    const uuids = new Set([...this.deps.registry.list().map((e) => e.uuid), ...this.catalog().tservers.keys()]);
    return [...uuids].map((uuid) => ({ uuid, alive: this.deps.registry.isAlive(uuid, now, timeout), tablets: counts.get(uuid) ?? 0, leaders: leaders.get(uuid) ?? 0 }));
  }

  // ---- background round ------------------------------------------------------------------------

  /** One reconciliation round (no-op unless leader; never two at once). */
  async runRound(): Promise<void> {
    if (this.roundRunning || !this.deps.sys.isLeaderReady()) return;
    this.roundRunning = true;
    try {
      this.maybeCreateTransactionsTable();
      await this.reconciler.run();
    } catch (e) {
      this.deps.log.warn({ err: e }, 'catalog background round failed');
    } finally {
      this.roundRunning = false;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
