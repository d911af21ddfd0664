/**
 * The leader master's background round (catalog-manager.ts runs it; see there for the why): every
 * tablet's assigned replicas exist (CreateTablet, retried; a FAILED one deleted once out of Raft),
 * its leader serves the catalog's schema (AlterSchema), its Raft config follows the catalog (REMOVE
 * first, then ADD_VOTER; one change at a time), then dead or FAILED replicas are replaced and leaders
 * balanced (decisions from the pure placement.ts), and the split manager takes its turn.
 */
import type { Flags } from '../common/flags';
import type { Logger } from '../common/log';
import { tabletServerMethods, type MethodDef, type RpcClient } from '../rpc';
import { alterSchemaRequest, schemaToPb } from './catalog-pb';
import { durabilityOf, schemaVersionOf, type CatalogState, type TableInfo, type TabletInfo } from './catalog-types';
import { ENABLE_LOAD_BALANCING, LEADER_BALANCE_MOVES_MAX } from './master-flags';
import { planLeaderMoves, planReplacements, type TServerLoad, type TabletView } from './placement';
import { partitionToPb } from './range-partitions';
import type { SplitManager } from './split-manager';
import { settlingSplitChildren } from './split-catalog';
import type { SysCatalog } from './sys-catalog';
import type { TServerRegistry } from './tserver-registry';

/** A CreateTablet to one tserver is not repeated sooner than this. */
const CREATE_TABLET_RETRY_MS = 2_000;
/** An AlterSchema to a tablet's leader is not repeated sooner than this. */
const ALTER_SCHEMA_RETRY_MS = 1_000;
/** A tablet whose leader was just moved (or whose config just changed) is left alone this long. */
const TABLET_COOLDOWN_MS = 3_000;
/** Admin RPCs one background round issues at most (the rest wait for the next round). */
const ROUND_RPCS_MAX = 64;
/** Replica replacements one round starts at most. */
const ROUND_REPLACEMENTS_MAX = 16;
export const ADMIN_RPC_TIMEOUT_MS = 5_000;
/** Past this many remembered attempts or cooldowns (mostly of tablets gone since), the map is cleared. */
const ROUND_MEMORY_ENTRIES_MAX = 100_000;

export interface CatalogRoundDeps {
  sys: SysCatalog;
  registry: TServerRegistry;
  flags: Flags;
  log: Logger;
  client: RpcClient;
  splits: SplitManager;
  now(): number;
  timeoutMs(): number;
  addressOf(uuid: string): string | undefined;
  /** How long this master has led (nobody is dead before one heartbeat timeout of it). */
  leaderAgeMs(): number;
  loads(): TServerLoad[];
}

/** What one round's steps share: its clock reading, the catalog, and its bounded admin calls. */
interface RoundContext {
  now: number;
  timeout: number;
  c: CatalogState;
  m: ReturnType<typeof tabletServerMethods>;
  calls: Array<Promise<unknown>>;
  /** Sends an admin RPC unless the round has issued ROUND_RPCS_MAX; a failure is retried next round. */
  call<Req, Resp>(addr: string, def: MethodDef<Req, Resp>, req: Req, what: Record<string, unknown>): void;
}

/** One tablet as the round sees it: its catalog rows and what its leader reports. */
interface TabletRound {
  tablet: TabletInfo;
  table: TableInfo;
  leader: ReturnType<TServerRegistry['leaderReport']>;
  voters: string[];
  wanted: string[];
  failed: string[];
}

/**
 * The peer list a CreateTablet of `uuid`'s replica carries: the group's voters and the catalog's
 * replicas. A replica added to a running group (`voters` known, it not among them) knows itself as
 * a learner until the log or a snapshot says otherwise: as a voter of this list — a configuration no
 * log holds — it could campaign with an empty log and win with the votes of other empty replicas,
 * two leaders of one term (found by the tablet simulator, TABLET_SIM_FRESH_AS_VOTER; docs/architecture.md
 * "Simulation"). Raft's ADD_VOTER (step 3) then makes it a voter through the log. At the tablet's
 * creation (no voters yet) every replica is an initial voter.
 */
export function createTabletPeers(voters: readonly string[], wanted: readonly string[], uuid: string, addressOf: (uuid: string) => string): Array<{ uuid: string; rpcAddress: string; memberType: 'VOTER' | 'LEARNER' }> {
  const joining = voters.length > 0 && !voters.includes(uuid);
  return [...new Set([...voters, ...wanted])].map((u) => ({ uuid: u, rpcAddress: addressOf(u), memberType: joining && u === uuid ? 'LEARNER' : 'VOTER' }));
}

