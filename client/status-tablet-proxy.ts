/**
 * Calls to the leaders of the status tablets (the tablets of the system table `transactions`, whose
 * leaders run the transaction coordinator). Keeps the tablets' locations and a leader per tablet;
 * follows NOT_THE_LEADER hints, rotates replicas when the leader is unknown, reloads the locations
 * when a tablet moved, all within the caller's deadline.
 *
 * Separate from MetaCache on purpose: the `transactions` table is not a user table the client
 * reads rows of, so it needs no schema, only tablet ids and replica addresses.
 */
import { TRANSACTIONS_TABLE } from '../common/system-tables';
import { DbError, ErrorCode } from '../common/errors';
import { masterMethods, type MethodDef, type RpcClient } from '../rpc';
import type { MasterProxy } from './master-proxy';
import { ATTEMPTS_MAX, backoffMs, type Deadline, sleep } from './retry-policy';
import { ReplicaHealth } from './replica-health';

/** Status tablet locations are reloaded after this long even without errors (leaders move). */
const LOCATIONS_MAX_AGE_MS = 60_000;

interface StatusTablet {
  tabletId: string;
  addresses: string[];
}

export class StatusTabletProxy {
  private tablets: StatusTablet[] = [];
  private loadedAtMs = -Infinity;
  private loading: Promise<StatusTablet[]> | undefined;
  private readonly leaders = new Map<string, string>();
  /** The last CreateTransaction answer allowed starting without it (client/txn-record.ts): when, and the uncertainty window (a hybrid-time span). */
  lazyStart: { learnedAtMs: number; skewHt: bigint } | undefined;

  constructor(
    private readonly rpc: RpcClient,
    private readonly master: MasterProxy,
    private readonly rand: () => number = Math.random,
    /** Cap on one attempt of an idempotent call (heartbeats, status): TabletInvoker's singleCallTimeoutMs. */
    private readonly singleCallTimeoutMs = 0,
    /** Servers that did not answer an attempt lately (shared with the client's tablet calls). */
    private readonly health = new ReplicaHealth(0),
  ) {}

