/**
 * The nemesis driver: plays a ScheduledFault list against a VerifyTarget (processes or a Docker lab:
 * the target decides what kill, pause and partition mean for its servers) and records each fault's
 * actual window (in the history's time base) so the report can tie unavailability and anomalies to
 * faults. A fault that cannot be applied (e.g. no way to set TEST_drop_traffic_peers on a server) is
 * recorded as skipped with the reason and printed, never silently dropped.
 */
import { TRANSACTIONS_TABLE } from '../../common/system-tables';
import { SeededRng } from '../../common/rng';
import { DbError, ErrorCode } from '../../common/errors';
import { htPhysicalMicros } from '../../common/hybrid-time';
import type { TesseraClient } from '../../client/tessera-client';
import { tabletServerMethods } from '../../rpc';
import type { VerifyServerRef, VerifyTarget } from './verify-target';
import { getJson, masterRaftRole, raftMessagesDropped } from '../console-http';
import { describeTarget, type ScheduledFault } from './nemesis-schedule';

export const CLOCK_SKEW_FLAG = 'TEST_clock_skew_ms';
/** The servers' run-time flag a bridge sets (both drivers: lab partitions of processes use it too). */
const DROP_TRAFFIC_FLAG = 'TEST_drop_traffic_peers';
const FAIL_REPLICA_FLAG = 'TEST_fail_tablet_replica';
/** Bounds on a rebuild: the replica failing (at its next applied entry); the master re-creating it and the new replica catching up. */
const REBUILD_FAIL_TIMEOUT_MS = 15_000;
const REBUILD_REPAIR_TIMEOUT_MS = 60_000;
/** Bound on waiting for a restarted server to rejoin before the next fault. */
export const RESTART_HEALTH_TIMEOUT_MS = 30_000;
/** Bound on one split of the split nemesis (it waits while transactions hold intents on the tablet). */
const SPLIT_TIMEOUT_MS = 20_000;
/** Bound on one ALTER TABLE of the alter nemesis (until every tablet's leader serves it). */
const ALTER_TIMEOUT_MS = 20_000;
/** Tablets tried when probing a node's clock. */
const CLOCK_PROBE_TABLETS_MAX = 12;

export interface FaultWindow {
  kind: ScheduledFault['kind'];
  target: string;
  /** History time base (ns since the recorder started). */
  startNs: number;
  endNs: number;
  skipped?: string;
  note?: string;
}

export interface NemesisDeps {
  cluster: VerifyTarget;
  client: TesseraClient;
  /** Table whose tablet leaders stepdown faults pick from. */
  table: string;
  nowNs: () => number;
  log: (line: string) => void;
  seed: number;
}

function sleep(ms: number, stop: () => boolean): Promise<void> {
  // Sliced so a stopped run does not wait out a long window.
  return new Promise((resolve) => {
    const end = Date.now() + ms;
    const tick = (): void => {
      if (stop() || Date.now() >= end) resolve();
      else setTimeout(tick, Math.min(100, end - Date.now()));
    };
    tick();
  });
}

export class Nemesis {
  readonly windows: FaultWindow[] = [];
  private readonly rng: SeededRng;
  /** Whether TEST_clock_skew_ms moved a server's clock when probed (undefined: not probed yet). */
  private skewTakesEffect: boolean | undefined;
  /** Columns the alter nemesis added so far (each gets a fresh name). */
  private alters = 0;

  constructor(private readonly d: NemesisDeps) {
    this.rng = new SeededRng(d.seed ^ 0x5eed);
  }

  /** The split nemesis: a random tablet of the table, at a random hash (hash tables) or its data's middle. */
  private async split(): Promise<string> {
    const loc = await this.d.client.tableLocations(this.d.table);
    const t = loc.tablets[this.rng.int(loc.tablets.length)]!;
    const hash = loc.schema.hash.length > 0 && t.end - t.start > 1 ? t.start + 1 + this.rng.int(t.end - t.start - 1) : undefined;
    const r = await this.d.client.splitTablet(t.tabletId, { timeoutMs: SPLIT_TIMEOUT_MS, ...(hash !== undefined ? { splitHash: hash } : {}) });
    return `split tablet ${t.tabletId} ${hash !== undefined ? `at hash ${hash}` : 'at the middle of its data'} into ${r.children.join(', ')} (${loc.tablets.length + 1} tablets)`;
  }

