/**
 * One operation on one tablet, sent to its leader with the retries the error codes allow:
 * NOT_THE_LEADER -> go to the hinted leader (or the next replica); TABLET_NOT_FOUND and network
 * errors -> refresh the table's locations and try again; LEADER_NOT_READY / BACKPRESSURE -> back off
 * and retry; SERVICE_UNAVAILABLE (a replica that is not running: FAILED, bootstrapping) -> back off
 * and try the next replica. Everything within the operation's deadline (TIMED_OUT). An attempt of an
 * idempotent operation waits at most `singleCallTimeoutMs` for its answer, then tries another replica
 * (a leader that hangs without closing its connections must not hold the operation to its deadline).
 *
 * Writes go as retryable requests (callWrite): every attempt of one Write carries the client's id and
 * the write's request id, so the tablet answers a resent copy of a write it already did instead of
 * doing it again — which makes every write, INSERTs and transactional writes included, safe to resend
 * after an unknown outcome (a lost connection, a timed-out attempt, a replica shutting down).
 */
import { DbError, ErrorCode } from '../common/errors';
import { tabletServerMethods, type MethodDef, type RpcClient, type WriteRequestPB, type WriteResponsePB } from '../rpc';
import { tabletForHash, type RowRoute, type MetaCache, type TableLocations, type TabletLocation } from './meta-cache';
import { ATTEMPTS_MAX, backoffMs, Deadline, isRetryable, sleep } from './retry-policy';
import { RequestIds } from './request-ids';
import { ReplicaHealth } from './replica-health';

interface InvokeOptions {
  /** Safe to resend after an unknown outcome (NETWORK_ERROR, TIMED_OUT, SHUTTING_DOWN). */
  idempotent: boolean;
  /** One attempt waits at most singleCallTimeoutMs (else the whole remaining deadline). */
  capAttempts: boolean;
  fatal?: ReadonlySet<string> | undefined;
  alsoRetry?: ReadonlySet<string> | undefined;
}

/** A failed attempt, as afterFailure needs it. */
interface FailedAttempt {
  table: string;
  where: RowRoute | { tabletId: string };
  tabletId: string;
  target: string;
  attempt: number;
  deadline: Deadline;
  o: InvokeOptions;
}

export class TabletInvoker {
  /** Highest hybrid time seen from any server: sent along so causally later ops get later times. */
  propagatedHt = 0n;
  /** This client's id and write request ids (retryable requests). */
  readonly requests = new RequestIds();

  constructor(
    private readonly rpc: RpcClient,
    private readonly cache: MetaCache,
    /** Cap on one attempt of an idempotent call (0: the whole remaining deadline). */
    private readonly singleCallTimeoutMs = 0,
    private readonly health = new ReplicaHealth(0),
  ) {}

  observeHt(ht: bigint | undefined): void {
    if (ht !== undefined && ht > this.propagatedHt) this.propagatedHt = BigInt(ht);
  }

  /**
   * Call `m` on the leader of the tablet holding `hash` (or the tablet `tabletId` when given).
   * `makeReq` builds the request for the tablet actually chosen (it may change after a refresh).
   * `fatal`: codes thrown at once even when retryable (a transaction's READ_RESTART: resending at
   * the same read time would only restart again).
   * `alsoRetry`: codes retried with backoff although the wire does not mark them retryable (a plain
   * write's TXN_CONFLICT: the tserver wrote nothing, the conflicting transaction is being aborted).
   */
  async call<Req, Resp>(
    table: string,
    where: RowRoute | { tabletId: string },
    m: MethodDef<Req, Resp>,
    makeReq: (t: TabletLocation) => Req,
    deadline: Deadline,
    idempotent: boolean,
    fatal?: ReadonlySet<string>,
    alsoRetry?: ReadonlySet<string>,
  ): Promise<Resp> {
    return this.invoke(table, where, m, makeReq, deadline, { idempotent, capAttempts: idempotent, fatal, alsoRetry });
  }

