/**
 * The payload of a tablet's Raft entries: a union of tablet operations, encoded compactly in binary.
 * Every replica applies the same bytes, so everything a replica needs to produce identical versions
 * (the leader-assigned hybrid time, the rows in order = write ids) travels inside the entry.
 *
 * Layout: [kind u8] then the kind's fields. WRITE: [ht u64 BE][n varint] n × RowOp.
 * RowOp: [type u8: 0 upsert, 1 delete, 2 cells][DocKey][columns (upsert)][ttl (upsert)]; a cells op
 * (docs/cells.md): [n varint] n × ([kind u8: 0 put, 1 deleteVersion, 2 deleteColumn, 3 deleteRow]
 * [columnId varint (not deleteRow)][has-time u8][ht u64 (when 1)][value, ttl varint (put)]).
 * Primitive: [tag u8] (0 null, 1 false, 2 true, 3 int64 BE, 4 float64 BE, 5 string, 6 bytes) + payload.
 *
 * WRITE_INTENTS: [txn meta: txnId str, statusTablet str, isolation u8 (0 snapshot, 1 serializable),
 * priority f64, startHt u64][ht u64] RowOps, then optionally the read locks of a serializable
 * transaction: [1 u8][n varint] n × DocKey [tablet u8 (0|1)], optionally followed by hash-key locks
 * [m varint] m × DocKey (absent: none). APPLY_TXN: [txnId str][commitHt u64]. APPLY_TXNS: [n varint]
 * n × ([txnId str][commitHt u64]) (n ≥ 1: several committed transactions in one entry, each applied as
 * if by its own APPLY_TXN, all at the entry's op id). REMOVE_TXN: [txnId str].
 * TXN_STATUS: [txnId str][status str][ht u64][payload bytes] (the status tablet's record, see
 * tserver/tablet/participant/txn-record.ts). CHANGE_SCHEMA: [schemaVersion varint][tableName str][schema as
 * JSON str], optionally followed by [durability str] (ASYNC | FLUSH | FSYNC: the table's Raft log
 * level; absent in entries written before it existed) (rare: ALTER TABLE). ROW_LOCK: [action u8: 0 lock, 1 renew, 2 unlock][ht u64][DocKey][lockId str]
 * [holder str][leaseMs varint] (row locks with leases, tserver/tablet/row-locks.ts).
 *
 * A WRITE or WRITE_INTENTS of a retryable request (a client's write with a request id) is prefixed by
 * [7 u8][clientId str][requestId varint][minRunning varint], then the op as above (entries without the
 * prefix decode as before).
 */
import { DbError, ErrorCode } from '../../common/errors';
import { bad, In, Out, readKey, readRowOps, rowOpsBytes, writeKey, writeRowOps } from './tablet-op-rows';
import type { HybridTime } from '../../common/hybrid-time';
import type { TxnId } from '../../common/ids';
import { TxnId as toTxnId } from '../../common/ids';
import { Isolation, type DocKey, type ReadLocks, type RowOp, type TxnMeta } from '../../docdb';
import { parseSplitChildren, parseSplitPeers, parseTableSchema, type RaftPeer, type SplitChildMeta, type TableSchema } from './tablet-meta';
import { isWalDurability, type WalDurability } from '../../raft';

export const TabletOpKind = { WRITE: 1, WRITE_INTENTS: 2, APPLY_TXN: 3, REMOVE_TXN: 4, TXN_STATUS: 5, CHANGE_SCHEMA: 6, REQUEST: 7, APPLY_TXNS: 8, ROW_LOCK: 9, SPLIT: 10 } as const;

export const RowLockAction = { LOCK: 0, RENEW: 1, UNLOCK: 2 } as const;
export type RowLockAction = (typeof RowLockAction)[keyof typeof RowLockAction];

/** Transactions one APPLY_TXNS entry carries at most. */
export const APPLY_TXNS_MAX = 4096;

