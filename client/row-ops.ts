/**
 * The client side of atomic row operations and row locks (docs/rows.md): increment, append,
 * checkAndMutate, mutateRow, mutateRows (one tablet, one Raft entry) and lockRow / renewRowLock /
 * unlockRow. Each MutateRows goes as a retryable request (the invoker's client id and a request id,
 * the same on every attempt): a resent increment whose answer was lost is applied once, and its
 * copy answers the same new values.
 */
import { randomBytes } from 'node:crypto';
import { DbError, ErrorCode } from '../common/errors';
import { encodeDocKeyBytes } from '../common/partition-hash';
import { rowMethods, type CellMutationPB, type MutateRowsRequestPB, type MutateRowsResponsePB, type RowConditionPB, type RowLockResponsePB, type RowMutationPB } from '../rpc';
import type { DocKeyPB } from '../rpc';
import type { CallOptions, ColumnValue, Row } from './client-types';
import { tabletForRoute, type MetaCache, type RowRoute, type TableLocations } from './meta-cache';
import { Deadline } from './retry-policy';
import { LockPhases } from './lock-phases';
import { RowLockCoalescer } from './row-lock-coalescer';
import { RowOpsCoalescer } from './row-ops-coalescer';
import { withTableSchema } from './schema-retry';
import type { TabletInvoker } from './tablet-invoker';
import { valueFromPb, valueToPb, type TableSchema } from './table-schema';

/** EQ/NE/LT/GT compare a present cell (an absent cell fails them all); EXISTS/ABSENT test presence. */
export type RowCheckOp = 'EQ' | 'NE' | 'LT' | 'GT' | 'EXISTS' | 'ABSENT';

export interface RowCheck {
  column: string;
  op: RowCheckOp;
  value?: ColumnValue;
}

/** A lock lockRow granted: carry it in writes of its row (`lock` option) until unlockRow. */
export interface RowLock {
  table: string;
  key: Row;
  lockId: string;
  /** Fencing token: the Raft index of the lock's entry, strictly increasing per row. */
  token: bigint;
  /** Hybrid time at which the lease runs out unless renewed. */
  expiresHt: bigint;
  leaseMs: number;
}

/** What to do to one row, in this order: deleteRow, put, deleteColumns, increment, append. */
export interface RowMutationSpec {
  /** All must hold (on every row of the call) for anything to be written. */
  if?: RowCheck[];
  deleteRow?: boolean;
  /** Non-key columns to set (null deletes the cell). */
  put?: Row;
  deleteColumns?: string[];
  /** int64 columns: amount to add (absent counts as 0). */
  increment?: Record<string, bigint | number>;
  /** string/bytes columns: what to append (absent counts as empty). */
  append?: Record<string, string | Uint8Array>;
  /** The row lock this write carries. */
  lock?: RowLock;
  /** Release `lock` with this write: its unlock rides the write's Raft round (no unlockRow call). */
  unlockAfter?: boolean;
}

export interface RowOpOptions extends CallOptions {
  /** The row lock the write carries. */
  lock?: RowLock;
  /** Release `lock` with this write: its unlock rides the write's Raft round (no unlockRow call). */
  unlockAfter?: boolean;
  /** Wait (up to the deadline) for a row locked by someone else instead of failing ROW_LOCKED. */
  waitForLocks?: boolean;
}

export interface MutateRowsResult {
  applied: boolean;
  /** Per row: the new values of the columns its increments and appends changed. */
  results: Row[];
}

/** A plain write that met a transaction's intent and could not settle it wrote nothing: retry. */
const RETRY_CODES: ReadonlySet<string> = new Set([ErrorCode.TXN_CONFLICT]);

export interface RowOpsDeps {
  table: string;
  cache: MetaCache;
  invoker: TabletInvoker;
  defaultTimeoutMs: number;
  /** Coalesce calls to one tablet issued in the same turn into one request (the client's batchWrites). */
  coalesce?: boolean;
  /** Requests per tablet in flight at most (default ROW_REQUESTS_INFLIGHT_MAX; 0: no bound). */
  inflightMax?: number;
}