  /** Play the schedule (offsets relative to t0Ms, a Date.now() value); resolves after the last heal. */
  async run(schedule: readonly ScheduledFault[], t0Ms: number, stop: () => boolean): Promise<void> {
    for (const f of schedule) {
      await sleep(t0Ms + f.startMs - Date.now(), stop);
      if (stop()) return;
      await this.one(f, stop);
    }
  }

  /**
   * The servers a kill or pause hits. 'master' with several masters is their current leader (the
   * interesting one: the catalog fails over), or one picked by the seeded generator when none says so.
   */
  private async serversOf(f: ScheduledFault, w: FaultWindow): Promise<VerifyServerRef[]> {
    const c = this.d.cluster;
    if (f.target.role === 'master') {
      if (c.masters.length <= 1) return c.masters;
      const up = c.masters.filter((m) => c.isRunning(m) && !m.paused);
      const roles = await Promise.all(up.map((m) => masterRaftRole(m.webUrl)));
      const leader = up.find((_, i) => roles[i] === 'LEADER');
      const pick = leader ?? c.masters[this.rng.int(c.masters.length)]!;
      w.target = leader ? `master leader (${pick.name})` : `master ${pick.name} (no leader seen)`;
      return [pick];
    }
    if (f.target.role === 'tserver') {
      const node = f.target.node;
      return c.tservers.filter((s) => s.node === node);
    }
    return [];
  }

  /** Apply one fault for its window, heal it, and record the window (skipped with the reason when it failed). */
  private async one(f: ScheduledFault, stop: () => boolean): Promise<void> {
    const w: FaultWindow = { kind: f.kind, target: describeTarget(f.target), startNs: this.d.nowNs(), endNs: 0 };
    this.windows.push(w);
    try {
      const targets = await this.serversOf(f, w);
      await this.play(f, w, targets, stop);
    } catch (e) {
      w.skipped = (e as Error).message.split('\n')[0];
      this.d.log(`nemesis: ${f.kind} on ${w.target} could not be applied: ${w.skipped}`);
      await this.undoHalfApplied(f);
    }
    w.endNs = this.d.nowNs();
    this.d.log(`nemesis: ${f.kind} ${w.target}${w.note ? ` (${w.note})` : ''} ${w.skipped ? 'SKIPPED' : 'done'} in ${Math.round((w.endNs - w.startNs) / 1e6)} ms`);
  }

  /** Dispatch on the fault's kind: apply it, hold it for its duration, heal it. */
  private async play(f: ScheduledFault, w: FaultWindow, targets: VerifyServerRef[], stop: () => boolean): Promise<void> {
    const c = this.d.cluster;
    switch (f.kind) {
      case 'kill':
        this.noteHow(w, f.kind, targets);
        for (const s of targets) await c.kill9(s);
        await sleep(f.durationMs, stop);
        for (const s of targets) await c.start(s);
        await c.waitHealthy(RESTART_HEALTH_TIMEOUT_MS);
        break;
      case 'pause':
        this.noteHow(w, f.kind, targets);
        for (const s of targets) await c.pause(s);
        await sleep(f.durationMs, stop);
        for (const s of targets) await c.resume(s);
        break;
      case 'partition':
        await this.playPartition(f, w, stop);
        break;
      case 'bridge':
        await this.playBridge(f, w, stop);
        break;
      case 'rebuild': {
        await this.rebuild(f, w, stop);
        break;
      }
      case 'skew':
      case 'skew-beyond':
        await this.playSkew(f, w, stop);
        break;
      case 'stepdown':
        w.note = await this.stepdown();
        await sleep(f.durationMs, stop);
        break;
      case 'split':
        w.target = `table ${this.d.table}`;
        w.note = await this.split();
        await sleep(f.durationMs, stop);
        break;
      case 'alter':
        await this.playAlter(f, w, stop);
        break;
    }
  }