/**
 * Which client request an entry carries out (retryable requests): every replica that applies the
 * entry remembers it, so a leader answers a resent copy instead of doing it again.
 */
export interface RequestTag {
  clientId: string;
  requestId: number;
  /** The client's lowest request still unanswered when it sent this one (lower ids are forgotten). */
  minRunning: number;
}

export type TabletOp =
  /** Single-tablet write: rows straight into RegularDB at `ht` (atomic, one batch). */
  /**
   * `moreRequests`: further retryable requests this one entry answers (row operations of several
   * callers combined by the leader, combined-writes.ts); encoded after the ops.
   */
  | { type: 'WRITE'; ht: HybridTime; ops: RowOp[]; request?: RequestTag; moreRequests?: RequestTag[] }
  /** Provisional records of a distributed transaction; `reads`: a serializable transaction's read locks. */
  | { type: 'WRITE_INTENTS'; txn: TxnMeta; ht: HybridTime; ops: RowOp[]; reads?: ReadLocks; request?: RequestTag }
  /** Move a committed transaction's intents into RegularDB at its commit time (transactions issue). */
  | { type: 'APPLY_TXN'; txnId: TxnId; commitHt: HybridTime }
  /**
   * Several APPLY_TXN in one entry (a batch of UpdateTransaction APPLYs): one Raft entry, log record and
   * apply-stage step instead of one each; every replica applies each transaction exactly as an
   * APPLY_TXN of its own, in order.
   */
  | { type: 'APPLY_TXNS'; txns: Array<{ txnId: TxnId; commitHt: HybridTime }> }
  /** Remove an aborted transaction's intents (transactions issue). */
  | { type: 'REMOVE_TXN'; txnId: TxnId }
  /** Update of a transaction record on a status tablet (transactions issue). */
  | { type: 'TXN_STATUS'; txnId: TxnId; status: string; ht: HybridTime; payload: Uint8Array }
  /** The table's schema from this entry on (ALTER TABLE); every replica takes it when it applies the entry. */
  | { type: 'CHANGE_SCHEMA'; schemaVersion: number; tableName: string; schema: TableSchema; durability?: WalDurability }
  /**
   * Take, renew or release a row lock (row-locks.ts): the lock table is replicated state, so every
   * replica (and a later leader) knows who holds which row until when (hybrid time ht + leaseMs).
   */
  | { type: 'ROW_LOCK'; action: RowLockAction; ht: HybridTime; key: DocKey; lockId: string; holder: string; leaseMs: number }
  /**
   * Split this tablet in two (docs/splitting.md): every replica builds both children from its own
   * data at this entry and serves nothing more. SPLIT: [json str] ({ children: SplitChildMeta[2], peers,
   * leader }). `leader`: the uuid of the replica that proposed it, which leads the children's first
   * term without an election (every replica records its vote for it when building them; absent in
   * entries written before it existed: the children elect).
   */
  | { type: 'SPLIT'; children: SplitChildMeta[]; peers: RaftPeer[]; leader?: string };


function requestBytes(r: RequestTag | undefined): number {
  return r ? 24 + Buffer.byteLength(r.clientId) : 0;
}

function writeRequest(o: Out, r: RequestTag | undefined): void {
  if (!r) return;
  o.u8(TabletOpKind.REQUEST);
  o.str(r.clientId);
  o.uv(r.requestId);
  o.uv(r.minRunning);
}