export class RowOps {
  private readonly coalescer: RowOpsCoalescer | undefined;
  private readonly lockCoalescer: RowLockCoalescer | undefined;

  constructor(private readonly deps: RowOpsDeps) {
    this.coalescer = deps.coalesce ? new RowOpsCoalescer(deps.invoker, RETRY_CODES, SPLIT_FATAL, undefined, deps.inflightMax) : undefined;
    this.lockCoalescer = deps.coalesce ? new RowLockCoalescer(deps.invoker, deps.table, undefined, deps.inflightMax) : undefined;
    // Lock calls and the writes carrying locks move in phases (client/lock-phases.ts).
    if (this.coalescer && this.lockCoalescer) {
      const phases = new LockPhases();
      this.coalescer.usePhases(phases);
      this.lockCoalescer.usePhases(phases);
    }
  }

  /** Coalesced requests sent and the calls they carried, row operations and lock calls together (tests, diagnostics). */
  coalescerStats(): { requests: number; calls: number } | undefined {
    if (!this.coalescer || !this.lockCoalescer) return undefined;
    return { requests: this.coalescer.stats.requests + this.lockCoalescer.stats.requests, calls: this.coalescer.stats.calls + this.lockCoalescer.stats.calls };
  }

  private deadline(o?: CallOptions): Deadline {
    return new Deadline(o?.timeoutMs ?? this.deps.defaultTimeoutMs);
  }

  private withSchema<T>(d: Deadline, f: (loc: TableLocations) => Promise<T>): Promise<T> {
    return withTableSchema(this.deps.cache, this.deps.table, d, f);
  }

