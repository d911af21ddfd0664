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
 *
 * Single-tablet fast-path commits (client/fast-path.ts) coalesce the same way, in requests of their
 * own (`single_tablet_commit` is per request): each item is a whole transaction's write set, checked
 * and committed on its own, and its result carries its commit time.
 */
import { TurnBatches } from './turn-batches';
import { DbError, ErrorCode } from '../common/errors';
import { type RowOpPB, type TxnContextPB, type WriteItemPB, type WriteRequestPB } from '../rpc';
import type { Deadline } from './retry-policy';
import type { TabletInvoker } from './tablet-invoker';
import { FAST_PATH_FATAL } from './fast-path';
import { TXN_FATAL_CODES } from './txn-binding';
import { approxOpBytes, WRITE_BYTES_PER_RPC_MAX } from './write-size';

/**
 * Writes one coalesced request carries at most (the tserver accepts 256); and at most
 * WRITE_BYTES_PER_RPC_MAX of values, so writes of large rows that fit one request each never add up
 * to one too large to send (a single larger write still goes, alone).
 */
export const COALESCED_TXN_WRITES_MAX = 128;
/**
 * Row ops one coalesced request carries at most (the tserver refuses a request of more than
 * WRITE_OPS_MAX = 10,000 as a whole): fast-path commits carry up to DEFERRED_ROWS_MAX rows each.
 */
export const COALESCED_TXN_OPS_MAX = 10_000;

interface Pending {
  table: string;
  tabletId: string;
  schemaVersion: number;
  bytes: number;
  ops: number;
  /** Fast-path commits (single_tablet_commit), never mixed with intent writes in one request. */
  fastPath: boolean;
  items: Array<{ ops: RowOpPB[]; txn: TxnContextPB; deadline: Deadline; requestId: number; resendAlone: (requestId: number) => Promise<bigint | void>; resolve: (ht: bigint) => void; reject: (e: unknown) => void }>;
}

export class TxnWriteCoalescer {
  private readonly pending = new TurnBatches<Pending>((p) => this.send(p));
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
  write(table: string, tabletId: string, schemaVersion: number, ops: RowOpPB[], txn: TxnContextPB, deadline: Deadline, resendAlone: (requestId: number) => Promise<bigint | void>, fastPath = false): Promise<bigint> {
    const requestId = this.invoker.requests.begin();
    const settled = new Promise<bigint>((resolve, reject) => {
      // Writes built with one schema version travel together (the request carries it).
      const key = `${table}\u0000${tabletId}\u0000${schemaVersion}\u0000${fastPath ? 'f' : 't'}`;
      let bytes = 0;
      for (const o of ops) bytes += approxOpBytes(o);
      let p = this.pending.get(key);
      if (p && (p.items.length >= COALESCED_TXN_WRITES_MAX || p.bytes + bytes > WRITE_BYTES_PER_RPC_MAX || p.ops + ops.length > COALESCED_TXN_OPS_MAX)) {
        this.pending.take(key);
        this.send(p);
        p = undefined;
      }
      p ??= this.pending.add(key, { table, tabletId, schemaVersion, bytes: 0, ops: 0, fastPath, items: [] });
      p.items.push({ ops, txn, deadline, requestId, resendAlone, resolve, reject });
      p.bytes += bytes;
      p.ops += ops.length;
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
      if (p.fastPath) req.singleTabletCommit = true;
      if (rest.length > 0) req.more = rest.map((i): WriteItemPB => ({ ops: i.ops, txn: i.txn }));
      return req;
    };
    const fatal = p.fastPath ? FAST_PATH_FATAL : TXN_FATAL_CODES;
    const again = (i: Pending['items'][number]): void => {
      i.resendAlone(i.requestId).then((ht) => i.resolve(ht ?? 0n), i.reject);
    };
    // Retryable requests: each write has its own request id, so a resent copy of the request does
    // none of them twice.
    this.invoker.callWrite(p.table, { tabletId: p.tabletId }, makeReq, deadline, { fatal, requestIds: items.map((i) => i.requestId) }).then(
      (r) => {
        this.invoker.observeHt(r.propagatedHt);
        const results = r.results ?? [];
        // A server that does not know `more` wrote the first write only: send the others alone.
        if (rest.length > 0 && results.length !== items.length) {
          first.resolve(BigInt(r.writeHt ?? 0n));
          for (const i of rest) again(i);
          return;
        }
        if (rest.length === 0 && results.length === 0) return first.resolve(BigInt(r.writeHt ?? 0n));
        items.forEach((i, k) => {
          const res = results[k];
          if (!res?.code) return i.resolve(BigInt(res?.writeHt ?? 0n));
          const err = DbError.fromResult({ code: res.code, message: res.message });
          // A refused fast path (NOT_SUPPORTED: enable_txn_fast_path off) is sent alone, whose
          // answer says why in full (details.fastPath) so the transaction falls back.
          if ((err.retryable && !fatal.has(err.code)) || (p.fastPath && err.code === ErrorCode.NOT_SUPPORTED)) again(i);
          else i.reject(err);
        });
      },
      (e: unknown) => {
        // The tablet split (docs/splitting.md: held there, then answered TABLET_SPLIT; nothing was
        // written): each write goes again alone, routed by its row to the child that holds it.
        const split = e instanceof DbError && e.code === ErrorCode.TABLET_SPLIT && !p.fastPath;
        for (const i of items) split ? again(i) : i.reject(e);
      },
    );
  }
}
