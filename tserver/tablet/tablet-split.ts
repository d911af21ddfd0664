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
