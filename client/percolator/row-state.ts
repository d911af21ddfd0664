/**
 * One Percolator row as a pure state machine (Peng & Dabek, OSDI 2010 §2.2). Bigtable's three
 * columns per cell — data@start, lock, write@commit — live in one hidden string column of the
 * user's row (`_pc_state`), guarded by a sequence number (`_pc_seq`); every change is a
 * read-then-checkAndMutate on `_pc_seq`, which makes it one single-row transaction
 * (docs/percolator.md). These functions take the state read and return the state to write or an
 * outcome; client/percolator/cells.ts does the I/O.
 *
 * Write records are commits (`c`: the data written at their start) and rollbacks (`r`, at the
 * aborted transaction's start): a rollback record stops a late prewrite of that transaction from
 * locking the row again (TiKV's protection; the paper relies on the primary's row transaction).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Row } from '../client-types';
import { wallMsOfTs } from '../../common/oracle-ts';
import { rowFromJson, rowToJson } from './cell-codec';

import { SEQ_COLUMN, STATE_COLUMN } from '../../common/percolator-layout';
export { NOTIFY_COLUMN, OBSERVED_PREFIX, SEQ_COLUMN, STATE_COLUMN } from '../../common/percolator-layout';
/** The observers' acknowledgement: the start timestamp of the last committed observer run, kept inside the row's data. */
export const ACK_FIELD = '_pc_ack';
/** Write records always kept per row (the newest), whatever their age. */
export const WRITES_KEPT_MIN = 8;
/**
 * Older write records (and the data only they point to) are dropped once their commit timestamp is
 * this old: a read below the oldest kept record gets SNAPSHOT_TOO_OLD, and a lock whose primary's
 * record was dropped cannot be resolved (both need a transaction or an orphaned lock older than
 * this; docs/percolator.md, limits).
 */
export const WRITE_RETENTION_MS = 60_000;

export interface PercLock {
  startTs: bigint;
  /** The primary cell: its row decides the transaction (committed iff it has the commit record). */
  primary: { table: string; key: Row };
  /** The owner's wall time when it locked, and how long it may hold the lock without being presumed dead. */
  wallMs: number;
  ttlMs: number;
  /** The write changes an observed column: its commit sets the row's notify hint. */
  notify?: boolean;
  /** The owner's liveness token (client/percolator/owner-lease.ts); absent: TTL only. */
  owner?: string;
}

export interface WriteRecord {
  commitTs: bigint;
  startTs: bigint;
  kind: 'c' | 'r';
  /** A commit that changed an observed column (observers run for it). */
  observed?: boolean;
}

export interface PercRowState {
  /** The guard's value as read (undefined: the row never had a Percolator write). */
  seq: bigint | undefined;
  lock: PercLock | undefined;
  /** Data by start timestamp; null = a delete. */
  data: Map<bigint, Row | null>;
  /** Newest commit timestamp first. */
  writes: WriteRecord[];
  /** Older write records were dropped: reads below the oldest kept one cannot be answered. */
  truncated: boolean;
}

const corrupt = (what: string): DbError => new DbError(ErrorCode.CORRUPTION, `percolator: ${what}`);

export function decodeRowState(stored: Row | undefined): PercRowState {
  const seq = stored?.[SEQ_COLUMN];
  const text = stored?.[STATE_COLUMN];
  if (seq === undefined || seq === null) return { seq: undefined, lock: undefined, data: new Map(), writes: [], truncated: false };
  if (typeof seq !== 'bigint' || typeof text !== 'string') throw corrupt('hidden columns have the wrong types');
  let o: { l?: { s: string; p: { t: string; k: unknown }; w: number; ttl: number; n?: boolean; o?: string } | null; d?: Array<[string, unknown]>; w?: Array<[string, string, string, number?]>; t?: boolean };
  try {
    o = JSON.parse(text) as typeof o;
  } catch {
    throw corrupt('state is not JSON');
  }
  if (!Array.isArray(o.d) || !Array.isArray(o.w)) throw corrupt('state lacks data or writes');
  return {
    seq,
    lock: o.l ? { startTs: BigInt(o.l.s), primary: { table: o.l.p.t, key: rowFromJson(o.l.p.k) }, wallMs: o.l.w, ttlMs: o.l.ttl, ...(o.l.n ? { notify: true } : {}), ...(typeof o.l.o === 'string' ? { owner: o.l.o } : {}) } : undefined,
    data: new Map(o.d.map(([s, r]) => [BigInt(s), r === null ? null : rowFromJson(r)])),
    writes: o.w.map(([c, s, k, obs]) => {
      if (k !== 'c' && k !== 'r') throw corrupt(`write record kind ${k}`);
      return { commitTs: BigInt(c), startTs: BigInt(s), kind: k, ...(obs === 1 ? { observed: true } : {}) };
    }),
    truncated: o.t === true,
  };
}