  async mutateRows(rows: ReadonlyArray<{ key: Row } & RowMutationSpec>, o: RowOpOptions = {}): Promise<MutateRowsResult> {
    if (rows.length === 0) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'mutateRows needs at least one row');
    const d = this.deadline(o);
    return this.withSchema(d, async (loc) => {
      const s = loc.schema;
      // The call's `lock` goes with the row it locks.
      const lockKey = o.lock ? s.key(o.lock.key) : undefined;
      // Each row's key (its hash) is computed once: for its route and its mutations.
      const built = rows.map((r) => {
        const k = s.key(r.key);
        const route: RowRoute = { hash: k.hash, key: s.routeKey(k) };
        return { route, tabletId: tabletForRoute(loc, route)?.tabletId, pb: rowMutationPb(s, r.key, !r.lock && o.lock && sameRow(k, lockKey!) ? { ...r, lock: o.lock, ...(o.unlockAfter ? { unlockAfter: true } : {}) } : r, k) };
      });
      if ((o.unlockAfter && !o.lock) || built.some((b) => b.pb.unlockAfter && !b.pb.lockId)) throw new DbError(ErrorCode.INVALID_ARGUMENT, 'unlockAfter needs the lock the write carries');
      const tablets = new Set(built.map((b) => b.tabletId ?? `hash ${b.route.hash}`));
      if (tablets.size > 1) {
        throw new DbError(ErrorCode.CROSS_TABLET_MUTATION, `mutateRows on table ${this.deps.table}: the rows fall in ${tablets.size} tablets (${[...tablets].join(', ')}); it is atomic inside one tablet only`, { table: this.deps.table, tablets: [...tablets] });
      }
      const route = built[0]!.route;
      const pbs = built.map((b) => b.pb);
      const waitForLocks = o.waitForLocks === true;
      const tabletId = built[0]!.tabletId;
      const r =
        this.coalescer && !waitForLocks && tabletId
          ? await this.coalescer.call(this.deps.table, tabletId, route, s.version, pbs, d, (requestId) => this.call(route, s.version, pbs, false, d, requestId))
          : await this.call(route, s.version, pbs, waitForLocks, d);
      const results = (r.results ?? []).map((x) => Object.fromEntries((x.columns ?? []).map((c) => [s.byId.get(c.columnId ?? -1)?.name ?? String(c.columnId), valueFromPb(c.value)])) as Row);
      return { applied: r.applied === true, results };
    });
  }

  /** One call in its own request (`requestId`: resend that retryable request, which its caller took and ends). */
  private async call(route: RowRoute, schemaVersion: number, rows: RowMutationPB[], waitForLocks: boolean, d: Deadline, requestId?: number): Promise<MutateRowsResponsePB> {
    const inv = this.deps.invoker;
    const id = requestId ?? inv.requests.begin();
    try {
      const make = (t: { tabletId: string }): MutateRowsRequestPB => ({
        tabletId: t.tabletId,
        rows,
        schemaVersion,
        propagatedHt: inv.propagatedHt,
        clientId: inv.requests.clientId,
        requestId: BigInt(id),
        minRunningRequestId: BigInt(inv.requests.minRunning()),
        waitForLocks,
      });
      // Several rows: after a split they may span both children, so withSchema routes them again.
      const r = await inv.call(this.deps.table, route, rowMethods().mutateRows, make, d, true, SPLIT_FATAL, RETRY_CODES);
      inv.observeHt(r.propagatedHt);
      return r;
    } finally {
      if (requestId === undefined) inv.requests.end(id);
    }
  }

  async lockRow(key: Row, o: CallOptions & { leaseMs?: number; wait?: boolean; holder?: string } = {}): Promise<RowLock> {
    const d = this.deadline(o);
    const inv = this.deps.invoker;
    // Chosen here, kept by every attempt: a resent lockRow whose first copy took the lock answers it.
    const lockId = newLockId();
    return this.withSchema(d, async (loc) => {
      const k = loc.schema.key(key);
      const route = { hash: k.hash, key: loc.schema.routeKey(k) };
      const item = { key: loc.schema.keyPb(k), leaseMs: o.leaseMs ?? 0, holder: o.holder ?? inv.requests.clientId, lockId };
      const alone = (): Promise<RowLockResponsePB> => inv.call(this.deps.table, route, rowMethods().lockRow, (t) => ({ tabletId: t.tabletId, ...item, wait: o.wait === true, schemaVersion: loc.schema.version, propagatedHt: inv.propagatedHt }), d, true);
      const tabletId = tabletForRoute(loc, route)?.tabletId;
      const r = this.lockCoalescer && o.wait !== true && tabletId ? await this.lockCoalescer.lock(tabletId, route, loc.schema.version, item, d, alone) : await alone();
      return this.lockOf(key, r);
    });
  }

  async renewRowLock(lock: RowLock, o: CallOptions & { leaseMs?: number } = {}): Promise<RowLock> {
    return this.lockOf(lock.key, await this.heldLock(lock, 'RENEW', o.leaseMs ?? lock.leaseMs, this.deadline(o)));
  }

  async unlockRow(lock: RowLock, o: CallOptions = {}): Promise<void> {
    await this.heldLock(lock, 'UNLOCK', 0, this.deadline(o));
  }

  private heldLock(lock: RowLock, action: 'RENEW' | 'UNLOCK', leaseMs: number, d: Deadline): Promise<RowLockResponsePB> {
    const inv = this.deps.invoker;
    return this.withSchema(d, async (loc) => {
      const k = loc.schema.key(lock.key);
      const route = { hash: k.hash, key: loc.schema.routeKey(k) };
      const item = { key: loc.schema.keyPb(k), lockId: lock.lockId, action, leaseMs };
      // Not resent after an unknown outcome: a second UNLOCK of a released lock would answer ROW_LOCK_NOT_HELD.
      const alone = (): Promise<RowLockResponsePB> => inv.call(this.deps.table, route, rowMethods().rowLock, (t) => ({ tabletId: t.tabletId, ...item, schemaVersion: loc.schema.version, propagatedHt: inv.propagatedHt }), d, false);
      const tabletId = tabletForRoute(loc, route)?.tabletId;
      const r = this.lockCoalescer && tabletId ? await this.lockCoalescer.held(tabletId, route, loc.schema.version, item, d, alone) : await alone();
      inv.observeHt(r.propagatedHt);
      return r;
    });
  }

  private lockOf(key: Row, r: RowLockResponsePB): RowLock {
    this.deps.invoker.observeHt(r.propagatedHt);
    return { table: this.deps.table, key, lockId: r.lockId ?? '', token: BigInt(r.token ?? 0n), expiresHt: BigInt(r.expiresHt ?? 0n), leaseMs: r.leaseMs ?? 0 };
  }
}

