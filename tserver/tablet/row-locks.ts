/**
 * Row locks with leases and fencing tokens (docs/rows.md), HBase's pre-0.96 `lockRow` made safe:
 *
 * - The lock table is REPLICATED state: ROW_LOCK entries (lock, renew, unlock) are applied by every
 *   replica in log order, so a new leader holds exactly the locks its predecessor granted, and a
 *   restart or remote bootstrap rebuilds them (image + log, see RowLockImage).
 * - A lock's fencing token is the Raft index of its LOCK entry: strictly increasing for a row (for
 *   the whole tablet, in fact), whatever leader granted it.
 * - A lease ends at the LOCK (or last RENEW) entry's hybrid time + its lease: expiry is a comparison
 *   of hybrid times, the same on every replica; no entry is needed to end a lock.
 * - The leader checks every write of a row under that row's in-memory lock (LockTable), against the
 *   write's own hybrid time: a write carrying the row's live lock (id and token) goes on, one carrying
 *   any other lock is FENCED (expired, released or superseded), one carrying none is ROW_LOCKED — or
 *   waits, when its caller asked, holding no lock: a waiter is a promise and a timer, at most
 *   ROW_LOCK_WAITERS_MAX per tablet and never past its caller's deadline, so stalled lock holders
 *   cannot starve the tserver the way blocked handler threads starved an HBase region server.
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../../common/errors';
import { htAddMicros, htPhysicalMicros, type HybridTime } from '../../common/hybrid-time';
import type { DocKey } from '../../docdb';
import { decodeTabletOp, docKeyString, encodeTabletOp, RowLockAction, type TabletOp } from './tablet-op';

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
  /** Raft index of the LOCK entry. */
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

/** What retryable.json's sibling row-locks.json and a snapshot descriptor hold. */
export interface RowLockImage {
  /** Raft index up to which the image has applied ROW_LOCK entries. */
  index: number;
  /** Each lock as its LOCK entry (base64 of the tablet op) plus what the entry alone does not say. */
  locks: Array<{ op: string; token: number; expiresHt: string }>;
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
  /** ROW_LOCK entries at or below this index are in the table (a replay after an image skips them). */
  appliedIndex = 0;
  private readonly waiters = new Map<string, Set<() => void>>();
  private waiting = 0;
  readonly metrics = { granted: 0, renewed: 0, released: 0, expired: 0, lostRaces: 0, rejectedLocked: 0, rejectedFenced: 0, waits: 0, waitsTimedOut: 0, unlocksAfterWrite: 0, unlocksAfterWriteLost: 0 };

  /** Every replica, for each ROW_LOCK entry in log order. */
  apply(op: RowLockOp, index: number): void {
    if (index <= this.appliedIndex) return;
    this.appliedIndex = index;
    this.prune(op.ht);
    const k = docKeyString(op.key);
    const cur = this.live(k, op.ht);
    switch (op.action) {
      case RowLockAction.LOCK:
        if (cur) {
          // A second LOCK of the same lock (a resent lockRow) changes nothing; of another one, the
          // leader saw the row free while this entry was under way elsewhere: not granted.
          if (cur.lockId !== op.lockId) this.metrics.lostRaces++;
          return;
        }
        this.byKey.set(k, { key: op.key, lockId: op.lockId, holder: op.holder, token: index, grantedHt: op.ht, expiresHt: htAddMicros(op.ht, op.leaseMs * 1000) });
        this.metrics.granted++;
        return;
      case RowLockAction.RENEW:
        if (cur?.lockId === op.lockId) {
          cur.expiresHt = htAddMicros(op.ht, op.leaseMs * 1000);
          this.metrics.renewed++;
        }
        return;
      case RowLockAction.UNLOCK:
        if (cur?.lockId === op.lockId) {
          this.byKey.delete(k);
          this.metrics.released++;
          this.wake(k);
        }
        return;
    }
  }

  /** Forget locks whose lease ended at or before `atHt` (deterministic: called with entry times). */
  private prune(atHt: HybridTime): void {
    for (const [k, l] of this.byKey) {
      if (l.expiresHt > atHt) continue;
      this.byKey.delete(k);
      this.metrics.expired++;
      this.wake(k);
    }
  }

