/**
 * The transactions a replica holds intents of (DocDb.listTransactions): the participant's view at
 * open, the log replay start, history GC's floor and the console. Walks IntentsDB's 'x' records
 * (metadata records, reverse entries) and adds the transactions whose head intent carries their
 * metadata (no reverse entry lists it; IntentsDb keeps its key in memory, DeferredCleanup while its delete
 * waits after an apply; docs/transactions.md
 * "A lone intent carries its transaction").
 */
import type { HybridTime } from '../common/hybrid-time';
import type { TxnId } from '../common/ids';
import type { TxnMeta } from './doc-db-api';
import { isStrongIntent, type IntentsDb } from './intents-db';
import { decodeReverseValue, parseIntentKeyToSubKey, reverseValueMeta } from './storage-keys';
import { decodeStoredMeta, decodeTxnKey, prefixEnd, txnKey, TXN_PREFIX } from './txn-records';

export type ListedTxn = { meta: TxnMeta; intentCount: number; applying?: { commitHt: HybridTime } };

/** At most `max` transactions with intents in IntentsDB, each with its strong intent count, in txn key order. */
export async function listIntentTxns(intents: IntentsDb, max: number, deferred: Iterable<{ txnId: TxnId; head: { meta: TxnMeta; strong: boolean } }>): Promise<Map<TxnId, ListedTxn>> {
  const byId = new Map<TxnId, ListedTxn>();
  const p = Buffer.from([TXN_PREFIX]);
  const it = intents.db.engine.iterator({ gte: p, lt: prefixEnd(p) });
  try {
    while (byId.size < max) {
      const e = await it.next();
      if (e === undefined) break;
      const { txnId, end } = decodeTxnKey(e[0]);
      if (e[0].length === end) {
        byId.set(txnId, { meta: decodeStoredMeta(e[1]).meta, intentCount: 0 });
      } else {
        // Reverse entries (one per write batch, listing its intent keys) sort after a metadata
        // record, and carry the metadata themselves when there is none; count strong intents
        // like sizes() does.
        const m = byId.has(txnId) ? undefined : reverseValueMeta(e[1]);
        if (m !== undefined) byId.set(txnId, { meta: decodeStoredMeta(m).meta, intentCount: 0 });
        const t = byId.get(txnId);
        if (t) for (const k of decodeReverseValue(e[1])) if (isStrongIntent(parseIntentKeyToSubKey(k).typeset)) t.intentCount++;
      }
    }
  } finally {
    await it.close();
  }
  // Head intents of live transactions (IntentsDB's view) and of applied ones whose deletes wait
  // (apply.ts DeferredCleanup): a transaction is in one or the other, never both.
  let added = false;
  const heads = [...intents.headTxns()].map((h) => ({ txnId: h.txnId, meta: h.meta.meta, strong: h.head.strong }));
  for (const d of deferred) heads.push({ txnId: d.txnId, meta: d.head.meta, strong: d.head.strong });
  for (const h of heads) {
    let t = byId.get(h.txnId);
    if (t === undefined) {
      if (byId.size >= max) break;
      t = { meta: h.meta, intentCount: 0 };
      byId.set(h.txnId, t);
      added = true;
    }
    if (h.strong) t.intentCount++;
  }
  if (!added) return byId;
  // The order of the walk (txn keys), as if the head intents had entries there.
  return new Map([...byId].map((e) => [txnKey(e[0]), e] as const).sort((a, b) => Buffer.compare(a[0], b[0])).map((x) => x[1]));
}
