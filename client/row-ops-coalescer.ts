/**
 * Row operations (increment, append, checkAndMutate, mutateRow(s)) issued in the same event-loop turn
 * for the same tablet travel in ONE MutateRows request (`more`): one RPC, one request and one
 * response frame instead of one each, and the leader proposes their Raft entries together (one
 * append, one sync). Plain upserts have coalesced this way for long (Table's write batches); without
 * it an increment paid a whole RPC of its own and ran at half the upserts' rate (docs/rows.md).
 *
 * Each call still succeeds or fails on its own: the answer has one outcome per call, every call
 * keeps its own retryable-request id (a resent copy of the whole request does none of them twice),
 * and a call whose own outcome is a retryable code (nothing was written) is sent again alone, with
 * the same request id, through the caller's single-call path. A request-level failure is every
 * call's failure, as if each had been sent alone. Calls that wait for locked rows never coalesce
 * (a waiting call would hold the others' answers).
 *
 * Per turn, as plain upserts coalesce (client/turn-batcher.ts): every call waits for the turn's
 * end and shares its tablet's request. The constructor can still send calls alone while fewer
 * than `aloneInflight` requests to their tablet are in flight (the default until round 7, at 8):
 * that left c64 increments at 0.44-0.49 requests (and Raft entries) per call against the upserts'
 * 0.22-0.32, and the reading it answered — waiting a turn made the c16 lock cycle dearer — was the
 * bench's figure order (bench/results/2026-12-07-rows-3.md, bench/results/2026-12-07-rows-5.md).
 * At most ROW_REQUESTS_INFLIGHT_MAX requests to a tablet are in flight: more calls wait for one to
 * be answered and go together (a turn's group is held, and later calls join it), unless the group
 * already holds HELD_GROUP_ROWS_MAX rows.
 */
import { InflightCounts } from './inflight-counts';
import type { LockPhases } from './lock-phases';
import { TurnBatches } from './turn-batches';
import { DbError, ErrorCode } from '../common/errors';
import { rowMethods, type MutateRowsRequestPB, type MutateRowsResponsePB, type MutateRowsResultPB, type RowMutationPB } from '../rpc';
import type { RowRoute } from './meta-cache';
import type { Deadline } from './retry-policy';
import type { TabletInvoker } from './tablet-invoker';

/** Calls one coalesced request carries at most (the tserver accepts 256). */
export const COALESCED_ROW_CALLS_MAX = 128;
/** Rows one coalesced request carries at most (a call with more goes alone). */
export const COALESCED_ROW_ROWS_MAX = 1024;
/** Approximate value bytes one coalesced request carries at most (keeps frames and entries small). */
export const COALESCED_ROW_BYTES_MAX = 4 * 1024 * 1024;

/**
 * Requests to one tablet in flight below which a row operation or lock call is sent at once,
 * alone: 0, every call shares its turn's request (see the file comment). Lock calls too: once the
 * cycle's increments share entries, the callers whose increments were answered together unlock
 * together and lock again together — 1.5-1.6 RPCs a c16 lock + increment + unlock cycle against
 * 2.5-2.6 with lock calls sent alone below 8 in flight (bench/results/2026-12-07-rows-5.md).
 */
export const ROW_REQUESTS_ALONE_INFLIGHT = 0;

/**
 * Requests of one coalescer to one tablet in flight at most (for lock calls: per kind, lockRow or
 * renew/unlock): at the bound, the tablet's calls wait for one to be answered and then go
 * together, with every call issued meanwhile (Nagle's rule). Per turn alone, the callers of a c16
 * lock + write + unlock cycle fell into ≈ 3 groups per tablet whose phases differed, and each
 * group's write took a Raft round of its own (bench/results/2026-12-07-rows-6.md); held, calls
 * that would have gone in separate requests share one request and one Raft entry. A lone caller
 * is not delayed (nothing of its own is in flight).
 */
export const ROW_REQUESTS_INFLIGHT_MAX = 1;

