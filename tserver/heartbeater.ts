/**
 * Heartbeats to the master leader every heartbeat_interval_ms with tablet reports. Follows the
 * leader hint of a non-leader master and otherwise tries every master in turn; deletes the tablets
 * the master says this server should no longer host.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { Flags } from '../common/flags';
import type { Logger } from '../common/log';
import { HEARTBEAT_INTERVAL_MS } from './tserver-flags';
import type { TabletReportPB } from './tserver-pb';

export interface HeartbeatRequest {
  uuid: string;
  rpcAddress: string;
  webAddress: string;
  placementZone: string;
  tablets: TabletReportPB[];
  rssBytes: bigint;
  hybridTime: bigint;
}

export interface HeartbeatResponse {
  isLeader?: boolean;
  leaderHint?: string;
  tabletsToDelete?: string[];
  hybridTime?: bigint;
}

export interface HeartbeaterDeps {
  masters: string[];
  flags: Flags;
  log: Logger;
  request(): Promise<Omit<HeartbeatRequest, 'tablets'> & { tablets: TabletReportPB[] }>;
  /** One TSHeartbeat RPC. */
  call(address: string, req: HeartbeatRequest, timeoutMs: number): Promise<HeartbeatResponse>;
  deleteTablet(tabletId: string): Promise<void>;
  onHybridTime?(ht: bigint): void;
}

export class Heartbeater {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private stopped = false;
  private leader: string | undefined;
  private next = 0;
  lastSuccessMs = 0;
  readonly metrics = { sent: 0, failed: 0 };

  constructor(private readonly deps: HeartbeaterDeps) {}

  start(): void {
    if (this.deps.masters.length === 0) return;
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.beat(), ms);
  }

  /** soon() was called during a round: the next round starts right after it. */
  private again = false;

  /**
   * Beat now instead of at the next interval (a tablet replica became leader: a split completes
   * once the master hears its children lead). Calls coalesce: at most one round runs, and one more
   * follows it.
   */
  soon(): void {
    if (this.stopped || this.deps.masters.length === 0) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.schedule(0);
  }

  /** The last heartbeat failed UNAUTHENTICATED and that was logged (logged again after anything else). */
  private refusedLogged = false;

  /** One heartbeat round (at most one in flight). */
  async beat(): Promise<void> {
    if (this.running || this.stopped) return;
    this.running = true;
    const interval = this.deps.flags.get(HEARTBEAT_INTERVAL_MS);
    try {
      const req = await this.deps.request();
      // Bounded: at most one try per master plus one redirect per round.
      for (let attempt = 0; attempt <= this.deps.masters.length && !this.stopped; attempt++) {
        const addr = this.leader ?? this.deps.masters[this.next++ % this.deps.masters.length]!;
        try {
          const resp = await this.deps.call(addr, req, Math.max(1000, interval * 4));
          this.metrics.sent++;
          if (resp.isLeader === false) {
            this.leader = resp.leaderHint || undefined;
            continue;
          }
          this.leader = addr;
          this.lastSuccessMs = performance.now();
          if (resp.hybridTime) this.deps.onHybridTime?.(BigInt(resp.hybridTime));
          for (const id of resp.tabletsToDelete ?? []) {
            await this.deps.deleteTablet(id).catch((e: unknown) => {
              if (!(e instanceof DbError && e.code === ErrorCode.TABLET_NOT_FOUND)) this.deps.log.warn({ err: e, tablet: id }, 'delete requested by master failed');
            });
          }
          break;
        } catch (e) {
          this.metrics.failed++;
          if (e instanceof DbError && e.code === ErrorCode.NOT_THE_LEADER) {
            const hint = e.details['leaderHint'];
            this.leader = typeof hint === 'string' && hint ? hint : undefined;
            continue;
          }
          this.leader = undefined;
          // A refused secret does not heal by retrying: say it once, loudly (docs/security.md).
          const refused = e instanceof DbError && e.code === ErrorCode.UNAUTHENTICATED;
          if (refused && !this.refusedLogged) this.deps.log.warn({ err: e, master: addr }, 'heartbeat refused: UNAUTHENTICATED (is --cluster_secret_file the cluster\'s?)');
          else this.deps.log.debug({ err: e, master: addr }, 'heartbeat failed');
          this.refusedLogged = refused;
        }
      }
    } catch (e) {
      this.deps.log.warn({ err: e }, 'heartbeat round failed');
    } finally {
      this.running = false;
      this.schedule(this.again ? 0 : interval);
      this.again = false;
    }
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
