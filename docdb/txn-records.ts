/**
 * Transaction bookkeeping records: the metadata record and the reverse-index prefix in IntentsDB
 * (`'x' + txn id`), and the apply state in RegularDB (prefix 7, as YugabyteDB's
 * kTransactionApplyState). These are small and rare, so their values are JSON (bigints as strings);
 * keys are binary so they sort and prefix-match.
 */
import { assert } from '../common/assert';
import type { HybridTime } from '../common/hybrid-time';
import { TxnId } from '../common/ids';
import { Isolation, type OpId, type TxnMeta } from './doc-db-api';

export const TXN_PREFIX = 0x78; // 'x'
export const APPLY_STATE_PREFIX = 0x07;
/** RegularDB: one record per batch that applied small transactions in place (applyNowOps). */
export const APPLY_GROUP_PREFIX = 0x08;

/** `prefix` + the txn id, length-prefixed so no txn id key is a prefix of another's (the reverse index extends it). */
function prefixedTxnId(prefix: number, txnId: TxnId): Buffer {
  const n = Buffer.byteLength(txnId, 'utf8');
  assert(n > 0 && n < 256, 'txn id must be 1..255 bytes');
  const b = Buffer.allocUnsafe(2 + n);
  b[0] = prefix;
  b[1] = n;
  b.write(txnId, 2, 'utf8');
  return b;
}

/** `'x' + txn id`: the metadata key, and the prefix of the txn's reverse-index entries. */
export function txnKey(txnId: TxnId): Buffer {
  return prefixedTxnId(TXN_PREFIX, txnId);
}

/** The txn id of a metadata or reverse-index key, and where the rest starts. */
export function decodeTxnKey(key: Uint8Array): { txnId: TxnId; end: number } {
  assert(key[0] === TXN_PREFIX && key.length >= 2, 'not a txn key');
  const len = key[1]!;
  assert(key.length >= 2 + len, 'truncated txn key');
  return { txnId: TxnId(Buffer.from(key.buffer, key.byteOffset + 2, len).toString('utf8')), end: 2 + len };
}

export function applyStateKey(txnId: TxnId): Buffer {
  return prefixedTxnId(APPLY_STATE_PREFIX, txnId);
}

/**
 * The apply-group record of one RegularDB batch that applied small transactions in place (their
 * versions in that batch): which transactions, at which commit time and op id. It stands in for a
 * per-transaction apply state while their intent deletes wait (DeferredCleanup in apply.ts) — one
 * put and one delete per batch instead of per transaction. `seq` keeps two batches of one op id
 * (a replay) from sharing a key.
 */
export function applyGroupKey(index: number, seq: number): Buffer {
  assert(Number.isSafeInteger(index) && index >= 0 && Number.isSafeInteger(seq) && seq >= 0, 'apply group key numbers must be non-negative integers');
  const b = Buffer.allocUnsafe(17);
  b[0] = APPLY_GROUP_PREFIX;
  b.writeBigUInt64BE(BigInt(index), 1);
  b.writeBigUInt64BE(BigInt(seq), 9);
  return b;
}

export interface ApplyGroupEntry {
  txnId: TxnId;
  commitHt: HybridTime;
  opId: OpId;
}

export function encodeApplyGroup(entries: readonly ApplyGroupEntry[]): Buffer {
  assert(entries.length > 0, 'empty apply group');
  const parts = entries.map((e) => {
    assert(Number.isSafeInteger(e.opId.term) && Number.isSafeInteger(e.opId.index), 'apply group op id must be integers');
    return `[${JSON.stringify(e.txnId)},"${e.commitHt.toString()}",${e.opId.term},${e.opId.index}]`;
  });
  return Buffer.from(`[${parts.join(',')}]`, 'utf8');
}

export function decodeApplyGroup(b: Uint8Array): ApplyGroupEntry[] {
  const v: unknown = JSON.parse(Buffer.from(b).toString('utf8'));
  assert(Array.isArray(v) && v.length > 0, 'apply group record is not a non-empty array');
  return v.map((e: unknown) => {
    assert(Array.isArray(e) && e.length === 4, 'apply group entry must have 4 fields');
    const [id, ht, term, index] = e as unknown[];
    assert(typeof id === 'string' && typeof ht === 'string' && Number.isSafeInteger(term) && Number.isSafeInteger(index), 'bad apply group entry');
    return { txnId: TxnId(id), commitHt: BigInt(ht), opId: { term: term as number, index: index as number } };
  });
}