/**
 * Rows (lock calls: calls) from which a group is not held: it is large enough to be worth its own
 * request and Raft entry (Nagle sends a full segment at once). mutateRows(10) callers on one tablet
 * form groups of 60-160 rows, and two such requests in flight pipeline; with every group held the
 * figure ran lower in four alternated runs (3,860 against 5,763 rows/s mean, on a loaded machine
 * that did not separate builds well: bench/results/2026-12-07-rows-7.md). Single-row increments
 * and lock calls stay far below it.
 */
export const HELD_GROUP_ROWS_MAX = 32;

/** One call's outcome, as a lone MutateRows answers it. */
export type RowCallAnswer = Pick<MutateRowsResponsePB, 'applied' | 'results'>;

interface Item {
  rows: RowMutationPB[];
  bytes: number;
  deadline: Deadline;
  requestId: number;
  resendAlone: (requestId: number) => Promise<RowCallAnswer>;
  resolve: (a: RowCallAnswer) => void;
  reject: (e: unknown) => void;
}

interface Pending {
  table: string;
  tabletId: string;
  route: RowRoute;
  schemaVersion: number;
  /** Its calls carry row locks: the 'write' lock phase. */
  locked: boolean;
  rows: number;
  bytes: number;
  items: Item[];
}

/** Approximate wire bytes of one row's mutations (values dominate; a constant covers the rest). */
export function approxRowMutationBytes(r: RowMutationPB): number {
  let n = 48;
  for (const m of [...(r.mutations ?? []), ...(r.conditions ?? [])]) {
    n += 16;
    const v = m.value;
    if (!v) continue;
    if (typeof v.stringValue === 'string') n += v.stringValue.length * 3;
    else if (v.bytesValue) n += v.bytesValue.length;
    else n += 9;
  }
  return n;
}

export class RowOpsCoalescer {
  private readonly pending = new TurnBatches<Pending>(
    (p) => this.send(p),
    (p) => this.inflightMax > 0 && p.rows < HELD_GROUP_ROWS_MAX && (this.inflight.get(p.tabletId) >= this.inflightMax || (p.locked && (this.phases?.others('write') ?? 0) > 0)),
  );
  /** The table's lock phases (usePhases): groups carrying row locks are the 'write' phase. */
  private phases: LockPhases | undefined;
  /** Requests sent, and calls they carried (tests, diagnostics). */
  readonly stats = { requests: 0, calls: 0 };
  /** Requests in flight per tablet. */
  private readonly inflight = new InflightCounts();

  constructor(
    private readonly invoker: TabletInvoker,
    /** Codes retried by the invoker although not marked retryable (a plain write's TXN_CONFLICT). */
    private readonly alsoRetry: ReadonlySet<string>,
    /** Codes that end a request at once (TABLET_SPLIT: the caller routes its rows again). */
    private readonly fatal: ReadonlySet<string>,
    /** Requests per tablet in flight below which a call goes at once, alone (0: always coalesce per turn). */
    private readonly aloneInflight: number = ROW_REQUESTS_ALONE_INFLIGHT,
    /** Requests per tablet in flight at most; more calls wait and go together (0: no bound). */
    private readonly inflightMax: number = ROW_REQUESTS_INFLIGHT_MAX,
  ) {}

  /** Move calls that carry row locks in step with the table's lock calls (client/lock-phases.ts). */
  usePhases(phases: LockPhases): void {
    this.phases = phases;
    phases.onSettled(() => this.pending.wake());
  }

