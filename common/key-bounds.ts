/**
 * Range partition bounds (docs/splitting.md): a tablet of a range-sharded table owns the rows whose
 * encoded DocKey lies in [keyStart, keyEnd), compared bytewise (RocksDB's order, so a tablet is a
 * contiguous run of the table's rows). Empty bytes = unbounded on that side. A bound is a DocKey
 * prefix without its closing '!' (the leading range components), so every row whose leading
 * components equal the bound's sorts at or after it: rows that share a prefix stay together.
 *
 * In common/ because the master (catalog), the tserver (the partition check) and the client (routing)
 * must agree on one comparison.
 */

/** Bytewise comparison (-1, 0, 1). */
export function compareKeyBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

/** Whether `key` lies in [start, end) (an empty bound is open). */
export function keyInBounds(key: Uint8Array, start: Uint8Array | undefined, end: Uint8Array | undefined): boolean {
  if (start && start.length > 0 && compareKeyBytes(key, start) < 0) return false;
  if (end && end.length > 0 && compareKeyBytes(key, end) >= 0) return false;
  return true;
}

/** The larger of two lower bounds (empty = -infinity). */
export function maxLowerBound(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  return compareKeyBytes(a, b) >= 0 ? a : b;
}

/** The smaller of two upper bounds (empty = +infinity). */
export function minUpperBound(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  return compareKeyBytes(a, b) <= 0 ? a : b;
}

export function hexOf(b: Uint8Array | undefined): string {
  return b && b.length > 0 ? Buffer.from(b).toString('hex') : '';
}

export function bytesOfHex(s: string | undefined): Uint8Array {
  if (!s) return new Uint8Array(0);
  if (!/^(?:[0-9a-f]{2})+$/.test(s)) throw new Error(`key bound '${s.slice(0, 40)}' is not lower-case hex`);
  return new Uint8Array(Buffer.from(s, 'hex'));
}