  /** The row's lock if its lease still runs at `atHt`. */
  live(rowKey: string, atHt: HybridTime): RowLockEntry | undefined {
    const l = this.byKey.get(rowKey);
    return l && l.expiresHt > atHt ? l : undefined;
  }

  /** Locks whose lease still runs at `atHt`, oldest token first (console). */
  list(atHt: HybridTime): RowLockEntry[] {
    return [...this.byKey.values()].filter((l) => l.expiresHt > atHt).sort((a, b) => a.token - b.token);
  }

  size(): number {
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
    if (this.byKey.size === 0 && !held?.some((h) => h)) return;
    keys.forEach((key, i) => {
      const k = docKeyString(key);
      const cur = this.live(k, atHt);
      const h = held?.[i];
      if (h) {
        if (cur && cur.lockId === h.lockId && cur.token === h.token) return;
        this.metrics.rejectedFenced++;
        const why = !cur ? 'its lease ran out or it was released' : cur.lockId === h.lockId ? `the lock's token is ${cur.token}` : `a newer lock (token ${cur.token}) holds the row`;
        throw new DbError(ErrorCode.FENCED, `tablet ${tabletId}: the write carries lock ${h.lockId} with token ${h.token}, which no longer holds the row: ${why}`, { tabletId, lockId: h.lockId, token: h.token, currentToken: cur?.token ?? null });
      }
      if (cur) {
        this.metrics.rejectedLocked++;
        throw new RowLocked(tabletId, k, cur, atHt);
      }
    });
  }

