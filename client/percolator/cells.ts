/**
 * Percolator's cell operations against tessera tables: every change of a row's Percolator state is
 * one checkAndMutate conditioned on the row's sequence column (a single-row transaction, as
 * Bigtable's), retried on a lost race by reading the row again; and lock resolution — what a reader
 * or writer does when it meets another transaction's lock (roll forward, roll back, or wait).
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Row } from '../client-types';
import type { Table } from '../table';
import {
  NOTIFY_COLUMN,
  SEQ_COLUMN,
  STATE_COLUMN,
  commitCell,
  decodeRowState,
  encodeRowState,
  rollbackCell,
  statusAt,
  type PercLock,
  type PercRowState,
} from './row-state';

/** Rounds of read + checkAndMutate one cell change may take before giving up (a very hot row). */
export const CAS_ATTEMPTS_MAX = 64;

export interface CellsDeps {
  table(name: string): Table;
  /** The key columns of a table, in key order. */
  keyOf(table: string, row: Row): Promise<Row>;
  nowMs(): number;
  /** Whether a lock owner still holds its liveness token (owner-lease.ts). */
  ownerAlive?(owner: string): Promise<boolean>;
}

export class Deadline {
  private readonly endMs: number;
  constructor(ms: number) {
    this.endMs = Date.now() + ms;
  }
  leftMs(): number {
    return this.endMs - Date.now();
  }
  check(what: string): void {
    if (this.leftMs() <= 0) throw new DbError(ErrorCode.TIMED_OUT, `percolator: ${what} did not finish in time`);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function readRowState(t: Table, key: Row, d: Deadline): Promise<PercRowState> {
  const row = await t.get(key, { columns: [SEQ_COLUMN, STATE_COLUMN], timeoutMs: Math.max(1, d.leftMs()) });
  return decodeRowState(row);
}

/** Where casRow keeps the state it last read or wrote of a row (a transaction's own cache). */
export interface KnownStates {
  get(key: Row): PercRowState | undefined;
  set(key: Row, st: PercRowState): void;
}

/**
 * One single-row transaction: read the row's state, let `f` decide, and write its next state only
 * if nobody changed the row meanwhile (the sequence column is as read). `f` may run several times.
 * With `known`, the first round trusts the state remembered there instead of reading it (a wrong
 * guess only costs a failed condition and a read), and the state written is remembered: a
 * transaction's prewrite after its read, and its commit after its prewrite, are one round trip each.
 */
export async function casRow<O extends { type: string }>(
  t: Table,
  key: Row,
  d: Deadline,
  f: (st: PercRowState) => O | { type: 'write'; next: PercRowState; notifyTs?: bigint },
  known?: KnownStates,
): Promise<O | { type: 'write'; next: PercRowState }> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS_MAX; attempt++) {
    d.check('a row change');
    const guess = attempt === 0 ? known?.get(key) : undefined;
    const st = guess ?? (await readRowState(t, key, d));
    const r = f(st);
    if (r.type !== 'write' || !('next' in r)) {
      if (!guess) return r;
      continue; // decided on a remembered state: decide again on the row as it is
    }
    const cond = st.seq === undefined ? { column: SEQ_COLUMN, op: 'ABSENT' as const } : { column: SEQ_COLUMN, op: 'EQ' as const, value: st.seq };
    const seq = (st.seq ?? 0n) + 1n;
    const put: Row = { [SEQ_COLUMN]: seq, [STATE_COLUMN]: encodeRowState(r.next) };
    if ('notifyTs' in r && r.notifyTs !== undefined) put[NOTIFY_COLUMN] = r.notifyTs;
    const applied = await t.checkAndMutate(key, cond, { put }, { timeoutMs: Math.max(1, d.leftMs()) });
    if (applied) {
      known?.set(key, { ...r.next, seq });
      return r;
    }
    if (attempt > 2) await sleep(Math.min(50, attempt * 2 * Math.random()));
  }
  throw new DbError(ErrorCode.TRY_AGAIN, `percolator: row of ${t.name} changed under ${CAS_ATTEMPTS_MAX} attempts in a row`);
}

export type ResolveResult = 'resolved' | 'alive';

export interface ResolveStats {
  rolledForward: number;
  rolledBack: number;
}

/**
 * Settle `lock`, met on (table, key): decided by the primary's row. Committed there → roll this cell
 * forward; rolled back or never locked there → roll it back; still locked by an owner within its
 * TTL → 'alive' (the caller backs off); still locked past it → roll the primary back first, in a
 * single-row transaction that races the owner's commit on the same row, so exactly one wins.
 */
export async function resolveLock(deps: CellsDeps, table: string, key: Row, lock: PercLock, d: Deadline, stats?: ResolveStats): Promise<ResolveResult> {
  const pt = deps.table(lock.primary.table);
  const pkey = lock.primary.key;
  const pst = await readRowState(pt, pkey, d);
  let status = statusAt(pst, lock.startTs);
  if (status.type === 'unknown' && pst.truncated && pst.writes.every((w) => w.commitTs > lock.startTs)) {
    // The primary's record of this transaction may have been trimmed: guessing could lose a commit.
    throw new DbError(ErrorCode.SNAPSHOT_TOO_OLD, `percolator: a lock on ${table} from start ${lock.startTs} outlived its primary's history; cannot tell whether it committed`);
  }
  if (status.type === 'locked') {
    // Presumed dead: past its TTL, or its owner's liveness token is gone (then no need to wait the TTL out).
    const owner = status.lock.owner;
    const withinTtl = deps.nowMs() < status.lock.wallMs + status.lock.ttlMs;
    if (withinTtl && !(owner && deps.ownerAlive && !(await deps.ownerAlive(owner)))) return 'alive';
  }
  if (status.type !== 'committed') {
    // Dead owner (or a primary never locked, or already rolled back): make the rollback durable on
    // the primary first, so a late commit of the owner fails there.
    const r = await casRow(pt, pkey, d, (st) => rollbackCell(st, lock.startTs, deps.nowMs()));
    status = r.type === 'committed' ? { type: 'committed', commitTs: r.commitTs } : { type: 'rolled-back' };
  }
  const t = deps.table(table);
  if (status.type === 'committed') {
    const commitTs = status.commitTs;
    await casRow(t, key, d, (st) => commitCell(st, lock.startTs, commitTs, deps.nowMs()));
    if (stats) stats.rolledForward++;
  } else {
    await casRow(t, key, d, (st) => rollbackCell(st, lock.startTs, deps.nowMs()));
    if (stats) stats.rolledBack++;
  }
  return 'resolved';
}