function encodeWriteIntents(op: Extract<TabletOp, { type: 'WRITE_INTENTS' }>): Uint8Array {
  const readBytes = op.reads ? rowOpsBytes([...op.reads.rows, ...(op.reads.hashKeys ?? [])].map((key) => ({ type: 'delete' as const, key }))) + 12 : 0;
  const o = new Out(64 + requestBytes(op.request) + Buffer.byteLength(op.txn.txnId) + Buffer.byteLength(op.txn.statusTablet) + rowOpsBytes(op.ops) + readBytes);
  writeRequest(o, op.request);
  o.u8(TabletOpKind.WRITE_INTENTS);
  o.str(op.txn.txnId);
  o.str(op.txn.statusTablet);
  o.u8(op.txn.isolation === Isolation.SERIALIZABLE ? 1 : 0);
  o.ensure(8);
  o.buf.writeDoubleBE(op.txn.priority, o.pos);
  o.pos += 8;
  o.u64(op.txn.startHt);
  o.u64(op.ht);
  writeRowOps(o, op.ops);
  if (op.reads) {
    o.u8(1);
    o.uv(op.reads.rows.length);
    for (const k of op.reads.rows) writeKey(o, k);
    o.u8(op.reads.tablet ? 1 : 0);
    if (op.reads.hashKeys && op.reads.hashKeys.length > 0) {
      o.uv(op.reads.hashKeys.length);
      for (const k of op.reads.hashKeys) writeKey(o, k);
    }
  }
  return o.buf.subarray(0, o.pos);
}

// Long by design (docs/conventions.md): one switch over the op kinds, a few lines each; the kinds belong side by side.
export function encodeTabletOp(op: TabletOp): Uint8Array {
  switch (op.type) {
    case 'WRITE': {
      const more = op.moreRequests ?? [];
      const o = new Out(24 + requestBytes(op.request) + rowOpsBytes(op.ops) + more.reduce((n, r) => n + requestBytes(r), 0));
      writeRequest(o, op.request);
      o.u8(TabletOpKind.WRITE);
      o.u64(op.ht);
      writeRowOps(o, op.ops);
      if (more.length > 0) {
        if (!op.request) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'a WRITE with moreRequests needs request');
        o.uv(more.length);
        for (const r of more) writeRequest(o, r);
      }
      return o.buf.subarray(0, o.pos);
    }
    case 'WRITE_INTENTS':
      return encodeWriteIntents(op);
    case 'APPLY_TXN': {
      const o = new Out(64);
      o.u8(TabletOpKind.APPLY_TXN);
      o.str(op.txnId);
      o.u64(op.commitHt);
      return o.buf.subarray(0, o.pos);
    }
    case 'APPLY_TXNS': {
      if (op.txns.length === 0 || op.txns.length > APPLY_TXNS_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `APPLY_TXNS carries 1 to ${APPLY_TXNS_MAX} transactions, not ${op.txns.length}`);
      const o = new Out(8 + op.txns.length * 48);
      o.u8(TabletOpKind.APPLY_TXNS);
      o.uv(op.txns.length);
      for (const t of op.txns) {
        o.str(t.txnId);
        o.u64(t.commitHt);
      }
      return o.buf.subarray(0, o.pos);
    }
    case 'REMOVE_TXN': {
      const o = new Out(48);
      o.u8(TabletOpKind.REMOVE_TXN);
      o.str(op.txnId);
      return o.buf.subarray(0, o.pos);
    }
    case 'TXN_STATUS': {
      const o = new Out(64 + op.payload.byteLength);
      o.u8(TabletOpKind.TXN_STATUS);
      o.str(op.txnId);
      o.str(op.status);
      o.u64(op.ht);
      o.bytes(op.payload);
      return o.buf.subarray(0, o.pos);
    }
    case 'ROW_LOCK': {
      const o = new Out(64 + Buffer.byteLength(op.lockId) + Buffer.byteLength(op.holder) + rowOpsBytes([{ type: 'delete', key: op.key }]));
      o.u8(TabletOpKind.ROW_LOCK);
      o.u8(op.action);
      o.u64(op.ht);
      writeKey(o, op.key);
      o.str(op.lockId);
      o.str(op.holder);
      o.uv(op.leaseMs);
      return o.buf.subarray(0, o.pos);
    }
    case 'SPLIT': {
      const json = JSON.stringify({ children: op.children, peers: op.peers, ...(op.leader ? { leader: op.leader } : {}) });
      const o = new Out(16 + Buffer.byteLength(json));
      o.u8(TabletOpKind.SPLIT);
      o.str(json);
      return o.buf.subarray(0, o.pos);
    }
    case 'CHANGE_SCHEMA': {
      const json = JSON.stringify(op.schema);
      const o = new Out(32 + Buffer.byteLength(op.tableName) + Buffer.byteLength(json));
      o.u8(TabletOpKind.CHANGE_SCHEMA);
      o.uv(op.schemaVersion);
      o.str(op.tableName);
      o.str(json);
      if (op.durability !== undefined) o.str(op.durability);
      return o.buf.subarray(0, o.pos);
    }
  }
}

