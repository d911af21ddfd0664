/**
 * Several callers' read-modify-writes in ONE Raft entry (docs/rows.md): the row operations a client
 * coalesced into one MutateRows request, each a retryable request of its own. The leader takes the
 * latches of all their rows at once, evaluates each call on its own (its conditions, its row
 * locks: a call that fails or whose condition does not hold is answered alone and left out), and
 * proposes one WRITE entry carrying every remaining call's ops and request ids (`moreRequests`):
 * one entry, one apply batch on each replica, instead of one per call. Each request is recorded as
 * replicated when the entry is applied, so a resent copy of any call is answered, not applied again.
 * Calls that cannot share (a copy of a request replicated or running here, rows another call of
 * the batch writes, waiting for locks) take the ordinary single-write path. A call with unlockAfter
 * releases its locks once the shared entry committed, under the latches still (leader-local locks).
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { DocKey, Row, RowOp } from '../../docdb';
import type { LockTable } from './lock-table';
import type { MvccClock } from './mvcc-clock';
import type { RetryableRequests } from './retryable-requests';
import type { RowLockTable } from './row-locks';
import { docKeyString, encodeTabletOp, type RequestTag } from './tablet-op';
import { releaseWhenSettled, type WriteRequest } from './tablet-types';

/** What a path that puts several requests in one WRITE entry needs of the tablet (this file and fast-path-batch.ts). */
export interface SharedEntryDeps {
  tabletId: string;
  mvcc: MvccClock;
  retryable: RetryableRequests;
  rowLocks: RowLockTable;
  locks: LockTable;
  checkServing(): void;
  withLeaderHint(e: unknown): unknown;
  metrics: { writeOps: number; rowsWritten: number };
  /** Under the latches: the request's ops (undefined: its condition failed, nothing to write). */
  opsToWrite(req: WriteRequest, keys: DocKey[]): Promise<RowOp[] | undefined>;
  /** `proposal`, or TIMED_OUT after `ms`. */
  settledWithin(proposal: Promise<unknown>, ms: number, what: string): Promise<void>;
  timeoutMs(req: WriteRequest): number;
  /** The ordinary path: one entry for this request. */
  writeAlone(req: WriteRequest): Promise<HybridTime>;
}

