/**
 * Where Percolator keeps its bookkeeping in a tessera row (docs/percolator.md, Data layout): the
 * hidden columns' names, and the lock field of the row's state JSON. The client (client/percolator/)
 * reads and writes them; the tserver's /percolator console page only counts locks and notify hints.
 */

export const SEQ_COLUMN = '_pc_seq';
export const STATE_COLUMN = '_pc_state';
/** The notify hint of observers (int64: commit timestamp of the last observed change), outside the row's state. */
export const NOTIFY_COLUMN = '_pc_notify';
/** A column `_pc_obs_<c>` in a table's schema declares user column c observed. */
export const OBSERVED_PREFIX = '_pc_obs_';

/** The lock a row's state holds, as the console shows it; undefined when none (or not a state). */
export function stateLock(text: unknown): { startTs: string; wallMs: number; ttlMs: number; owner?: string } | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const l = (JSON.parse(text) as { l?: { s?: unknown; w?: unknown; ttl?: unknown; o?: unknown } | null }).l;
    if (!l || typeof l.s !== 'string' || typeof l.w !== 'number' || typeof l.ttl !== 'number') return undefined;
    return { startTs: l.s, wallMs: l.w, ttlMs: l.ttl, ...(typeof l.o === 'string' ? { owner: l.o } : {}) };
  } catch {
    return undefined;
  }
}
