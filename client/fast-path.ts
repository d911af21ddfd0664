/**
 * Deferred transactional writes and the single-tablet fast path, client side (docs/transactions.md
 * "Single-tablet fast path"). A transaction begun with `deferWrites: true` keeps its blind writes
 * (upsert, delete) here instead of sending each as intents; its write set is then known at commit:
 *
 * - all in one tablet, and the transaction holds nothing anywhere (no write sent, no serializable
 *   read lock): ONE Write RPC with `singleTabletCommit` commits it as one plain Raft entry of that
 *   tablet (tserver/tablet/fast-path.ts) — no intents, no APPLY, no COMMITTED record;
 * - otherwise (several tablets, or the tablet refuses: enable_txn_fast_path off) the writes are sent
 *   as intents first (in parallel across tablets, in order within one), and the commit goes through
 *   the status tablet as before.
 *
 * Any other operation of the transaction (a read, a scan, an insert/update) first sends the deferred
 * writes, so it sees them and the order of writes to one row is kept. Bounded: beyond
 * DEFERRED_ROWS_MAX rows or DEFERRED_BYTES_MAX bytes a write is sent at once (after the deferred ones).
 */
import { DbError, ErrorCode } from '../common/errors';
import type { RowOpPB, TxnContextPB, WriteResponsePB } from '../rpc';
import type { Deadline } from './retry-policy';
import type { TabletInvoker } from './tablet-invoker';
import { TXN_FATAL_CODES, type DeferredWrite } from './txn-binding';

export type { DeferredWrite } from './txn-binding';
import { approxOpBytes } from './write-size';

/** Rows a transaction keeps back before it sends its writes as intents. */
export const DEFERRED_ROWS_MAX = 1000;
/** Bytes of deferred ops (one Write RPC's worth: the client's per-RPC cap). */
export const DEFERRED_BYTES_MAX = 4 << 20;

export class DeferredWrites {
  private writes: DeferredWrite[] = [];
  private bytes = 0;

  get size(): number {
    return this.writes.length;
  }

  /** Keep `w` back; false when it does not fit (the caller sends the deferred ones, then `w`). */
  add(w: DeferredWrite): boolean {
    const b = approxOpBytes(w.op);
    if (this.writes.length >= DEFERRED_ROWS_MAX || this.bytes + b > DEFERRED_BYTES_MAX) return false;
    this.writes.push(w);
    this.bytes += b;
    return true;
  }

  /** The one tablet every deferred write falls in (same schema version), or undefined. */
  singleTablet(): { table: string; tabletId: string; hash: number; schemaVersion: number } | undefined {
    const first = this.writes[0];
    if (!first) return undefined;
    if (this.writes.some((w) => w.tabletId !== first.tabletId || w.schemaVersion !== first.schemaVersion)) return undefined;
    return { table: first.table, tabletId: first.tabletId, hash: first.hash, schemaVersion: first.schemaVersion };
  }

  ops(): RowOpPB[] {
    return this.writes.map((w) => w.op);
  }

  /** Take every deferred write out (the caller sends them or drops them). */
  take(): DeferredWrite[] {
    const out = this.writes;
    this.writes = [];
    this.bytes = 0;
    return out;
  }
}

/** Send deferred writes as intents: tablets in parallel, one tablet's writes in their order. */
export async function sendDeferred(writes: readonly DeferredWrite[]): Promise<void> {
  const byTablet = new Map<string, DeferredWrite[]>();
  for (const w of writes) {
    const g = byTablet.get(w.tabletId);
    if (g) g.push(w);
    else byTablet.set(w.tabletId, [w]);
  }
  const settled = await Promise.allSettled(
    [...byTablet.values()].map(async (g) => {
      for (const w of g) await w.send();
    }),
  );
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * The fast-path commit: the whole write set in one Write RPC to its tablet (a retryable request:
 * a resent copy is answered with the first one's time). Resolves with the commit hybrid time.
 */
export async function commitSingleTablet(invoker: TabletInvoker, where: { table: string; tabletId: string; schemaVersion: number }, ops: RowOpPB[], txn: TxnContextPB, d: Deadline, requestId?: number): Promise<bigint> {
  const r: WriteResponsePB = await invoker.callWrite(where.table, { tabletId: where.tabletId }, (t) => ({ tabletId: t.tabletId, ops, txn, singleTabletCommit: true, propagatedHt: invoker.propagatedHt, schemaVersion: where.schemaVersion }), d, { fatal: FAST_PATH_FATAL, requestIds: requestId === undefined ? undefined : [requestId] });
  invoker.observeHt(r.propagatedHt);
  const ht = BigInt(r.writeHt ?? 0n);
  if (ht === 0n) throw new DbError(ErrorCode.INTERNAL, `single-tablet commit of transaction ${txn.txnId ?? '?'} answered without a time`);
  return ht;
}

/** Not retried by the invoker: the transaction's outcome (conflict), or the fast path refused (fall back). */
export const FAST_PATH_FATAL: ReadonlySet<string> = new Set([...TXN_FATAL_CODES, ErrorCode.NOT_SUPPORTED, ErrorCode.SCHEMA_VERSION_MISMATCH]);

/**
 * The tablet refused the fast path before doing anything (enable_txn_fast_path off, or the table's
 * schema changed since the writes were encoded): commit the distributed way instead, whose writes
 * are encoded anew.
 */
export function fastPathRefused(e: unknown): boolean {
  if (!(e instanceof DbError)) return false;
  return (e.code === ErrorCode.NOT_SUPPORTED && e.details['fastPath'] === 'off') || e.code === ErrorCode.SCHEMA_VERSION_MISMATCH;
}
