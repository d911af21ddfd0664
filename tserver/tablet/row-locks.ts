/**
 * Row locks with leases and fencing tokens (docs/rows.md), HBase's pre-0.96 `lockRow` made safe:
 *
 * - The lock table lives in the TABLET LEADER's memory only, as HBase kept row locks in the region
 *   server: lockRow, renew and unlock write no Raft entry. A leader change, a restart or a split ends
 *   every lock; writes that still carry one are FENCED.
 * - A lock's fencing token is `epoch × 2^32 + n`: `n` counts the leader's grants, `epoch` is the
 *   tablet's epoch base (tablet meta; a split child's is above its parent's, see childEpochBase) plus
 *   the leader's Raft term. A leader grants only once it is ready — its own first entry of the term
 *   applied — so the tokens of a row grow strictly across leaders and splits.
 * - A lease ends at the grant's (or last renewal's) hybrid time + its lease, judged at each write's own
 *   hybrid time.
 * - The leader checks every write of a row under that row's in-memory lock (LockTable), against the
 *   write's own hybrid time: a write carrying the row's live lock (id and token) goes on, one carrying
 *   any other lock is FENCED (expired, released, superseded, or granted by an earlier leader), one
 *   carrying none is ROW_LOCKED — or waits, when its caller asked, holding no lock: a waiter is a
 *   promise and a timer, at most ROW_LOCK_WAITERS_MAX per tablet and never past its caller's
 *   deadline, so stalled lock holders cannot starve the tserver the way blocked handler threads
 *   starved an HBase region server.
 * Why no write of an ended lock can commit after a new leader's grant: docs/rows.md ("Fencing").
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../../common/errors';
import { htAddMicros, htPhysicalMicros, type HybridTime } from '../../common/hybrid-time';
import type { DocKey } from '../../docdb';
import { docKeyString, type TabletOp } from './tablet-op';

export type RowLockOp = Extract<TabletOp, { type: 'ROW_LOCK' }>;

/** A lock a write carries: the id lockRow answered and its fencing token. */
export interface HeldLock {
  lockId: string;
  token: number;
}

export interface RowLockEntry {
  key: DocKey;
  lockId: string;
  holder: string;
  /** Fencing token: epoch × 2^32 + the leader's grant count. */
  token: number;
  grantedHt: HybridTime;
  expiresHt: HybridTime;
}

/** Live locks one tablet holds at most: lockRow beyond it answers BACKPRESSURE. */
export const ROW_LOCKS_MAX = 100_000;
/** Writers waiting for locked rows in one tablet at most: more answer ROW_LOCKED at once. */
export const ROW_LOCK_WAITERS_MAX = 1000;
/** A waiting writer looks again at least this often (a lease that runs out wakes nobody). */
const ROW_LOCK_POLL_MS = 1000;
/** A waiter stops this long before its caller's deadline (the write still has to be replicated). */
const WAIT_MARGIN_MS = 100;
export const LOCK_ID_BYTES_MAX = 64;
export const HOLDER_BYTES_MAX = 128;
export const ROW_LOCK_LEASE_MS_MAX = 3_600_000;
/** Tokens are epoch × 2^32 + n, exact in a double while the epoch stays below 2^21. */
export const TOKEN_EPOCH_FACTOR = 2 ** 32;
export const TOKEN_EPOCH_MAX = 2 ** 21 - 1;

/**
 * What row-locks.json and a snapshot descriptor hold: since locks are leader-only, no lock — only
 * the epoch base, so a replica made by remote bootstrap (whose meta may lack it) keeps its tablet's
 * epochs. `locks` is read and ignored (images of the replicated lock table, before).
 */
export interface RowLockImage {
  index: number;
  locks: unknown[];
  epochBase?: number;
}

/** Where the current fencing epoch comes from (bound by the tablet, see bindEpoch). */
export interface RowLockEpochSource {
  /** The epoch base the tablet meta records (0 when absent). */
  metaBase(): number;
  /** The Raft term while this replica is a READY leader (its own-term entry applied); else undefined. */
  readyLeaderTerm(): number | undefined;
}

