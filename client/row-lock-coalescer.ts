/**
 * lockRow, renewRowLock and unlockRow calls issued in the same event-loop turn for the same tablet
 * travel in ONE LockRow (or RowLock) request (`more`), as row operations do (row-ops-coalescer.ts):
 * one RPC instead of one each (the leader handles each in its memory, no Raft entry). Each call
 * keeps its own outcome; a call whose own outcome is a retryable code (nothing was done) goes again
 * alone through the caller's single-call path; a request-level failure is every call's failure, as
 * if each had been sent alone (a LockRow request is resent after an unknown outcome — every lockRow
 * carries its own lock id, so a copy answers the lock its first copy took — a RowLock request is not,
 * as a single renew/unlock is not). Waiting lockRow calls never coalesce.
 *
 * Per turn, as row operations (row-ops-coalescer.ts, ROW_REQUESTS_ALONE_INFLIGHT): every call
 * waits for the turn's end and shares its tablet's request. Sent alone while fewer than 8 lock
 * requests were in flight (until round 7), a c16 lock + write + unlock cycle took 2.5-2.6 RPCs;
 * per turn 1.5-1.6 (bench/results/2026-12-07-rows-5.md). At most ROW_REQUESTS_INFLIGHT_MAX
 * requests of a kind to a tablet are in flight: more calls wait for one to be answered and go
 * together (a group of HELD_GROUP_ROWS_MAX calls goes at once). With the table's lock phases
 * (client/lock-phases.ts, usePhases) a group also waits while requests of another phase — the
 * other kind, or writes carrying row locks — are in flight.
 */
import { InflightCounts } from './inflight-counts';
import type { LockPhases } from './lock-phases';
import { TurnBatches } from './turn-batches';
import { DbError, ErrorCode } from '../common/errors';
import { rowMethods, type LockRowItemPB, type LockRowRequestPB, type RowLockItemPB, type RowLockRequestPB, type RowLockResponsePB, type RowLockResultPB } from '../rpc';
import type { RowRoute } from './meta-cache';
import type { Deadline } from './retry-policy';
import { HELD_GROUP_ROWS_MAX, ROW_REQUESTS_ALONE_INFLIGHT, ROW_REQUESTS_INFLIGHT_MAX } from './row-ops-coalescer';
import type { TabletInvoker } from './tablet-invoker';

/** Lock calls one coalesced request carries at most (the tserver accepts 256). */
export const COALESCED_LOCK_CALLS_MAX = 128;

type Kind = 'lock' | 'held';

interface Item<I> {
  pb: I;
  deadline: Deadline;
  resendAlone: () => Promise<RowLockResponsePB>;
  resolve: (r: RowLockResponsePB) => void;
  reject: (e: unknown) => void;
}

interface Pending {
  kind: Kind;
  tabletId: string;
  route: RowRoute;
  schemaVersion: number;
  items: Array<Item<LockRowItemPB>> | Array<Item<RowLockItemPB>>;
}

/** A coalesced request that meets a split parent fails every call: each caller routes its row again. */
const FATAL: ReadonlySet<string> = new Set([ErrorCode.TABLET_SPLIT]);

export class RowLockCoalescer {
  private readonly pending = new TurnBatches<Pending>(
    (p) => this.send(p),
    (p) => this.inflightMax > 0 && p.items.length < HELD_GROUP_ROWS_MAX && (this.inflight.get(`${p.kind}\u0000${p.tabletId}`) >= this.inflightMax || (this.phases?.others(p.kind) ?? 0) > 0),
  );
  /** The table's lock phases (usePhases): lockRow requests are the 'lock' phase, renew/unlock the 'held' one. */
  private phases: LockPhases | undefined;
  /** Requests sent, and calls they carried (tests, diagnostics). */
  readonly stats = { requests: 0, calls: 0 };
  /** Lock requests in flight per tablet (all kinds: the alone rule) and per kind and tablet (the bound). */
  private readonly inflight = new InflightCounts();

  constructor(
    private readonly invoker: TabletInvoker,
    private readonly table: string,
    /** Requests per tablet in flight below which a call goes at once, alone (0: always coalesce per turn). */
    private readonly aloneInflight: number = ROW_REQUESTS_ALONE_INFLIGHT,
    /** Requests per kind and tablet in flight at most; more calls wait and go together (0: no bound). */
    private readonly inflightMax: number = ROW_REQUESTS_INFLIGHT_MAX,
  ) {}

  /** Move lock calls in step with the table's other lock calls and lock holders' writes (client/lock-phases.ts). */
  usePhases(phases: LockPhases): void {
    this.phases = phases;
    phases.onSettled(() => this.pending.wake());
  }

