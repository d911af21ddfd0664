/**
 * One call on a table that may change under it, shared by the row operations and the cell calls:
 * a tablet that refuses the client's schema version (another client's ALTER: SCHEMA_VERSION_MISMATCH,
 * or a column this client does not know) makes it load the table again and rebuild the call, a few
 * times at most; a tablet that split (TABLET_SPLIT) makes it load the new tablets and go again with
 * a back-off until the deadline, since the children take over within a few heartbeats.
 */
import { DbError, ErrorCode } from '../common/errors';
import type { MetaCache, TableLocations } from './meta-cache';
import { backoffMs, type Deadline } from './retry-policy';

/** Rebuilds after a schema change at most (a split is retried until the deadline). */
const SCHEMA_RELOADS_MAX = 3;

export async function withTableSchema<T>(cache: MetaCache, table: string, d: Deadline, f: (loc: TableLocations) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const loc = await cache.get(table, d);
    try {
      return await f(loc);
    } catch (e) {
      const split = e instanceof DbError && e.code === ErrorCode.TABLET_SPLIT;
      const again = split || (e instanceof DbError && (e.code === ErrorCode.SCHEMA_VERSION_MISMATCH || e.details['unknownColumn'] === true));
      if (!again || (!split && attempt >= SCHEMA_RELOADS_MAX) || d.expired()) throw e;
      if (split) await new Promise((r) => setTimeout(r, backoffMs(Math.min(attempt, 5))));
      cache.invalidate(table);
    }
  }
}