  /** The partition nemesis: isolate one node for the window. */
  private async playPartition(f: ScheduledFault, w: FaultWindow, stop: () => boolean): Promise<void> {
    const c = this.d.cluster;
    const node = f.target.role === 'tserver' ? f.target.node : f.target.role === 'leader' ? await this.leaderNode() : 0;
    w.target = `node ${node} isolated${f.target.role === 'leader' ? ' (a tablet leader)' : ''}`;
    this.noteHow(w, f.kind, c.servers.filter((s) => s.node === node));
    await this.partition([node]);
    await sleep(f.durationMs, stop);
    await this.partition([]);
  }

  /** The bridge nemesis: cut two nodes apart while the others reach both, and check Raft traffic was dropped. */
  private async playBridge(f: ScheduledFault, w: FaultWindow, stop: () => boolean): Promise<void> {
    const n = this.d.cluster.tservers.length;
    const a = f.target.role === 'tserver' ? f.target.node : await this.leaderNode();
    const b = (a + (f.peerOffset ?? 1)) % n;
    if (n < 3 || a === b) throw new DbError(ErrorCode.INVALID_ARGUMENT, `a bridge needs 3 nodes or more (${n})`);
    const third = [...Array(n).keys()].filter((x) => x !== a && x !== b);
    w.target = `nodes ${a} and ${b} cut apart${f.target.role === 'leader' ? ` (node ${a} leads a tablet)` : ''}, node${third.length > 1 ? 's' : ''} ${third.join(', ')} reaching both`;
    const before = await this.raftDropped([a, b]);
    try {
      await this.bridge(a, b);
      await sleep(f.durationMs, stop);
    } finally {
      await this.bridge(undefined, undefined);
    }
    // Evidence the cut took effect: the two nodes' tservers dropped Raft messages meanwhile
    // (each tablet's leader sends to both followers at least every heartbeat).
    const after = await this.raftDropped([a, b]);
    if (before === undefined || after === undefined) w.note = 'Raft traffic and heartbeats dropped between the two (TEST_drop_traffic_peers; count unknown: a console did not answer)';
    else if (after > before) w.note = `${after - before} Raft messages dropped between the two (TEST_drop_traffic_peers)`;
    else w.skipped = 'TEST_drop_traffic_peers was accepted but no Raft message was dropped (tserver_raft_messages{direction="dropped"} did not move)';
  }

  /** The skew nemeses: move one node's clock for the window, then set it back. */
  private async playSkew(f: ScheduledFault, w: FaultWindow, stop: () => boolean): Promise<void> {
    const node = f.target.role === 'tserver' ? f.target.node : 0;
    const skewMs = f.skewMs ?? 0;
    w.target = `node ${node}`;
    w.note = `${skewMs > 0 ? '+' : ''}${skewMs} ms ${f.kind === 'skew' ? 'within' : 'BEYOND'} max_clock_skew_usec`;
    try {
      w.note += `; ${await this.applySkew(node, skewMs)}`;
      await sleep(f.durationMs, stop);
    } finally {
      await this.setSkew(node, 0);
    }
  }

  /** The alter nemesis: add a column for the window, then drop it. */
  private async playAlter(f: ScheduledFault, w: FaultWindow, stop: () => boolean): Promise<void> {
    // A column nobody writes, added and dropped again: two schema versions under the load.
    const col = `nemesis_${this.alters++}`;
    w.target = `table ${this.d.table}`;
    const added = await this.d.client.alterTable(this.d.table, { addColumns: [{ name: col, type: 'string' }] }, { timeoutMs: ALTER_TIMEOUT_MS });
    w.note = `added column ${col} (schema version ${added.schemaVersion})`;
    await sleep(f.durationMs, stop);
    const dropped = await this.d.client.alterTable(this.d.table, { dropColumns: [col] }, { timeoutMs: ALTER_TIMEOUT_MS });
    w.note += `, dropped it (version ${dropped.schemaVersion})`;
  }