/** Persisted metadata: TxnMeta plus the next intra-transaction write id (unique across batches). */
export interface StoredTxnMeta {
  meta: TxnMeta;
  nextWriteId: number;
}

export interface ApplyState {
  meta: TxnMeta;
  commitHt: HybridTime;
  opId: OpId;
  recordsApplied: number;
}

function parseObj(b: Uint8Array): Record<string, unknown> {
  const v: unknown = JSON.parse(Buffer.from(b).toString('utf8'));
  assert(typeof v === 'object' && v !== null, 'txn record is not an object');
  return v as Record<string, unknown>;
}

function str(o: Record<string, unknown>, k: string): string {
  const v = o[k];
  assert(typeof v === 'string', `txn record field ${k} must be a string`);
  return v;
}

function num(o: Record<string, unknown>, k: string): number {
  const v = o[k];
  assert(typeof v === 'number' && Number.isFinite(v), `txn record field ${k} must be a number`);
  return v;
}

/**
 * JSON text of a TxnMeta, kept per transaction id: every intent batch and apply of a transaction
 * re-encodes the same metadata, each time from a TxnMeta object of its own (decoded from the Raft
 * entry), so the cache checks the fields rather than the object. Cleared when full.
 */
const metaJsonCache = new Map<string, { m: TxnMeta; json: string }>();
const META_JSON_CACHE_MAX = 4096;
function metaJson(m: TxnMeta): string {
  const c = metaJsonCache.get(m.txnId);
  if (c !== undefined && (c.m === m || (c.m.startHt === m.startHt && c.m.priority === m.priority && c.m.statusTablet === m.statusTablet && c.m.isolation === m.isolation))) return c.json;
  // The text JSON.stringify gives for { txnId, statusTablet, isolation, priority, startHt: string }, without building the object (a transaction of one
  // batch misses the cache every time): strings quoted by JSON.stringify, the rest plain.
  assert(Number.isFinite(m.priority) && (m.isolation === Isolation.SNAPSHOT || m.isolation === Isolation.SERIALIZABLE), 'txn meta priority and isolation');
  const json = `{"txnId":${JSON.stringify(m.txnId)},"statusTablet":${JSON.stringify(m.statusTablet)},"isolation":"${m.isolation}","priority":${JSON.stringify(m.priority)},"startHt":"${m.startHt.toString()}"}`;
  if (metaJsonCache.size >= META_JSON_CACHE_MAX) metaJsonCache.clear();
  metaJsonCache.set(m.txnId, { m, json });
  return json;
}

function metaFromJson(v: unknown): TxnMeta {
  assert(typeof v === 'object' && v !== null, 'txn meta must be an object');
  const o = v as Record<string, unknown>;
  const iso = str(o, 'isolation');
  assert(iso === Isolation.SNAPSHOT || iso === Isolation.SERIALIZABLE, `bad isolation ${iso}`);
  return { txnId: TxnId(str(o, 'txnId')), statusTablet: str(o, 'statusTablet'), isolation: iso, priority: num(o, 'priority'), startHt: BigInt(str(o, 'startHt')) };
}

// The same text JSON.stringify gives for { meta, ... } (the fields are finite numbers and strings).
export function encodeStoredMeta(s: StoredTxnMeta): Buffer {
  assert(Number.isSafeInteger(s.nextWriteId), 'nextWriteId must be an integer');
  return Buffer.from(`{"meta":${metaJson(s.meta)},"nextWriteId":${s.nextWriteId}}`, 'utf8');
}

/** First byte of the binary StoredTxnMeta (head intents carry it); JSON starts with '{'. */
const BINARY_META_VERSION = 0x01;
const ISOLATION_CODES = [Isolation.SNAPSHOT, Isolation.SERIALIZABLE] as const;

