/**
 * Transactional writes of different transactions (or of one) that are issued in the same event-loop
 * turn and go to the same tablet travel in ONE Write request (`more`): one RPC, one request and one
 * response frame instead of one each, and the leader proposes their entries together. Under load the
 * writes of many transactions resume in the same turn (the answers of one Raft apply), so they
 * coalesce naturally; a lone write goes out alone, exactly as before.
 *
 * Each write still succeeds or fails on its own (the response has one result per write). A write
 * whose own result is a retryable code (NOT_THE_LEADER, LEADER_NOT_READY, ...: nothing was written)
 * is sent again on its own through the caller's single-write path, with that path's retry policy; a
 * request-level failure is every write's failure, as if each had been sent alone.
 */
import { DbError } from '../common/errors';
import { type RowOpPB, type TxnContextPB, type WriteItemPB, type WriteRequestPB } from '../rpc';
import type { Deadline } from './retry-policy';
import type { TabletInvoker } from './tablet-invoker';
import { TXN_FATAL_CODES } from './txn-binding';
import { approxOpBytes, WRITE_BYTES_PER_RPC_MAX } from './write-size';

/**
 * Writes one coalesced request carries at most (the tserver accepts 256); and at most
 * WRITE_BYTES_PER_RPC_MAX of values, so writes of large rows that fit one request each never add up
 * to one too large to send (a single larger write still goes, alone).
 */
export const COALESCED_TXN_WRITES_MAX = 128;

interface Pending {
  table: string;
  tabletId: string;
  schemaVersion: number;
  bytes: number;
  items: Array<{ ops: RowOpPB[]; txn: TxnContextPB; deadline: Deadline; requestId: number; resendAlone: (requestId: number) => Promise<void>; resolve: () => void; reject: (e: unknown) => void }>;
}

export class TxnWriteCoalescer {
  private readonly pending = new Map<string, Pending>();
  private scheduled = false;
  /** Requests sent, and writes they carried (tests, diagnostics). */
  readonly stats = { requests: 0, writes: 0 };

  constructor(private readonly invoker: TabletInvoker) {}

  /**
   * Queue one transactional write for `tabletId` of `table`; resolves once written. `resendAlone`
   * sends this write by itself (used when its result in a coalesced request is a retryable code),
   * as the same retryable request: with the request id it had in the coalesced request, since a
   * copy of that request may have done it already (a follower answers every item NOT_THE_LEADER
   * while the old leader's entry for it still commits).
   */
  write(table: string, tabletId: string, schemaVersion: number, ops: RowOpPB[], txn: TxnContextPB, deadline: Deadline, resendAlone: (requestId: number) => Promise<void>): Promise<void> {
    const requestId = this.invoker.requests.begin();
    const settled = new Promise<void>((resolve, reject) => {
      // Writes built with one schema version travel together (the request carries it).
      const key = `${table}\u0000${tabletId}\u0000${schemaVersion}`;
      let bytes = 0;
      for (const o of ops) bytes += approxOpBytes(o);
      let p = this.pending.get(key);
      if (p && (p.items.length >= COALESCED_TXN_WRITES_MAX || p.bytes + bytes > WRITE_BYTES_PER_RPC_MAX)) {
        this.pending.delete(key);
        this.send(p);
        p = undefined;
      }
      if (!p) this.pending.set(key, (p = { table, tabletId, schemaVersion, bytes: 0, items: [] }));
      p.items.push({ ops, txn, deadline, requestId, resendAlone, resolve, reject });
      p.bytes += bytes;
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          const all = [...this.pending.values()];
          this.pending.clear();
          for (const q of all) this.send(q);
        });
      }
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
    this.stats.writes += items.length;
    // The request must finish by the earliest deadline among its writes.
    const deadline = items.reduce((d, i) => (i.deadline.atMs < d.atMs ? i.deadline : d), first.deadline);
    const makeReq = (): WriteRequestPB => {
      const req: WriteRequestPB = { tabletId: p.tabletId, ops: first.ops, txn: first.txn, propagatedHt: this.invoker.propagatedHt, schemaVersion: p.schemaVersion };
      if (rest.length > 0) req.more = rest.map((i): WriteItemPB => ({ ops: i.ops, txn: i.txn }));
      return req;
    };
    // Retryable requests: each write has its own request id, so a resent copy of the request does
    // none of them twice.
    this.invoker.callWrite(p.table, { tabletId: p.tabletId }, makeReq, deadline, { fatal: TXN_FATAL_CODES, requestIds: items.map((i) => i.requestId) }).then(
      (r) => {
        this.invoker.observeHt(r.propagatedHt);
        const results = r.results ?? [];
        // A server that does not know `more` wrote the first write only: send the others alone.
        if (rest.length > 0 && results.length !== items.length) {
          first.resolve();
          for (const i of rest) i.resendAlone(i.requestId).then(i.resolve, i.reject);
          return;
        }
        items.forEach((i, k) => {
          const res = results[k];
          if (!res?.code) return i.resolve();
          const err = DbError.fromResult({ code: res.code, message: res.message });
          if (err.retryable && !TXN_FATAL_CODES.has(err.code)) i.resendAlone(i.requestId).then(i.resolve, i.reject);
          else i.reject(err);
        });
      },
      (e: unknown) => {
        for (const i of items) i.reject(e);
      },
    );
  }
}