/** ROW_LOCKED for a row (the writer may wait for it). */
export class RowLocked extends DbError {
  constructor(
    tabletId: string,
    readonly rowKey: string,
    readonly lock: RowLockEntry,
    atHt: HybridTime,
  ) {
    super(ErrorCode.ROW_LOCKED, `tablet ${tabletId}: the row is locked by ${lock.holder || 'another holder'} (token ${lock.token}, lease left ${leaseLeftMs(lock, atHt)} ms)`, { tabletId, token: lock.token, holder: lock.holder, leaseLeftMs: leaseLeftMs(lock, atHt) });
  }
}

export function leaseLeftMs(l: RowLockEntry, atHt: HybridTime): number {
  const us = htPhysicalMicros(l.expiresHt) - htPhysicalMicros(atHt);
  return us <= 0n ? 0 : Math.ceil(Number(us) / 1000);
}

export class RowLockTable {
  private readonly byKey = new Map<string, RowLockEntry>();
  /** Highest log index whose ROW_LOCK entry (an older log's) or image this replica has seen. */
  appliedIndex = 0;
  private readonly waiters = new Map<string, Set<() => void>>();
  private waiting = 0;
  /** The epoch the locks in byKey were granted in (0: none). */
  private epoch = 0;
  /** Grants in `epoch` so far (the low part of the tokens). */
  private granted = 0;
  /** The epoch base an image brought (remote bootstrap; a meta may lack it). */
  private restoredBase = 0;
  private source: RowLockEpochSource = { metaBase: () => 0, readyLeaderTerm: () => undefined };
  /** The epoch of the SPLIT entry this replica applied (childEpochBase). */
  private splitEpoch: number | undefined;
  readonly metrics = { granted: 0, renewed: 0, released: 0, expired: 0, endedByLeaderChange: 0, rejectedLocked: 0, rejectedFenced: 0, waits: 0, waitsTimedOut: 0, unlocksAfterWrite: 0 };

  bindEpoch(source: RowLockEpochSource): void {
    this.source = source;
  }

  private base(): number {
    return Math.max(this.source.metaBase(), this.restoredBase);
  }

  /**
   * The current fencing epoch, ending every lock of another one (a leader change, or no longer the
   * ready leader: then undefined and the table is empty).
   */
  private sync(): number | undefined {
    const term = this.source.readyLeaderTerm();
    const epoch = term === undefined ? 0 : this.base() + term;
    if (epoch !== this.epoch) {
      this.metrics.endedByLeaderChange += this.byKey.size;
      this.byKey.clear();
      for (const k of [...this.waiters.keys()]) this.wake(k);
      this.epoch = epoch;
      this.granted = 0;
    }
    return term === undefined ? undefined : epoch;
  }

  /**
   * Every replica, for each ROW_LOCK entry of a log written while locks were replicated: those locks
   * ended with their leader, nothing to do.
   */
  apply(_op: RowLockOp, index: number): void {
    if (index > this.appliedIndex) this.appliedIndex = index;
  }

  /**
   * A SPLIT entry of term `term` is being applied: a child's epoch base is this tablet's epoch in that
   * term. Every lock of this tablet was granted in a term ≤ `term` (a later leader is ready only after
   * applying SPLIT, and a split tablet serves nothing), and a child's terms start at 1, so the child's
   * epochs are above every epoch here. Deterministic: the same entry, the same meta, on every replica.
   */
  noteSplit(term: number): void {
    this.splitEpoch = this.base() + term;
  }

  /** The epoch base of the children of the SPLIT just applied (split-apply.ts). */
  childEpochBase(): number {
    return this.splitEpoch ?? this.base();
  }

  /** A new lock of this leader (the caller checked the row is free, under its latch). */
  grant(key: DocKey, rowKey: string, o: { lockId: string; holder: string; ht: HybridTime; leaseMs: number }, tabletId: string): RowLockEntry {
    const epoch = this.sync();
    if (epoch === undefined) throw new DbError(ErrorCode.LEADER_NOT_READY, `tablet ${tabletId}: not the ready leader; no row lock granted`, { tabletId });
    if (epoch > TOKEN_EPOCH_MAX || this.granted + 1 >= TOKEN_EPOCH_FACTOR) throw new DbError(ErrorCode.SERVICE_UNAVAILABLE, `tablet ${tabletId}: fencing tokens of epoch ${epoch} are used up; a new leader term starts a new epoch`, { tabletId, epoch });
    if (this.byKey.size >= ROW_LOCKS_MAX) throw new DbError(ErrorCode.BACKPRESSURE, `tablet ${tabletId} holds ${this.byKey.size} row locks; at most ${ROW_LOCKS_MAX}`);
    this.granted++;
    const l: RowLockEntry = { key, lockId: o.lockId, holder: o.holder, token: epoch * TOKEN_EPOCH_FACTOR + this.granted, grantedHt: o.ht, expiresHt: htAddMicros(o.ht, o.leaseMs * 1000) };
    this.byKey.set(rowKey, l);
    this.metrics.granted++;
    return l;
  }

