/**
 * A Percolator transaction (Peng & Dabek, OSDI 2010 §2.2), coordinated by this client alone: reads
 * at a start timestamp from the oracle, writes buffered until commit, then a two-phase commit over
 * single-row transactions — prewrite the primary cell, then the secondaries (lock + data at start);
 * take a commit timestamp; replace the primary's lock by a commit record (the commit point); then
 * the secondaries. Snapshot isolation: a write-write conflict aborts the later transaction with
 * TXN_CONFLICT (retryable: begin again). See docs/percolator.md.
 */
import { DbError, ErrorCode } from '../../common/errors';
import type { Row } from '../client-types';
import { keyText } from './cell-codec';
import { casRow, Deadline, readRowState, resolveLock, sleep, type CellsDeps, type KnownStates, type ResolveStats } from './cells';
import { ACK_FIELD, commitCell, observationAt, prewrite, readAt, rollbackCell, type PercLock, type PercRowState } from './row-state';

export interface PercolatorTxnOptions {
  /** Deadline of each get and of commit (default: the client's timeoutMs). */
  timeoutMs?: number;
  /** How long this transaction's locks are honoured before others may presume it dead (default 3000). */
  lockTtlMs?: number;
  /**
   * Lab only: stop the commit as if this client died — 'prewrite' after every cell is prewritten,
   * 'primary' after the primary's commit record (the commit point). The locks stay behind for
   * other transactions to resolve.
   */
  TEST_dieAfter?: 'prewrite' | 'primary';
}

export interface PercolatorDeps extends CellsDeps {
  /** This client's liveness token, carried by its locks. */
  ownerId?: string;
  getTimestamp(): Promise<bigint>;
  /** The table's observed columns (declared by `_pc_obs_<c>` columns). */
  observedOf(table: string): Promise<string[]>;
  stats: ResolveStats;
}

export const DEFAULT_LOCK_TTL_MS = 3_000;
/** Back-off of a reader waiting for a live lock: doubles from the first, capped. */
const WAIT_FIRST_MS = 5;
const WAIT_MAX_MS = 200;

interface BufferedWrite {
  table: string;
  key: Row;
  value: Row | null;
}

export type PercolatorTxnState = 'open' | 'committed' | 'aborted';

/** Row methods of one table inside a Percolator transaction (the shape of client.table(name)'s). */
export class PercolatorTable {
  constructor(
    private readonly txn: PercolatorTransaction,
    readonly name: string,
  ) {}
  get(key: Row): Promise<Row | undefined> {
    return this.txn.get(this.name, key);
  }
  upsert(row: Row): Promise<void> {
    return this.txn.put(this.name, row);
  }
  delete(key: Row): Promise<void> {
    return this.txn.put(this.name, key, true);
  }
}

export class PercolatorTransaction {
  private readonly writes = new Map<string, BufferedWrite>();
  /** Row states this transaction last read or wrote, by table and key (see casRow's `known`). */
  private readonly knownByTable = new Map<string, KnownStates>();
  private st: PercolatorTxnState = 'open';
  private readonly timeoutMs: number;
  private readonly lockTtlMs: number;

  constructor(
    private readonly deps: PercolatorDeps,
    readonly startTs: bigint,
    private readonly opts: PercolatorTxnOptions & { timeoutMs: number },
  ) {
    this.timeoutMs = opts.timeoutMs;
    this.lockTtlMs = opts.lockTtlMs ?? DEFAULT_LOCK_TTL_MS;
    if (!(this.lockTtlMs > 0)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'lockTtlMs must be > 0');
  }

  get state(): PercolatorTxnState {
    return this.st;
  }

  table(name: string): PercolatorTable {
    return new PercolatorTable(this, name);
  }

  private open(): void {
    if (this.st !== 'open') throw new DbError(ErrorCode.TXN_ABORTED, `percolator transaction is ${this.st}`);
  }

  /** The row as of the start timestamp (this transaction's own writes included). */
  async get(table: string, keyOrRow: Row): Promise<Row | undefined> {
    this.open();
    const key = await this.deps.keyOf(table, keyOrRow);
    const own = this.writes.get(keyText(table, key, Object.keys(key)));
    if (own) return visible(own.value);
    return visible((await this.readCell(table, key)).row);
  }

  /**
   * For observers: the row as of the start timestamp, the commit timestamp of its newest observed
   * change, and the start timestamp of the last committed observer run (its ack).
   */
  async observe(table: string, keyOrRow: Row): Promise<{ row: Row | undefined; changeTs: bigint | undefined; ackTs: bigint | undefined }> {
    this.open();
    const key = await this.deps.keyOf(table, keyOrRow);
    const { row, st } = await this.readCell(table, key);
    return { row: visible(row), ...observationAt(st, this.startTs) };
  }

  /**
   * Acknowledge the observed change: the row is written with ack = our start timestamp (with the
   * observer's own write of it, if any). Two runs for one change both write the row: at most one commits.
   */
  async ack(table: string, keyOrRow: Row): Promise<void> {
    this.open();
    const key = await this.deps.keyOf(table, keyOrRow);
    const k = keyText(table, key, Object.keys(key));
    const own = this.writes.get(k);
    const base = own ? own.value : (await this.readCell(table, key)).row;
    this.writes.set(k, { table, key, value: { ...(base ?? key), [ACK_FIELD]: this.startTs } });
  }