  /**
   * Leader, right after check() passed at `atHt` and the write's entry was proposed: the UNLOCK
   * entries of the rows whose carried lock the write releases (`unlockAfter[i]`), each at a fresh
   * hybrid time above the write's. They follow the write in the log, so the write is applied while
   * the lock holds, and an unlock never commits without the write before it.
   */
  unlocksAfter(keys: readonly DocKey[], held: ReadonlyArray<HeldLock | undefined> | undefined, unlockAfter: readonly boolean[] | undefined, atHt: HybridTime, nextHt: () => HybridTime): RowLockOp[] {
    const out: RowLockOp[] = [];
    keys.forEach((key, i) => {
      const h = held?.[i];
      if (!h || unlockAfter?.[i] !== true) return;
      const cur = this.live(docKeyString(key), atHt);
      if (cur?.lockId !== h.lockId) return; // check() would have thrown FENCED
      out.push({ type: 'ROW_LOCK', action: RowLockAction.UNLOCK, ht: nextHt(), key, lockId: h.lockId, holder: cur.holder, leaseMs: 0 });
    });
    this.metrics.unlocksAfterWrite += out.length;
    return out;
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

  image(): RowLockImage {
    return {
      index: this.appliedIndex,
      locks: [...this.byKey.values()].map((l) => ({
        op: Buffer.from(encodeTabletOp({ type: 'ROW_LOCK', action: RowLockAction.LOCK, ht: l.grantedHt, key: l.key, lockId: l.lockId, holder: l.holder, leaseMs: 0 })).toString('base64'),
        token: l.token,
        expiresHt: l.expiresHt.toString(),
      })),
    };
  }

  /** Replace the table with an image (start, remote bootstrap). */
  restore(img: RowLockImage): void {
    this.byKey.clear();
    for (const x of img.locks) {
      const op = decodeTabletOp(Buffer.from(x.op, 'base64'));
      if (op.type !== 'ROW_LOCK') throw new DbError(ErrorCode.CORRUPTION, 'row lock image: an entry is not a ROW_LOCK');
      this.byKey.set(docKeyString(op.key), { key: op.key, lockId: op.lockId, holder: op.holder, token: x.token, grantedHt: op.ht, expiresHt: BigInt(x.expiresHt) });
    }
    this.appliedIndex = img.index;
  }
}

/** An image read from disk or a descriptor (untrusted shape): CORRUPTION when it is not one. */
export function parseRowLockImage(v: unknown): RowLockImage {
  const bad = (why: string): DbError => new DbError(ErrorCode.CORRUPTION, `row lock image: ${why}`);
  const x = v as { index?: unknown; locks?: unknown };
  if (typeof x !== 'object' || x === null || !Number.isSafeInteger(x.index) || !Array.isArray(x.locks)) throw bad('no index or locks');
  const locks: RowLockImage['locks'] = [];
  for (const l of x.locks as unknown[]) {
    const y = l as { op?: unknown; token?: unknown; expiresHt?: unknown };
    if (typeof y.op !== 'string' || !Number.isSafeInteger(y.token) || typeof y.expiresHt !== 'string' || !/^\d+$/.test(y.expiresHt)) throw bad('bad lock entry');
    locks.push({ op: y.op, token: y.token as number, expiresHt: y.expiresHt });
  }
  return { index: x.index as number, locks };
}

/** What the leader's lock operations need from the tablet. */
export interface RowLockOpsDeps {
  tabletId: string;
  table: RowLockTable;
  /** NOT_THE_LEADER / LEADER_NOT_READY / not serving. */
  checkServing(): void;
  /** The rows' in-memory write locks (LockTable): a lock entry and the rows' writes never interleave. */
  acquire(rowKeys: string[]): Promise<() => void>;
  /**
   * Settle other transactions' provisional records on the row as a plain write does (committed ones
   * order before, pending ones are aborted): a transaction cannot commit a write into a row locked
   * after it wrote.
   */
  settleIntents(key: DocKey): Promise<void>;
  /** A fresh hybrid time above every earlier entry's. */
  nextHt(): HybridTime;
  now(): HybridTime;
  /** Replicate and apply here (bounded by the tablet's write timeout). */
  propose(op: RowLockOp): Promise<void>;
}

export interface LockGrant {
  lockId: string;
  token: number;
  expiresHt: HybridTime;
  leaseMs: number;
}

/** Leader side of lockRow / renewRowLock / unlockRow: check under the row's lock, then one entry. */
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
        const ht = this.deps.nextHt();
        const cur = t.live(k, ht);
        // A resent lockRow whose first copy took the lock: answer that lock.
        if (cur?.lockId === lockId) return grant(cur, o.leaseMs);
        if (cur) {
          t.metrics.rejectedLocked++;
          throw new RowLocked(this.deps.tabletId, k, cur, ht);
        }
        if (t.size() >= ROW_LOCKS_MAX) throw new DbError(ErrorCode.BACKPRESSURE, `tablet ${this.deps.tabletId} holds ${t.size()} row locks; at most ${ROW_LOCKS_MAX}`);
        await this.deps.propose({ type: 'ROW_LOCK', action: RowLockAction.LOCK, ht, key, lockId, holder: o.holder, leaseMs: o.leaseMs });
        const got = t.live(k, ht);
        if (got?.lockId !== lockId) throw new DbError(ErrorCode.ROW_LOCKED, `tablet ${this.deps.tabletId}: the row was locked by another holder first`, { tabletId: this.deps.tabletId });
        return grant(got, o.leaseMs);
      } finally {
        release();
      }
    });
  }

  async renew(key: DocKey, lockId: string, leaseMs: number): Promise<LockGrant> {
    checkLease(leaseMs);
    return this.held(key, lockId, RowLockAction.RENEW, leaseMs);
  }

  async unlock(key: DocKey, lockId: string): Promise<LockGrant> {
    return this.held(key, lockId, RowLockAction.UNLOCK, 0);
  }

  private async held(key: DocKey, lockId: string, action: RowLockAction, leaseMs: number): Promise<LockGrant> {
    this.deps.checkServing();
    checkLockId(lockId);
    const k = docKeyString(key);
    const release = await this.deps.acquire([k]);
    try {
      const ht = this.deps.nextHt();
      const cur = this.deps.table.live(k, ht);
      if (cur?.lockId !== lockId) {
        const what = action === RowLockAction.UNLOCK ? 'unlock' : 'renew';
        throw new DbError(ErrorCode.ROW_LOCK_NOT_HELD, `tablet ${this.deps.tabletId}: cannot ${what}: lock ${lockId} does not hold the row (${cur ? `lock token ${cur.token} of another holder does` : 'it is not locked: released, or its lease ran out'})`, { tabletId: this.deps.tabletId, lockId });
      }
      const token = cur.token;
      await this.deps.propose({ type: 'ROW_LOCK', action, ht, key, lockId, holder: cur.holder, leaseMs });
      return { lockId, token, expiresHt: action === RowLockAction.UNLOCK ? ht : cur.expiresHt, leaseMs };
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
