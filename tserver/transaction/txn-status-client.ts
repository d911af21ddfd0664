/**
 * The tserver's view of other transactions' fates (PeerTxnEnv): a cache of final answers (COMMITTED /
 * ABORTED never change), then GetTransactionStatus / AbortTransaction to the status tablet's leader.
 * PENDING answers are never cached: the next reader asks again.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import { OldestKeys } from '../../common/oldest-keys';
import type { AbortTransactionRequestPB, AbortTransactionResponsePB, GetTransactionStatusRequestPB, GetTransactionStatusResponsePB } from '../../rpc';
import type { TabletLocator } from './tablet-locator';
import type { PeerTxnEnv, TxnStatusInfo } from '../tablet/participant/txn-env';

/** Final answers cached; the oldest is evicted beyond this. */
export const STATUS_CACHE_MAX = 100_000;
const STATUS_RPC_TIMEOUT_MS = 5_000;

export interface TxnStatusClientDeps {
  locator: TabletLocator;
  getStatus(address: string, req: GetTransactionStatusRequestPB, timeoutMs: number): Promise<GetTransactionStatusResponsePB>;
  abort(address: string, req: AbortTransactionRequestPB, timeoutMs: number): Promise<AbortTransactionResponsePB>;
  onHybridTime(ht: HybridTime): void;
}

export class TxnStatusClient implements PeerTxnEnv {
  private readonly cache = new Map<TxnId, TxnStatusInfo>();
  private readonly oldest = new OldestKeys(this.cache);
  readonly metrics = { cacheHits: 0, rpcs: 0 };

  constructor(private readonly deps: TxnStatusClientDeps) {}

  private remember(id: TxnId, s: TxnStatusInfo): void {
    if (s.status === 'PENDING') return;
    this.cache.set(id, s);
    if (this.cache.size > STATUS_CACHE_MAX) this.cache.delete(this.oldest.take()!);
  }

  known(txnId: TxnId): TxnStatusInfo | undefined {
    return this.cache.get(txnId);
  }

  async getStatus(txnId: TxnId, statusTablet: string, readHt: HybridTime): Promise<TxnStatusInfo> {
    const c = this.cache.get(txnId);
    if (c) {
      this.metrics.cacheHits++;
      return c;
    }
    this.metrics.rpcs++;
    const r = await this.deps.locator.call(statusTablet, (addr) => this.deps.getStatus(addr, { statusTablet, txnIds: [txnId], readHt }, STATUS_RPC_TIMEOUT_MS));
    if (r.propagatedHt) this.deps.onHybridTime(r.propagatedHt);
    const s = r.statuses?.[0];
    const priority = s?.priority ?? 0;
    const out: TxnStatusInfo =
      s?.status === 'COMMITTED' ? { status: 'COMMITTED', commitHt: s.commitHt ?? 0n, priority } : s?.status === 'PENDING' ? { status: 'PENDING', priority } : { status: 'ABORTED', priority };
    this.remember(txnId, out);
    return out;
  }

  async abort(txnId: TxnId, statusTablet: string, participant?: string): Promise<TxnStatusInfo> {
    this.metrics.rpcs++;
    const r = await this.deps.locator.call(statusTablet, (addr) => this.deps.abort(addr, { statusTablet, txnId, participantTablets: participant ? [participant] : [] }, STATUS_RPC_TIMEOUT_MS));
    if (r.status === 'COMMITTED') {
      // Committed first: learn its commit time.
      this.cache.delete(txnId);
      return this.getStatus(txnId, statusTablet, 0n);
    }
    const out: TxnStatusInfo = { status: 'ABORTED', priority: 0 };
    this.remember(txnId, out);
    return out;
  }
}