export class CatalogRound {
  /** When a CreateTablet, DeleteTablet or AlterSchema was last sent (key: tablet/tserver[/op]). */
  readonly createAttempts = new Map<string, number>();
  /** Tablets left alone until this time: their leader or config just changed. */
  private readonly cooldown = new Map<string, number>();

  constructor(private readonly deps: CatalogRoundDeps) {}

  async run(): Promise<void> {
    const ctx = this.context();
    let changing = false;
    for (const tablet of ctx.c.tablets.values()) {
      const table = ctx.c.tables.get(tablet.tableId);
      if (!table) continue;
      // A split child is built by its parent's replicas when they apply SPLIT; created here only
      // once the split completed (a replica that missed it: remote bootstrap from the child leader).
      if (tablet.parentId && ctx.c.tablets.has(tablet.parentId)) continue;
      const t = this.tabletRound(ctx, tablet, table);
      this.ensureReplicas(ctx, t);
      this.ensureSchema(ctx, t);
      if (this.followCatalogInRaft(ctx, t)) changing = true;
    }
    if (this.deps.flags.get(ENABLE_LOAD_BALANCING)) this.balance(ctx, changing);
    if (this.createAttempts.size > ROUND_MEMORY_ENTRIES_MAX) this.createAttempts.clear();
    if (this.cooldown.size > ROUND_MEMORY_ENTRIES_MAX) this.cooldown.clear();
    await this.deps.splits.round().catch((err: unknown) => this.deps.log.warn({ err }, 'split round failed'));
    await Promise.all(ctx.calls);
  }

  private context(): RoundContext {
    const calls: Array<Promise<unknown>> = [];
    const call = <Req, Resp>(addr: string, def: MethodDef<Req, Resp>, req: Req, what: Record<string, unknown>): void => {
      if (calls.length >= ROUND_RPCS_MAX) return;
      calls.push(
        this.deps.client.call(addr, def, req, { timeoutMs: ADMIN_RPC_TIMEOUT_MS }).catch((err: unknown) => {
          this.deps.log.debug({ err, ...what }, 'admin call failed; retried next round');
        }),
      );
    };
    return { now: this.deps.now(), timeout: this.deps.timeoutMs(), c: this.deps.sys.state(), m: tabletServerMethods(), calls, call };
  }

  private tabletRound(ctx: RoundContext, tablet: TabletInfo, table: TableInfo): TabletRound {
    const reg = this.deps.registry;
    const leader = reg.leaderReport(tablet.id, ctx.now, ctx.timeout);
    const voters = leader ? (leader.report.peers ?? []).filter((p) => p.memberType !== 'LEARNER').map((p) => p.uuid ?? '') : [];
    const wanted = tablet.replicas.map((r) => r.tserverUuid);
    const failed = wanted.filter((u) => reg.isAlive(u, ctx.now, ctx.timeout) && reg.replicaState(u, tablet.id) === 'FAILED');
    return { tablet, table, leader, voters, wanted, failed };
  }

  /** Whether `key`'s last attempt is at least `gapMs` old; if so, this one is noted. */
  private attemptDue(key: string, now: number, gapMs: number): boolean {
    if (now - (this.createAttempts.get(key) ?? -Infinity) < gapMs) return false;
    this.createAttempts.set(key, now);
    return true;
  }

