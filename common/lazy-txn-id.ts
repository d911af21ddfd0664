/**
 * The id of a transaction started without CreateTransaction (docs/transactions.md, "A status record
 * without its own round trip"). The id itself carries what the status tablet needs to answer for a
 * transaction it holds no record of yet: its start (read) time, its priority and its isolation —
 *
 *   'L' + isolation ('s' snapshot, 'z' serializable) + 16 hex start HybridTime
 *       + 16 hex of the priority's float64 bits + 16 hex random
 *
 * (50 characters of [0-9A-Za-z]; a CreateTransaction id is 32 lowercase hex digits, so the two never
 * meet). The status tablet decides from the start time alone whether such a transaction may still
 * get a record (lazyRecordState), with no other state: YugabyteDB answers a missing record from the
 * transaction's age the same way, and TiKV writes a rollback record for a missing primary lock so a
 * late prewrite fails (here: an ABORTED record, kept until the id is too old to be created).
 */
import type { HybridTime } from './hybrid-time';
import { htPhysicalMicros } from './hybrid-time';

export type LazyIsolation = 'snapshot' | 'serializable';

export interface LazyTxnInfo {
  startHt: HybridTime;
  priority: number;
  isolation: LazyIsolation;
}

const LAZY_ID_RE = /^L([sz])([0-9a-f]{16})([0-9a-f]{16})[0-9a-f]{16}$/;

/** A lazily started transaction's id (see the file comment); `randomHex` is 16 hex digits. */
export function encodeLazyTxnId(info: LazyTxnInfo, randomHex: string): string {
  if (!/^[0-9a-f]{16}$/.test(randomHex)) throw new Error(`lazy txn id: random part must be 16 hex digits, got '${randomHex}'`);
  const b = Buffer.alloc(8);
  b.writeDoubleBE(info.priority);
  return `L${info.isolation === 'serializable' ? 'z' : 's'}${info.startHt.toString(16).padStart(16, '0')}${b.toString('hex')}${randomHex}`;
}

/** What a lazily started transaction's id carries; undefined for any other id (or a malformed one). */
export function decodeLazyTxnId(id: string): LazyTxnInfo | undefined {
  const m = LAZY_ID_RE.exec(id);
  if (!m) return undefined;
  const priority = Buffer.from(m[3]!, 'hex').readDoubleBE(0);
  if (!Number.isFinite(priority)) return undefined;
  return { isolation: m[1] === 'z' ? 'serializable' : 'snapshot', startHt: BigInt(`0x${m[2]!}`), priority };
}

/**
 * Where a status leader stands with a lazily started transaction it has no record of, by the start
 * time's age on its own clock:
 * - 'creatable': age ≤ createMaxAgeMs — its commit (first attempt) or heartbeat may create the record;
 * - 'young': older, but a leader whose clock runs behind (by up to skewMs) may still find it
 *   creatable: it must be treated as pending, and aborting it needs an ABORTED record;
 * - 'dead': age > createMaxAgeMs + skewMs — no leader creates it any more, it never committed unless
 *   its record's history says so.
 * A start time ahead of the clock is 'creatable' (its clock runs ahead; its age grows from there).
 */
export function lazyRecordState(startHt: HybridTime, nowWallMicros: number, createMaxAgeMs: number, skewMs: number): 'creatable' | 'young' | 'dead' {
  const ageMs = (nowWallMicros - Number(htPhysicalMicros(startHt))) / 1000;
  if (ageMs <= createMaxAgeMs) return 'creatable';
  return ageMs <= createMaxAgeMs + skewMs ? 'young' : 'dead';
}