/**
 * StoredTxnMeta in binary, as a head intent carries it (docs/transactions.md "A lone intent carries
 * its transaction"): [1][u8 len, txn id][u16 len, status tablet][u8 isolation][f64 priority]
 * [u64 start time][u32 next write id] — a third of the JSON's bytes and no JSON encoding per
 * transaction. decodeStoredMeta reads both.
 */
export function encodeStoredMetaBinary(s: StoredTxnMeta): Buffer {
  const m = s.meta;
  const idLen = Buffer.byteLength(m.txnId, 'utf8');
  const stLen = Buffer.byteLength(m.statusTablet, 'utf8');
  const iso = ISOLATION_CODES.indexOf(m.isolation);
  assert(idLen < 256 && stLen < 65536 && iso >= 0 && Number.isFinite(m.priority), 'txn meta fields out of range');
  assert(Number.isSafeInteger(s.nextWriteId) && s.nextWriteId >= 0 && s.nextWriteId <= 0xffffffff && m.startHt >= 0n, 'nextWriteId and startHt out of range');
  const b = Buffer.allocUnsafe(1 + 1 + idLen + 2 + stLen + 1 + 8 + 8 + 4);
  let at = 0;
  b[at++] = BINARY_META_VERSION;
  b[at++] = idLen;
  at += b.write(m.txnId, at, 'utf8');
  b.writeUInt16BE(stLen, at);
  at += 2;
  at += b.write(m.statusTablet, at, 'utf8');
  b[at++] = iso;
  at = b.writeDoubleBE(m.priority, at);
  at = b.writeBigUInt64BE(m.startHt, at);
  b.writeUInt32BE(s.nextWriteId, at);
  return b;
}

function decodeStoredMetaBinary(b: Buffer): StoredTxnMeta {
  assert(b.length >= 2 && b.length >= 2 + b[1]! + 2, 'truncated binary txn meta');
  const idEnd = 2 + b[1]!;
  const stEnd = idEnd + 2 + b.readUInt16BE(idEnd);
  assert(b.length === stEnd + 21, 'binary txn meta of the wrong length');
  const isolation = ISOLATION_CODES[b[stEnd]!];
  assert(isolation !== undefined, 'bad isolation code in binary txn meta');
  const meta: TxnMeta = { txnId: TxnId(b.toString('utf8', 2, idEnd)), statusTablet: b.toString('utf8', idEnd + 2, stEnd), isolation, priority: b.readDoubleBE(stEnd + 1), startHt: b.readBigUInt64BE(stEnd + 9) };
  return { meta, nextWriteId: b.readUInt32BE(stEnd + 17) };
}

export function decodeStoredMeta(b: Uint8Array): StoredTxnMeta {
  if (b[0] === BINARY_META_VERSION) return decodeStoredMetaBinary(Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));
  const o = parseObj(b);
  return { meta: metaFromJson(o['meta']), nextWriteId: num(o, 'nextWriteId') };
}

export function encodeApplyState(s: ApplyState): Buffer {
  assert(Number.isSafeInteger(s.opId.term) && Number.isSafeInteger(s.opId.index) && Number.isSafeInteger(s.recordsApplied), 'apply state numbers must be integers');
  return Buffer.from(
    `{"meta":${metaJson(s.meta)},"commitHt":"${s.commitHt.toString()}","opId":{"term":${s.opId.term},"index":${s.opId.index}},"recordsApplied":${s.recordsApplied}}`,
    'utf8',
  );
}

export function decodeApplyState(b: Uint8Array): ApplyState {
  const o = parseObj(b);
  const op = o['opId'];
  assert(typeof op === 'object' && op !== null, 'apply state opId');
  const opo = op as Record<string, unknown>;
  return { meta: metaFromJson(o['meta']), commitHt: BigInt(str(o, 'commitHt')), opId: { term: num(opo, 'term'), index: num(opo, 'index') }, recordsApplied: num(o, 'recordsApplied') };
}

/** Exclusive upper bound of all keys starting with `prefix` (prefix must not be all 0xff). */
export function prefixEnd(prefix: Uint8Array): Buffer {
  const b = Buffer.from(prefix);
  for (let i = b.length - 1; i >= 0; i--) {
    if (b[i]! < 0xff) {
      b[i]!++;
      return b.subarray(0, i + 1);
    }
  }
  throw new Error('prefixEnd of an all-0xff prefix');
}