  /** After a fault failed part-way: resume, restart and heal everything it may have left behind. */
  private async undoHalfApplied(f: ScheduledFault): Promise<void> {
    const c = this.d.cluster;
    // Leave nothing half-applied behind (best effort: the final settle waits for health anyway).
    for (const s of c.servers) await Promise.resolve(c.resume(s)).catch(() => undefined);
    for (const s of c.servers) if (!c.isRunning(s)) await Promise.resolve(c.start(s)).catch(() => undefined);
    if (f.kind === 'partition') await this.partition([]).catch(() => undefined);
    if (f.kind === 'bridge') await this.bridge(undefined, undefined).catch(() => undefined);
    if (f.kind === 'rebuild') for (const t of c.tservers) if (c.isRunning(t) && !t.paused) await c.setFlag(t, FAIL_REPLICA_FLAG, '', this.d.client.rpcClient()).catch(() => undefined);
  }

  /** The driver's own account of how it applies the fault, when it has one. */
  private noteHow(w: FaultWindow, kind: ScheduledFault['kind'], servers: readonly VerifyServerRef[]): void {
    const how = this.d.cluster.faultNote(kind, servers);
    if (how) w.note = w.note ? `${w.note}; ${how}` : how;
  }

  private async setSkew(node: number, skewMs: number): Promise<void> {
    const c = this.d.cluster;
    for (const s of c.servers.filter((x) => x.node === node)) await c.setFlag(s, CLOCK_SKEW_FLAG, String(skewMs), this.d.client.rpcClient());
  }

  /**
   * Set the skew on every server of the node and check that it moved the node's tserver clock: a flag
   * that is accepted but not wired to the clock would make every skew window a silent no-op (and
   * count toward a history that was never skewed). A hybrid clock never runs backwards, so a negative
   * offset cannot be seen; it is checked once per run with a positive probe of the same size first.
   * Throws (the window is then recorded as skipped) when the clock did not move.
   */
  private async applySkew(node: number, skewMs: number): Promise<string> {
    let how = '';
    if (skewMs > 0 || this.skewTakesEffect === undefined) {
      await this.setSkew(node, Math.abs(skewMs));
      const seen = await this.clockOffsetMs(node);
      if (seen === undefined) {
        how = 'clock offset not observed (no tablet led by the node answered the probe)';
      } else {
        this.skewTakesEffect = seen >= Math.abs(skewMs) / 2;
        if (!this.skewTakesEffect) throw new DbError(ErrorCode.INTERNAL, `${CLOCK_SKEW_FLAG}=${Math.abs(skewMs)} was accepted but node ${node}'s hybrid clock stayed at ${seen >= 0 ? '+' : ''}${seen} ms from the verifier's clock (the flag does not move this server's clock)`);
        how = skewMs < 0 ? `negative offset; a +${Math.abs(skewMs)} ms probe moved the clock ${seen} ms` : `clock offset seen on the node: ${seen >= 0 ? '+' : ''}${seen} ms`;
      }
    } else if (!this.skewTakesEffect) {
      throw new DbError(ErrorCode.INTERNAL, `${CLOCK_SKEW_FLAG} did not move a server's clock earlier in this run`);
    } else {
      how = 'negative offset (an earlier probe showed the flag moves the clock)';
    }
    if (skewMs <= 0) await this.setSkew(node, skewMs);
    return how;
  }

  /**
   * How far the node's tserver clock is ahead of ours (ms), read from the hybrid time a tablet leader
   * on that node returns with an empty read; undefined when no tablet led by the node answered.
   */
  private async clockOffsetMs(node: number): Promise<number | undefined> {
    const ts = this.d.cluster.tservers.find((s) => s.node === node);
    if (!ts) return undefined;
    const rpc = this.d.client.rpcClient();
    const tablets: string[] = [];
    for (const table of [this.d.table, TRANSACTIONS_TABLE]) {
      const loc = await this.d.client.tableLocations(table, { timeoutMs: 2_000 }).catch(() => undefined);
      for (const t of loc?.tablets ?? []) if (t.replicas.some((r) => r.rpcAddress === ts.rpcAddress)) tablets.push(t.tabletId);
    }
    for (const tabletId of tablets.slice(0, CLOCK_PROBE_TABLETS_MAX)) {
      try {
        const r = await rpc.call(ts.rpcAddress, tabletServerMethods().read, { tabletId, keys: [] }, { timeoutMs: 1_000 });
        const ht = BigInt(r.propagatedHt ?? 0n);
        if (ht === 0n) continue;
        return Math.round(Number(htPhysicalMicros(ht)) / 1000 - Date.now());
      } catch {
        // Not the leader of this tablet (or not serving yet): try the next.
      }
    }
    return undefined;
  }

