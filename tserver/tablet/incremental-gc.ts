/**
 * History GC in passes (docs/cells.md §Retention on compaction): one round at one cutoff walks the
 * tablet HISTORY_GC_ROWS_PER_PASS rows at a time, yielding to the event loop between passes, so a
 * large tablet's GC never holds the tserver's one loop for a whole walk (CONVENTIONS: long work in
 * bounded chunks). Every pass caps the cutoff by the readers and unapplied transactions of its own
 * moment (DocDbApi.gc), so a reader that registers mid-round is protected from the next pass on; the
 * round's cutoff is the lowest any pass used.
 */
import type { HybridTime } from '../../common/hybrid-time';
import type { DocDbApi } from '../../docdb';

/** Rows one GC pass reads at most before it yields. */
export const HISTORY_GC_ROWS_PER_PASS = 2000;
/** Passes one round makes at most (a bound: 2000 × 1e6 rows; a round cut short resumes at the next). */
const PASSES_MAX = 1_000_000;

export type GcRound = Awaited<ReturnType<DocDbApi['gc']>>;

/** `keepGoing`: checked between passes; false ends the round early (the replica is closing or being replaced). */
export async function incrementalGc(db: DocDbApi, cutoffHt: HybridTime, keepGoing: () => boolean, rowsPerPass = HISTORY_GC_ROWS_PER_PASS): Promise<GcRound> {
  const total: GcRound = { versionsScanned: 0, versionsDropped: 0, droppedColumnVersions: 0, cutoffHt };
  let start: Uint8Array | undefined;
  for (let pass = 0; pass < PASSES_MAX; pass++) {
    const r = await db.gc(cutoffHt, { compactRange: false, rowsMax: rowsPerPass, ...(start ? { startKey: start } : {}) });
    total.versionsScanned += r.versionsScanned;
    total.versionsDropped += r.versionsDropped;
    total.droppedColumnVersions += r.droppedColumnVersions;
    if (r.cutoffHt < total.cutoffHt) total.cutoffHt = r.cutoffHt;
    start = r.resumeKey;
    if (!start) break;
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!keepGoing()) break;
  }
  return total;
}