function decodeWriteIntents(i: In, b: Uint8Array, request: RequestTag | undefined): TabletOp {
  const txnId = toTxnId(i.str());
  const statusTablet = i.str();
  const iso = i.u8();
  if (iso > 1) throw bad(`isolation ${iso}`);
  i.need(8);
  const priority = i.f64();
  const startHt = i.u64();
  const ht = i.u64();
  const ops = readRowOps(i);
  let reads: ReadLocks | undefined;
  if (i.pos < b.byteLength) {
    const marker = i.u8();
    if (marker !== 1) throw bad(`read locks marker ${marker}`);
    const rows: DocKey[] = [];
    for (let n = i.uv(); n > 0; n--) rows.push(readKey(i));
    const tablet = i.u8();
    if (tablet > 1) throw bad(`read locks tablet flag ${tablet}`);
    reads = { rows, tablet: tablet === 1 };
    if (i.pos < b.byteLength) {
      const hashKeys: DocKey[] = [];
      for (let n = i.uv(); n > 0; n--) hashKeys.push(readKey(i));
      reads.hashKeys = hashKeys;
    }
  }
  end(i, b);
  const txn: TxnMeta = { txnId, statusTablet, isolation: iso === 1 ? Isolation.SERIALIZABLE : Isolation.SNAPSHOT, priority, startHt };
  const op: TabletOp = reads ? { type: 'WRITE_INTENTS', txn, ht, ops, reads } : { type: 'WRITE_INTENTS', txn, ht, ops };
  if (request) op.request = request;
  return op;
}

function decodeChangeSchema(i: In, b: Uint8Array): TabletOp {
  const schemaVersion = i.uv();
  const tableName = i.str();
  let v: unknown;
  try {
    v = JSON.parse(i.str());
  } catch (e) {
    throw bad(`schema is not JSON: ${(e as Error).message}`);
  }
  let durability: WalDurability | undefined;
  if (i.pos < b.byteLength) {
    const d = i.str();
    if (!isWalDurability(d)) throw bad(`durability ${d}`);
    durability = d;
  }
  end(i, b);
  return { type: 'CHANGE_SCHEMA', schemaVersion, tableName, schema: parseTableSchema(v), ...(durability ? { durability } : {}) };
}

// Long by design (docs/conventions.md): one switch over the format's kinds, a few lines each; the kinds belong side by side.
function decodeWrite(i: In, b: Uint8Array, request: RequestTag | undefined): TabletOp {
  const ht = i.u64();
  const ops = readRowOps(i);
  const op: TabletOp = request ? { type: 'WRITE', ht, ops, request } : { type: 'WRITE', ht, ops };
  if (i.pos < b.byteLength && request) op.moreRequests = readMoreRequests(i);
  if (i.pos !== b.byteLength) throw bad('trailing bytes');
  return op;
}

function readMoreRequests(i: In): RequestTag[] {
  const out: RequestTag[] = [];
  for (let n = i.uv(); n > 0; n--) {
    if (i.u8() !== TabletOpKind.REQUEST) throw bad('request tag expected');
    out.push({ clientId: i.str(), requestId: i.uv(), minRunning: i.uv() });
  }
  return out;
}