  /**
   * Cut node a's servers from node b's (both ways: each side lists the other's advertised RPC
   * addresses); undefined = clear the lists on every running server.
   */
  private async bridge(a: number | undefined, b: number | undefined): Promise<void> {
    const c = this.d.cluster;
    const addrs = (node: number | undefined): string =>
      c.servers
        .filter((s) => s.node === node)
        .map((s) => s.rpcAddress)
        .join(',');
    const errors: string[] = [];
    await Promise.all(
      c.servers.map(async (s) => {
        if (!c.isRunning(s) || s.paused) return;
        const value = a === undefined ? '' : s.node === a ? addrs(b) : s.node === b ? addrs(a) : undefined;
        if (value === undefined) return;
        await c.setFlag(s, DROP_TRAFFIC_FLAG, value, this.d.client.rpcClient()).catch((e: Error) => errors.push(`${s.name}: ${e.message}`));
      }),
    );
    if (errors.length) throw new DbError(ErrorCode.INTERNAL, `bridge: could not set ${DROP_TRAFFIC_FLAG}: ${errors.join('; ')}`);
  }

  /** A tablet replica's row on one tserver's /api/v1/tablets, undefined when it has none or does not answer. */
  private async replicaRow(s: VerifyServerRef, tabletId: string): Promise<{ state: string; leaderUuid: string; commitIndex: number; appliedIndex: number } | undefined> {
    try {
      const body = (await getJson(`${s.webUrl}/api/v1/tablets`, 3_000)) as { tablets?: Array<{ tabletId: string; state: string; leaderUuid: string; commitIndex: number; appliedIndex: number }> };
      return body.tablets?.find((t) => t.tabletId === tabletId);
    } catch {
      return undefined;
    }
  }

  private async replicaState(s: VerifyServerRef, tabletId: string): Promise<string | undefined> {
    return (await this.replicaRow(s, tabletId))?.state;
  }