type ComputedKey = ReturnType<TableSchema['key']>;

/** Whether two computed keys name one row: equal hashes, then equal encoded DocKeys (the encoding is canonical). */
export function sameRow(a: ComputedKey, b: ComputedKey): boolean {
  return a.hash === b.hash && Buffer.from(encodeDocKeyBytes(a.hash, a.hashed, a.range)).equals(encodeDocKeyBytes(b.hash, b.hashed, b.range));
}

/** Random bytes for lock ids, taken LOCK_ID_POOL_BYTES at a time (one CSPRNG call per ~340 lockRow calls, not one each). */
const LOCK_ID_BYTES = 12;
const LOCK_ID_POOL_BYTES = 4096;
let lockIdPool = Buffer.alloc(0);
let lockIdAt = 0;

/** A fresh lock id: 12 random bytes in hex, as unguessable as one randomBytes(12) call gives. */
function newLockId(): string {
  if (lockIdAt + LOCK_ID_BYTES > lockIdPool.length) {
    lockIdPool = randomBytes(LOCK_ID_POOL_BYTES);
    lockIdAt = 0;
  }
  lockIdAt += LOCK_ID_BYTES;
  return lockIdPool.toString('hex', lockIdAt - LOCK_ID_BYTES, lockIdAt);
}

function column(s: TableSchema, name: string): { id: number; type: string } {
  const c = s.byName.get(name);
  if (!c) throw new DbError(ErrorCode.INVALID_ARGUMENT, `table ${s.name} has no column ${name}`, { column: name, unknownColumn: true });
  return c;
}

/** One row's mutations on the wire, in the documented order (`k`: the row's key, when computed already). */
export function rowMutationPb(s: TableSchema, key: Row, m: RowMutationSpec, k: ReturnType<TableSchema['key']> = s.key(key)): RowMutationPB {
  const conditions: RowConditionPB[] = (m.if ?? []).map((c) => {
    const col = column(s, c.column);
    const withValue = c.op !== 'EXISTS' && c.op !== 'ABSENT';
    return { columnId: col.id, op: c.op, ...(withValue ? { value: valueToPb(s.value(s.byName.get(c.column)!, c.value)) } : {}) };
  });
  const mutations: CellMutationPB[] = [];
  if (m.deleteRow) mutations.push({ type: 'DELETE_ROW' });
  for (const [name, v] of Object.entries(m.put ?? {})) {
    if (s.isKey(name)) continue;
    mutations.push({ type: 'PUT', columnId: column(s, name).id, value: valueToPb(s.value(s.byName.get(name)!, v)) });
  }
  for (const name of m.deleteColumns ?? []) mutations.push({ type: 'PUT', columnId: column(s, name).id, value: {} });
  for (const [name, by] of Object.entries(m.increment ?? {})) {
    if (typeof by !== 'bigint' && !Number.isSafeInteger(by)) throw new DbError(ErrorCode.INVALID_ARGUMENT, `increment of ${name}: ${String(by)} is not an integer`);
    mutations.push({ type: 'INCREMENT', columnId: column(s, name).id, by: BigInt(by) });
  }
  for (const [name, v] of Object.entries(m.append ?? {})) mutations.push({ type: 'APPEND', columnId: column(s, name).id, value: valueToPb(v) });
  const out: RowMutationPB = { key: s.keyPb(k) as DocKeyPB, conditions, mutations };
  if (m.lock) {
    out.lockId = m.lock.lockId;
    out.lockToken = m.lock.token;
  }
  if (m.unlockAfter) out.unlockAfter = true; // without a lock: INVALID_ARGUMENT
  return out;
}

const SPLIT_FATAL: ReadonlySet<string> = new Set([ErrorCode.TABLET_SPLIT]);

