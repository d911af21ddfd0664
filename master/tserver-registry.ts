/**
 * What the leader master knows of live tservers: soft state rebuilt from heartbeats (a new leader
 * starts empty and learns everything within one heartbeat interval). Tablet reports say which
 * replicas each tserver hosts and who leads each tablet.
 */
import type { TSHeartbeatRequestPB, TabletReportPB } from '../rpc';

/** Tservers remembered (a bound on what heartbeats from arbitrary senders can make us keep). */
export const TSERVERS_MAX = 10_000;

export interface TServerEntry {
  uuid: string;
  rpcAddress: string;
  webAddress: string;
  placementZone: string;
  /** performance.now() of the last heartbeat. */
  lastHeartbeatMs: number;
  rssBytes: number;
  reports: Map<string, TabletReportPB>;
}

export class TServerRegistry {
  private readonly servers = new Map<string, TServerEntry>();

  heartbeat(req: TSHeartbeatRequestPB, nowMs: number): TServerEntry | undefined {
    const uuid = req.uuid ?? '';
    if (!uuid) return undefined;
    let e = this.servers.get(uuid);
    if (!e) {
      if (this.servers.size >= TSERVERS_MAX) return undefined;
      e = { uuid, rpcAddress: '', webAddress: '', placementZone: '', lastHeartbeatMs: 0, rssBytes: 0, reports: new Map() };
      this.servers.set(uuid, e);
    }
    e.rpcAddress = req.rpcAddress ?? e.rpcAddress;
    e.webAddress = req.webAddress ?? e.webAddress;
    e.placementZone = req.placementZone ?? '';
    e.lastHeartbeatMs = nowMs;
    e.rssBytes = Number(req.rssBytes ?? 0n);
    e.reports = new Map((req.tablets ?? []).filter((t) => t.tabletId).map((t) => [t.tabletId!, t]));
    return e;
  }

  get(uuid: string): TServerEntry | undefined {
    return this.servers.get(uuid);
  }

  list(): TServerEntry[] {
    return [...this.servers.values()].sort((a, b) => a.rpcAddress.localeCompare(b.rpcAddress) || a.uuid.localeCompare(b.uuid));
  }

  isAlive(uuid: string, nowMs: number, timeoutMs: number): boolean {
    const e = this.servers.get(uuid);
    return e !== undefined && nowMs - e.lastHeartbeatMs <= timeoutMs;
  }

  liveCount(nowMs: number, timeoutMs: number): number {
    let n = 0;
    for (const e of this.servers.values()) if (nowMs - e.lastHeartbeatMs <= timeoutMs) n++;
    return n;
  }

  hosts(uuid: string, tabletId: string): boolean {
    const r = this.servers.get(uuid)?.reports.get(tabletId);
    return r !== undefined && r.state !== 'DELETED';
  }

  /** The state `uuid` reports for its replica of `tabletId` (RUNNING, FAILED, ...), if it reports one. */
  replicaState(uuid: string, tabletId: string): string | undefined {
    return this.servers.get(uuid)?.reports.get(tabletId)?.state;
  }

  /** The replica reporting itself LEADER with the highest term (among live reporters; a FAILED replica leads nothing). */
  leaderReport(tabletId: string, nowMs: number, timeoutMs: number): { uuid: string; report: TabletReportPB } | undefined {
    let best: { uuid: string; report: TabletReportPB } | undefined;
    for (const e of this.servers.values()) {
      if (nowMs - e.lastHeartbeatMs > timeoutMs) continue;
      const r = e.reports.get(tabletId);
      if (!r || r.role !== 'LEADER' || r.state === 'FAILED') continue;
      if (!best || (r.term ?? 0n) > (best.report.term ?? 0n)) best = { uuid: e.uuid, report: r };
    }
    return best;
  }

  leaderCounts(nowMs: number, timeoutMs: number): Map<string, number> {
    const m = new Map<string, number>();
    for (const e of this.servers.values()) {
      if (nowMs - e.lastHeartbeatMs > timeoutMs) continue;
      let n = 0;
      for (const r of e.reports.values()) if (r.role === 'LEADER' && r.state !== 'FAILED') n++;
      m.set(e.uuid, n);
    }
    return m;
  }
}