export interface CombinedWritesDeps extends SharedEntryDeps {
  propose(data: Uint8Array): Promise<unknown>;
  /**
   * Under the latches, for every call at once: other transactions' intents on the rows of `keys`
   * settled as opsToWrite settles them, then the rows of `read` as they are now (in order).
   */
  rowsForCalls(keys: readonly DocKey[], read: readonly DocKey[]): Promise<Array<Row | undefined>>;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

interface Call {
  req: WriteRequest;
  request: RequestTag;
  keys: DocKey[];
  /** docKeyString of each of `keys` (the latches' keys). */
  rowKeys: string[];
  ops?: RowOp[];
  /** What a copy of the request waits for: the entry's fate (or the failure before it). */
  outcome: Deferred<HybridTime>;
  /** What the caller gets (a timeout too). */
  result: Deferred<HybridTime>;
  done: boolean;
  /** The locks this call releases once written (unlockAfter). */
  unlocks?: Array<{ rowKey: string; lockId: string }>;
}

function canShare(req: WriteRequest): boolean {
  return req.computed !== undefined && req.request !== undefined && req.waitForLocks !== true && !req.fastPathTxn;
}

/**
 * Run `reqs` (one tablet's), sharing one entry where they can; one answer per request, in order.
 * A call of the batch on a row another call of it writes goes alone, in its own entry; the two are
 * concurrent (the client issued them in one turn without waiting), so either may be applied first.
 */
export function writeCombined(d: CombinedWritesDeps, reqs: readonly WriteRequest[]): Array<Promise<HybridTime>> {
  const out: Array<Promise<HybridTime> | undefined> = [];
  const alone: Array<{ at: number; req: WriteRequest }> = [];
  const calls: Call[] = [];
  const taken = new Set<string>();
  for (const req of reqs) {
    const ks = req.computed?.rowKeys ?? (req.computed?.keys ?? []).map((k) => docKeyString(k));
    let fresh = false;
    try {
      fresh = canShare(req) && !ks.some((k) => taken.has(k)) && d.retryable.check(req.request!, d.tabletId).kind === 'new';
    } catch {
      fresh = false; // not serving, or a late copy: the ordinary path answers it
    }
    if (!fresh) {
      alone.push({ at: out.length, req });
      out.push(undefined);
      continue;
    }
    for (const k of ks) taken.add(k);
    const call: Call = { req, request: req.request!, keys: req.computed!.keys, rowKeys: ks, outcome: deferred(), result: deferred(), done: false };
    d.retryable.start(call.request, call.outcome.promise);
    calls.push(call);
    out.push(call.result.promise);
  }
  if (calls.length > 0) {
    runCalls(d, calls).catch((e: unknown) => {
      for (const c of calls) fail(c, d.withLeaderHint(e));
    });
  }
  for (const a of alone) out[a.at] = d.writeAlone(a.req);
  return out as Array<Promise<HybridTime>>;
}

function fail(c: Call, e: unknown): void {
  if (c.done) return;
  c.done = true;
  c.outcome.reject(e);
  c.result.reject(e);
}

function answerWithoutWrite(c: Call): void {
  c.done = true;
  c.outcome.resolve(0n);
  c.result.resolve(0n);
}

async function runCalls(d: CombinedWritesDeps, calls: Call[]): Promise<void> {
  d.checkServing();
  const release = await d.locks.acquire(calls.flatMap((c) => c.rowKeys));
  let unsettled: Promise<unknown> | undefined;
  try {
    await computeCalls(d, calls);
    d.checkServing();
    const ht = d.mvcc.nextHt();
    for (const c of calls) {
      if (c.done) continue;
      try {
        d.rowLocks.check(d.tabletId, c.keys, c.req.heldLocks, ht);
        if (c.req.unlockAfter) c.unlocks = d.rowLocks.unlocksAfter(c.keys, c.req.heldLocks, c.req.unlockAfter, ht);
      } catch (e) {
        fail(c, e);
      }
    }
    const live = calls.filter((c) => !c.done);
    if (live.length === 0) return;
    unsettled = proposeCalls(d, live, ht);
    await settleCalls(d, live, unsettled, ht);
  } finally {
    releaseWhenSettled(release, unsettled);
  }
}

/**
 * Every call's ops, under the latches. Together: the intents on all the calls' rows settled in one
 * pass and the rows that are read, read at one read time (rowsForCalls), then each call computed on
 * its own rows (a call that throws fails alone). When the joint pass fails (a transaction's intent
 * that cannot be settled, ...), each call goes its own way as a lone write would (opsToWrite), so a
 * call fails only for its own rows.
 */
async function computeCalls(d: CombinedWritesDeps, calls: Call[]): Promise<void> {
  // A call that also carries plain ops (INSERT/UPDATE existence checks) goes the lone write's way.
  const own = calls.filter((c) => c.req.ops.length > 0);
  if (own.length > 0) {
    await Promise.all(own.map((c) => computeAlone(d, c)));
    calls = calls.filter((c) => c.req.ops.length === 0);
    if (calls.length === 0) return;
  }
  const reading = calls.filter((c) => c.req.computed!.readsRows !== false);
  let rows: Array<Row | undefined>;
  try {
    rows = await d.rowsForCalls(
      calls.flatMap((c) => c.keys),
      reading.flatMap((c) => c.keys),
    );
  } catch {
    await Promise.all(calls.map((c) => computeAlone(d, c)));
    return;
  }
  let at = 0;
  for (const c of calls) {
    const computed = c.req.computed!;
    const mine = computed.readsRows === false ? c.keys.map(() => undefined) : rows.slice(at, (at += c.keys.length));
    try {
      takeOps(c, computed.compute(mine));
    } catch (e) {
      fail(c, d.withLeaderHint(e));
    }
  }
}

async function computeAlone(d: CombinedWritesDeps, c: Call): Promise<void> {
  try {
    takeOps(c, await d.opsToWrite(c.req, c.keys));
  } catch (e) {
    fail(c, d.withLeaderHint(e));
  }
}

/** A call's computed ops; none (its condition failed): answered at once, nothing to write. */
function takeOps(c: Call, ops: RowOp[] | undefined): void {
  if (ops) c.ops = ops;
  else answerWithoutWrite(c);
}

/** One WRITE entry for every live call: the first call's request leads, the others ride along. */
function proposeCalls(d: CombinedWritesDeps, live: Call[], ht: HybridTime): Promise<unknown> {
  d.mvcc.addInflight(ht);
  const [first, ...rest] = live;
  const ops = live.flatMap((c) => c.ops ?? []);
  const proposal = d.propose(encodeTabletOp({ type: 'WRITE', ht, ops, request: first!.request, ...(rest.length > 0 ? { moreRequests: rest.map((c) => c.request) } : {}) }));
  proposal.catch(() => d.mvcc.markApplied(ht));
  for (const c of live) {
    c.done = true;
    proposal.then(
      () => c.outcome.resolve(ht),
      (e: unknown) => c.outcome.reject(d.withLeaderHint(e)),
    );
  }
  return proposal;
}

/**
 * Each caller's answer: the hybrid time once committed and applied, or TIMED_OUT after its own
 * timeout. Calls with the same timeout (all of a client's coalesced calls) share one timer.
 */
async function settleCalls(d: CombinedWritesDeps, live: Call[], proposal: Promise<unknown>, ht: HybridTime): Promise<void> {
  const byTimeout = new Map<number, Call[]>();
  for (const c of live) {
    const ms = d.timeoutMs(c.req);
    const group = byTimeout.get(ms);
    if (group) group.push(c);
    else byTimeout.set(ms, [c]);
  }
  await Promise.all(
    [...byTimeout].map(async ([ms, group]) => {
      try {
        await d.settledWithin(proposal, ms, 'write');
        for (const c of group) {
          if (c.unlocks) d.rowLocks.releaseAfterWrite(c.unlocks);
          c.result.resolve(ht);
        }
      } catch (e) {
        for (const c of group) c.result.reject(d.withLeaderHint(e));
      }
    }),
  );
  d.metrics.writeOps += live.length;
  d.metrics.rowsWritten += live.reduce((n, c) => n + c.keys.length, 0);
}