  renew(l: RowLockEntry, atHt: HybridTime, leaseMs: number): void {
    l.expiresHt = htAddMicros(atHt, leaseMs * 1000);
    this.metrics.renewed++;
  }

  /** Release the row's lock if it is still `lockId`'s. */
  release(rowKey: string, lockId: string): boolean {
    const cur = this.byKey.get(rowKey);
    if (cur?.lockId !== lockId) return false;
    this.byKey.delete(rowKey);
    this.metrics.released++;
    this.wake(rowKey);
    return true;
  }

  /** Forget a lock whose lease ended at or before `atHt`. */
  private expire(rowKey: string, l: RowLockEntry, atHt: HybridTime): boolean {
    if (l.expiresHt > atHt) return false;
    this.byKey.delete(rowKey);
    this.metrics.expired++;
    this.wake(rowKey);
    return true;
  }

  /** The row's lock if it is of the current leader and its lease still runs at `atHt`. */
  live(rowKey: string, atHt: HybridTime): RowLockEntry | undefined {
    this.sync();
    const l = this.byKey.get(rowKey);
    return l && !this.expire(rowKey, l, atHt) ? l : undefined;
  }

  /** Locks whose lease still runs at `atHt`, oldest token first (console; none unless the ready leader). */
  list(atHt: HybridTime): RowLockEntry[] {
    this.sync();
    return [...this.byKey.values()].filter((l) => l.expiresHt > atHt).sort((a, b) => a.token - b.token);
  }

  size(): number {
    this.sync();
    return this.byKey.size;
  }

  waitingNow(): number {
    return this.waiting;
  }

  /**
   * Leader, under the rows' LockTable locks, at the write's hybrid time: throws ROW_LOCKED (a
   * RowLocked) for a row locked by someone else, FENCED for a carried lock that is not the row's
   * live lock. `held[i]` is the lock carried for `keys[i]`.
   */
  check(tabletId: string, keys: readonly DocKey[], held: ReadonlyArray<HeldLock | undefined> | undefined, atHt: HybridTime): void {
    this.sync();
    if (this.byKey.size === 0 && !held?.some((h) => h)) return;
    keys.forEach((key, i) => {
      const k = docKeyString(key);
      const cur = this.live(k, atHt);
      const h = held?.[i];
      if (h) {
        if (cur && cur.lockId === h.lockId && cur.token === h.token) return;
        this.metrics.rejectedFenced++;
        const why = !cur ? 'its lease ran out, it was released, or its leader changed' : cur.lockId === h.lockId ? `the lock's token is ${cur.token}` : `a newer lock (token ${cur.token}) holds the row`;
        throw new DbError(ErrorCode.FENCED, `tablet ${tabletId}: the write carries lock ${h.lockId} with token ${h.token}, which no longer holds the row: ${why}`, { tabletId, lockId: h.lockId, token: h.token, currentToken: cur?.token ?? null });
      }
      if (cur) {
        this.metrics.rejectedLocked++;
        throw new RowLocked(tabletId, k, cur, atHt);
      }
    });
  }

  /**
   * Leader, right after check() passed at `atHt`: the locks the write releases once it committed
   * (`unlockAfter[i]`) — release them with releaseAfterWrite, under the rows' latches still, so the
   * next writer of the row finds it free. A write that does not commit releases nothing: its lock
   * holds until unlocked or its lease runs out.
   */
  unlocksAfter(keys: readonly DocKey[], held: ReadonlyArray<HeldLock | undefined> | undefined, unlockAfter: readonly boolean[] | undefined, atHt: HybridTime): Array<{ rowKey: string; lockId: string }> {
    const out: Array<{ rowKey: string; lockId: string }> = [];
    keys.forEach((key, i) => {
      const h = held?.[i];
      if (!h || unlockAfter?.[i] !== true) return;
      const rowKey = docKeyString(key);
      if (this.live(rowKey, atHt)?.lockId === h.lockId) out.push({ rowKey, lockId: h.lockId });
    });
    return out;
  }