  /**
   * 1. Every assigned live tserver hosts a replica. A FAILED one goes once Raft no longer counts it
   * (step 3 removes it): its host deletes it, and a later round creates a fresh one there.
   */
  private ensureReplicas(ctx: RoundContext, t: TabletRound): void {
    const reg = this.deps.registry;
    const { tablet, table, leader, voters, wanted, failed } = t;
    // A new tablet (no leader, no replica reported anywhere): its first replica — placeNewTablets
    // rotates it across servers, so leaders start balanced — campaigns at once (YugabyteDB's protege)
    // instead of every replica waiting out an election timeout; CREATE TABLE answers that much sooner.
    const fresh = !leader && wanted.every((u) => !reg.hosts(u, tablet.id));
    for (const uuid of wanted) {
      if (!reg.isAlive(uuid, ctx.now, ctx.timeout)) continue;
      if (failed.includes(uuid)) {
        if (!leader || voters.includes(uuid)) continue;
        if (!this.attemptDue(`${tablet.id}/${uuid}/delete`, ctx.now, CREATE_TABLET_RETRY_MS)) continue;
        const addr = this.deps.addressOf(uuid);
        if (!addr) continue;
        this.deps.log.info({ tablet: tablet.id, tserver: uuid }, 'deleting a FAILED replica (out of Raft) to create it afresh');
        ctx.call(addr, ctx.m.deleteTablet, { tabletId: tablet.id }, { tablet: tablet.id, tserver: uuid, op: 'DeleteTablet (FAILED)' });
        continue;
      }
      if (reg.hosts(uuid, tablet.id)) continue;
      if (!this.attemptDue(`${tablet.id}/${uuid}`, ctx.now, CREATE_TABLET_RETRY_MS)) continue;
      const addr = this.deps.addressOf(uuid);
      if (!addr) continue;
      const peers = createTabletPeers(voters, wanted, uuid, (u) => this.deps.addressOf(u) ?? '');
      ctx.call(addr, ctx.m.createTablet, { tabletId: tablet.id, tableId: table.id, tableName: table.name, schema: schemaToPb(table), partition: partitionToPb(tablet.partition), peers, schemaVersion: schemaVersionOf(table), durability: durabilityOf(table), campaign: fresh && uuid === wanted[0] }, { tablet: tablet.id, tserver: uuid, op: 'CreateTablet' });
    }
  }

  /** 2. The tablet's leader serves an older schema: it replicates the catalog's (ALTER TABLE). */
  private ensureSchema(ctx: RoundContext, { tablet, table, leader }: TabletRound): void {
    const version = schemaVersionOf(table);
    const alterKey = `${tablet.id}/alter/${version}`;
    if (leader && (leader.report.schemaVersion ?? 0) >= version) this.createAttempts.delete(alterKey);
    else if (leader) {
      const addr = this.deps.addressOf(leader.uuid);
      if (addr && this.attemptDue(alterKey, ctx.now, ALTER_SCHEMA_RETRY_MS)) {
        ctx.call(addr, ctx.m.alterSchema, alterSchemaRequest(tablet.id, table), { tablet: tablet.id, op: 'AlterSchema', schemaVersion: version });
      }
    }
  }

  /** 3. Raft's configuration follows the catalog: remove first, then add (one change at a time). True when a change is under way. */
  private followCatalogInRaft(ctx: RoundContext, t: TabletRound): boolean {
    const reg = this.deps.registry;
    const { tablet, leader, voters, wanted, failed } = t;
    if (!leader || ctx.now < (this.cooldown.get(tablet.id) ?? 0)) return false;
    const leaderAddr = this.deps.addressOf(leader.uuid);
    if (!leaderAddr) return false;
    const extra = voters.filter((u) => !wanted.includes(u));
    const missing = wanted.filter((u) => !voters.includes(u) && reg.hosts(u, tablet.id) && !failed.includes(u));
    // Without a spare tserver to move it to (placement's replacement), a FAILED voter leaves Raft here.
    const spare = this.deps.flags.get(ENABLE_LOAD_BALANCING) && [...reg.list()].some((e) => reg.isAlive(e.uuid, ctx.now, ctx.timeout) && !wanted.includes(e.uuid) && ctx.c.tservers.has(e.uuid));
    const failedVoter = spare ? undefined : failed.find((u) => voters.includes(u) && u !== leader.uuid);
    const peer = (uuid: string) => ({ uuid, rpcAddress: this.deps.addressOf(uuid) ?? '', memberType: 'VOTER' });
    if (extra.length > 0 && extra[0] !== leader.uuid) {
      this.cooldown.set(tablet.id, ctx.now + 1000);
      ctx.call(leaderAddr, ctx.m.changeConfig, { tabletId: tablet.id, type: 'REMOVE', peer: peer(extra[0]!) }, { tablet: tablet.id, op: 'REMOVE' });
      return true;
    }
    if (extra.length > 0) {
      // The leader itself is being replaced: hand leadership to a replica that stays.
      const to = wanted.find((u) => voters.includes(u) && reg.isAlive(u, ctx.now, ctx.timeout));
      if (!to) return false;
      this.cooldown.set(tablet.id, ctx.now + TABLET_COOLDOWN_MS);
      ctx.call(leaderAddr, ctx.m.leaderStepdown, { tabletId: tablet.id, newLeaderUuid: to }, { tablet: tablet.id, op: 'stepdown-before-remove' });
      return true;
    }
    if (failedVoter !== undefined) {
      this.cooldown.set(tablet.id, ctx.now + 1000);
      this.deps.log.info({ tablet: tablet.id, tserver: failedVoter }, 'removing a FAILED replica from Raft to re-create it in place (no spare tserver)');
      ctx.call(leaderAddr, ctx.m.changeConfig, { tabletId: tablet.id, type: 'REMOVE', peer: peer(failedVoter) }, { tablet: tablet.id, op: 'REMOVE (FAILED)' });
      return true;
    }
    if (missing.length > 0) {
      this.cooldown.set(tablet.id, ctx.now + 1000);
      ctx.call(leaderAddr, ctx.m.changeConfig, { tabletId: tablet.id, type: 'ADD_VOTER', peer: peer(missing[0]!) }, { tablet: tablet.id, op: 'ADD_VOTER' });
      return true;
    }
    return false;
  }