  /** Queue one (non-waiting) lockRow for `tabletId`; resolves with its answer. */
  lock(tabletId: string, route: RowRoute, schemaVersion: number, pb: LockRowItemPB, deadline: Deadline, resendAlone: () => Promise<RowLockResponsePB>): Promise<RowLockResponsePB> {
    return this.queue('lock', tabletId, route, schemaVersion, pb, deadline, resendAlone);
  }

  /** Queue one RENEW or UNLOCK for `tabletId`; resolves with its answer. */
  held(tabletId: string, route: RowRoute, schemaVersion: number, pb: RowLockItemPB, deadline: Deadline, resendAlone: () => Promise<RowLockResponsePB>): Promise<RowLockResponsePB> {
    return this.queue('held', tabletId, route, schemaVersion, pb, deadline, resendAlone);
  }

  private queue(kind: Kind, tabletId: string, route: RowRoute, schemaVersion: number, pb: LockRowItemPB | RowLockItemPB, deadline: Deadline, resendAlone: () => Promise<RowLockResponsePB>): Promise<RowLockResponsePB> {
    return new Promise((resolve, reject) => {
      const key = `${kind}\u0000${tabletId}\u0000${schemaVersion}`;
      let p = this.pending.get(key);
      const item = { pb, deadline, resendAlone, resolve, reject };
      if (!p && this.inflight.get(tabletId) < this.aloneInflight) {
        this.send({ kind, tabletId, route, schemaVersion, items: [item] } as Pending);
        return;
      }
      if (p && p.items.length >= COALESCED_LOCK_CALLS_MAX) {
        this.pending.take(key);
        this.send(p);
        p = undefined;
      }
      p ??= this.pending.add(key, { kind, tabletId, route, schemaVersion, items: [] });
      (p.items as Array<Item<typeof pb>>).push(item);
    });
  }

  private send(p: Pending): void {
    const items: Array<Item<LockRowItemPB | RowLockItemPB>> = p.items;
    const first = items[0];
    if (!first) return;
    this.stats.requests++;
    this.stats.calls += items.length;
    const inv = this.invoker;
    const deadline = items.reduce((d, i) => (i.deadline.atMs < d.atMs ? i.deadline : d), first.deadline);
    const head = { schemaVersion: p.schemaVersion, propagatedHt: inv.propagatedHt };
    const call =
      p.kind === 'lock'
        ? inv.call(this.table, p.route, rowMethods().lockRow, (t): LockRowRequestPB => ({ tabletId: t.tabletId, ...(first.pb as LockRowItemPB), ...head, ...(items.length > 1 ? { more: items.slice(1).map((i) => i.pb as LockRowItemPB) } : {}) }), deadline, true, FATAL)
        : inv.call(this.table, p.route, rowMethods().rowLock, (t): RowLockRequestPB => ({ tabletId: t.tabletId, ...(first.pb as RowLockItemPB), ...head, ...(items.length > 1 ? { more: items.slice(1).map((i) => i.pb as RowLockItemPB) } : {}) }), deadline, false, FATAL);
    this.inflight.track(p.tabletId, call);
    this.inflight.track(`${p.kind}\u0000${p.tabletId}`, call, () => this.pending.wake());
    this.phases?.track(p.kind, call);
    call.then(
      (r) => {
        if (items.length === 1) return first.resolve(r);
        const outcomes = r.items ?? [];
        // A server that does not know `more` did the first call only: send the others alone.
        if (outcomes.length !== items.length) {
          first.resolve(r);
          for (const i of items.slice(1)) i.resendAlone().then(i.resolve, i.reject);
          return;
        }
        items.forEach((i, k) => settle(i, outcomes[k]!, r.propagatedHt));
      },
      (e: unknown) => {
        for (const i of items) i.reject(e);
      },
    );
  }
}

function settle(i: Item<unknown>, o: RowLockResultPB, propagatedHt: bigint | undefined): void {
  if (!o.code) return i.resolve({ lockId: o.lockId ?? '', token: BigInt(o.token ?? 0n), expiresHt: BigInt(o.expiresHt ?? 0n), leaseMs: o.leaseMs ?? 0, ...(propagatedHt !== undefined ? { propagatedHt } : {}) });
  let details: Record<string, unknown> = {};
  try {
    const parsed: unknown = o.detailsJson ? JSON.parse(o.detailsJson) : {};
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) details = parsed as Record<string, unknown>;
  } catch {
    // Unreadable details: the code and message still say what happened.
  }
  const err = DbError.fromWire({ code: o.code, message: o.message ?? '', details });
  // Nothing was done (NOT_THE_LEADER after a leadership change, ...): this call goes again alone.
  if (err.retryable && !FATAL.has(err.code)) i.resendAlone().then(i.resolve, i.reject);
  else i.reject(err);
}
