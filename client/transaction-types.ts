/** The options, results and dependencies of a client transaction (transaction.ts). */
import type { CallOptions } from './client-types';
import type { MetaCache } from './meta-cache';
import type { StatusTabletProxy } from './status-tablet-proxy';
import type { TabletInvoker } from './tablet-invoker';
import type { TxnWriteCoalescer } from './txn-write-coalescer';

export type IsolationLevel = 'snapshot' | 'serializable';

export interface TransactionOptions extends CallOptions {
  /**
   * Default 'snapshot' (one read time for the whole transaction; write-write conflicts, first
   * committer wins; write skew possible). 'serializable': every read takes read locks on what it
   * reads (a scan: the whole tablet) until the transaction ends, and reads the newest data; read-write
   * conflicts abort one side like write-write ones — no write skew, no read restarts.
   */
  isolation?: IsolationLevel;
  /** Conflict priority (higher wins under fail-on-conflict); default random in [0, 1). */
  priority?: number;
  /**
   * Keep blind writes (upsert, delete) back until the commit (default false): a transaction whose
   * write set then falls in one tablet commits there as one Raft entry, without intents or a
   * COMMITTED record (the single-tablet fast path, client/fast-path.ts). A conflict of such a write
   * surfaces at commit() instead of at the write.
   */
  deferWrites?: boolean;
}

export interface CommitResult {
  /** The hybrid time at which every write of the transaction became visible. */
  commitHt: bigint;
}

export type TransactionState = 'pending' | 'committing' | 'committed' | 'aborted' | 'failed';

export interface TransactionDeps {
  cache: MetaCache;
  invoker: TabletInvoker;
  statusTablets: StatusTabletProxy;
  timeoutMs: number;
  heartbeatMs: number;
  /** Counted at each successful commit, by path (the client's txnCommits). */
  commits?: { singleTablet: number; distributed: number };
  /** Coalesces this transaction's writes with other transactions' (client option batchWrites). */
  txnWrites?: TxnWriteCoalescer;
}