/** Every retryable request a WRITE / WRITE_INTENTS entry answers (none for other entries). */
export function requestsOf(op: TabletOp): RequestTag[] {
  if (op.type !== 'WRITE' && op.type !== 'WRITE_INTENTS') return [];
  if (!op.request) return [];
  return op.type === 'WRITE' && op.moreRequests ? [op.request, ...op.moreRequests] : [op.request];
}

export function decodeTabletOp(b: Uint8Array): TabletOp {
  const i = new In(b);
  let kind = i.u8();
  let request: RequestTag | undefined;
  if (kind === TabletOpKind.REQUEST) {
    request = { clientId: i.str(), requestId: i.uv(), minRunning: i.uv() };
    kind = i.u8();
    if (kind !== TabletOpKind.WRITE && kind !== TabletOpKind.WRITE_INTENTS) throw bad(`request tag before kind ${kind}`);
  }
  switch (kind) {
    case TabletOpKind.WRITE:
      return decodeWrite(i, b, request);
    case TabletOpKind.WRITE_INTENTS:
      return decodeWriteIntents(i, b, request);
    case TabletOpKind.APPLY_TXN: {
      const txnId = toTxnId(i.str());
      const commitHt = i.u64();
      end(i, b);
      return { type: 'APPLY_TXN', txnId, commitHt };
    }
    case TabletOpKind.APPLY_TXNS: {
      const n = i.uv();
      if (n === 0 || n > APPLY_TXNS_MAX) throw bad(`APPLY_TXNS of ${n} transactions`);
      const txns: Array<{ txnId: TxnId; commitHt: HybridTime }> = [];
      for (let k = 0; k < n; k++) txns.push({ txnId: toTxnId(i.str()), commitHt: i.u64() });
      end(i, b);
      return { type: 'APPLY_TXNS', txns };
    }
    case TabletOpKind.REMOVE_TXN: {
      const txnId = toTxnId(i.str());
      end(i, b);
      return { type: 'REMOVE_TXN', txnId };
    }
    case TabletOpKind.TXN_STATUS: {
      const txnId = toTxnId(i.str());
      const status = i.str();
      const ht = i.u64();
      const payload = i.bytes();
      end(i, b);
      return { type: 'TXN_STATUS', txnId, status, ht, payload };
    }
    case TabletOpKind.ROW_LOCK: {
      const action = i.u8();
      if (action > RowLockAction.UNLOCK) throw bad(`row lock action ${action}`);
      const ht = i.u64();
      const key = readKey(i);
      const lockId = i.str();
      const holder = i.str();
      const leaseMs = i.uv();
      end(i, b);
      return { type: 'ROW_LOCK', action: action as RowLockAction, ht, key, lockId, holder, leaseMs };
    }
    case TabletOpKind.CHANGE_SCHEMA:
      return decodeChangeSchema(i, b);
    case TabletOpKind.SPLIT: {
      let v: unknown;
      try {
        v = JSON.parse(i.str());
      } catch (e) {
        throw bad(`split is not JSON: ${(e as Error).message}`);
      }
      end(i, b);
      const o = v as { children?: unknown; peers?: unknown; leader?: unknown };
      if (o?.leader !== undefined && (typeof o.leader !== 'string' || o.leader === '')) throw bad('split leader is not a uuid');
      return { type: 'SPLIT', children: parseSplitChildren(o?.children), peers: parseSplitPeers(o?.peers), ...(typeof o?.leader === 'string' ? { leader: o.leader } : {}) };
    }
    default:
      throw bad(`kind ${kind}`);
  }
}

function end(i: In, b: Uint8Array): void {
  if (i.pos !== b.byteLength) throw bad('trailing bytes');
}

/** docKeyString's writer, reused: a fresh one per key was a share of a mutateRows row's cost on the leader (docs/rows.md). */
const keyStringOut = new Out(64);

/** A stable string for a row key (lock table key): the op encoding of the DocKey. */
export function docKeyString(k: DocKey): string {
  const o = keyStringOut;
  o.pos = 0;
  writeKey(o, k);
  return o.buf.toString('latin1', 0, o.pos);
}