export function encodeRowState(st: PercRowState): string {
  const l = st.lock;
  return JSON.stringify({
    l: l ? { s: l.startTs.toString(), p: { t: l.primary.table, k: rowToJson(l.primary.key) }, w: l.wallMs, ttl: l.ttlMs, ...(l.notify ? { n: true } : {}), ...(l.owner ? { o: l.owner } : {}) } : null,
    d: [...st.data].map(([s, r]) => [s.toString(), r === null ? null : rowToJson(r)]),
    w: st.writes.map((w) => (w.observed ? [w.commitTs.toString(), w.startTs.toString(), w.kind, 1] : [w.commitTs.toString(), w.startTs.toString(), w.kind])),
    t: st.truncated,
  });
}

export type ReadOutcome = { type: 'locked'; lock: PercLock } | { type: 'value'; row: Row | undefined };

/** The row as of `startTs`, or the lock a reader at `startTs` must wait for or resolve. */
export function readAt(st: PercRowState, startTs: bigint): ReadOutcome {
  // A lock from a transaction that started at or before us may commit below our start: wait for it.
  if (st.lock && st.lock.startTs <= startTs) return { type: 'locked', lock: st.lock };
  for (const w of st.writes) {
    if (w.kind !== 'c' || w.commitTs > startTs) continue;
    const d = st.data.get(w.startTs);
    if (d === undefined) throw corrupt(`commit record at ${w.commitTs} points to missing data at ${w.startTs}`);
    return { type: 'value', row: d ?? undefined };
  }
  if (st.truncated) throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, `percolator: read at ${startTs} is below the oldest version kept (${WRITE_RETENTION_MS} ms of history per row)`);
  return { type: 'value', row: undefined };
}

export type PrewriteOutcome =
  | { type: 'write'; next: PercRowState }
  | { type: 'done' }
  | { type: 'conflict'; lock?: PercLock; commitTs?: bigint };

/** Lock the row and write its data at `lock.startTs`; conflict on any other lock or a write at or after our start. */
export function prewrite(st: PercRowState, lock: PercLock, value: Row | null, observed: readonly string[] = []): PrewriteOutcome {
  if (st.lock) return st.lock.startTs === lock.startTs ? { type: 'done' } : { type: 'conflict', lock: st.lock };
  const newer = st.writes.find((w) => w.commitTs >= lock.startTs);
  if (newer) return { type: 'conflict', commitTs: newer.commitTs };
  // No commit at or after our start: the newest commit is the version we replace.
  const prevCommit = st.writes.find((w) => w.kind === 'c');
  const prev = prevCommit ? (st.data.get(prevCommit.startTs) ?? undefined) : undefined;
  let v = value;
  // The observers' ack survives writes that do not set it (else an old change would run again).
  if (v && v[ACK_FIELD] === undefined && prev?.[ACK_FIELD] !== undefined) v = { ...v, [ACK_FIELD]: prev[ACK_FIELD] };
  const notify = observed.some((c) => !sameValue(prev?.[c], v?.[c]));
  const data = new Map(st.data);
  data.set(lock.startTs, v);
  return { type: 'write', next: { ...st, lock: notify ? { ...lock, notify: true } : lock, data } };
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.from(a).equals(Buffer.from(b));
  return (a ?? null) === (b ?? null);
}

export type CommitOutcome = { type: 'write'; next: PercRowState; notifyTs?: bigint } | { type: 'done' } | { type: 'rolled-back' };

/**
 * Replace our lock by a commit record; on the primary this is the transaction's commit point. A
 * write to an observed column also sets the notify hint (`notifyTs`), in the same row transaction.
 */
