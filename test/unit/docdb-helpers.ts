/** Shared helpers for DocDB tests. */
import { htFrom, type HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { DocKey, TxnMeta, TxnStatusAnswer, StatusResolver } from '../../docdb/doc-db-api';
import { MemoryEngine } from '../../docdb/memory-engine';

export const ht = (s: number, logical = 0): HybridTime => htFrom(BigInt(s) * 1_000_000n, logical);
export const key = (id: number): DocKey => ({ hash: (id * 7919) & 0xffff, hashed: [BigInt(id)], range: [] });
export const op = (n: number) => ({ term: 1, index: n });

export function txnMeta(id: string, startHt: HybridTime = 0n): TxnMeta {
  return { txnId: TxnId(id), statusTablet: 'status-1', isolation: 'snapshot', priority: 1, startHt };
}

/** A status table for tests: txn id → answer (default PENDING). */
export class Statuses {
  readonly map = new Map<string, TxnStatusAnswer>();
  commit(id: string, at: HybridTime): void {
    this.map.set(id, { status: 'COMMITTED', commitHt: at });
  }
  abort(id: string): void {
    this.map.set(id, { status: 'ABORTED' });
  }
  readonly resolve: StatusResolver = (id) => Promise.resolve(this.map.get(id) ?? { status: 'PENDING' });
}

export async function memoryDocDb(): Promise<DocDb> {
  return DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine() });
}