  /** A status tablet chosen at random (spreads coordinators' load, as YugabyteDB's client does). */
  async pickTablet(deadline: Deadline): Promise<string> {
    const ts = await this.locations(deadline, false);
    if (ts.length === 0) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `the system table ${TRANSACTIONS_TABLE} has no tablets yet`);
    return ts[Math.floor(this.rand() * ts.length) % ts.length]!.tabletId;
  }

  private async locations(deadline: Deadline, force: boolean): Promise<StatusTablet[]> {
    if (!force && this.tablets.length > 0 && performance.now() - this.loadedAtMs < LOCATIONS_MAX_AGE_MS) return this.tablets;
    this.loading ??= (async () => {
      try {
        const r = await this.master.call(masterMethods().getTableLocations, { name: TRANSACTIONS_TABLE }, deadline, true, true);
        this.tablets = (r.tablets ?? [])
          .filter((t) => t.tabletId)
          .map((t) => {
            const leader = (t.replicas ?? []).find((x) => x.role === 'LEADER' && x.rpcAddress);
            // Not a leader that stopped answering (the master may not know of its successor yet).
            if (leader?.rpcAddress && !this.health.isSuspect(leader.rpcAddress)) this.leaders.set(t.tabletId!, leader.rpcAddress);
            return { tabletId: t.tabletId!, addresses: (t.replicas ?? []).map((x) => x.rpcAddress ?? '').filter(Boolean) };
          });
        this.loadedAtMs = performance.now();
        return this.tablets;
      } finally {
        this.loading = undefined;
      }
    })();
    return this.loading;
  }

  /**
   * Call `m` on the leader of status tablet `tabletId`. Codes that say "not done" (DbError.retryable)
   * are retried; an unknown outcome (NETWORK_ERROR, TIMED_OUT) only when `idempotent`.
   * `capAttempts`: one attempt waits at most singleCallTimeoutMs (a commit, which is not resent here,
   * then fails TIMED_OUT sooner and the transaction settles it by asking for the status).
   */
  async call<Req, Resp>(tabletId: string, m: MethodDef<Req, Resp>, req: Req, deadline: Deadline, idempotent: boolean, capAttempts = idempotent): Promise<Resp> {
    let last: DbError | undefined;
    let rotate = 0;
    for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
      if (deadline.expired()) throw deadline.timedOut(`${m.method} on status tablet ${tabletId}`, last);
      const tablets = await this.locations(deadline, false);
      const tablet = tablets.find((t) => t.tabletId === tabletId);
      if (!tablet) {
        last = new DbError(ErrorCode.TABLET_NOT_FOUND, `status tablet ${tabletId} is not (or no longer) a tablet of ${TRANSACTIONS_TABLE}`);
        await sleep(backoffMs(attempt));
        await this.locations(deadline, true);
        continue;
      }
      const target = this.leaders.get(tabletId) ?? this.health.pick(tablet.addresses, rotate++);
      if (!target) {
        last = new DbError(ErrorCode.SERVICE_UNAVAILABLE, `status tablet ${tabletId} has no replica with a known address`);
        await sleep(backoffMs(attempt));
        await this.locations(deadline, true);
        continue;
      }
      try {
        const left = deadline.remainingMs();
        const r = await this.rpc.call(target, m, req, { timeoutMs: Math.max(1, capAttempts && this.singleCallTimeoutMs > 0 ? Math.min(left, this.singleCallTimeoutMs) : left) });
        this.leaders.set(tabletId, target);
        this.health.noteAnswer(target);
        return r;
      } catch (e) {
        const err = DbError.from(e);
        last = err;
        this.health.noteFailure(target, err);
        if (err.code === ErrorCode.NOT_THE_LEADER) {
          const hint = err.details['leaderHint'];
          if (typeof hint === 'string' && hint && hint !== target) {
            this.leaders.set(tabletId, hint);
            continue;
          }
          this.dropLeader(tabletId, target);
          await sleep(backoffMs(attempt));
          if (attempt % 3 === 2) await this.locations(deadline, true).catch(() => undefined);
          continue;
        }
        if (err.code === ErrorCode.TABLET_NOT_FOUND || err.code === ErrorCode.SERVICE_UNAVAILABLE) {
          // Gone from that server, or not running there (FAILED, bootstrapping, loading its records):
          // ask the replicas again.
          this.dropLeader(tabletId, target);
          await sleep(backoffMs(attempt));
          await this.locations(deadline, true).catch(() => undefined);
          continue;
        }
        if (err.code === ErrorCode.NETWORK_ERROR || err.code === ErrorCode.TIMED_OUT || err.code === ErrorCode.SHUTTING_DOWN) {
          // (Whatever comes next — a resend, or a status query that settles the outcome — asks the
          // other replicas too: this one may be hung.) Not when it timed out on a connection the
          // server kept answering on: it is alive and slow (a busy event loop), still the leader as
          // far as anyone knows, and the next call going elsewhere would only add a NOT_THE_LEADER
          // round trip (heartbeats under load expired transactions so: docs/transactions.md).
          if (!(err.code === ErrorCode.TIMED_OUT && err.details['heard'] === true)) this.dropLeader(tabletId, target);
          if (!err.retryable && !idempotent) throw err;
          await sleep(backoffMs(Math.min(attempt, 4)));
          if (attempt % 2 === 1) await this.locations(deadline, true).catch(() => undefined);
          continue;
        }
        if (err.retryable) {
          await sleep(backoffMs(attempt));
          continue;
        }
        throw err;
      }
    }
    throw deadline.timedOut(`${m.method} on status tablet ${tabletId}`, last);
  }

  /** Forget the leader of `tabletId` if it is still `address` (a concurrent call may have learnt a newer one). */
  private dropLeader(tabletId: string, address: string): void {
    if (this.leaders.get(tabletId) === address) this.leaders.delete(tabletId);
  }
}