export function commitCell(st: PercRowState, startTs: bigint, commitTs: bigint, nowMs: number): CommitOutcome {
  if (st.lock?.startTs === startTs) {
    const observed = st.lock.notify === true;
    const rec: WriteRecord = { commitTs, startTs, kind: 'c', ...(observed ? { observed: true } : {}) };
    return { type: 'write', next: trim({ ...st, lock: undefined, writes: [rec, ...st.writes] }, nowMs), ...(observed ? { notifyTs: commitTs } : {}) };
  }
  const w = st.writes.find((x) => x.startTs === startTs);
  if (w?.kind === 'c') return { type: 'done' };
  return { type: 'rolled-back' };
}

export type RollbackOutcome = { type: 'write'; next: PercRowState } | { type: 'done' } | { type: 'committed'; commitTs: bigint };

/** Erase our (or a dead owner's) lock and data and leave a rollback record; a committed cell stays committed. */
export function rollbackCell(st: PercRowState, startTs: bigint, nowMs: number): RollbackOutcome {
  const w = st.writes.find((x) => x.startTs === startTs);
  if (w?.kind === 'c') return { type: 'committed', commitTs: w.commitTs };
  if (w?.kind === 'r' && st.lock?.startTs !== startTs) return { type: 'done' };
  const data = new Map(st.data);
  if (st.lock?.startTs === startTs) data.delete(startTs);
  const lock = st.lock?.startTs === startTs ? undefined : st.lock;
  return { type: 'write', next: trim({ ...st, lock, data, writes: [{ commitTs: startTs, startTs, kind: 'r' as const }, ...st.writes].sort(newestFirst) }, nowMs) };
}

export type TxnStatus = { type: 'committed'; commitTs: bigint } | { type: 'rolled-back' } | { type: 'locked'; lock: PercLock } | { type: 'unknown' };

/** What the primary row says about the transaction that started at `startTs`. */
export function statusAt(st: PercRowState, startTs: bigint): TxnStatus {
  if (st.lock?.startTs === startTs) return { type: 'locked', lock: st.lock };
  const w = st.writes.find((x) => x.startTs === startTs);
  if (w?.kind === 'c') return { type: 'committed', commitTs: w.commitTs };
  if (w?.kind === 'r') return { type: 'rolled-back' };
  return { type: 'unknown' };
}

/** The newest commit at or below `startTs` that changed an observed column, and the observers' ack as of then. */
export function observationAt(st: PercRowState, startTs: bigint): { changeTs: bigint | undefined; ackTs: bigint | undefined } {
  const change = st.writes.find((w) => w.kind === 'c' && w.observed === true && w.commitTs <= startTs);
  const newest = st.writes.find((w) => w.kind === 'c' && w.commitTs <= startTs);
  const ack = newest ? st.data.get(newest.startTs)?.[ACK_FIELD] : undefined;
  return { changeTs: change?.commitTs, ackTs: typeof ack === 'bigint' ? ack : undefined };
}

function newestFirst(a: WriteRecord, b: WriteRecord): number {
  return a.commitTs > b.commitTs ? -1 : a.commitTs < b.commitTs ? 1 : 0;
}

/**
 * Drop write records older than WRITE_RETENTION_MS beyond the newest WRITES_KEPT_MIN, but keep the
 * newest commit record below the horizon (a read at the horizon still has its version); drop the
 * data only dropped records pointed to.
 */
function trim(st: PercRowState, nowMs: number): PercRowState {
  if (st.writes.length <= WRITES_KEPT_MIN) return st;
  const horizonMs = nowMs - WRITE_RETENTION_MS;
  let keptOldCommit = false;
  const writes: WriteRecord[] = [];
  let droppedCommit = false;
  st.writes.forEach((w, i) => {
    const young = i < WRITES_KEPT_MIN || wallMsOfTs(w.commitTs) >= horizonMs;
    if (young || (w.kind === 'c' && !keptOldCommit)) {
      writes.push(w);
      if (!young) keptOldCommit = true;
    } else if (w.kind === 'c') droppedCommit = true;
  });
  if (writes.length === st.writes.length) return st;
  const keep = new Set(writes.map((w) => w.startTs));
  if (st.lock) keep.add(st.lock.startTs);
  const data = new Map([...st.data].filter(([s]) => keep.has(s)));
  return { ...st, writes, data, truncated: st.truncated || droppedCommit };
}
