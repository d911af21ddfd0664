/**
 * The oldest key of a Map kept in insertion order (bounded caches that evict oldest-first), in
 * amortized O(1).
 *
 * `map.keys().next()` looks cheap but is not: V8 keeps the slots of deleted entries in place until
 * the table next rehashes, and a fresh iterator walks every one of them. A cache that evicts from
 * the front therefore pays for all its earlier evictions on each one — about 5 µs per eviction at
 * 10,000 entries, and more the larger the map. This keeps ONE iterator alive across calls (V8 moves
 * live iterators along when the table is rehashed or cleared), so each dead slot is passed once.
 *
 * Contract: the caller deletes every key it is given before asking again (the iterator has moved
 * past it; a key it kept would not be offered again until re-inserted).
 */
export class OldestKeys<K> {
  private it: Iterator<K> | undefined;

  constructor(private readonly map: Map<K, unknown>) {}

  /** The oldest key still in the map, or undefined when it is empty. */
  take(): K | undefined {
    if (this.map.size === 0) return undefined;
    let r = (this.it ??= this.map.keys()).next();
    if (r.done === true) {
      // An exhausted iterator stays exhausted, whatever is inserted later: start a fresh one.
      this.it = this.map.keys();
      r = this.it.next();
    }
    return r.done === true ? undefined : r.value;
  }
}