  private async readCell(table: string, key: Row): Promise<{ row: Row | undefined; st: PercRowState }> {
    const d = new Deadline(this.timeoutMs);
    const t = this.deps.table(table);
    for (let wait = WAIT_FIRST_MS; ; wait = Math.min(WAIT_MAX_MS, wait * 2)) {
      d.check(`read of ${table}`);
      const st = await readRowState(t, key, d);
      this.known(table).set(key, st);
      const o = readAt(st, this.startTs);
      if (o.type === 'value') return { row: o.row, st };
      // A lock from a transaction that started at or before us: it may commit below our start.
      if ((await resolveLock(this.deps, table, key, o.lock, d, this.deps.stats)) === 'alive') await sleep(Math.min(wait, Math.max(1, d.leftMs())));
    }
  }

  /** Buffer a write (a whole row; `deleted`: the row's delete). Sent at commit. */
  async put(table: string, row: Row, deleted = false): Promise<void> {
    this.open();
    const key = await this.deps.keyOf(table, row);
    if (!deleted && Object.keys(row).some((c) => c.startsWith('_pc_'))) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'percolator: columns starting with _pc_ are Percolator\'s');
    this.writes.set(keyText(table, key, Object.keys(key)), { table, key, value: deleted ? null : { ...row } });
  }

  async abort(): Promise<void> {
    if (this.st === 'open') this.st = 'aborted';
    return Promise.resolve();
  }

  /** Commit: { commitTs } (none for a read-only transaction). TXN_CONFLICT or TXN_ABORTED: nothing was written. */
  async commit(): Promise<{ commitTs?: bigint }> {
    this.open();
    const all = [...this.writes.values()];
    if (all.length === 0) {
      this.st = 'committed';
      return {};
    }
    const d = new Deadline(this.timeoutMs);
    const [primary, ...secondaries] = all as [BufferedWrite, ...BufferedWrite[]];
    const lock: PercLock = { startTs: this.startTs, primary: { table: primary.table, key: primary.key }, wallMs: this.deps.nowMs(), ttlMs: this.lockTtlMs, ...(this.deps.ownerId ? { owner: this.deps.ownerId } : {}) };
    const done: BufferedWrite[] = [];
    try {
      // The primary first: every secondary lock points at a primary that is already locked.
      await this.prewriteCell(primary, lock, d);
      done.push(primary);
      // Every secondary settles before a rollback, so none is left locked by a prewrite still in flight.
      const rs = await Promise.allSettled(secondaries.map(async (w) => {
        await this.prewriteCell(w, lock, d);
        done.push(w);
      }));
      const failed = rs.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (e) {
      this.st = 'aborted';
      await this.rollback(done, d).catch(() => undefined);
      throw e;
    }
    if (this.opts.TEST_dieAfter === 'prewrite') return this.die();
    const commitTs = await this.deps.getTimestamp();
    const r = await casRow(this.deps.table(primary.table), primary.key, d, (st) => commitCell(st, this.startTs, commitTs, this.deps.nowMs()), this.known(primary.table));
    if (r.type === 'rolled-back') {
      this.st = 'aborted';
      await this.rollback(secondaries, d).catch(() => undefined);
      throw new DbError(ErrorCode.TXN_ABORTED, 'percolator: another transaction presumed this one dead and rolled back its primary lock');
    }
    this.st = 'committed';
    if (this.opts.TEST_dieAfter === 'primary') return { commitTs };
    // Past the commit point: a secondary that cannot be committed now is rolled forward by its next reader.
    await Promise.all(secondaries.map((w) => casRow(this.deps.table(w.table), w.key, d, (st) => commitCell(st, this.startTs, commitTs, this.deps.nowMs()), this.known(w.table)).catch(() => undefined)));
    return { commitTs };
  }

  private known(table: string): KnownStates {
    let k = this.knownByTable.get(table);
    if (!k) {
      const m = new Map<string, PercRowState>();
      const text = (key: Row): string => keyText(table, key, Object.keys(key));
      k = { get: (key) => m.get(text(key)), set: (key, st) => void m.set(text(key), st) };
      this.knownByTable.set(table, k);
    }
    return k;
  }

  private die(): { commitTs?: bigint } {
    this.st = 'aborted';
    return {};
  }

  /** Prewrite one cell; a lock of a dead owner is resolved first, any other conflict aborts. */
  private async prewriteCell(w: BufferedWrite, lock: PercLock, d: Deadline): Promise<void> {
    const t = this.deps.table(w.table);
    const observed = await this.deps.observedOf(w.table);
    for (let round = 0; ; round++) {
      const o = await casRow(t, w.key, d, (st) => prewrite(st, lock, w.value, observed), this.known(w.table));
      if (o.type === 'write' || o.type === 'done') return;
      // Percolator aborts on any lock; a lock past its owner's TTL is cleaned up first (else it
      // would block the row until some reader met it).
      if (o.lock && round < 2 && this.deps.nowMs() >= o.lock.wallMs + o.lock.ttlMs) {
        if ((await resolveLock(this.deps, w.table, w.key, o.lock, d, this.deps.stats)) === 'resolved') continue;
      }
      throw new DbError(ErrorCode.TXN_CONFLICT, `percolator: write-write conflict on ${w.table}: ${o.lock ? `locked by the transaction started at ${o.lock.startTs}` : `a write committed at ${o.commitTs ?? 0n} is not below our start ${this.startTs}`}`, { startTs: this.startTs.toString() });
    }
  }

  /** Undo our own prewrites, primary first (readers then see the transaction rolled back). */
  private async rollback(cells: readonly BufferedWrite[], d: Deadline): Promise<void> {
    for (const w of cells) await casRow(this.deps.table(w.table), w.key, d, (st) => rollbackCell(st, this.startTs, this.deps.nowMs()));
  }
}

/** A stored row without Percolator's own fields (the observers' ack). */
function visible(r: Row | null | undefined): Row | undefined {
  if (!r) return undefined;
  if (r[ACK_FIELD] === undefined) return r;
  const { [ACK_FIELD]: _ack, ...rest } = r;
  return rest;
}