  /**
   * A Write as a retryable request: request ids are taken for the write and each of its `more`
   * items on the first attempt (or given: `requestIds`, which the caller took with requests.begin()
   * and ends itself) and carried by every attempt; they count as running (the tablets keep them)
   * until this call ends. Resent after an unknown outcome; one attempt waits at most
   * singleCallTimeoutMs for its answer, while the tablet still works to the whole deadline (a
   * transactional write waiting on a conflict goes on waiting, and the resent copy joins it).
   */
  async callWrite(table: string, where: RowRoute | { tabletId: string }, makeReq: (t: TabletLocation) => WriteRequestPB, deadline: Deadline, o: { fatal?: ReadonlySet<string> | undefined; alsoRetry?: ReadonlySet<string> | undefined; requestIds?: readonly number[] | undefined } = {}): Promise<WriteResponsePB> {
    const given = o.requestIds;
    let ids: readonly number[] | undefined = given;
    const tagged = (t: TabletLocation): WriteRequestPB => {
      const req = makeReq(t);
      const n = 1 + (req.more?.length ?? 0);
      ids ??= Array.from({ length: n }, () => this.requests.begin());
      if (ids.length !== n) throw new DbError(ErrorCode.INTERNAL, `a resent write has ${n} items; its first attempt had ${ids.length}`);
      req.clientId = this.requests.clientId;
      req.requestId = BigInt(ids[0]!);
      req.minRunningRequestId = BigInt(this.requests.minRunning());
      req.more?.forEach((item, i) => (item.requestId = BigInt(ids![i + 1]!)));
      return req;
    };
    try {
      return await this.invoke(table, where, tabletServerMethods().write, tagged, deadline, { idempotent: true, capAttempts: true, fatal: o.fatal, alsoRetry: o.alsoRetry });
    } finally {
      if (!given) for (const id of ids ?? []) this.requests.end(id);
    }
  }

