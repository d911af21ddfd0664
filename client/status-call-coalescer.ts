/**
 * CreateTransaction and CommitTransaction calls of concurrent transactions that go to the same status
 * tablet in the same event-loop turn travel in ONE request (`more`), as UpdateTransaction does
 * between tservers: one RPC instead of one per transaction, and the coordinator proposes the
 * COMMITTED entries together. A lone call goes out exactly as before (its own single-call path).
 *
 * Each transaction still gets its own answer (one result per transaction). One whose own result is
 * a retryable code (nothing was done) is sent again alone through its single-call path, with that
 * path's retries; a request-level failure is every transaction's failure, as if each had been sent
 * alone (a commit whose outcome is then unknown is settled by the transaction, as always).
 */
import { DbError, ErrorCode, isErrorCode } from '../common/errors';
import {
  txnCoordinatorMethods,
  type CommitTransactionItemPB,
  type CommitTransactionRequestPB,
  type CommitTransactionResponsePB,
  type CreateTransactionItemPB,
  type CreateTransactionRequestPB,
  type CreateTransactionResponsePB,
} from '../rpc/service-methods';
import type { Deadline } from './retry-policy';
import type { StatusTabletProxy } from './status-tablet-proxy';

/** Transactions one coalesced request carries at most (the tserver accepts 256). */
export const COALESCED_STATUS_CALLS_MAX = 128;

export interface CreateOutcome {
  readHt: bigint;
  globalLimitHt: bigint;
  propagatedHt: bigint;
}

interface Item<I, O> {
  item: I;
  deadline: Deadline;
  alone: () => Promise<O>;
  resolve: (o: O) => void;
  reject: (e: unknown) => void;
}

/** One kind of call (create or commit): how to build the request and read each result. */
interface Kind<I, O, Req, Resp> {
  request(statusTablet: string, first: I, more: I[], propagatedHt: bigint): Req;
  send(statusTablet: string, req: Req, deadline: Deadline): Promise<Resp>;
  /** Per-transaction results (undefined: a server that does not know `more`). */
  results(resp: Resp): Array<{ code?: string; message?: string; out: O }> | undefined;
  /** The first transaction's outcome from a plain single answer. */
  single(resp: Resp): O;
}

class Coalescer<I, O, Req, Resp> {
  private readonly pending = new Map<string, Array<Item<I, O>>>();
  private scheduled = false;
  readonly stats = { requests: 0, calls: 0 };

  constructor(
    private readonly kind: Kind<I, O, Req, Resp>,
    private readonly propagatedHt: () => bigint,
  ) {}

  call(statusTablet: string, item: I, deadline: Deadline, alone: () => Promise<O>): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      let q = this.pending.get(statusTablet);
      if (q && q.length >= COALESCED_STATUS_CALLS_MAX) {
        this.pending.delete(statusTablet);
        this.send(statusTablet, q);
        q = undefined;
      }
      if (!q) this.pending.set(statusTablet, (q = []));
      q.push({ item, deadline, alone, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          const all = [...this.pending];
          this.pending.clear();
          for (const [tablet, items] of all) this.send(tablet, items);
        });
      }
    });
  }

  private send(statusTablet: string, items: Array<Item<I, O>>): void {
    const [first, ...rest] = items;
    if (!first) return;
    this.stats.requests++;
    this.stats.calls += items.length;
    const resendAlone = (i: Item<I, O>): void => void i.alone().then(i.resolve, i.reject);
    if (rest.length === 0) return resendAlone(first);
    const deadline = items.reduce((d, i) => (i.deadline.atMs < d.atMs ? i.deadline : d), first.deadline);
    const req = this.kind.request(
      statusTablet,
      first.item,
      rest.map((i) => i.item),
      this.propagatedHt(),
    );
    this.kind.send(statusTablet, req, deadline).then(
      (resp) => {
        const results = this.kind.results(resp);
        if (results === undefined || results.length !== items.length) {
          // A server that does not know `more` answered the first transaction only.
          first.resolve(this.kind.single(resp));
          for (const i of rest) resendAlone(i);
          return;
        }
        items.forEach((i, k) => {
          const r = results[k]!;
          if (!r.code) return i.resolve(r.out);
          const err = new DbError(isErrorCode(r.code) ? r.code : ErrorCode.INTERNAL, r.message ?? r.code);
          if (err.retryable) resendAlone(i);
          else i.reject(err);
        });
      },
      (e: unknown) => {
        for (const i of items) i.reject(e);
      },
    );
  }
}

/** Coalesced CreateTransaction and CommitTransaction calls of one client (option batchWrites). */
export class StatusCallCoalescer {
  private readonly creates: Coalescer<CreateTransactionItemPB, CreateOutcome, CreateTransactionRequestPB, CreateTransactionResponsePB>;
  private readonly commits: Coalescer<CommitTransactionItemPB, bigint, CommitTransactionRequestPB, CommitTransactionResponsePB>;

  constructor(proxy: StatusTabletProxy, propagatedHt: () => bigint) {
    const m = txnCoordinatorMethods();
    this.creates = new Coalescer(
      {
        request: (statusTablet, first, more, p) => ({ statusTablet, ...first, propagatedHt: p, more }),
        send: (tablet, req, d) => proxy.call(tablet, m.createTransaction, req, d, false),
        results: (resp) => resp.results?.map((r) => ({ code: r.code, message: r.message, out: { readHt: BigInt(r.readHt ?? 0n), globalLimitHt: BigInt(r.globalLimitHt ?? 0n), propagatedHt: BigInt(resp.propagatedHt ?? 0n) } })),
        single: (resp) => ({ readHt: BigInt(resp.readHt ?? 0n), globalLimitHt: BigInt(resp.globalLimitHt ?? 0n), propagatedHt: BigInt(resp.propagatedHt ?? 0n) }),
      },
      propagatedHt,
    );
    this.commits = new Coalescer(
      {
        request: (statusTablet, first, more, p) => ({ statusTablet, ...first, propagatedHt: p, more }),
        send: (tablet, req, d) => proxy.call(tablet, m.commitTransaction, req, d, false),
        results: (resp) => resp.results?.map((r) => ({ code: r.code, message: r.message, out: BigInt(r.commitHt ?? 0n) })),
        single: (resp) => BigInt(resp.commitHt ?? 0n),
      },
      propagatedHt,
    );
  }

  /** Requests sent and calls they carried, per kind (tests, diagnostics). */
  get stats(): { creates: { requests: number; calls: number }; commits: { requests: number; calls: number } } {
    return { creates: { ...this.creates.stats }, commits: { ...this.commits.stats } };
  }

  create(statusTablet: string, item: CreateTransactionItemPB, deadline: Deadline, alone: () => Promise<CreateOutcome>): Promise<CreateOutcome> {
    return this.creates.call(statusTablet, item, deadline, alone);
  }

  commit(statusTablet: string, item: CommitTransactionItemPB, deadline: Deadline, alone: () => Promise<bigint>): Promise<bigint> {
    return this.commits.call(statusTablet, item, deadline, alone);
  }
}
