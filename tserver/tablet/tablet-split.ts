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

/** The error a split parent answers every request with: the client re-routes to a child. */
export function tabletSplitError(tabletId: string, children: readonly SplitChildMeta[]): DbError {
  return new DbError(ErrorCode.TABLET_SPLIT, `tablet ${tabletId} was split into ${children.map((c) => c.tabletId).join(' and ')}`, {
    tabletId,
    children: children.map((c) => ({ tabletId: c.tabletId, partition: c.partition })),
  });
}

/** What carries out a SPLIT entry (tserver/split-apply.ts; set by the tablet manager). */
export type SplitHandler = (op: Extract<TabletOp, { type: 'SPLIT' }>, index: number) => Promise<void>;

/** A replica's side of a split: the handler of its SPLIT entry, and the leader's split in flight. */
export class SplitGate {
  private handler: SplitHandler | undefined;
  /**
   * Set by the leader just before it proposes SPLIT: nothing more is proposed after it (check runs
   * right before every proposal), so the SPLIT entry is the parent's last.
   */
  private pendingTerm: number | undefined;

  setHandler(h: SplitHandler | undefined): void {
    this.handler = h;
  }

  markPending(term: number): void {
    this.pendingTerm = term;
  }

  /** The SPLIT entry is applied here (everything before it written and applied). */
  async apply(op: Extract<TabletOp, { type: 'SPLIT' }>, index: number): Promise<void> {
    await this.handler?.(op, index);
    this.pendingTerm = undefined;
  }

  /** TABLET_SPLIT once split, TRY_AGAIN while this leader's SPLIT is in flight (`term`: the current one, asked only then). */
  check(meta: TabletMeta, term: () => number): void {
    if (meta.splitInto) throw tabletSplitError(meta.tabletId, meta.splitInto);
    // A SPLIT proposed in an earlier term was applied before this leader became ready, or was lost.
    if (this.pendingTerm !== undefined && this.pendingTerm !== term()) this.pendingTerm = undefined;
    if (this.pendingTerm !== undefined) throw new DbError(ErrorCode.TRY_AGAIN, `tablet ${meta.tabletId} is being split`);
  }
}
