/**
 * The lock owner's liveness token (Percolator's Chubby token, with tessera's master-replicated row
 * locks as the lock service): each Percolator client holds a leased row lock on its own row of
 * `_pc_owners`, renewed in the background; its locks name it. Whoever meets a lock within its TTL
 * probes the owner's row: still locked → the owner is alive, wait; free → it died (or stalled past
 * its lease), roll it back now instead of waiting out the TTL. Safety never rests on this: the
 * commit point is the primary's single-row transaction, so a probe that is wrong only aborts.
 */
import { randomUUID } from 'node:crypto';
import { DbError, ErrorCode } from '../../common/errors';
import type { CallOptions, CreateTableOptions } from '../client-types';
import type { RowLock } from '../row-ops';
import type { Table } from '../table';

export const OWNERS_TABLE = '_pc_owners';
/** The owner row lock's lease; renewed every third of it. */
export const OWNER_LEASE_MS = 5_000;
/** How long a probe's answer about one owner is reused. */
const PROBE_CACHE_MS = 200;
const PROBES_CACHED_MAX = 1000;
/** After failing to take the liveness lock, begin() goes on without a token this long before trying again. */
const RETRY_AFTER_MS = 10_000;

export interface OwnerLeaseHost {
  table(name: string): Table;
  createTable(t: CreateTableOptions, o?: CallOptions): Promise<string>;
}

export class OwnerLease {
  readonly ownerId = randomUUID();
  private lock: RowLock | undefined;
  private timer: NodeJS.Timeout | undefined;
  private starting: Promise<void> | undefined;
  private closed = false;
  private retryAfterMs = 0;
  private readonly probes = new Map<string, { atMs: number; alive: boolean }>();

  constructor(private readonly host: OwnerLeaseHost) {}

  /**
   * This client's owner id once its liveness lock is held; undefined while it cannot be had (then
   * this client's locks carry no token and are judged by their TTL alone; tried again later).
   */
  async ensure(): Promise<string | undefined> {
    if (this.closed) return undefined;
    if (!this.starting) {
      if (performance.now() < this.retryAfterMs) return undefined;
      this.starting = this.start().catch(() => {
        this.starting = undefined;
        this.retryAfterMs = performance.now() + RETRY_AFTER_MS;
      });
    }
    await this.starting;
    return this.lock ? this.ownerId : undefined;
  }

  private async start(): Promise<void> {
    const spec: CreateTableOptions = { name: OWNERS_TABLE, columns: [{ name: 'id', type: 'string' }, { name: 'since_ms', type: 'int64' }], primaryKey: { hash: ['id'] }, numTablets: 1, ifNotExists: true };
    // The cluster's replication factor, or 1 on a cluster too small for it: the table only holds hints.
    await this.host.createTable(spec).catch(() => this.host.createTable({ ...spec, replicationFactor: 1 }));
    const lock = await this.host.table(OWNERS_TABLE).lockRow({ id: this.ownerId }, { leaseMs: OWNER_LEASE_MS, holder: `percolator ${this.ownerId}` });
    if (this.closed) {
      await this.host.table(OWNERS_TABLE).unlockRow(lock).catch(() => undefined);
      return;
    }
    this.lock = lock;
    this.timer = setInterval(() => {
      if (!this.lock) return;
      this.host
        .table(OWNERS_TABLE)
        .renewRowLock(this.lock, { leaseMs: OWNER_LEASE_MS })
        .then((l) => (this.lock = l))
        // A lost lease means others may already treat our locks as dead: our commits then abort at the primary.
        // Row locks end with their tablet's leader (docs/rows.md): take the token again, so this client is alive again.
        .catch((e: unknown) => (DbError.from(e).code === ErrorCode.ROW_LOCK_NOT_HELD ? this.retake() : undefined))
        .catch(() => undefined);
    }, OWNER_LEASE_MS / 3);
    this.timer.unref();
  }

  private async retake(): Promise<void> {
    const l = await this.host.table(OWNERS_TABLE).lockRow({ id: this.ownerId }, { leaseMs: OWNER_LEASE_MS, holder: `percolator ${this.ownerId}` });
    if (this.closed) await this.host.table(OWNERS_TABLE).unlockRow(l).catch(() => undefined);
    else this.lock = l;
  }

  /** Whether `owner` still holds its liveness lock (true when that cannot be told: wait rather than guess). */
  async alive(owner: string): Promise<boolean> {
    if (owner === this.ownerId) return !this.closed;
    const c = this.probes.get(owner);
    const now = performance.now();
    if (c && now - c.atMs < PROBE_CACHE_MS) return c.alive;
    let alive = true;
    const t = this.host.table(OWNERS_TABLE);
    try {
      const l = await t.lockRow({ id: owner }, { leaseMs: 1_000, holder: `percolator probe from ${this.ownerId}` });
      alive = false;
      await t.unlockRow(l).catch(() => undefined);
    } catch (e) {
      // ROW_LOCKED: the owner holds it. Anything else: cannot tell, so wait for the TTL rather than guess.
      alive = true;
      void DbError.from(e);
    }
    if (this.probes.size >= PROBES_CACHED_MAX) this.probes.clear();
    this.probes.set(owner, { atMs: now, alive });
    return alive;
  }

  /**
   * Lab only: stop as a crashed client would — no more renewals and no unlock, so the liveness lock
   * stays until its lease runs out (OWNER_LEASE_MS at most), and this client's locks left behind are
   * then judged dead by whoever meets them.
   */
  TEST_crash(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.lock = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const l = this.lock;
    this.lock = undefined;
    if (l) await this.host.table(OWNERS_TABLE).unlockRow(l, { timeoutMs: 2_000 }).catch(() => undefined);
  }
}
