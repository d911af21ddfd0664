/** Shared helpers for DocDB tests. */
import { Flags } from '../../common/flags';
import { htFrom, type HybridTime } from '../../common/hybrid-time';
import { TxnId } from '../../common/ids';
import { DocDb } from '../../docdb/doc-db';
import type { DocKey, TxnMeta, TxnStatusAnswer, StatusResolver } from '../../docdb/doc-db-api';
import { MemoryEngine } from '../../docdb/memory-engine';
import { docKeyLength, parseRegularKey, REGULAR_DATA_END, REGULAR_DATA_START } from '../../docdb/storage-keys';

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

export async function memoryDocDb(flags?: Flags): Promise<DocDb> {
  return DocDb.open({ regular: new MemoryEngine(), intents: new MemoryEngine(), ...(flags ? { flags } : {}) });
}

/**
 * Flags that write transactional upserts in the per-cell format (txn_packed_intents=false): for tests
 * of what that format stores (a strong intent per cell, a weak one per row), which IntentsDB still
 * reads, applies and removes (docdb/packed-intent.ts).
 */
export function perCellFlags(): Flags {
  const f = new Flags();
  f.setFromString('txn_packed_intents', false);
  return f;
}

/** Stored RegularDB versions per sub-key ('c<id>', 'liveness', 'row'), read from the engine's raw keys. */
export async function storedVersions(db: DocDb): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const it = db.regularDb.db.engine.iterator({ gte: REGULAR_DATA_START, lt: REGULAR_DATA_END });
  try {
    for (;;) {
      const e = await it.next();
      if (e === undefined) break;
      const k = Buffer.from(e[0]);
      const { sub } = parseRegularKey(k, docKeyLength(k));
      const id = sub.kind === 'column' ? `c${sub.id}` : sub.kind;
      out.set(id, (out.get(id) ?? 0) + 1);
    }
  } finally {
    await it.close();
  }
  return out;
}
