/**
 * Tablet splitting on the tserver (docs/splitting.md): which keys a tablet owns, the answer a split
 * parent gives, and the split point found from the data.
 *
 * A tablet owns the keys of its hash partition [start, end) and, for a range table, of its key
 * bounds [keyStart, keyEnd) on the encoded DocKey (common/key-bounds.ts).
 */
import { bytesOfHex, keyInBounds } from '../../common/key-bounds';
import { DbError, ErrorCode } from '../../common/errors';
import { encodeRowDocKey, type DocKey } from '../../docdb';
import type { SplitChildMeta, TabletMeta } from './tablet-meta';
import type { TabletOp } from './tablet-op';

export interface KeyRange {
  start: Uint8Array;
  end: Uint8Array;
}

/** The tablet's key bounds as bytes (empty = open). */
export function keyRangeOf(p: TabletMeta['partition']): KeyRange {
  return { start: bytesOfHex(p.keyStart), end: bytesOfHex(p.keyEnd) };
}

/** INVALID_ARGUMENT unless the row's key lies in the tablet's key bounds (a range table's tablet). */
export function checkKeyInRange(meta: TabletMeta, key: DocKey): void {
  const p = meta.partition;
  if (!p.keyStart && !p.keyEnd) return;
  const enc = encodeRowDocKey(key);
  if (!keyInBounds(enc, bytesOfHex(p.keyStart), bytesOfHex(p.keyEnd))) {
    throw new DbError(ErrorCode.INVALID_ARGUMENT, `key is outside tablet ${meta.tabletId}'s key range [${p.keyStart || '-inf'}, ${p.keyEnd || '+inf'})`, { tabletId: meta.tabletId });
  }
}

/**
 * Where the children of a split run, as the parent's replica that applied SPLIT knows it: the
 * replicas (the parent's, from the SPLIT entry) and, on the parent's leader, each child's leader.
 * Sent with TABLET_SPLIT so a client routes to a child without asking the master (docs/splitting.md).
 */
export interface SplitRoutes {
  replicas: ReadonlyArray<{ uuid: string; rpcAddress: string }>;
  /** child tablet id -> RPC address of its leader (absent: not known here). */
  leaders: Readonly<Record<string, string>>;
}

/** The error a split parent answers every request with: the client re-routes to a child. */
export function tabletSplitError(tabletId: string, children: readonly SplitChildMeta[], routes?: SplitRoutes): DbError {
  return new DbError(ErrorCode.TABLET_SPLIT, `tablet ${tabletId} was split into ${children.map((c) => c.tabletId).join(' and ')}`, {
    tabletId,
    children: children.map((c) => ({
      tabletId: c.tabletId,
      partition: c.partition,
      ...(routes ? { replicas: routes.replicas.map((r) => ({ uuid: r.uuid, rpcAddress: r.rpcAddress })) } : {}),
      ...(routes?.leaders[c.tabletId] ? { leaderHint: routes.leaders[c.tabletId] } : {}),
    })),
  });
}

/** What carries out a SPLIT entry (tserver/split-apply.ts; set by the tablet manager): the children's routes when it split. */
export type SplitHandler = (op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<SplitRoutes | void>;

/** Writes held at once while a SPLIT is in flight (more get TRY_AGAIN, as before holding existed). */
export const SPLIT_HELD_WRITES_MAX = 1000;
/** A write is held this long at most (and never past its caller's deadline), then TRY_AGAIN. */
export const SPLIT_HOLD_MAX_MS = 10_000;

/**
 * A replica's side of a split: the handler of its SPLIT entry, the leader's split in flight, and
 * the writes held until it applies.
 */
export class SplitGate {
  private handler: SplitHandler | undefined;
  /**
   * Set by the leader just before it proposes SPLIT: nothing more is proposed after it (check runs
   * right before every proposal), so the SPLIT entry is the parent's last.
   */
  private pendingTerm: number | undefined;
  /** Resolved when the pending SPLIT applied (or was found lost): the held writes go on. */
  private released: { promise: Promise<void>; resolve: () => void } | undefined;
  private heldCount = 0;
  private routes: SplitRoutes | undefined;

  setHandler(h: SplitHandler | undefined): void {
    this.handler = h;
  }

  markPending(term: number): void {
    this.pendingTerm = term;
    if (!this.released) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.released = { promise, resolve };
    }
  }

  /** The SPLIT entry is applied here (everything before it written and applied). */
  async apply(op: Extract<TabletOp, { type: 'SPLIT' }>, index: number): Promise<void> {
    try {
      const routes = await this.handler?.(op, index);
      if (routes) this.routes = routes;
    } finally {
      this.clearPending();
    }
  }

  /** The children's routes this replica knows (after it applied SPLIT here, until a restart). */
  splitRoutes(): SplitRoutes | undefined {
    return this.routes;
  }

  /**
   * A write that arrives while this leader's SPLIT is in flight waits for it (undefined: not
   * held), then goes on to check() — TABLET_SPLIT with the children's routes, so the client goes
   * straight to a child instead of sleeping a back-off on TRY_AGAIN. Bounded: SPLIT_HELD_WRITES_MAX
   * writes, SPLIT_HOLD_MAX_MS each and never past `deadlineMonoMs` (then TRY_AGAIN as before).
   */
  hold(meta: TabletMeta, term: () => number, deadlineMonoMs?: number): Promise<void> | undefined {
    if (meta.splitInto || this.pendingTerm === undefined || !this.released) return undefined;
    if (this.pendingTerm !== term()) {
      this.clearPending();
      return undefined;
    }
    const waitMs = Math.min(SPLIT_HOLD_MAX_MS, (deadlineMonoMs ?? Infinity) - performance.now());
    if (this.heldCount >= SPLIT_HELD_WRITES_MAX || !(waitMs > 0)) return undefined;
    this.heldCount++;
    const released = this.released.promise;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      void released.then(() => {
        clearTimeout(timer);
        resolve();
      });
    }).finally(() => this.heldCount--);
  }

  /** TABLET_SPLIT once split, TRY_AGAIN while this leader's SPLIT is in flight (`term`: the current one, asked only then). */
  check(meta: TabletMeta, term: () => number): void {
    if (meta.splitInto) throw tabletSplitError(meta.tabletId, meta.splitInto, this.routes);
    // A SPLIT proposed in an earlier term was applied before this leader became ready, or was lost.
    if (this.pendingTerm !== undefined && this.pendingTerm !== term()) this.clearPending();
    if (this.pendingTerm !== undefined) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${meta.tabletId} is being split`);
  }

  private clearPending(): void {
    this.pendingTerm = undefined;
    this.released?.resolve();
    this.released = undefined;
  }
}
