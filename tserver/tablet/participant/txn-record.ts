/**
 * A status tablet's transaction record and its encodings: the TXN_STATUS Raft entry payload and the
 * RegularDB row that makes it durable (key = the txn id, one bytes column), so a restarted replica
 * rebuilds its map from DocDB instead of replaying the whole log.
 *
 * Status FORGOTTEN is a Raft-entry-only status: every participant applied/removed, the record goes
 * (its row is tombstoned) and an unknown txn id then reads as ABORTED.
 */
import type { HybridTime } from '../../../common/hybrid-time';
import type { TxnId } from '../../../common/ids';
import { partitionHash } from '../../../common/partition-hash';
import type { DocKey, Isolation } from '../../../docdb';

export const RecordStatus = { PENDING: 'PENDING', COMMITTED: 'COMMITTED', ABORTED: 'ABORTED', FORGOTTEN: 'FORGOTTEN' } as const;
export type RecordStatus = (typeof RecordStatus)[keyof typeof RecordStatus];

export interface TxnRecord {
  txnId: TxnId;
  status: Exclude<RecordStatus, 'FORGOTTEN'>;
  isolation: Isolation;
  priority: number;
  startHt: HybridTime;
  commitHt: HybridTime;
  participants: string[];
}

/** Column id of the record bytes in the `transactions` table's rows (txn_id = 1, record = 2, as the master numbers them). */
export const RECORD_COLUMN_ID = 2;

interface RecordJson {
  isolation: Isolation;
  priority: number;
  startHt: string;
  commitHt: string;
  participants: string[];
}

export function encodeRecordPayload(r: TxnRecord): Uint8Array {
  const j: RecordJson = { isolation: r.isolation, priority: r.priority, startHt: r.startHt.toString(), commitHt: r.commitHt.toString(), participants: r.participants };
  return Buffer.from(JSON.stringify(j), 'utf8');
}

export function decodeRecordPayload(txnId: TxnId, status: TxnRecord['status'], b: Uint8Array): TxnRecord {
  const j = JSON.parse(Buffer.from(b).toString('utf8')) as RecordJson;
  return { txnId, status, isolation: j.isolation, priority: j.priority, startHt: BigInt(j.startHt), commitHt: BigInt(j.commitHt), participants: j.participants };
}

/** The row bytes: status + payload. */
export function encodeRecordRow(r: TxnRecord): Uint8Array {
  return Buffer.concat([Buffer.from([r.status.length]), Buffer.from(r.status, 'latin1'), encodeRecordPayload(r)]);
}

export function decodeRecordRow(txnId: TxnId, b: Uint8Array): TxnRecord {
  const buf = Buffer.from(b);
  const n = buf[0] ?? 0;
  const status = buf.toString('latin1', 1, 1 + n);
  if (status !== 'PENDING' && status !== 'COMMITTED' && status !== 'ABORTED') throw new Error(`bad txn record status '${status}'`);
  return decodeRecordPayload(txnId, status, buf.subarray(1 + n));
}

/**
 * A FORGOTTEN entry forgets its own txn id and the ids in its payload (one entry for every
 * transaction finished meanwhile): [u8 length][latin1 id]… (ids are ≤ 128 ASCII characters).
 * An empty payload (one transaction) is what entries of earlier versions carry.
 */
export function encodeForgetPayload(more: readonly TxnId[]): Uint8Array {
  const parts: Buffer[] = [];
  for (const id of more) parts.push(Buffer.from([id.length]), Buffer.from(id, 'latin1'));
  return Buffer.concat(parts);
}

export function forgottenIds(txnId: TxnId, payload: Uint8Array): TxnId[] {
  const out = [txnId];
  const b = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  for (let i = 0; i < b.length; ) {
    const n = b[i]!;
    if (n === 0 || i + 1 + n > b.length) throw new Error('bad FORGOTTEN payload');
    out.push(b.toString('latin1', i + 1, i + 1 + n) as TxnId);
    i += 1 + n;
  }
  return out;
}

export function recordKey(txnId: TxnId): DocKey {
  return { hash: partitionHash([txnId]), hashed: [txnId], range: [] };
}

export function isValidTxnId(s: string | undefined): s is string {
  return typeof s === 'string' && s.length > 0 && s.length <= 128 && /^[0-9A-Za-z_-]+$/.test(s);
}
