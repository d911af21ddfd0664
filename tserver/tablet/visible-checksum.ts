/**
 * A digest of what a tablet replica SHOWS at one hybrid time: every row visible at `readHt` (its
 * DocKey, its write time and each column's value), read through the same scan as clients, with the
 * replica's own transaction-status resolution. Unlike the RegularDB digest (content-checksum.ts), it
 * does not depend on how far this replica got with its own work: which committed transactions it has
 * already moved from IntentsDB to RegularDB, or which old versions its history GC has collected. Two
 * replicas that applied the same Raft log must give equal digests at any time at or above both of
 * their history floors, once no transaction they met is still pending.
 */
import { createHash } from 'node:crypto';
import type { HybridTime } from '../../common/hybrid-time';
import type { ScanOptions, ScanResult, StatusResolver, TxnStatusAnswer } from '../../docdb';
import { encodeRowDocKey, encodeStored } from '../../docdb';

export interface VisibleChecksum {
  /** The hybrid time read at (decimal string in JSON answers). */
  readHt: HybridTime;
  /** sha256 over (DocKey, write time, column id and value of each non-null column) of each visible row, in key order. */
  sha256: string;
  rows: number;
  /**
   * Intents of transactions whose status read PENDING: they may still commit at or below readHt, so
   * the digest is not final while this is above 0.
   */
  pendingTxns: number;
}

/** Rows read per scan call (the event loop serves other tablets between calls). */
const ROWS_PER_SCAN = 1000;

export async function visibleChecksum(
  scan: (o: ScanOptions) => Promise<ScanResult>,
  resolveStatus: StatusResolver,
  readHt: HybridTime,
): Promise<VisibleChecksum> {
  const pending = new Set<string>();
  const counting: StatusResolver = async (txnId, ht): Promise<TxnStatusAnswer> => {
    const a = await resolveStatus(txnId, ht);
    if (a.status === 'PENDING') pending.add(txnId);
    return a;
  };
  const h = createHash('sha256');
  const u32 = Buffer.alloc(4);
  const u64 = Buffer.alloc(8);
  const part = (b: Uint8Array): void => {
    u32.writeUInt32BE(b.length);
    h.update(u32).update(b);
  };
  let rows = 0;
  let startKey: Uint8Array | undefined;
  for (;;) {
    const r = await scan({ readHt, resolveStatus: counting, limit: ROWS_PER_SCAN, ...(startKey ? { startKey } : {}) });
    for (const row of r.rows) {
      part(encodeRowDocKey(row.key));
      u64.writeBigUInt64BE(row.writeHt);
      h.update(u64);
      const ids = [...row.columns.keys()].sort((a, b) => a - b);
      for (const id of ids) {
        const v = row.columns.get(id);
        if (v === null || v === undefined) continue; // absent and null read the same
        u32.writeUInt32BE(id);
        h.update(u32);
        part(encodeStored({ type: 'primitive', value: v }));
      }
      h.update(ROW_END);
      rows++;
    }
    if (!r.resumeKey) break;
    startKey = r.resumeKey;
  }
  return { readHt, sha256: h.digest('hex'), rows, pendingTxns: pending.size };
}

/** Ends each row's part of the digest (no column id is 0xffffffff). */
const ROW_END = Buffer.from([0xff, 0xff, 0xff, 0xff]);