  /** 4. Replace replicas of dead tservers and FAILED ones; then, with nothing else changing, balance leaders. */
  private balance(ctx: RoundContext, changing: boolean): void {
    const reg = this.deps.registry;
    const loads = this.deps.loads();
    const views: TabletView[] = [...ctx.c.tablets.values()].map((t) => ({
      id: t.id,
      replicas: t.replicas.map((r) => r.tserverUuid),
      leader: reg.leaderReport(t.id, ctx.now, ctx.timeout)?.uuid ?? '',
      table: t.tableId,
      failed: t.replicas.map((r) => r.tserverUuid).filter((u) => reg.replicaState(u, t.id) === 'FAILED'),
    }));
    // A new leader master has not heard from every tserver yet: nobody is dead before one timeout.
    if (this.deps.leaderAgeMs() > ctx.timeout && this.replaceReplicas(ctx, loads, views)) changing = true;
    const allHealthy = views.every((v) => v.leader && v.replicas.every((u) => reg.isAlive(u, ctx.now, ctx.timeout)) && (v.failed?.length ?? 0) === 0);
    if (!changing && allHealthy) this.balanceLeaders(ctx, loads, views);
  }

  /** Proposes the catalog's replica moves (placement's replacements); true when it proposed any. */
  private replaceReplicas(ctx: RoundContext, loads: TServerLoad[], views: TabletView[]): boolean {
    let changing = false;
    for (const mv of planReplacements(loads, views, ROUND_REPLACEMENTS_MAX)) {
      if (mv.type !== 'replace') continue;
      const t = ctx.c.tablets.get(mv.tabletId)!;
      const replicas = t.replicas.map((r) => (r.tserverUuid === mv.dead ? { tserverUuid: mv.target, memberType: 'VOTER' as const } : r));
      changing = true;
      const why = this.deps.registry.isAlive(mv.dead, ctx.now, ctx.timeout) ? 're-replicating a FAILED replica onto a spare tserver' : 're-replicating a replica of a dead tserver';
      this.deps.log.info({ tablet: mv.tabletId, dead: mv.dead, target: mv.target }, why);
      ctx.calls.push(this.deps.sys.propose({ type: 'setReplicas', tabletId: mv.tabletId, replicas }).catch((err: unknown) => this.deps.log.warn({ err }, 'replica move not replicated')));
    }
    return changing;
  }

  private balanceLeaders(ctx: RoundContext, loads: TServerLoad[], views: TabletView[]): void {
    const settling = settlingSplitChildren(ctx.c, Date.now());
    const movable = views.filter((v) => ctx.now >= (this.cooldown.get(v.id) ?? 0) && !settling.has(v.id));
    for (const mv of planLeaderMoves(loads, movable, this.deps.flags.get(LEADER_BALANCE_MOVES_MAX))) {
      if (mv.type !== 'stepdown') continue;
      const addr = this.deps.addressOf(mv.from);
      if (!addr) continue;
      this.cooldown.set(mv.tabletId, ctx.now + TABLET_COOLDOWN_MS);
      this.deps.log.info({ tablet: mv.tabletId, from: mv.from, to: mv.to }, 'balancing leaders: moving a tablet leader');
      ctx.call(addr, ctx.m.leaderStepdown, { tabletId: mv.tabletId, newLeaderUuid: mv.to }, { tablet: mv.tabletId, op: 'balance-leader' });
    }
  }
}