  releaseAfterWrite(unlocks: ReadonlyArray<{ rowKey: string; lockId: string }>): void {
    for (const u of unlocks) if (this.release(u.rowKey, u.lockId)) this.metrics.unlocksAfterWrite++;
  }

  /**
   * Run `attempt`; when it meets a locked row and `wait` is set, wait (holding nothing) until the
   * row is unlocked, its lease may have run out, or the deadline nears, and try again.
   */
  async waitingForLocks<T>(wait: boolean, deadlineMonoMs: number, nowHt: () => HybridTime, attempt: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await attempt();
      } catch (e) {
        if (!(e instanceof RowLocked) || !wait) throw e;
        const left = deadlineMonoMs - performance.now() - WAIT_MARGIN_MS;
        if (left <= 0 || !(await this.waitFor(e.rowKey, Math.min(left, leaseLeftMs(e.lock, nowHt()) + 1, ROW_LOCK_POLL_MS)))) {
          this.metrics.waitsTimedOut++;
          throw e;
        }
      }
    }
  }

  /** Wait until `rowKey` is unlocked here or `ms` pass; false (no wait) when the waiters are full. */
  private async waitFor(rowKey: string, ms: number): Promise<boolean> {
    if (this.waiting >= ROW_LOCK_WAITERS_MAX) return false;
    this.waiting++;
    this.metrics.waits++;
    let set = this.waiters.get(rowKey);
    if (!set) this.waiters.set(rowKey, (set = new Set()));
    let wake!: () => void;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve) => {
        wake = resolve;
        set.add(resolve);
        timer = setTimeout(resolve, Math.max(1, ms));
      });
    } finally {
      clearTimeout(timer);
      this.waiting--;
      set.delete(wake);
      if (set.size === 0 && this.waiters.get(rowKey) === set) this.waiters.delete(rowKey);
    }
    return true;
  }

  private wake(rowKey: string): void {
    const s = this.waiters.get(rowKey);
    if (!s) return;
    this.waiters.delete(rowKey);
    for (const w of s) w();
  }

  /** No lock (they are the leader's alone): the epoch base, for a replica that starts from it. */
  image(): RowLockImage {
    return { index: this.appliedIndex, locks: [], epochBase: this.base() };
  }

  /** Start, remote bootstrap: no lock survives; the epoch base never goes down. */
  restore(img: RowLockImage): void {
    this.byKey.clear();
    this.restoredBase = Math.max(this.restoredBase, img.epochBase ?? 0);
    this.appliedIndex = img.index;
  }
}

/** An image read from disk or a descriptor (untrusted shape): CORRUPTION when it is not one. */
export function parseRowLockImage(v: unknown): RowLockImage {
  const bad = (why: string): DbError => new DbError(ErrorCode.CORRUPTION, `row lock image: ${why}`);
  const x = v as { index?: unknown; locks?: unknown; epochBase?: unknown };
  if (typeof x !== 'object' || x === null || !Number.isSafeInteger(x.index) || !Array.isArray(x.locks)) throw bad('no index or locks');
  if (x.epochBase !== undefined && (!Number.isSafeInteger(x.epochBase) || (x.epochBase as number) < 0 || (x.epochBase as number) > TOKEN_EPOCH_MAX)) throw bad('bad epoch base');
  return { index: x.index as number, locks: [], ...(x.epochBase !== undefined ? { epochBase: x.epochBase as number } : {}) };
}

/** What the leader's lock operations need from the tablet. */
export interface RowLockOpsDeps {
  tabletId: string;
  table: RowLockTable;
  /** NOT_THE_LEADER / LEADER_NOT_READY / not serving. */
  checkServing(): void;
  /** The rows' in-memory write locks (LockTable): a grant or release never lands inside a write of the row. */
  acquire(rowKeys: string[]): Promise<() => void>;
  /**
   * Settle other transactions' provisional records on the row as a plain write does (committed ones
   * order before, pending ones are aborted): a transaction cannot commit a write into a row locked
   * after it wrote.
   */
  settleIntents(key: DocKey): Promise<void>;
  /** A fresh hybrid time above every earlier write's. */
  nextHt(): HybridTime;
  now(): HybridTime;
}