  /**
   * Fail one replica (TEST_fail_tablet_replica, cleared once it failed) and wait until the master
   * re-created it on the same tserver (with 3 tservers there is no spare) and it caught up as a
   * voter. The window lasts the whole membership change.
   */
  private async rebuild(f: ScheduledFault, w: FaultWindow, stop: () => boolean): Promise<void> {
    const c = this.d.cluster;
    const table = f.statusTablet ? TRANSACTIONS_TABLE : this.d.table;
    const loc = await this.d.client.tableLocations(table, { timeoutMs: 3_000 });
    if (loc.tablets.length === 0) throw new DbError(ErrorCode.NOT_FOUND, `table ${table} has no tablets`);
    const tablet = loc.tablets[this.rng.int(loc.tablets.length)]!;
    const addr =
      f.target.role === 'leader'
        ? tablet.replicas.find((r) => r.role === 'LEADER')?.rpcAddress
        : f.target.role === 'tserver'
          ? c.tservers.find((t) => t.node === (f.target as { node: number }).node)?.rpcAddress
          : undefined;
    const victim = c.tservers.find((t) => t.rpcAddress === addr);
    if (!victim || !c.isRunning(victim) || victim.paused) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `no running tserver holds the chosen replica of tablet ${tablet.tabletId}`);
    w.target = `${f.statusTablet ? 'status tablet' : 'tablet'} ${tablet.tabletId.slice(0, 8)} replica on tserver ${victim.node}${f.target.role === 'leader' ? ' (its leader)' : ''}`;
    const t0 = Date.now();
    await c.setFlag(victim, FAIL_REPLICA_FLAG, tablet.tabletId, this.d.client.rpcClient());
    let failed = false;
    try {
      while (!stop() && Date.now() - t0 < REBUILD_FAIL_TIMEOUT_MS) {
        if ((await this.replicaState(victim, tablet.tabletId)) === 'FAILED') {
          failed = true;
          break;
        }
        await sleep(100, stop);
      }
    } finally {
      // Cleared at once: the re-created replica must not fail again.
      await c.setFlag(victim, FAIL_REPLICA_FLAG, '', this.d.client.rpcClient());
    }
    if (!failed) throw new DbError(ErrorCode.TIMED_OUT, `the replica did not fail within ${REBUILD_FAIL_TIMEOUT_MS} ms (no entry applied on it)`);
    const failedMs = Date.now() - t0;
    // Repaired: the new replica runs, follows a leader, and has applied what the replicas had
    // committed (so the next fault never meets a repair still under way).
    let running = false;
    while (!stop() && Date.now() - t0 < REBUILD_REPAIR_TIMEOUT_MS) {
      await sleep(200, stop);
      const rows = await Promise.all(c.tservers.map(async (t) => ({ t, row: await this.replicaRow(t, tablet.tabletId) })));
      const mine = rows.find((r) => r.t === victim)?.row;
      const maxCommit = Math.max(...rows.map((r) => r.row?.commitIndex ?? 0));
      if (mine?.state === 'RUNNING' && mine.leaderUuid && rows.every((r) => r.row !== undefined) && mine.appliedIndex >= maxCommit) {
        running = true;
        break;
      }
    }
    w.note = running
      ? `failed after ${failedMs} ms; re-created by the master and caught up (a voter following a leader, applied to the others' commit index) ${Date.now() - t0} ms after the fault began`
      : `failed after ${failedMs} ms; NOT re-created and caught up within ${REBUILD_REPAIR_TIMEOUT_MS} ms${stop() ? ' (the run ended first)' : ''}`;
  }

  /** Raft messages the tservers of these nodes dropped since they started (summed), or undefined when one does not say. */
  private async raftDropped(nodes: readonly number[]): Promise<number | undefined> {
    let sum = 0;
    for (const s of this.d.cluster.tservers.filter((x) => nodes.includes(x.node))) {
      const n = await raftMessagesDropped(s.webUrl);
      if (n === undefined) return undefined;
      sum += n;
    }
    return sum;
  }

  /** Cut the given nodes off from the rest both ways (empty = heal), the driver's way. */
  async partition(nodes: number[]): Promise<void> {
    await this.d.cluster.isolate(nodes, this.d.client.rpcClient());
  }

  /** The node whose tserver the master reports as leader of a random tablet of the table. */
  private async leaderNode(): Promise<number> {
    const loc = await this.d.client.tableLocations(this.d.table, { timeoutMs: 3_000 });
    const t = loc.tablets[this.rng.int(Math.max(1, loc.tablets.length))];
    const addr = t?.replicas.find((r) => r.role === 'LEADER')?.rpcAddress;
    const s = this.d.cluster.tservers.find((x) => x.rpcAddress === addr);
    if (!s) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `no known leader for a tablet of ${this.d.table}`);
    return s.node;
  }

  /** Ask the leader of a random tablet of the table to step down; returns which tablet. */
  private async stepdown(): Promise<string> {
    const loc = await this.d.client.tableLocations(this.d.table, { timeoutMs: 3_000 });
    if (loc.tablets.length === 0) throw new DbError(ErrorCode.NOT_FOUND, `table ${this.d.table} has no tablets`);
    const t = loc.tablets[this.rng.int(loc.tablets.length)]!;
    // The master's view of the leader may be a heartbeat old: the reported leader first, then the others.
    const order = [...t.replicas].sort((a, b) => (a.role === 'LEADER' ? -1 : 0) - (b.role === 'LEADER' ? -1 : 0));
    let last: unknown;
    for (const r of order) {
      try {
        await this.d.client.rpcClient().call(r.rpcAddress, tabletServerMethods().leaderStepdown, { tabletId: t.tabletId, newLeaderUuid: '' }, { timeoutMs: 3_000 });
        return `tablet ${t.tabletId.slice(0, 8)} leader ${r.rpcAddress}`;
      } catch (e) {
        last = e;
      }
    }
    throw last instanceof Error ? last : new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${t.tabletId} has no replica that could step down`);
  }
}
