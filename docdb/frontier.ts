/**
 * The frontier: the newest Raft op id whose effects a database holds. Every write batch to RegularDB
 * or IntentsDB stores it under FRONTIER_KEY in the same batch, so after a crash the database says
 * exactly which Raft entries it already contains (docs/architecture.md §Raft: the RocksDB databases are not the WAL).
 */
import { assert } from '../common/assert';
import type { OpId } from './doc-db-api';

/** Meta keys use bytes below every DocKey ('G') and intent-side prefix ('x'); 0x01 sorts first. */
export const FRONTIER_KEY = Buffer.from([0x01, 0x46]); // "\x01F"
/** Written with sync=true to make every earlier batch of the engine durable (FrontierDb.syncBarrier). */
export const SYNC_MARK_KEY = Buffer.from([0x01, 0x53]); // "\x01S"

export const OP_ID_ZERO: OpId = Object.freeze({ term: 0, index: 0 });

export function compareOpId(a: OpId, b: OpId): number {
  return a.term !== b.term ? a.term - b.term : a.index - b.index;
}

export function opIdMax(a: OpId, b: OpId): OpId {
  return compareOpId(a, b) >= 0 ? a : b;
}

/**
 * True when replaying `op` would repeat a batch this database already holds. Index 0 means "not from
 * the Raft log" (tests, local maintenance) and is never skipped.
 */
export function alreadyHolds(frontier: OpId, op: OpId): boolean {
  return op.index > 0 && compareOpId(op, frontier) <= 0;
}

export function encodeOpId(op: OpId): Buffer {
  assert(Number.isSafeInteger(op.term) && op.term >= 0 && Number.isSafeInteger(op.index) && op.index >= 0, 'bad op id');
  const b = Buffer.allocUnsafe(16);
  b.writeBigUInt64BE(BigInt(op.term), 0);
  b.writeBigUInt64BE(BigInt(op.index), 8);
  return b;
}

export function decodeOpId(b: Uint8Array): OpId {
  assert(b.length === 16, `frontier value must be 16 bytes, got ${b.length}`);
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { term: Number(buf.readBigUInt64BE(0)), index: Number(buf.readBigUInt64BE(8)) };
}