export interface LockGrant {
  lockId: string;
  token: number;
  expiresHt: HybridTime;
  leaseMs: number;
}

/** Leader side of lockRow / renewRowLock / unlockRow: in the leader's memory, under the row's latch. */
export class RowLockOps {
  constructor(private readonly deps: RowLockOpsDeps) {}

  async lock(key: DocKey, o: { leaseMs: number; holder: string; lockId?: string; wait: boolean; deadlineMonoMs: number }): Promise<LockGrant> {
    checkLease(o.leaseMs);
    if (Buffer.byteLength(o.holder) > HOLDER_BYTES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `lock holder is longer than ${HOLDER_BYTES_MAX} bytes`);
    const lockId = o.lockId || randomBytes(12).toString('hex');
    checkLockId(lockId);
    const t = this.deps.table;
    return t.waitingForLocks(o.wait, o.deadlineMonoMs, () => this.deps.now(), async () => {
      this.deps.checkServing();
      const k = docKeyString(key);
      const release = await this.deps.acquire([k]);
      try {
        await this.deps.settleIntents(key);
        // Ready leader still (the latch or the intents may have waited across a leader change).
        this.deps.checkServing();
        const ht = this.deps.nextHt();
        const cur = t.live(k, ht);
        // A resent lockRow whose first copy took the lock: answer that lock.
        if (cur?.lockId === lockId) return grant(cur, o.leaseMs);
        if (cur) {
          t.metrics.rejectedLocked++;
          throw new RowLocked(this.deps.tabletId, k, cur, ht);
        }
        return grant(t.grant(key, k, { lockId, holder: o.holder, ht, leaseMs: o.leaseMs }, this.deps.tabletId), o.leaseMs);
      } finally {
        release();
      }
    });
  }

  async renew(key: DocKey, lockId: string, leaseMs: number): Promise<LockGrant> {
    checkLease(leaseMs);
    return this.held(key, lockId, 'renew', leaseMs);
  }

  async unlock(key: DocKey, lockId: string): Promise<LockGrant> {
    return this.held(key, lockId, 'unlock', 0);
  }

  private async held(key: DocKey, lockId: string, what: 'renew' | 'unlock', leaseMs: number): Promise<LockGrant> {
    this.deps.checkServing();
    checkLockId(lockId);
    const k = docKeyString(key);
    // Behind the row's writes in flight: an unlock answered means no write of the lock is pending here.
    const release = await this.deps.acquire([k]);
    try {
      this.deps.checkServing();
      const ht = this.deps.nextHt();
      const t = this.deps.table;
      const cur = t.live(k, ht);
      if (cur?.lockId !== lockId) {
        throw new DbError(ErrorCode.ROW_LOCK_NOT_HELD, `tablet ${this.deps.tabletId}: cannot ${what}: lock ${lockId} does not hold the row (${cur ? `lock token ${cur.token} of another holder does` : 'it is not locked: released, its lease ran out, or its leader changed'})`, { tabletId: this.deps.tabletId, lockId });
      }
      if (what === 'unlock') t.release(k, lockId);
      else t.renew(cur, ht, leaseMs);
      return { lockId, token: cur.token, expiresHt: what === 'unlock' ? ht : cur.expiresHt, leaseMs };
    } finally {
      release();
    }
  }
}

function grant(l: RowLockEntry, leaseMs: number): LockGrant {
  return { lockId: l.lockId, token: l.token, expiresHt: l.expiresHt, leaseMs };
}

function checkLease(leaseMs: number): void {
  if (!Number.isSafeInteger(leaseMs) || leaseMs < 1 || leaseMs > ROW_LOCK_LEASE_MS_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `lease_ms must be 1..${ROW_LOCK_LEASE_MS_MAX}, got ${leaseMs}`);
}

function checkLockId(id: string): void {
  if (id === '' || Buffer.byteLength(id) > LOCK_ID_BYTES_MAX) throw new DbError(ErrorCode.INVALID_ARGUMENT, `a lock id is 1 to ${LOCK_ID_BYTES_MAX} bytes`);
}