  /**
   * Queue one call for `tabletId` of `table`; resolves with its outcome. `resendAlone` sends this
   * call by itself as the same retryable request (the request id it had here: a copy of the
   * coalesced request may have done it already).
   */
  call(table: string, tabletId: string, route: RowRoute, schemaVersion: number, rows: RowMutationPB[], deadline: Deadline, resendAlone: (requestId: number) => Promise<RowCallAnswer>): Promise<RowCallAnswer> {
    const requestId = this.invoker.requests.begin();
    const settled = new Promise<RowCallAnswer>((resolve, reject) => {
      let bytes = 0;
      for (const r of rows) bytes += approxRowMutationBytes(r);
      // Calls built with one schema version travel together (the request carries it); calls that
      // carry a row lock apart from those that do not (a lock phase holds them: lock-phases.ts).
      const locked = rows.some((r) => r.lockId);
      const key = `${table}\u0000${tabletId}\u0000${schemaVersion}${locked ? '\u0000L' : ''}`;
      let p = this.pending.get(key);
      const item: Item = { rows, bytes, deadline, requestId, resendAlone, resolve, reject };
      if (!p && this.inflight.get(tabletId) < this.aloneInflight) {
        this.send({ table, tabletId, route, schemaVersion, locked, rows: rows.length, bytes, items: [item] });
        return;
      }
      if (p && (p.items.length >= COALESCED_ROW_CALLS_MAX || p.rows + rows.length > COALESCED_ROW_ROWS_MAX || p.bytes + bytes > COALESCED_ROW_BYTES_MAX)) {
        this.pending.take(key);
        this.send(p);
        p = undefined;
      }
      p ??= this.pending.add(key, { table, tabletId, route, schemaVersion, locked, rows: 0, bytes: 0, items: [] });
      p.items.push(item);
      p.rows += rows.length;
      p.bytes += bytes;
    });
    const end = (): void => this.invoker.requests.end(requestId);
    settled.then(end, end);
    return settled;
  }

  private send(p: Pending): void {
    const items = p.items;
    const [first, ...rest] = items;
    if (!first) return;
    this.stats.requests++;
    this.stats.calls += items.length;
    const inv = this.invoker;
    // The request must finish by the earliest deadline among its calls.
    const deadline = items.reduce((d, i) => (i.deadline.atMs < d.atMs ? i.deadline : d), first.deadline);
    const make = (t: { tabletId: string }): MutateRowsRequestPB => {
      const req: MutateRowsRequestPB = {
        tabletId: t.tabletId,
        rows: first.rows,
        schemaVersion: p.schemaVersion,
        propagatedHt: inv.propagatedHt,
        clientId: inv.requests.clientId,
        requestId: BigInt(first.requestId),
        minRunningRequestId: BigInt(inv.requests.minRunning()),
      };
      if (rest.length > 0) req.more = rest.map((i) => ({ rows: i.rows, requestId: BigInt(i.requestId) }));
      return req;
    };
    const sent = inv.call(p.table, p.route, rowMethods().mutateRows, make, deadline, true, this.fatal, this.alsoRetry);
    this.inflight.track(p.tabletId, sent, () => this.pending.wake());
    if (p.locked) this.phases?.track('write', sent);
    sent.then(
      (r) => {
        inv.observeHt(r.propagatedHt);
        if (rest.length === 0) return first.resolve(r);
        const outcomes = r.items ?? [];
        // A server that does not know `more` did the first call only: send the others alone.
        if (outcomes.length !== items.length) {
          first.resolve(r);
          for (const i of rest) i.resendAlone(i.requestId).then(i.resolve, i.reject);
          return;
        }
        items.forEach((i, k) => this.settle(i, outcomes[k]!));
      },
      (e: unknown) => {
        for (const i of items) i.reject(e);
      },
    );
  }

  private settle(i: Item, o: MutateRowsResultPB): void {
    if (!o.code) return i.resolve({ applied: o.applied === true, results: o.results ?? [] });
    const err = errorOf(o);
    // Nothing was written (NOT_THE_LEADER after a leadership change, a transaction's intent being
    // settled, ...): this call goes again alone, with the single-call path's retry policy.
    if ((err.retryable || this.alsoRetry.has(err.code)) && !this.fatal.has(err.code)) i.resendAlone(i.requestId).then(i.resolve, i.reject);
    else i.reject(err);
  }
}

/** A coalesced call's error, with its details (ROW_LOCKED's token and holder, FENCED's tokens). */
function errorOf(o: MutateRowsResultPB): DbError {
  let details: Record<string, unknown> = {};
  try {
    const parsed: unknown = o.detailsJson ? JSON.parse(o.detailsJson) : {};
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) details = parsed as Record<string, unknown>;
  } catch {
    // Unreadable details: the code and message still say what happened.
  }
  return DbError.fromWire({ code: o.code ?? ErrorCode.INTERNAL, message: o.message ?? '', details });
}