  private async invoke<Req, Resp>(table: string, where: RowRoute | { tabletId: string }, m: MethodDef<Req, Resp>, makeReq: (t: TabletLocation) => Req, deadline: Deadline, o: InvokeOptions): Promise<Resp> {
    let last: DbError | undefined;
    let loc: TableLocations = await this.cache.get(table, deadline);
    let rotate = 0;
    for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
      if (deadline.expired()) throw deadline.timedOut(`${m.method} on table ${table}`, last);
      const tablet = tabletOf(loc, where, table);
      const replicas = tablet.replicas.filter((r) => r.rpcAddress);
      const target = this.cache.leaderOf(tablet.tabletId) ?? this.health.pick(replicas.map((r) => r.rpcAddress), rotate++);
      if (!target) {
        last = new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tablet.tabletId} has no replica with a known address`);
        await sleep(backoffMs(attempt));
        loc = await this.cache.refresh(table, deadline);
        continue;
      }
      try {
        return await this.attemptOn(target, m, makeReq, tablet, deadline, o.capAttempts);
      } catch (e) {
        const err = DbError.from(e);
        last = err;
        this.health.noteFailure(target, err);
        loc = await this.afterFailure(err, { table, where, tabletId: tablet.tabletId, target, attempt, deadline, o }, loc);
      }
    }
    throw deadline.timedOut(`${m.method} on table ${table}`, last);
  }

  /** One attempt: `m` on `target`, its wait for the answer capped when `capAttempts`. */
  private async attemptOn<Req, Resp>(target: string, m: MethodDef<Req, Resp>, makeReq: (t: TabletLocation) => Req, tablet: TabletLocation, deadline: Deadline, capAttempts: boolean): Promise<Resp> {
    const left = deadline.remainingMs();
    const attemptMs = capAttempts && this.singleCallTimeoutMs > 0 ? Math.min(left, this.singleCallTimeoutMs) : left;
    // The server keeps the whole remaining time (a transactional write or serializable read may
    // wait on a conflict that long); only this attempt's wait for the answer is capped.
    const r = await this.rpc.call(target, m, makeReq(tablet), { timeoutMs: Math.max(1, attemptMs), serverTimeoutMs: Math.max(1, left) });
    this.health.noteAnswer(target);
    return r;
  }

  /**
   * What a failed attempt leads to: throws `err` when it may not be retried, else backs off, updates
   * the leader cache and returns the table's locations for the next attempt (refreshed when due).
   */
  private async afterFailure(err: DbError, a: FailedAttempt, loc: TableLocations): Promise<TableLocations> {
    const { table, where, tabletId, target, attempt, deadline } = a;
    const { idempotent, fatal, alsoRetry } = a.o;
    // A split parent's answer names its children: they replace it in the cached locations (no master call).
    const routed = err.code === ErrorCode.TABLET_SPLIT && this.cache.installSplit(table, err);
    if (fatal?.has(err.code)) throw err;
    switch (err.code) {
      case ErrorCode.NOT_THE_LEADER: {
        const hint = err.details['leaderHint'];
        if (typeof hint === 'string' && hint && hint !== target) this.cache.setLeader(tabletId, hint);
        else this.cache.dropLeader(tabletId, target);
        if (!(typeof hint === 'string' && hint && hint !== target)) {
          await sleep(backoffMs(attempt));
          if (attempt % 3 === 2) loc = await this.cache.refresh(table, deadline);
        }
        return loc;
      }
      case ErrorCode.TABLET_SPLIT:
        // The tablet was split (docs/splitting.md): a one-row request goes to the child that
        // holds its row once the locations show the children — at once when the answer named them
        // (routed); a request named by tablet id (a scan page, a batch) goes back to its caller,
        // which plans it again.
        if (routed) {
          if (!('hash' in where)) throw err;
          return await this.cache.get(table, deadline);
        }
        this.cache.invalidate(table);
        if (!('hash' in where)) throw err;
        await sleep(backoffMs(Math.min(attempt, 4)));
        return await this.cache.refresh(table, deadline);
      case ErrorCode.TABLET_NOT_FOUND:
        this.cache.dropLeader(tabletId, target);
        await sleep(backoffMs(attempt));
        return await this.cache.refresh(table, deadline);
      case ErrorCode.SERVICE_UNAVAILABLE:
        // This replica is not running (FAILED after a storage failure, or being bootstrapped):
        // whatever it led, another replica leads now or soon. Ask the others.
        if (!isRetryable(err, idempotent) && !alsoRetry?.has(err.code)) throw err;
        this.cache.dropLeader(tabletId, target);
        await sleep(backoffMs(Math.min(attempt, 4)));
        if (attempt % 3 === 2) loc = await this.cache.refresh(table, deadline).catch(() => loc);
        return loc;
      case ErrorCode.NETWORK_ERROR:
      case ErrorCode.TIMED_OUT:
      case ErrorCode.SHUTTING_DOWN:
        if (!isRetryable(err, idempotent)) throw err;
        this.cache.dropLeader(tabletId, target);
        await sleep(backoffMs(Math.min(attempt, 4)));
        if (attempt % 2 === 1) loc = await this.cache.refresh(table, deadline).catch(() => loc);
        return loc;
      default:
        if (!isRetryable(err, idempotent) && !alsoRetry?.has(err.code)) throw err;
        await sleep(backoffMs(attempt));
        return loc;
    }
  }
}

/** The tablet a request goes to: the one holding its row, or the one it names. */
function tabletOf(loc: TableLocations, where: RowRoute | { tabletId: string }, table: string): TabletLocation {
  const tablet = 'hash' in where ? tabletForHash(loc, where.hash, where.key) : loc.tablets.find((t) => t.tabletId === where.tabletId);
  // A request planned for a tablet the locations no longer list: it was split (and its split
  // completed) since the caller planned. TABLET_SPLIT sends the caller back to plan again with
  // the children (a scan page, a batch), as when the parent itself answers it.
  if (!tablet) throw new DbError(ErrorCode.TABLET_SPLIT, `tablet ${(where as { tabletId: string }).tabletId} is no longer part of table ${table} (split); plan the request again`, { tabletId: (where as { tabletId: string }).tabletId });
  return tablet;
}
